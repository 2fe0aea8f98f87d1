/**
 * Portable SQL → PostgreSQL statements: `?` placeholders become `$1, $2, …`, and every distinct
 * statement text gets one prepared-statement name, so each pooled connection parses it once
 * (node-postgres `{ name, text }`: the client prepares the name on first use per connection).
 *
 * The scanner skips string literals ('…' with '' escapes, E'…' with backslash escapes),
 * quoted identifiers ("…"), dollar-quoted bodies ($tag$…$tag$) and comments (-- and block), so
 * a `?` inside any of them stays text. A `?` glued to an operator character (`?|`, `?&`, `@?`,
 * jsonb's `?` operator) is refused: the portable subset has no jsonb operators
 * (spec/store.md §portable-sql).
 */
import { StoreError } from '../store.ts';

/** A translated statement: `name` is set while the cache of named statements has room. */
export interface PgStatement {
  name?: string;
  text: string;
  params: number;
}

/** Translate `?` placeholders to `$n`. Throws StoreError('unknown') on a jsonb-style `?` operator. */
export function translatePlaceholders(sql: string): { text: string; params: number } {
  let out = '';
  let n = 0;
  let i = 0;
  const len = sql.length;
  while (i < len) {
    const c = sql[i]!;
    if (c === "'") {
      // E'…' strings allow backslash escapes; plain '…' strings only ''.
      const escaped = i > 0 && (sql[i - 1] === 'E' || sql[i - 1] === 'e') && !isIdentChar(sql[i - 2]);
      let j = i + 1;
      while (j < len) {
        if (escaped && sql[j] === '\\') {
          j += 2;
          continue;
        }
        if (sql[j] === "'") {
          if (sql[j + 1] === "'") {
            j += 2;
            continue;
          }
          break;
        }
        j++;
      }
      out += sql.slice(i, j + 1);
      i = j + 1;
      continue;
    }
    if (c === '"') {
      const j = sql.indexOf('"', i + 1);
      const end = j === -1 ? len : j + 1;
      out += sql.slice(i, end);
      i = end;
      continue;
    }
    if (c === '-' && sql[i + 1] === '-') {
      const j = sql.indexOf('\n', i);
      const end = j === -1 ? len : j;
      out += sql.slice(i, end);
      i = end;
      continue;
    }
    if (c === '/' && sql[i + 1] === '*') {
      const j = sql.indexOf('*/', i + 2);
      const end = j === -1 ? len : j + 2;
      out += sql.slice(i, end);
      i = end;
      continue;
    }
    if (c === '$' && !isIdentChar(sql[i - 1])) {
      const m = /^\$([A-Za-z_][A-Za-z0-9_]*)?\$/.exec(sql.slice(i));
      if (m !== null) {
        const tag = m[0];
        const j = sql.indexOf(tag, i + tag.length);
        const end = j === -1 ? len : j + tag.length;
        out += sql.slice(i, end);
        i = end;
        continue;
      }
    }
    if (c === '?') {
      const prev = sql[i - 1];
      const next = sql[i + 1];
      if (next === '|' || next === '&' || prev === '@' || prev === '#' || prev === '?') {
        throw new StoreError(
          'unknown',
          `"?" used as an operator near ${JSON.stringify(sql.slice(Math.max(0, i - 10), i + 10))}: portable SQL uses "?" only as a placeholder`,
        );
      }
      n++;
      out += `$${n}`;
      i++;
      continue;
    }
    out += c;
    i++;
  }
  return { text: out, params: n };
}

function isIdentChar(c: string | undefined): boolean {
  return c !== undefined && /[A-Za-z0-9_$]/.test(c);
}

/**
 * Cache of translated statements by their portable text. The first `maxNamed` distinct texts
 * get a prepared-statement name (`solid_<n>`); texts beyond that (dynamically built SQL) run
 * unnamed, so a process never accumulates an unbounded number of server-side statements.
 */
export class StatementCache {
  readonly #byText = new Map<string, PgStatement>();
  readonly #maxNamed: number;
  readonly #maxEntries: number;
  #named = 0;

  constructor(options: { maxNamed?: number; maxEntries?: number } = {}) {
    this.#maxNamed = options.maxNamed ?? 1000;
    this.#maxEntries = options.maxEntries ?? 5000;
  }

  /** The PostgreSQL form of `sql` (translated once, then cached). */
  get(sql: string): PgStatement {
    let st = this.#byText.get(sql);
    if (st !== undefined) return st;
    const { text, params } = translatePlaceholders(sql);
    st = { text, params };
    if (this.#named < this.#maxNamed) {
      this.#named++;
      st.name = `solid_${this.#named}`;
      this.#byText.set(sql, st);
    } else if (this.#byText.size < this.#maxEntries) {
      this.#byText.set(sql, st);
    }
    return st;
  }

  get size(): number {
    return this.#byText.size;
  }
}
