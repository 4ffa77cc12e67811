import { numberedRow, rowChecksum, type ArrivedEvent, type NumberedRow } from './numbered-rows.js';

// The workload and the check of the source integrity tests: transactions of
// numbered rows (inserts, updates of the first rows in every transaction,
// deletes of rows inserted by the one before) with each key's history, and
// each key's changes as they arrived on the broker against that history.

/** One change of a key as it was written: its operation, the row's version (a delete: -1), the checksum. */
export interface Expected {
  op: string;
  version: number;
  checksum: string;
}

/** 100,000 changes: 100 transactions of 1,000, rows 1..200 updated in each after the first, 10 deletes each. */
export const INTEGRITY_WORKLOAD = { transactions: 100, perTransaction: 1_000, updated: 200, deletes: 10 };

export interface NumberedTransaction {
  inserts: NumberedRow[];
  updates: NumberedRow[];
  deletes: number[];
}

/**
 * `transactions` of `perTransaction` changes each: rows 1..`updated` are
 * updated in every transaction after the first (long per-key histories), and
 * `deletes` rows of the previous transaction (past the updated ones) are
 * deleted once, never touched again; the rest are inserts. Returns them with
 * each key's expected history.
 */
export function numberedWorkload(spec: {
  transactions: number;
  perTransaction: number;
  updated: number;
  deletes: number;
}): { transactions: NumberedTransaction[]; expected: Map<number, Expected[]>; changes: number } {
  const expected = new Map<number, Expected[]>();
  const expect_ = (id: number, op: string, version: number, checksum: string) =>
    expected.set(id, [...(expected.get(id) ?? []), { op, version, checksum }]);
  const transactions: NumberedTransaction[] = [];
  let nextId = 1;
  let previousInserts: number[] = [];
  let changes = 0;
  for (let t = 0; t < spec.transactions; t++) {
    const updates = t === 0 ? [] : Array.from({ length: spec.updated }, (_, i) => numberedRow(i + 1, t));
    const deletes = t === 0 ? [] : previousInserts.slice(500, 500 + spec.deletes);
    const inserts = Array.from({ length: spec.perTransaction - updates.length - deletes.length }, () =>
      numberedRow(nextId++, 0),
    );
    for (const r of inserts) expect_(r.id, 'c', 0, rowChecksum({ ...r }));
    for (const r of updates) expect_(r.id, 'u', r.version, rowChecksum({ ...r }));
    for (const id of deletes) expect_(id, 'd', -1, rowChecksum(null, id));
    transactions.push({ inserts, updates, deletes });
    changes += inserts.length + updates.length + deletes.length;
    previousInserts = inserts.map((r) => r.id);
  }
  return { transactions, expected, changes };
}

/** Each key's arrivals against its expected history; up to 5 examples of each kind of fault. */
export function compareHistories(expected: Map<number, Expected[]>, events: readonly ArrivedEvent[]) {
  const arrived = new Map<number, ArrivedEvent[]>();
  const ordered = [...events].sort((a, b) =>
    a.partition !== b.partition ? a.partition - b.partition : a.offset < b.offset ? -1 : 1,
  );
  for (const e of ordered) arrived.set(e.id, [...(arrived.get(e.id) ?? []), e]);
  const faults = {
    missing: [] as string[],
    duplicated: [] as string[],
    wrong: [] as string[],
    outOfOrder: [] as string[],
  };
  const note = (list: string[], text: string) => void (list.length < 5 && list.push(text));
  const counts = { missing: 0, duplicated: 0, wrong: 0, outOfOrder: 0 };
  for (const id of new Set([...expected.keys(), ...arrived.keys()])) {
    const want = expected.get(id) ?? [];
    const got = arrived.get(id) ?? [];
    const seen = new Map<string, number>();
    let lastIndex = -1;
    for (const e of got) {
      const label = `${e.op}:${e.version}`;
      const index = want.findIndex((w) => `${w.op}:${w.version}` === label);
      const times = (seen.get(label) ?? 0) + 1;
      seen.set(label, times);
      if (index < 0 || want[index]?.checksum !== e.checksum) {
        counts.wrong++;
        note(faults.wrong, `row ${id} ${label} at ${e.partition}/${e.offset} (position ${e.position})`);
      } else if (times > 1) {
        counts.duplicated++;
        note(faults.duplicated, `row ${id} ${label} at ${e.partition}/${e.offset}`);
      } else {
        if (index < lastIndex) {
          counts.outOfOrder++;
          note(
            faults.outOfOrder,
            `row ${id} ${label} after ${want[lastIndex]?.op}:${want[lastIndex]?.version}`,
          );
        }
        lastIndex = Math.max(lastIndex, index);
      }
    }
    for (const w of want) {
      if (!seen.has(`${w.op}:${w.version}`)) {
        counts.missing++;
        note(faults.missing, `row ${id} ${w.op}:${w.version}`);
      }
    }
  }
  const summary = (kind: keyof typeof counts) =>
    counts[kind] === 0 ? [] : [`${counts[kind]} in all, e.g.`, ...faults[kind]];
  return {
    missing: summary('missing'),
    duplicated: summary('duplicated'),
    wrong: summary('wrong'),
    outOfOrder: summary('outOfOrder'),
  };
}
