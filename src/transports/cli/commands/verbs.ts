/**
 * `solid verbs list [--json] [--shape S] [--surface S]` and `solid verbs show <verb>`: the
 * manifest, from the same registry every transport projects — the local database's, or a remote
 * server's with --url / SOLID_API_URL (target.ts). Spec: spec/transports.md §cli, §remote.
 */
import type { Command } from 'commander';
import { VALID_SHAPES, VALID_SURFACES } from '../../../spec/types.ts';
import { toToolName } from '../../../runtime/registry.ts';
import { withTarget } from '../target.ts';
import { exitCodeOf, table, type Io } from '../output.ts';
import { printLong } from '../human-output.ts';

export function registerVerbs(program: Command, io: Io, setExit: (code: number) => void): void {
  const verbs = program.command('verbs').description('Inspect the verb manifest');
  verbs
    .command('list')
    .description('List verbs (a table, or VerbRecords with --json)')
    .option('--json', 'print spec-valid VerbRecords as JSON')
    .option('--shape <shape>', `only this shape (${VALID_SHAPES.join(', ')})`)
    .option('--surface <surface>', `only this surface (${VALID_SURFACES.join(', ')})`)
    .action(async (opts: { json?: boolean; shape?: string; surface?: string }) => {
      if (opts.shape !== undefined && !(VALID_SHAPES as readonly string[]).includes(opts.shape)) {
        io.err(`✗ --shape "${opts.shape}" must be one of: ${VALID_SHAPES.join(', ')}`);
        return setExit(2);
      }
      if (opts.surface !== undefined && !(VALID_SURFACES as readonly string[]).includes(opts.surface)) {
        io.err(`✗ --surface "${opts.surface}" must be one of: ${VALID_SURFACES.join(', ')}`);
        return setExit(2);
      }
      await withTarget(program, { warn: io.err }, async (target) => {
        const records = await target.records({
          ...(opts.shape !== undefined ? { shape: opts.shape } : {}),
          ...(opts.surface !== undefined ? { surface: opts.surface } : {}),
        });
        if (opts.json) {
          io.out(JSON.stringify(records, null, 2));
          return;
        }
        const hints = await target.hints().catch(() => ({}) as Awaited<ReturnType<typeof target.hints>>);
        const rows = records.map((r) => {
          const h = hints[r.name];
          return [
            r.name,
            r.shape,
            h === undefined ? '?' : h.delegated ? 'delegated' : h.consent_class,
            h?.category ?? '?',
            r.tier_floor ?? 'starter',
            (r.surfaces ?? []).length === 5 ? 'all' : (r.surfaces ?? []).join(','),
          ];
        });
        printLong(
          io,
          `${table(['VERB', 'SHAPE', 'CLASS', 'CATEGORY', 'TIER', 'SURFACES'], rows)}\n\n${records.length} verbs`,
        );
      });
    });
  verbs
    .command('show <verb>')
    .description('Show one verb: its VerbRecord and runtime facts (class, role floor)')
    .option('--json', 'print the VerbRecord as JSON')
    .action(async (name: string, opts: { json?: boolean }) => {
      await withTarget(program, { warn: io.err }, async (target) => {
        const shown = await target.show(name);
        if ('envelope' in shown) {
          const env = shown.envelope;
          if (opts.json) io.out(JSON.stringify(env, null, 2));
          else io.err(`✗ ${env.error?.message ?? ''} ${env.error?.hint ?? ''}`);
          return setExit(exitCodeOf(env));
        }
        const { record: r, hints: h } = shown;
        if (opts.json) {
          io.out(JSON.stringify(r, null, 2));
          return;
        }
        const props = (r.input_schema.properties ?? {}) as Record<
          string,
          { type?: unknown; description?: string }
        >;
        const required = new Set((r.input_schema.required as string[] | undefined) ?? []);
        io.out(
          [
            `${r.name}  (${r.shape}, ${h === undefined ? 'consent class unknown' : h.delegated ? 'consent delegated to the target' : h.consent_class})`,
            ``,
            r.description,
            ``,
            `side effects: ${r.side_effects}   requires consent: ${r.requires_consent}   role floor: ${h?.role_floor ?? '?'}   tier floor: ${r.tier_floor ?? 'starter'}`,
            `surfaces: ${(r.surfaces ?? []).join(', ')}   tool name: ${toToolName(r.name)}   revertible: ${h?.revertible ?? '?'}`,
            ``,
            'arguments:',
            Object.keys(props).length === 0
              ? '  (none)'
              : table(
                  ['  NAME', 'TYPE', 'REQUIRED', 'DESCRIPTION'],
                  Object.entries(props).map(([k, s]) => [
                    `  ${k}`,
                    JSON.stringify(s.type ?? 'any').replace(/"/g, ''),
                    required.has(k) ? 'yes' : '',
                    s.description ?? '',
                  ]),
                ),
          ].join('\n'),
        );
      });
    });
}
