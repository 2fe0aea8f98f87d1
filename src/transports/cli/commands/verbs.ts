/**
 * `solid verbs list [--json] [--shape S] [--surface S]` and `solid verbs show <verb>`: the
 * manifest, from the same registry every transport projects. Spec: spec/transports.md §cli.
 */
import type { Command } from 'commander';
import { VALID_SHAPES, VALID_SURFACES } from '../../../spec/types.ts';
import { openLocal } from '../local.ts';
import { table, type Io } from '../output.ts';

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
      const local = await openLocal({ db: program.opts<{ db?: string }>().db });
      try {
        const records = local.rt.registry.list({ shape: opts.shape, surface: opts.surface });
        if (opts.json) {
          io.out(JSON.stringify(records, null, 2));
          return;
        }
        const rows = records.map((r) => {
          const v = local.rt.registry.get(r.name)!;
          return [r.name, r.shape, v.delegated ? 'delegated' : v.consentClass, v.category, r.tier_floor ?? 'starter', (r.surfaces ?? []).length === 5 ? 'all' : (r.surfaces ?? []).join(',')];
        });
        io.out(table(['VERB', 'SHAPE', 'CLASS', 'CATEGORY', 'TIER', 'SURFACES'], rows));
        io.out(`\n${records.length} verbs`);
      } finally {
        await local.close();
      }
    });
  verbs
    .command('show <verb>')
    .description('Show one verb: its VerbRecord and runtime facts (class, role floor)')
    .option('--json', 'print the VerbRecord as JSON')
    .action(async (name: string, opts: { json?: boolean }) => {
      const local = await openLocal({ db: program.opts<{ db?: string }>().db });
      try {
        const v = local.rt.registry.get(name);
        if (v === undefined) {
          const closest = local.rt.registry.closest(name);
          const env = {
            ok: false,
            verb: name,
            error: { reason: 'unknown_verb', message: `No verb named "${name}" is registered.`, hint: closest.length ? `Did you mean ${closest.join(', ')}?` : 'See `solid verbs list`.' },
          };
          if (opts.json) io.out(JSON.stringify(env, null, 2));
          else io.err(`✗ ${env.error.message} ${env.error.hint}`);
          return setExit(5);
        }
        if (opts.json) {
          io.out(JSON.stringify(v.record, null, 2));
          return;
        }
        const props = (v.inputSchema.properties ?? {}) as Record<string, { type?: unknown; description?: string }>;
        const required = new Set((v.inputSchema.required as string[] | undefined) ?? []);
        io.out(
          [
            `${v.name}  (${v.shape}, ${v.delegated ? 'consent delegated to the target' : v.consentClass})`,
            ``,
            v.record.description,
            ``,
            `side effects: ${v.record.side_effects}   requires consent: ${v.record.requires_consent}   role floor: ${v.roleFloor}   tier floor: ${v.tierFloor}`,
            `surfaces: ${v.surfaces.join(', ')}   tool name: ${v.toolName}   revertible: ${v.revertible}`,
            ``,
            'arguments:',
            Object.keys(props).length === 0
              ? '  (none)'
              : table(
                  ['  NAME', 'TYPE', 'REQUIRED', 'DESCRIPTION'],
                  Object.entries(props).map(([k, s]) => [`  ${k}`, JSON.stringify(s.type ?? 'any').replace(/"/g, ''), required.has(k) ? 'yes' : '', s.description ?? '']),
                ),
          ].join('\n'),
        );
      } finally {
        await local.close();
      }
    });
}
