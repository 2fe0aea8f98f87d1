/**
 * Shortcut commands: a verb that declares `cli: { command: [...words], positional?: [...] }` gets a
 * first-class command — `solid infra diagnose` runs infrastructure_diagnose, `solid deal create
 * --title "…" --contact-id 7 --amount-cents 120000` runs deals_create, `solid customer-context 42`
 * runs customer.full_context.
 *
 * Source: the registry of the local database (embedded) or, with --url / SOLID_API_URL, the
 * server's cli manifest (`GET /api/v1/agent/verbs?surface=cli`) plus its verb hints
 * (`GET /api/v1/agent/verb-hints`), since a VerbRecord carries no `cli` member. Only verbs on the
 * `cli` surface. They are loaded only when the invocation may need them (no command, `help`, a word
 * that is not a built-in command, or a built-in group's unknown subcommand), so built-in commands
 * never pay for them; they appear in `solid --help` under "Shortcuts:".
 *
 * Flags come from the input schema: `snake_case` → `--kebab-case`; booleans `--flag` / `--no-flag`;
 * integers and numbers are converted when they look like numbers (else passed as text, so the
 * verb's schema answers invalid_input with the path); arrays are repeatable flags; objects take
 * JSON. Every shortcut also takes --args '<json>' (members the flags cannot spell), --json,
 * --confirm, --phrase, --nonce, --idempotency-key, --api-key. Values are validated by the verb's
 * schema through dispatch, never here: one validator, the same envelopes as `agent dispatch`.
 *
 * A shortcut never shadows a built-in command: one whose words reach a built-in leaf command or an
 * existing command path is skipped (as are malformed words and a second verb claiming the same
 * words; the first by verb name wins). A new subcommand under a built-in group (`solid verbs
 * catalog`, `solid approvals queue`) is allowed.
 *
 * Spec: spec/transports.md §cli-shortcuts.
 */
import { Command, InvalidArgumentError } from 'commander';
import type { JsonSchema, VerbRecord } from '../../spec/types.ts';
import type { VerbHints } from '../../runtime/verb-hints.ts';
import { runDispatch, type DispatchFlags } from './commands/agent.ts';
import { parseStrictJson, StrictJsonError } from '../../spec/strict-json.ts';
import { parseArgsJson, printEnvelope, type Io } from './output.ts';
import { LocalTarget, type VerbTarget } from './target.ts';
import { childNamed, commandWords, needsShortcuts, peekOption, peekOptions } from './argv.ts';

export { needsShortcuts };

export const SHORTCUTS_HELP_GROUP = 'Shortcuts:';

/** Options every shortcut has; a schema property with one of these names is reachable via --args only. */
const RESERVED_FLAGS = new Set([
  'args',
  'json',
  'confirm',
  'phrase',
  'nonce',
  'idempotency-key',
  'api-key',
  'help',
  'url',
  'db',
]);
const WORD = /^[a-z][a-z0-9-]*$/;

/** One shortcut to register. */
export interface ShortcutSpec {
  verb: string;
  title?: string;
  command: string[];
  positional: string[];
  inputSchema: JsonSchema;
  /** A read verb (remote calls may be retried). */
  read: boolean;
}

/** What registration did, for tests and `--help`. */
export interface ShortcutReport {
  registered: string[];
  skipped: { verb: string; command: string; why: string }[];
}

/** Shortcut specs from cli-surface records and hints (pure), sorted by verb name. */
export function shortcutSpecs(
  records: readonly VerbRecord[],
  hints: Record<string, VerbHints>,
): ShortcutSpec[] {
  const out: ShortcutSpec[] = [];
  for (const r of records) {
    const h = hints[r.name];
    if (h?.cli === undefined || !(r.surfaces ?? h.surfaces).includes('cli')) continue;
    out.push({
      verb: r.name,
      ...(h.title !== undefined ? { title: h.title } : {}),
      command: h.cli.command,
      positional: h.cli.positional ?? [],
      inputSchema: r.input_schema,
      read: h.consent_class === 'READ' && !h.delegated,
    });
  }
  return out.sort((a, b) => (a.verb < b.verb ? -1 : a.verb > b.verb ? 1 : 0));
}

interface PropSchema {
  type?: unknown;
  description?: string;
  enum?: unknown[];
  items?: { type?: unknown };
  anyOf?: PropSchema[];
  oneOf?: PropSchema[];
}

/** The first non-null JSON type a property accepts ('string' when unknown). */
function typeOf(s: PropSchema | undefined): string {
  if (s === undefined) return 'string';
  const t = Array.isArray(s.type) ? s.type.find((x) => x !== 'null') : s.type;
  if (typeof t === 'string') return t;
  for (const alt of [...(s.anyOf ?? []), ...(s.oneOf ?? [])]) {
    const at = typeOf(alt);
    if (at !== 'null') return at;
  }
  return 'string';
}

