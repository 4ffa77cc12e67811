import { describe, expect, it } from '@jest/globals';
import { parseMysqlGtid } from './binlog-events.js';
import { dumpGtidPacket, dumpPacket } from './binlog-dump.js';
import { encodeGtidSet, formatGtidSet, GtidSetError, parseGtidSet } from './gtid-set.js';
import { advanceGtid, advanceMysqlGtid, formatPosition } from './position.js';

// MySQL GTID positions against bytes of other projects' tests (MySQL itself
// cannot run here):
// - GTID_LOG_EVENT bodies recorded from MySQL 5.7 and 8.0.19 servers:
//   go-mysql, replication/event_test.go TestGTIDEventMysql8NewFields
//   (github.com/go-mysql-org/go-mysql, MIT License);
// - the encoded GTID set of COM_BINLOG_DUMP_GTID (Gtid_set::encode):
//   Vitess, go/mysql/mysql56_gtid_set_test.go TestMysql56GTIDSetSIDBlock
//   (github.com/vitessio/vitess, Apache License 2.0).

const hex = (h: string) => Buffer.from(h.replace(/\s+/g, ''), 'hex');

describe('MySQL GTID events', () => {
  it('reads the source UUID and transaction number of recorded GTID_LOG_EVENTs', () => {
    // master MySQL 5.7, replica 8.0 (the 8.0 fields after the 5.7 ones are not read).
    expect(
      parseMysqlGtid(
        hex(
          '005aa72a7f44a811ea947f0242ac19000202010000000000000276000000000000007700000000000000c147811678a08500000000000000fcc5039338018000000000',
        ),
      ),
    ).toEqual({ uuid: '5aa72a7f-44a8-11ea-947f-0242ac190002', gno: 258n });
    expect(
      parseMysqlGtid(
        hex('005aa72a7f44a811ea947f0242ac19000203010000000000000235000000000000003600000000000000'),
      ),
    ).toEqual({ uuid: '5aa72a7f-44a8-11ea-947f-0242ac190002', gno: 259n });
    expect(
      parseMysqlGtid(
        hex(
          '005ccc103344a811eabd590242ac190003770000000000000002780000000000000079000000000000006a30b13e78a005fcc30393380100',
        ),
      ),
    ).toEqual({ uuid: '5ccc1033-44a8-11ea-bd59-0242ac190003', gno: 119n });
  });
});

describe('MySQL GTID sets', () => {
  const sid1 = '00010203-0405-0607-0809-0a0b0c0d0e0f';
  const sid2 = '00010203-0405-0607-0809-0a0b0c0d0e10';

  it("encodes a set as COM_BINLOG_DUMP_GTID carries it (Vitess' SID block)", () => {
    const want = hex(`
      0200000000000000
      000102030405060708090a0b0c0d0e0f 0200000000000000
      1400000000000000 1f00000000000000 2300000000000000 2900000000000000
      000102030405060708090a0b0c0d0e10 0100000000000000
      0100000000000000 0600000000000000`);
    expect(encodeGtidSet(parseGtidSet(`${sid2}:1-5,${sid1}:20-30:35-40`))).toEqual(want);
  });

  it('parses the set as the server prints it (upper case, newlines after commas) and writes it back in order', () => {
    const printed = `${sid2.toUpperCase()}:1-5,\n${sid1}:35-40:20-30`;
    expect(formatGtidSet(parseGtidSet(printed))).toBe(`${sid1}:20-30:35-40,${sid2}:1-5`);
    expect(formatGtidSet(parseGtidSet(''))).toBe('');
  });

  it('adds each transaction read: extends, merges and opens intervals, and adds new sources', () => {
    let gtid = `${sid1}:1-5:7-9`;
    gtid = advanceMysqlGtid(gtid, sid1, 6n);
    expect(gtid).toBe(`${sid1}:1-9`);
    gtid = advanceMysqlGtid(gtid, sid1, 12n);
    expect(gtid).toBe(`${sid1}:1-9:12`);
    gtid = advanceMysqlGtid(gtid, sid2.toUpperCase(), 1n);
    expect(gtid).toBe(`${sid1}:1-9:12,${sid2}:1`);
    expect(advanceMysqlGtid(gtid, sid1, 3n)).toBe(gtid);
    expect(formatPosition({ file: 'binlog.000002', offset: 4, gtid })).toBe(gtid);
  });

  it("keeps MariaDB's domain-server-sequence positions as they were", () => {
    expect(advanceGtid('0-1-58,1-2-7', 0, 1, 59n)).toBe('0-1-59,1-2-7');
  });

  it('refuses tagged GTIDs and malformed sets with the part named', () => {
    expect(() => parseGtidSet(`${sid1}:tag1:1-3`)).toThrow(GtidSetError);
    expect(() => parseGtidSet(`${sid1}:tag1:1-3`)).toThrow(/tagged GTIDs are not supported/);
    expect(() => parseGtidSet('not-a-uuid:1-3')).toThrow(/not a GTID set/);
    expect(() => parseGtidSet(`${sid1}:5-3`)).toThrow(/empty range/);
  });
});

describe('the dump commands', () => {
  const sid1 = '00010203-0405-0607-0809-0a0b0c0d0e0f';

  it('asks MySQL for every transaction not in the set with COM_BINLOG_DUMP_GTID', () => {
    const set = `${sid1}:1-57`;
    const packet = dumpGtidPacket(
      { serverId: 4242, file: 'binlog.000003', position: 1234, checksum: true },
      set,
    );
    const sids = encodeGtidSet(parseGtidSet(set));
    const payload = packet.subarray(4);
    expect(packet.readUIntLE(0, 3)).toBe(payload.length);
    expect(packet[3]).toBe(0); // sequence id
    expect(payload[0]).toBe(0x1e);
    expect(payload.readUInt16LE(1)).toBe(0x04); // BINLOG_THROUGH_GTID, blocking
    expect(payload.readUInt32LE(3)).toBe(4242);
    expect(payload.readUInt32LE(7)).toBe(0); // no file name
    expect(payload.readBigUInt64LE(11)).toBe(4n);
    expect(payload.readUInt32LE(19)).toBe(sids.length);
    expect(payload.subarray(23)).toEqual(sids);
  });

  it('asks by file and offset with COM_BINLOG_DUMP otherwise', () => {
    const packet = dumpPacket({ serverId: 7, file: 'mysql-bin.000001', position: 4, checksum: false });
    expect(packet.subarray(4)).toEqual(
      Buffer.concat([hex('12 04000000 0000 07000000'), Buffer.from('mysql-bin.000001')]),
    );
  });
});
