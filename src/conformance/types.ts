/**
 * Types of the conformance kit: checks as data, their outcomes with evidence, the run's options
 * and its report. Spec: spec/conformance.md §checks, §outcomes.
 */
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { KitContext } from './context.ts';

/** The sections of a run, in report order. */
export const SECTIONS = ['manifest', 'envelope', 'shapes', 'receipts', 'consent', 'parity', 'ucp'] as const;
/** A section of the conformance kit. */
export type SectionId = (typeof SECTIONS)[number];

/** What a section checks, and where the spec says it. */
export const SECTION_TITLES: Readonly<Record<SectionId, string>> = {
  manifest: 'the manifest: GET /api/v1/agent/verbs (spec/manifest.md, spec/transports.md §http-routes)',
  envelope: 'the envelope and its errors (spec/envelope.md, spec/reasons.md, spec/transports.md §http)',
  shapes: 'one call per shape, validated against its schema (spec/shapes.md)',
  receipts:
    'receipts, idempotency, revert and the trail (spec/receipts.md, spec/idempotency.md, spec/audit.md)',
  consent: 'consent gates and nonces (spec/consent.md)',
  parity: 'the same verbs on every surface (spec/transports.md)',
  ucp: 'UCP profile and signed requests (spec/transports.md §ucp)',
};

/** The outcome of one check: `pass`, `fail` or `skip`. */
export type Status = 'pass' | 'fail' | 'skip';

/**
 * What decided a check: the request (method, path, the body's relevant part) and the part of the
 * answer that decided it. Secrets never appear: the Authorization header is not recorded.
 */
export interface Evidence {
  /** e.g. `POST /api/v1/agent/dispatch/verbs.list {"args":{}}` or `MCP tools/list`. */
  request: string;
  /** HTTP status, when the exchange was HTTP. */
  status?: number;
  /** The deciding part of the answer (an envelope's error, a missing field, a diff). */
  answer?: unknown;
  /** A sentence about this exchange. */
  note?: string;
}

/** The outcome of one check's run function. */
export interface Outcome {
  status: Status;
  /** One line: why it passed, failed or was skipped. */
  message: string;
  evidence: Evidence[];
}

/** What a check needs before it can run; the runner skips it with the reason otherwise. */
export interface CheckNeeds {
  /** An API key (--api-key). */
  key?: boolean;
  /** --allow-writes (and the runner only lets it write with declared test verbs). */
  writes?: boolean;
  /** --mcp. */
  mcp?: boolean;
  /** --ucp. */
  ucp?: boolean;
}

/** A check as data. */
export interface Check {
  /** Stable id, `<section>.<name>` (docs/conformance.md lists them all). */
  id: string;
  section: SectionId;
  /** The requirement, in one sentence. */
  requirement: string;
  /** Where the spec says it: `spec/<page>.md §<section>`. */
  spec: string;
  needs?: CheckNeeds;
  /** Run after every other check of the run (it looks at what the run saw). */
  final?: boolean;
  /** Run the check against the server; resolves with its outcome. */
  run(ctx: KitContext): Promise<Outcome>;
}

/** One check's result in a report (`run`: the kit's own, e.g. run.budget). */
export interface CheckResult {
  id: string;
  section: SectionId | 'run';
  requirement: string;
  spec: string;
  status: Status;
  message: string;
  evidence: Evidence[];
  duration_ms: number;
}

/** Per-section counts. */
export interface Summary {
  passed: number;
  failed: number;
  skipped: number;
}

/** The whole run. */
export interface ConformanceReport {
  kit: { name: 'solid-verbs conformance'; version: string };
  target: string;
  run_id: string;
  started_at: string;
  duration_ms: number;
  options: {
    key: boolean;
    allow_writes: boolean;
    mcp: string | null;
    ucp: boolean;
    sections: SectionId[];
  };
  /** HTTP requests and MCP calls made (bounded by maxRequests). */
  requests: number;
  summary: Summary;
  sections: Array<{ id: SectionId | 'run'; title: string; summary: Summary }>;
  results: CheckResult[];
}

/** How the kit reaches an MCP server. */
export type McpTarget =
  | string
  | {
      /** A connected-on-demand transport (tests, in-process servers). */
      transport: () => Transport | Promise<Transport>;
      label?: string;
    };

/** Options of a run (the CLI's flags). */
export interface ConformanceOptions {
  /** Base URL of the server, e.g. http://127.0.0.1:4400. */
  baseUrl: string;
  /** API key (sk_solid_…); without one only the keyless checks run. */
  apiKey?: string;
  /** Run the write sections with the declared test verbs. */
  allowWrites?: boolean;
  /** MCP: a Streamable HTTP URL, a stdio command line (run with the user's environment), or a transport. */
  mcp?: McpTarget;
  /** Extra environment for a stdio `mcp` command (besides process.env and SOLID_API_KEY). */
  mcpEnv?: Record<string, string>;
  /** Run the UCP section. */
  ucp?: boolean;
  /** A trusted UCP platform key (private JWK with kid) to sign with, instead of a generated one. */
  ucpKey?: Record<string, unknown>;
  /** The profile URL of that platform (UCP-Agent), with ucpKey. */
  ucpProfileUrl?: string;
  /** A declaration (parsed document or a URL / file path) instead of the server's. */
  declaration?: unknown;
  /** Only these sections (default all). */
  only?: SectionId[];
  /** Per request (ms, default 15 000). */
  timeoutMs?: number;
  /** The whole run (ms, default 300 000). */
  budgetMs?: number;
  /** HTTP requests plus MCP calls (default 600). */
  maxRequests?: number;
  /** The largest answer read (bytes after decompression, default 16 MiB); a larger one fails its check. */
  maxResponseBytes?: number;
  /** Progress lines (check ids as they finish). */
  onResult?: (result: CheckResult) => void;
  /** Fixed run id (tests); default 8 random hex digits. */
  runId?: string;
}