const NUMBER = /^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/;

/** Text → value for a property type (numbers only when the text is a number). */
function convert(text: string, type: string): unknown {
  if ((type === 'integer' || type === 'number') && NUMBER.test(text.trim())) return Number(text);
  if (type === 'boolean' && (text === 'true' || text === 'false')) return text === 'true';
  return text;
}

function describe(s: PropSchema | undefined, required: boolean): string {
  const parts = [s?.description ?? ''];
  if (Array.isArray(s?.enum)) parts.push(`(one of: ${s!.enum.filter((v) => v !== null).join(', ')})`);
  if (required) parts.push('(required)');
  return parts.filter((p) => p !== '').join(' ');
}

/**
 * Register the shortcuts on `program`. Returns what was registered and what was skipped (and why).
 */
export function registerShortcuts(
  program: Command,
  io: Io,
  setExit: (code: number) => void,
  specs: readonly ShortcutSpec[],
): ShortcutReport {
  const report: ShortcutReport = { registered: [], skipped: [] };
  const created = new Set<Command>();
  for (const spec of specs) {
    const words = spec.command.join(' ');
    const skip = (why: string) => report.skipped.push({ verb: spec.verb, command: words, why });
    if (spec.command.length === 0 || !spec.command.every((w) => WORD.test(w))) {
      skip('command words must be lowercase letters, digits and dashes');
      continue;
    }
    let parent: Command = program;
    let blocked: string | undefined;
    for (const word of spec.command.slice(0, -1)) {
      const existing = childNamed(parent, word);
      if (existing === undefined) {
        const group = parent
          .command(word)
          .description(`Shortcut commands under "${word}"`)
          .helpGroup(SHORTCUTS_HELP_GROUP);
        created.add(group);
        parent = group;
        continue;
      }
      if (existing.commands.length === 0) {
        blocked = created.has(existing)
          ? `"${word}" is already the shortcut of another verb`
          : `"${word}" is a built-in command`;
        break;
      }
      parent = existing;
    }
    if (blocked !== undefined) {
      skip(blocked);
      continue;
    }
    const last = spec.command[spec.command.length - 1]!;
    const clash = childNamed(parent, last);
    if (clash !== undefined) {
      skip(created.has(clash) ? 'another verb claims these words' : `"${words}" is a built-in command`);
      continue;
    }
    const leaf = defineLeaf(parent, last, spec, program, io, setExit);
    created.add(leaf);
    report.registered.push(words);
  }
  // A shortcut group's one-line help names what it holds: "create → deals_create".
  for (const group of created) {
    const leaves = group.commands.filter((c) => created.has(c));
    if (leaves.length > 0)
      group.description(
        leaves.map((c) => `${c.name()} → ${/runs (\S+)$/.exec(c.description())?.[1] ?? '?'}`).join(', '),
      );
  }
  return report;
}

