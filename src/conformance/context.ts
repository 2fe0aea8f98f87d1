/**
 * What every check of a run shares: the options, the bounded HTTP client, the manifest and the
 * declaration (fetched once), the MCP connection (opened on first use), every envelope the run
 * saw (for envelope.error_fields), and small helpers to dispatch a verb and turn an answer into
 * evidence. Spec: spec/conformance.md §checks, §safety.
 */
import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { Budget, KitHttp, readBounded, type HttpAnswer, type RequestOptions } from './http.ts';
import { connectMcp, type KitMcp } from './mcp.ts';
import { Fail, Skip, envelopePart, excerpt } from './outcome.ts';
import { publishedCompiler, validateOurs, type PublishedCompiler } from './schemas.ts';
import {
  DECLARATION_PATH,
  withRunId,
  type ConformanceDeclaration,
  type DeclaredTestVerb,
} from './declaration.ts';
import type { ConformanceOptions, Evidence } from './types.ts';

/** A VerbRecord as the kit reads it (validated by manifest.records, so fields may be anything). */
export interface KitRecord {
  name: string;
  description?: string;
  shape: string;
  side_effects?: string;
  input_schema: Record<string, unknown>;
  output_schema?: Record<string, unknown>;
  surfaces?: string[];
  requires_consent?: boolean;
  tier_floor?: string;
  [k: string]: unknown;
}

/** An envelope as the kit reads it. */
export interface KitEnvelope {
  ok?: unknown;
  verb?: unknown;
  result?: Record<string, unknown>;
  error?: { reason?: unknown; message?: unknown; hint?: unknown; path?: unknown; details?: unknown };
  audit_id?: unknown;
  idempotency_key?: unknown;
  rollback_handle?: unknown;
  replayed?: unknown;
  consent?: Record<string, unknown>;
  [k: string]: unknown;
}

/** An envelope the run received, with the exchange it came from. */
export interface SeenEnvelope {
  request: string;
  status: number;
  envelope: KitEnvelope;
}

/** A dispatch's answer. */
export interface Dispatched {
  answer: HttpAnswer;
  /** The envelope, or undefined when the body was not a JSON object. */
  env: KitEnvelope | undefined;
}

export const ALL_SURFACES = ['http', 'mcp_stdio', 'webmcp', 'ucp', 'cli'] as const;

/** The surfaces of a record (absent: all five, spec/manifest.md §record). */
export function surfacesOf(r: KitRecord): string[] {
  return Array.isArray(r.surfaces) ? r.surfaces : [...ALL_SURFACES];
}

/** True when a record says its verb only reads (no consent, side_effects read or absent-and-ungated). */
export function isReadRecord(r: KitRecord): boolean {
  if (r.requires_consent === true) return false;
  return r.side_effects === undefined ? r.requires_consent === false : r.side_effects === 'read';
}

export class KitContext {
  readonly runId: string;
  readonly base: string;
  readonly budget: Budget;
  readonly http: KitHttp;
  readonly compile: PublishedCompiler = publishedCompiler();
  readonly seen: SeenEnvelope[] = [];
  /** State checks hand on to later checks of the run (e.g. a receipt for the revert checks). */
  readonly shared = new Map<string, unknown>();
  readonly #once = new Map<string, Promise<unknown>>();
  #mcp: Promise<KitMcp> | undefined;

  constructor(readonly options: ConformanceOptions) {
    this.runId = options.runId ?? randomBytes(4).toString('hex');
    this.base = options.baseUrl.replace(/\/+$/, '');
    this.budget = new Budget(
      options.maxRequests ?? 600,
      options.budgetMs ?? 300_000,
      options.timeoutMs ?? 15_000,
    );
    this.http = new KitHttp(this.base, this.budget, options.apiKey, options.maxResponseBytes);
  }

  get hasKey(): boolean {
    return this.options.apiKey !== undefined && this.options.apiKey !== '';
  }

  get allowWrites(): boolean {
    return this.options.allowWrites === true;
  }

  /** Run `fn` once per run; later callers get the same promise (and the same failure). */
  once<T>(key: string, fn: () => Promise<T>): Promise<T> {
    let p = this.#once.get(key) as Promise<T> | undefined;
    if (p === undefined) {
      p = fn();
      this.#once.set(key, p);
      p.catch(() => {});
    }
    return p;
  }

