/**
 * Verb hints: the runtime facts of a verb that a VerbRecord does not carry (the record stays
 * spec-valid, `additionalProperties: false`), for clients that project the manifest themselves:
 *
 *   title, category          the verb's own (MCP tool title, `solid verbs list`)
 *   consent_class, delegated its consent class, or a gate decided per call from the target
 *   role_floor, tier_floor   who may call it
 *   revertible               it has a revert handler (undo with audit.revert)
 *   idempotent, open_world   MCP idempotentHint / openWorldHint
 *   shape, surfaces          as in the record (also for verbs absent from a surface's manifest)
 *   cli                      the CLI shortcut: command words and positional argument names
 *
 * `hintsOf(verb)` is the one function both modes use: the embedded CLI reads it from the registry,
 * the remote CLI and the MCP bridge from `GET /api/v1/agent/verb-hints`
 * (src/transports/http/verb-hints-route.ts), checking each entry with `hintsProblem`.
 *
 * Spec: spec/transports.md §remote-hints.
 */
import type { CompiledVerb } from './verb.ts';
import {
  ROLES,
  TIERS,
  VALID_SHAPES,
  VALID_SURFACES,
  VERB_CLASSES,
  type Role,
  type Shape,
  type Surface,
  type Tier,
  type VerbClass,
} from '../spec/types.ts';

export const VERB_HINTS_PATH = '/api/v1/agent/verb-hints';

/** A CLI shortcut as a verb declares it. */
export interface CliShortcut {
  command: string[];
  positional?: string[];
}

export interface VerbHints {
  title?: string;
  category: string;
  shape: Shape;
  consent_class: VerbClass;
  delegated: boolean;
  role_floor: Role;
  tier_floor: Tier;
  revertible: boolean;
  idempotent: boolean;
  open_world: boolean;
  surfaces: Surface[];
  cli?: CliShortcut;
}

/** The hints of a compiled verb (pure). */
export function hintsOf(v: CompiledVerb): VerbHints {
  const d = v.definition;
  const out: VerbHints = {
    category: v.category,
    shape: v.shape,
    consent_class: v.consentClass,
    delegated: v.delegated,
    role_floor: v.roleFloor,
    tier_floor: v.tierFloor,
    revertible: v.revertible,
    idempotent: d.idempotent === true,
    open_world: d.open_world === true,
    surfaces: [...v.surfaces],
  };
  if (d.title !== undefined) out.title = d.title;
  if (d.cli !== undefined)
    out.cli = {
      command: [...d.cli.command],
      ...(d.cli.positional !== undefined ? { positional: [...d.cli.positional] } : {}),
    };
  return out;
}

const isStringArray = (x: unknown): x is string[] =>
  Array.isArray(x) && x.every((s) => typeof s === 'string');

/**
 * Check one hints entry received from a server (the client never trusts the wire). Returns the
 * problem, or undefined when the entry is usable.
 */
export function hintsProblem(h: unknown): string | undefined {
  if (h === null || typeof h !== 'object' || Array.isArray(h)) return 'not an object';
  const x = h as Record<string, unknown>;
  if (typeof x.category !== 'string') return 'category is not a string';
  if (!(VALID_SHAPES as readonly unknown[]).includes(x.shape)) return 'shape is not a known shape';
  if (!(VERB_CLASSES as readonly unknown[]).includes(x.consent_class))
    return 'consent_class is not a consent class';
  if (!(ROLES as readonly unknown[]).includes(x.role_floor)) return 'role_floor is not a role';
  if (!(TIERS as readonly unknown[]).includes(x.tier_floor)) return 'tier_floor is not a tier';
  for (const k of ['delegated', 'revertible', 'idempotent', 'open_world'] as const)
    if (typeof x[k] !== 'boolean') return `${k} is not a boolean`;
  if (
    !isStringArray(x.surfaces) ||
    !x.surfaces.every((s) => (VALID_SURFACES as readonly string[]).includes(s))
  )
    return 'surfaces is not a list of surfaces';
  if (x.title !== undefined && typeof x.title !== 'string') return 'title is not a string';
  if (x.cli !== undefined) {
    const c = x.cli as Record<string, unknown> | null;
    if (c === null || typeof c !== 'object' || !isStringArray(c.command) || c.command.length === 0)
      return 'cli.command is not a list of words';
    if (c.positional !== undefined && !isStringArray(c.positional))
      return 'cli.positional is not a list of names';
  }
  return undefined;
}
