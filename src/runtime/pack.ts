/**
 * Business packs: a named bundle of migrations, verbs, domain reasons, outbox handlers and an
 * optional seed. A database remembers which packs it serves (runtime_meta "packs"), so every
 * process opening it (`solid serve`, `solid agent dispatch`, `solid mcp`) registers the same verbs.
 *
 * Spec: spec/manifest.md §packs.
 */
import type { Migration } from '../store/store.ts';
import type { VerbDefinition } from './verb.ts';
import type { OutboxHandler, Runtime } from './runtime.ts';

export interface SeedOptions {
  now?: Date;
  onProgress?: (done: number, total: number) => void;
}

export interface Pack {
  name: string;
  description: string;
  migrations: readonly Migration[];
  verbs: readonly VerbDefinition[];
  /** Domain reasons with their HTTP status. */
  reasons?: Record<string, { status?: number; summary: string }>;
  outboxHandlers?: Record<string, OutboxHandler>;
  /** Fill a fresh database with data (demo). Returns facts to print (keys, URLs…). */
  seed?: (rt: Runtime, options: SeedOptions) => Promise<Record<string, unknown>>;
}