  /** Evidence of one exchange, with the deciding part of the answer (default: the envelope's main members). */
  ev(answer: HttpAnswer, part?: unknown, note?: string): Evidence {
    return {
      request: answer.request,
      status: answer.status,
      answer: part === undefined ? envelopePart(answer.json ?? answer.text.slice(0, 400)) : excerpt(part),
      ...(note !== undefined ? { note } : {}),
    };
  }

  /**
   * Record an envelope the run received (every dispatch does): every JSON object answer of a route
   * that answers envelopes, `ok` or not, so envelope.error_fields holds a success envelope without
   * `ok` against the envelope schema.
   */
  noteEnvelope(answer: HttpAnswer): KitEnvelope | undefined {
    const j = answer.json;
    if (j === null || typeof j !== 'object' || Array.isArray(j)) return undefined;
    const env = j as KitEnvelope;
    this.seen.push({ request: answer.request, status: answer.status, envelope: env });
    return env;
  }

  /**
   * POST /api/v1/agent/dispatch/{verb} with `{ args, confirm?, nonce?, typed_phrase? }` (or a raw
   * body through `request`).
   */
  async dispatch(
    verb: string,
    body: Record<string, unknown> | undefined,
    options: RequestOptions & { idempotencyKey?: string } = {},
  ): Promise<Dispatched> {
    const { idempotencyKey, ...rest } = options;
    const headers = { ...(rest.headers ?? {}) };
    if (idempotencyKey !== undefined) headers['idempotency-key'] = idempotencyKey;
    const answer = await this.http.post(`/api/v1/agent/dispatch/${encodeURIComponent(verb)}`, {
      ...rest,
      headers,
      ...(body !== undefined && rest.raw === undefined ? { json: body } : {}),
    });
    return { answer, env: this.noteEnvelope(answer) };
  }

  /** The manifest's records (GET /api/v1/agent/verbs?surface=…), fetched once per query. */
  records(query = ''): Promise<{ answer: HttpAnswer; records: KitRecord[] }> {
    return this.once(`records${query}`, async () => {
      const answer = await this.http.get(`/api/v1/agent/verbs${query}`, { key: false });
      const j = answer.json as { verbs?: unknown } | undefined;
      if (answer.status !== 200 || !Array.isArray(j?.verbs))
        throw new Skip(`the manifest could not be read (HTTP ${answer.status}; see manifest.list)`, [
          this.ev(answer),
        ]);
      const records = (j.verbs as unknown[]).filter(
        (r): r is KitRecord =>
          r !== null && typeof r === 'object' && typeof (r as KitRecord).name === 'string',
      );
      return { answer, records };
    });
  }

