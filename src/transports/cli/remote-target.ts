/**
 * RemoteTarget: the CLI's VerbTarget (../cli/target.ts) over HTTP, on an ApiClient declaring
 * surface `cli`. The API key is, in order: the command's --api-key, SOLID_API_KEY, the stored
 * `solid login` for this URL (credentials-file.ts), else none (the server's sandbox, reads only).
 *
 * `records()` without a surface is the union of the five surfaces' manifests (the HTTP manifest
 * defaults to http); hints come from GET /api/v1/agent/verb-hints, fetched once per process.
 * Dispatches of a verb whose hints say READ may be retried (api-client.ts).
 *
 * Spec: spec/transports.md §remote.
 */
import type { DispatchOptions } from '../../runtime/core.ts';
import { VALID_SURFACES, type Envelope, type VerbRecord } from '../../spec/types.ts';
import {
  unknownVerbEnvelope,
  type OpenTargetOptions,
  type ShowAnswer,
  type TargetCallOptions,
  type VerbTarget,
} from './target.ts';
import type { ReasonTable } from '../../spec/reasons.ts';
import { ApiClient } from '../../remote-client/api-client.ts';
import { readLogin } from '../../remote-client/credentials-file.ts';
import { normalizeBaseUrl } from '../../remote-client/remote-url.ts';
import { hintsProblem, type VerbHints } from '../../runtime/verb-hints.ts';

/** Resolve the key for a server: --api-key, SOLID_API_KEY, the stored login, else null. */
export function remoteApiKey(url: string, options: OpenTargetOptions = {}): string | null {
  if (options.apiKey !== undefined && options.apiKey !== '') return options.apiKey;
  const env = process.env.SOLID_API_KEY;
  if (env !== undefined && env !== '') return env;
  return readLogin(url, { warn: options.warn })?.api_key ?? null;
}

export class RemoteTarget implements VerbTarget {
  readonly kind = 'remote' as const;
  readonly where: string;
  readonly client: ApiClient;
  #hints: Promise<Record<string, VerbHints>> | undefined;
  #knownHints: Record<string, VerbHints> | undefined;

  constructor(client: ApiClient) {
    this.client = client;
    this.where = client.baseUrl;
  }

  /** The domain reasons learned from this server's answers (their exit codes). */
  get reasons(): ReasonTable {
    return this.client.reasons;
  }

  async dispatch(
    verb: string,
    args: unknown,
    options: DispatchOptions = {},
    call: TargetCallOptions = {},
  ): Promise<Envelope> {
    const h = this.#knownHints?.[verb];
    const read = h !== undefined && h.consent_class === 'READ' && !h.delegated;
    return this.client.dispatch(verb, args, options, {
      idempotent: call.idempotent === true || read,
      signal: call.signal,
    });
  }

  async records(filter: { surface?: string; shape?: string } = {}): Promise<VerbRecord[]> {
    const surfaces = filter.surface !== undefined ? [filter.surface] : [...VALID_SURFACES];
    const answers = await Promise.all(surfaces.map((s) => this.client.manifest(s)));
    const byName = new Map<string, VerbRecord>();
    for (const a of answers) {
      if (a.notModified) continue;
      for (const r of a.verbs as VerbRecord[]) byName.set(r.name, r);
    }
    return [...byName.values()]
      .filter((r) => filter.shape === undefined || r.shape === filter.shape)
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  hints(): Promise<Record<string, VerbHints>> {
    this.#hints ??= this.client.hints().then((answer) => {
      const out: Record<string, VerbHints> = {};
      if (answer.notModified) return out;
      for (const [name, h] of Object.entries(answer.hints))
        if (hintsProblem(h) === undefined) out[name] = h as VerbHints;
      this.#knownHints = out;
      return out;
    });
    return this.#hints;
  }

  async show(name: string): Promise<ShowAnswer> {
    const answer = await this.client.verb(name);
    if ('envelope' in answer) {
      const closest = answer.envelope.error?.details?.closest;
      if (answer.envelope.error?.reason === 'unknown_verb')
        return { envelope: unknownVerbEnvelope(name, Array.isArray(closest) ? (closest as string[]) : []) };
      return answer;
    }
    const hints = await this.hints().catch(() => ({}) as Record<string, VerbHints>);
    return { record: answer.record, hints: hints[answer.record.name] };
  }

  whoami(): Promise<Envelope> {
    return this.client.whoami();
  }

  async close(): Promise<void> {
    this.client.close();
  }
}

/** Open the remote target for `url` (validated: invalid_request on a malformed URL). */
export function openRemoteTarget(url: string, options: OpenTargetOptions = {}): RemoteTarget {
  const baseUrl = normalizeBaseUrl(url);
  return new RemoteTarget(
    new ApiClient({
      baseUrl,
      apiKey: remoteApiKey(baseUrl, options),
      surface: 'cli',
      client: 'solid-cli',
      dispatchTimeoutMs: dispatchTimeoutMs(),
    }),
  );
}

/** SOLID_API_TIMEOUT_SECONDS (a positive number) bounds a dispatch; default 60 s. */
function dispatchTimeoutMs(): number | undefined {
  const s = Number(process.env.SOLID_API_TIMEOUT_SECONDS);
  return Number.isFinite(s) && s > 0 ? Math.round(s * 1000) : undefined;
}
