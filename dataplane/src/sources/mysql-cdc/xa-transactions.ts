import type { ChangeEvent } from '../../contracts.js';
import { xidText } from './binlog-events.js';
import type { RecordedPosition } from './recorded-tables.js';

// XA transactions the server logs in two parts: XA START … XA END and
// XA_PREPARE (its rows, prepared), then later, in a group of its own and
// possibly from another session or after a server restart, `XA COMMIT xid`
// or `XA ROLLBACK xid`. The rows of a prepared part are held here, not
// published, until its outcome is read: published on XA COMMIT, dropped on
// XA ROLLBACK. While one is undecided the recorded position stays at the
// start of the oldest such part (`holdAt`), so a restarted worker reads its
// rows again and still finds them when the outcome comes.

interface Prepared {
  /** The position before the part's first event (with the tables' definitions there): a restart from there reads it again. */
  start: RecordedPosition;
  events: ChangeEvent[];
}

export class PreparedXa {
  /** In the order they were prepared: the first is the oldest. */
  private readonly prepared = new Map<string, Prepared>();

  /** The part `xid` prepared: its rows wait for its outcome. */
  prepare(xid: string, start: RecordedPosition, events: ChangeEvent[]): void {
    this.prepared.set(xid, { start: { ...start }, events });
  }

  /** The rows of `xid`'s prepared part, forgotten here; undefined for a part this capture did not read. */
  decide(xid: string): ChangeEvent[] | undefined {
    const p = this.prepared.get(xid);
    this.prepared.delete(xid);
    return p?.events;
  }

  /** Where the oldest undecided part starts (no position after it may be recorded), or null. */
  holdAt(): RecordedPosition | null {
    const first = this.prepared.values().next();
    return first.done ? null : { ...first.value.start };
  }

  /** Rows held, for the log. */
  get heldEvents(): number {
    let n = 0;
    for (const p of this.prepared.values()) n += p.events.length;
    return n;
  }
}

export interface XaOutcome {
  outcome: 'commit' | 'rollback';
  /** In the form of binlog-events.ts's `xidText`. */
  xid: string;
}

/**
 * `XA COMMIT xid [ONE PHASE]` or `XA ROLLBACK xid` as a Query event holds it
 * (the server writes `X'…',X'…',n`; quoted strings and 0x… are read too);
 * null for any other statement.
 */
export function xaOutcome(sql: string): XaOutcome | null {
  const m = /^XA\s+(COMMIT|ROLLBACK)\s+(.*?)(\s+ONE\s+PHASE)?\s*$/is.exec(sql);
  if (!m) return null;
  const parts: Buffer[] = [];
  let formatId = 1;
  let rest = m[2]!.trim();
  for (let i = 0; rest.length > 0; i++) {
    const literal =
      /^[Xx]'([0-9A-Fa-f]*)'/.exec(rest) ??
      /^0x([0-9A-Fa-f]+)/.exec(rest) ??
      /^'((?:[^'\\]|''|\\.)*)'/.exec(rest);
    const number = /^(-?\d+)/.exec(rest);
    if (i < 2 && literal) {
      const text = literal[0];
      parts.push(
        text.startsWith("'")
          ? Buffer.from(literal[1]!.replace(/''/g, "'").replace(/\\(.)/g, '$1'), 'utf8')
          : Buffer.from(literal[1]!, 'hex'),
      );
      rest = rest.slice(text.length);
    } else if (i === 2 && number) {
      formatId = Number(number[1]);
      rest = rest.slice(number[0].length);
    } else {
      return null;
    }
    rest = rest.replace(/^\s*,\s*/, '').trim();
  }
  if (parts.length === 0) return null;
  return {
    outcome: m[1]!.toUpperCase() === 'COMMIT' ? 'commit' : 'rollback',
    xid: xidText(parts[0]!, parts[1] ?? Buffer.alloc(0), formatId),
  };
}