  /** Every record of the manifest, over all surfaces (the union of the five surface lists). */
  allRecords(): Promise<KitRecord[]> {
    return this.once('all-records', async () => {
      const byName = new Map<string, KitRecord>();
      for (const s of ALL_SURFACES) {
        const { records } = await this.records(`?surface=${s}`).catch(() => ({ records: [] as KitRecord[] }));
        for (const r of records) byName.set(r.name, r);
      }
      if (byName.size === 0) for (const r of (await this.records()).records) byName.set(r.name, r);
      return [...byName.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    });
  }

  /**
   * The declaration (spec/conformance.md §declaration): the option's, else the server's. Throws
   * Skip when the server declares none, Fail when it is invalid.
   */
  declaration(): Promise<ConformanceDeclaration> {
    return this.once('declaration', async () => {
      let doc: unknown;
      let evidence: Evidence;
      const given = this.options.declaration;
      if (given === undefined) {
        const answer = await this.http.get(DECLARATION_PATH, { key: false });
        evidence = this.ev(answer);
        if (answer.status === 404)
          throw new Skip(
            `the server declares no test-safe verbs (GET ${DECLARATION_PATH} answered 404); the write checks need them (spec/conformance.md §declaration)`,
            [evidence],
          );
        if (answer.status !== 200 || answer.json === undefined)
          throw new Fail(`GET ${DECLARATION_PATH} answered HTTP ${answer.status}, not a JSON declaration`, [
            evidence,
          ]);
        doc = answer.json;
      } else if (typeof given === 'string') {
        if (/^https?:\/\//i.test(given)) {
          evidence = { request: `GET ${given}` };
          const ms = this.budget.take();
          try {
            const res = await fetch(given, {
              redirect: 'manual',
              headers: { accept: 'application/json', 'accept-encoding': 'identity' },
              signal: AbortSignal.timeout(ms),
            });
            evidence.status = res.status;
            const bytes = await readBounded(res, this.http.maxResponseBytes, `GET ${given}`, ms);
            doc = res.status === 200 ? JSON.parse(new TextDecoder().decode(bytes)) : undefined;
          } catch (err) {
            throw new Fail(`the declaration at ${given} could not be read: ${(err as Error).message}`, [
              evidence,
            ]);
          }
        } else {
          evidence = { request: `read ${given}` };
          try {
            doc = JSON.parse(await readFile(given, 'utf8'));
          } catch (err) {
            throw new Fail(`the declaration file ${given} is not readable JSON: ${(err as Error).message}`, [
              evidence,
            ]);
          }
        }
      } else {
        doc = given;
        evidence = { request: 'the declaration given to the kit' };
      }
      const errors = validateOurs('conformance-declaration.json', doc);
      if (errors.length > 0)
        throw new Fail(
          `the declaration is invalid against schema/conformance-declaration.json: ${errors[0]}`,
          [{ ...evidence, answer: errors }],
        );
      return withRunId(doc as ConformanceDeclaration, this.runId);
    });
  }

  /** The declared test verb with this gate, or Skip. */
  async testVerb(
    gate: DeclaredTestVerb['gate'],
    options: { revertible?: boolean } = {},
  ): Promise<DeclaredTestVerb> {
    const decl = await this.declaration();
    const tv = decl.test_verbs.find(
      (v) => v.gate === gate && (options.revertible === undefined || v.revertible === options.revertible),
    );
    if (tv === undefined)
      throw new Skip(
        `the declaration names no ${options.revertible ? 'revertible ' : ''}test verb with a ${gate} gate`,
      );
    return tv;
  }

  /** The principal of the key (GET /api/v1/whoami), or undefined when the server has no such route. */
  whoami(): Promise<{ company_id?: number } | undefined> {
    return this.once('whoami', async () => {
      const answer = await this.http.get('/api/v1/whoami');
      const r = (answer.json as { result?: { company_id?: number } } | undefined)?.result;
      return answer.status === 200 && r !== undefined ? r : undefined;
    });
  }

  /** The MCP connection (Skip when the run has no --mcp; Fail when it cannot connect). */
  mcp(): Promise<KitMcp> {
    const target = this.options.mcp;
    if (target === undefined)
      return Promise.reject(
        new Skip(
          `pass --mcp <url or command> to check MCP (e.g. --mcp ${this.base}/mcp, or --mcp "solid mcp" with SOLID_DB set)`,
        ),
      );
    this.#mcp ??= connectMcp(target, {
      ...(this.options.apiKey !== undefined ? { apiKey: this.options.apiKey } : {}),
      ...(this.options.mcpEnv !== undefined ? { env: this.options.mcpEnv } : {}),
      budget: this.budget,
    });
    return this.#mcp.catch((err: Error) => {
      throw new Fail(`could not connect to the MCP server: ${err.message}`, [
        { request: 'MCP initialize', note: err.message },
      ]);
    });
  }

  /** Close what the run opened. */
  async close(): Promise<void> {
    const m = this.#mcp;
    this.#mcp = undefined;
    if (m !== undefined) await m.then((c) => c.close()).catch(() => {});
    const closers = this.shared.get('closers') as Array<() => Promise<void>> | undefined;
    for (const c of closers ?? []) await c().catch(() => {});
  }

  /** Register something to close at the end of the run. */
  onClose(fn: () => Promise<void>): void {
    const list = (this.shared.get('closers') as Array<() => Promise<void>> | undefined) ?? [];
    list.push(fn);
    this.shared.set('closers', list);
  }
}
