import { describe, expect, it } from '@jest/globals';
import type { ChangeEvent } from '../../contracts.js';
import { parseMariadbGtid, parseXaPrepare } from './binlog-events.js';
import { PreparedXa, xaOutcome } from './xa-transactions.js';

// Event bodies as MariaDB 10.11 wrote them for `XA START 'x1'; INSERT …;
// XA END 'x1'; XA PREPARE 'x1'` (mariadb-binlog --hexdump, checksums cut).
const XA_PREPARE_BODY = Buffer.from('00' + '01000000' + '02000000' + '00000000' + '7831', 'hex');
const GTID_BODY = Buffer.from(
  '0300000000000000' + '00000000' + '4c' + '01000000' + '02' + '00' + '7831' + '01ff',
  'hex',
);

const at = (offset: number) => ({ file: 'binlog.000001', offset, gtid: `0-1-${offset}` });
const event = (id: number) => ({ key: { id } }) as unknown as ChangeEvent;

describe('XA transactions of the binary log', () => {
  it('reads the XID of XA_PREPARE and the prepared-XA flag of the GTID event', () => {
    expect(parseXaPrepare(XA_PREPARE_BODY)).toEqual({ onePhase: false, xid: "X'7831',X'',1" });
    expect(parseMariadbGtid(GTID_BODY)).toMatchObject({ sequence: 3n, domain: 0, preparedXa: true });
  });

  it('reads the outcome and XID of XA COMMIT and XA ROLLBACK statements in the forms the server logs', () => {
    expect(xaOutcome("XA COMMIT X'7831',X'',1")).toEqual({
      outcome: 'commit',
      xid: "X'7831',X'',1",
    });
    expect(xaOutcome("XA ROLLBACK X'7832',X'6232',7")).toEqual({
      outcome: 'rollback',
      xid: "X'7832',X'6232',7",
    });
    expect(xaOutcome("xa commit 'x1'")?.xid).toBe("X'7831',X'',1");
    expect(xaOutcome("XA COMMIT 'x3' ONE PHASE")).toEqual({ outcome: 'commit', xid: "X'7833',X'',1" });
    expect(xaOutcome("XA END X'7831',X'',1")).toBeNull();
    expect(xaOutcome('COMMIT')).toBeNull();
  });

  it('holds the recorded position at the oldest undecided part, and gives its rows once', () => {
    const xa = new PreparedXa();
    expect(xa.holdAt()).toBeNull();
    xa.prepare('a', at(100), [event(1)]);
    xa.prepare('b', at(200), [event(2), event(3)]);
    expect(xa.holdAt()).toEqual(at(100));
    expect(xa.heldEvents).toBe(3);
    expect(xa.decide('b')).toHaveLength(2);
    expect(xa.holdAt()).toEqual(at(100));
    expect(xa.decide('a')).toEqual([event(1)]);
    expect(xa.decide('a')).toBeUndefined();
    expect(xa.holdAt()).toBeNull();
  });
});