function defineLeaf(
  parent: Command,
  word: string,
  spec: ShortcutSpec,
  program: Command,
  io: Io,
  setExit: (code: number) => void,
): Command {
  const props = (spec.inputSchema.properties ?? {}) as Record<string, PropSchema>;
  const required = new Set((spec.inputSchema.required as string[] | undefined) ?? []);
  const leaf = parent
    .command(word)
    .description(`${spec.title ?? spec.verb} — runs ${spec.verb}`)
    .helpGroup(SHORTCUTS_HELP_GROUP);
  const positional = spec.positional.filter(
    (p) => props[p] !== undefined || spec.inputSchema.additionalProperties !== false,
  );
  for (const p of positional) leaf.argument(required.has(p) ? `<${p}>` : `[${p}]`, describe(props[p], false));
  /** flag attribute name (commander's camelCase) → property */
  const flagProps = new Map<string, { prop: string; type: string }>();
  for (const [prop, s] of Object.entries(props)) {
    if (positional.includes(prop)) continue;
    const flag = prop.replace(/_/g, '-');
    if (!WORD.test(flag) || RESERVED_FLAGS.has(flag)) continue;
    const type = typeOf(s);
    const attr = flag.replace(/-([a-z0-9])/g, (_, c: string) => c.toUpperCase());
    const help = describe(s, required.has(prop));
    if (type === 'boolean') {
      leaf.option(`--${flag}`, help);
      leaf.option(`--no-${flag}`, `set ${prop} to false`);
    } else if (type === 'integer' || type === 'number') {
      leaf.option(`--${flag} <n>`, help, (v: string) => convert(v, type) as never);
    } else if (type === 'array') {
      const itemType = typeOf(s.items as PropSchema | undefined);
      leaf.option(
        `--${flag} <value>`,
        `${help} (repeat for several)`,
        (v: string, prev: unknown) =>
          [...((prev as unknown[] | undefined) ?? []), convert(v, itemType)] as never,
      );
    } else if (type === 'object') {
      leaf.option(`--${flag} <json>`, `${help} (JSON)`, (v: string) => {
        try {
          return parseStrictJson(v, `--${flag}`) as never;
        } catch (err) {
          const problem = err instanceof StrictJsonError ? err.problem : undefined;
          throw new InvalidArgumentError(
            problem !== undefined
              ? `${problem.message} ${problem.hint}`
              : `not valid JSON: ${(err as Error).message}`,
          );
        }
      });
    } else {
      leaf.option(`--${flag} <value>`, help);
    }
    flagProps.set(attr, { prop, type });
  }
  leaf
    .option('--args <json>', 'more arguments as a JSON object (flags win)')
    .option('--json', 'print the envelope as JSON (the machine contract)')
    .option('--confirm', 'I (the human at this terminal) consent: run the preflight and confirm')
    .option('--phrase <phrase>', 'the typed phrase, exactly as shown')
    .option('--nonce <nonce>', 'nonce from an earlier dispatch_pending answer')
    .option('--idempotency-key <key>', 'replay-safe key (≤ 255 printable ASCII)')
    .option('--api-key <key>', 'API key (default: SOLID_API_KEY)');
  leaf.action(async (...params: unknown[]) => {
    const cmd = params[params.length - 1] as Command;
    const values = params.slice(0, positional.length) as (string | undefined)[];
    const opts = cmd.opts<Record<string, unknown> & DispatchFlags>();
    const base = parseArgsJson(spec.verb, opts.args);
    if (!base.ok) return setExit(printEnvelope(io, base.envelope, Boolean(opts.json)));
    if (base.args === null || typeof base.args !== 'object' || Array.isArray(base.args)) {
      return setExit(
        printEnvelope(
          io,
          {
            ok: false,
            verb: spec.verb,
            error: {
              reason: 'invalid_args',
              message: '--args must be a JSON object.',
              hint: `e.g. --args '{"limit": 5}'`,
            },
          },
          Boolean(opts.json),
        ),
      );
    }
    const args: Record<string, unknown> = { ...(base.args as Record<string, unknown>) };
    for (const [attr, { prop }] of flagProps) if (opts[attr] !== undefined) args[prop] = opts[attr];
    positional.forEach((p, i) => {
      if (values[i] !== undefined) args[p] = convert(values[i]!, typeOf(props[p]));
    });
    setExit(
      await runDispatch(program, io, spec.verb, {
        args: JSON.stringify(args),
        json: opts.json,
        confirm: opts.confirm,
        nonce: opts.nonce,
        phrase: opts.phrase,
        idempotencyKey: opts.idempotencyKey,
        apiKey: opts.apiKey,
        read: spec.read,
      }),
    );
  });
  return leaf;
}

/**
 * Load and register the shortcuts this invocation may need (runCli calls it before parsing). Never
 * fails the invocation: when the source cannot be read, built-in commands work as usual and, if
 * the first word is not a built-in command, a note says why no shortcut matched.
 */
export async function addShortcuts(
  program: Command,
  argv: readonly string[],
  io: Io,
  setExit: (code: number) => void,
): Promise<ShortcutReport | undefined> {
  if (!needsShortcuts(program, argv)) return undefined;
  let target: VerbTarget | undefined;
  try {
    target = await openShortcutSource(argv);
    const [records, hints] = await Promise.all([target.records({ surface: 'cli' }), target.hints()]);
    return registerShortcuts(program, io, setExit, shortcutSpecs(records, hints));
  } catch (err) {
    const [first] = commandWords(argv);
    if (first !== undefined && first !== 'help' && childNamed(program, first) === undefined) {
      io.err(`! shortcut commands unavailable: ${(err as Error).message}`);
    }
    return undefined;
  } finally {
    await target?.close().catch(() => {});
  }
}

async function openShortcutSource(argv: readonly string[]): Promise<VerbTarget> {
  const url = peekOption(argv, 'url') ?? (process.env.SOLID_API_URL?.trim() || undefined);
  if (url !== undefined) {
    const { openRemoteTarget } = await import('./remote-target.ts');
    return openRemoteTarget(url, { apiKey: '' });
  }
  const { openLocal } = await import('./local.ts');
  return new LocalTarget(
    await openLocal({
      db: peekOption(argv, 'db'),
      packFiles: peekOptions(argv, 'pack'),
      config: peekOption(argv, 'config'),
    }),
    null,
  );
}
