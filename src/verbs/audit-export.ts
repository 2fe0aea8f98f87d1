/**
 * audit.export { from, to, format? }  READ (aggregate), admin: this tenant's audit rows of a period
 * with a signed manifest — the same export as `solid audit export` (spec/audit.md §export), for the
 * dashboard's Export button and an admin key over HTTP. `data.rows_file.content` is the rows
 * file's exact text (its SHA-256 is the manifest's digest) and `data.manifest` the manifest to
 * save beside it as `<name>.manifest.json`; `solid audit verify --export` checks both offline.
 * The call is audited like every dispatch: its row is the `audit.export` row of spec/audit.md
 * §export. Not on MCP: an agent has no use for the evidence file.
 *
 * When the rows of the period do not verify in the database, nothing is signed: `data.exported`
 * is false with the findings. Reasons: invalid_input (from/to not date-times, or to ≤ from),
 * result_too_large (more than EXPORT_VERB_MAX_ROWS rows: export from the CLI or a shorter period),
 * role_denied (below admin).
 */
import { defineSystemVerb } from '../runtime/verb.ts';
import { VerbError } from '../runtime/errors.ts';
import { buildAuditExport } from '../runtime/ledger/verify/export.ts';
import type { ExportFormat } from '../runtime/ledger/keys/export-manifest.ts';

/** The most rows one audit.export answer carries (≈ 600 bytes a row: about 12 MB of rows). */
export const EXPORT_VERB_MAX_ROWS = 20_000;

export const auditExport = defineSystemVerb<{ from: string; to: string; format?: ExportFormat }>({
  name: 'audit.export',
  title: 'Export the audit log',
  description:
    "Export this tenant's audit rows of a period (from ≤ created_at < to) with a signed manifest, for an auditor: data.rows_file (name, content) and data.manifest, to save as <name> and <name>.manifest.json and check offline with `solid audit verify --export`. NDJSON verifies row by row; CSV is for spreadsheets. Needs the admin role.",
  shape: 'aggregate',
  category: 'audit',
  role_floor: 'admin',
  surfaces: ['http', 'cli', 'webmcp'],
  webmcp_surfaces: ['dashboard'],
  input: {
    type: 'object',
    properties: {
      from: { type: 'string', format: 'date-time', description: 'First instant (inclusive), ISO 8601.' },
      to: { type: 'string', format: 'date-time', description: 'End instant (exclusive), ISO 8601.' },
      format: {
        type: 'string',
        enum: ['ndjson', 'csv'],
        description: 'Rows file format (default ndjson: verifiable row by row).',
      },
    },
    required: ['from', 'to'],
    additionalProperties: false,
  },
  idempotent: true,
  async handler(ctx, args) {
    const companyId = ctx.principal.company_id;
    const from = new Date(args.from);
    const to = new Date(args.to);
    if (!(to.getTime() > from.getTime()))
      throw new VerbError('invalid_input', `to (${args.to}) must be after from (${args.from}).`, {
        hint: 'e.g. from 2026-11-01T00:00:00Z, to 2026-12-01T00:00:00Z for November.',
      });
    const format = args.format ?? 'ndjson';
    const day = (d: Date) => d.toISOString().slice(0, 10);
    const name = `audit-${companyId}-${day(from)}-${day(to)}.${format}`;
    const chunks: string[] = [];
    const built = await buildAuditExport(
      (fn) => fn(ctx.db),
      ctx.runtime.keys,
      { companyId, from, to, format, now: ctx.now, rowsFile: name, maxRows: EXPORT_VERB_MAX_ROWS },
      (s) => chunks.push(s),
    );
    if (!built.ok && 'limit' in built)
      throw new VerbError(
        'result_too_large',
        `This period holds ${built.rows} audit rows; one answer carries at most ${built.limit}.`,
        { hint: 'Export a shorter period, or the whole period with `solid audit export` on the server.' },
      );
    const data = built.ok
      ? {
          exported: true,
          rows_file: {
            name,
            media_type: format === 'ndjson' ? 'application/x-ndjson' : 'text/csv',
            content: chunks.join(''),
          },
          manifest_file: `${name}.manifest.json`,
          manifest: built.manifest,
        }
      : { exported: false, finding_count: built.finding_count, findings: built.findings };
    return { entity_type: 'audit', entity_id: companyId, data, fetched_at: ctx.now.toISOString() };
  },
});
