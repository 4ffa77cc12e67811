// The tables a DDL statement of the binary log names, so the capture reads
// a captured table's definition again after a statement that may have
// changed it. The server logs a statement as the client wrote it: comments
// before and inside it, any case, `quoted` (`` for a backquote inside),
// "quoted" (under ANSI_QUOTES) or bare names, with or without the database
// (the Query event's default database then supplies it), MariaDB's
// `ALTER ONLINE IGNORE TABLE`, `CREATE OR REPLACE TEMPORARY TABLE`, and
// lists (`DROP TABLE a, b`, `RENAME TABLE a TO b, c TO d`).

/** Comments and white space, as the server skips them between tokens. */
export const GAP = String.raw`(?:\s+|/\*[\s\S]*?\*/|(?:--(?=\s)|#)[^\n]*(?:\n|$))*`;
export const NAME = String.raw`(?:\`(?:[^\`]|\`\`)+\`|"(?:[^"]|"")+"|[\w$\u0080-\uffff]+)`;

export function unquote(name: string): string {
  if (name.startsWith('`')) return name.slice(1, -1).replace(/``/g, '`');
  if (name.startsWith('"')) return name.slice(1, -1).replace(/""/g, '"');
  return name;
}

export type DdlVerb = 'ALTER' | 'CREATE' | 'DROP' | 'RENAME' | 'TRUNCATE';

export interface DdlStatement {
  verb: DdlVerb;
  /** `database.table` of each table named, in the statement's order. */
  tables: string[];
}

/** A cursor over the statement: each read skips the comments and white space before its token. */
class Tokens {
  private pos = 0;
  constructor(private readonly sql: string) {}

  private match(pattern: string): RegExpExecArray | null {
    const re = new RegExp(`${GAP}(?:${pattern})`, 'iy');
    re.lastIndex = this.pos;
    const m = re.exec(this.sql);
    if (m) this.pos = re.lastIndex;
    return m;
  }
  /** The keyword `word` (any case, a whole word) is next: consumed. */
  word(word: string): boolean {
    return this.match(`${word}(?![\\w$])`) !== null;
  }
  /** A name, `db.table` or `table`, as the statement wrote it (unquoted); null when none is next. */
  name(): [string, string | null] | null {
    const m = this.match(`(${NAME})(?:${GAP}\\.${GAP}(${NAME}))?`);
    if (!m) return null;
    return m[2] === undefined ? [unquote(m[1]!), null] : [unquote(m[2]), unquote(m[1]!)];
  }
  symbol(s: string): boolean {
    return this.match(s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')) !== null;
  }
}

/** The statement's verb and the tables it names; null when `sql` is not a table's DDL statement. */
export function ddlStatement(sql: string, schema: string): DdlStatement | null {
  const t = new Tokens(sql);
  const tables: string[] = [];
  const table = (): boolean => {
    const n = t.name();
    if (!n) return false;
    const [name, database] = n;
    if (database !== null) tables.push(`${database}.${name}`);
    else if (schema !== '') tables.push(`${schema}.${name}`);
    return true;
  };
  const list = (each: () => boolean) => {
    do if (!each()) break;
    while (t.symbol(','));
  };
  if (t.word('ALTER')) {
    t.word('ONLINE');
    t.word('IGNORE');
    if (!t.word('TABLE')) return null;
    if (t.word('IF')) t.word('EXISTS');
    table();
    return { verb: 'ALTER', tables };
  }
  if (t.word('CREATE')) {
    if (t.word('OR')) t.word('REPLACE');
    t.word('TEMPORARY');
    if (!t.word('TABLE')) return null;
    if (t.word('IF')) {
      t.word('NOT');
      t.word('EXISTS');
    }
    table();
    return { verb: 'CREATE', tables };
  }
  if (t.word('DROP')) {
    t.word('TEMPORARY');
    if (!t.word('TABLES') && !t.word('TABLE')) return null;
    if (t.word('IF')) t.word('EXISTS');
    list(table);
    return { verb: 'DROP', tables };
  }
  if (t.word('RENAME')) {
    if (!t.word('TABLES') && !t.word('TABLE')) return null;
    list(() => {
      if (!table()) return false;
      if (t.word('WAIT')) t.name();
      else t.word('NOWAIT');
      return t.word('TO') && table();
    });
    return { verb: 'RENAME', tables };
  }
  if (t.word('TRUNCATE')) {
    t.word('TABLE');
    table();
    return { verb: 'TRUNCATE', tables };
  }
  return null;
}
