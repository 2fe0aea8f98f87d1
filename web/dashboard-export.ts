/**
 * "Export for an auditor" on the Activity view: a period and a format, then audit.export (admin and
 * owner; the call is the audited `audit.export` row) and two downloads — the rows file exactly as
 * answered (its SHA-256 is the manifest's digest) and `<name>.manifest.json`, the signed manifest —
 * to check anywhere with `solid audit verify --export` (spec/audit.md §export, docs/compliance.md).
 * Hidden for roles that may not export.
 */
import { byId, el } from './element.ts';
import { describeError, type DashboardContext } from './dashboard-context.ts';

/** What audit.export answers (src/verbs/audit-export.ts). */
type ExportData =
  | {
      exported: true;
      rows_file: { name: string; media_type: string; content: string };
      manifest_file: string;
      manifest: { rows: { count: number; first_seq: number | null; last_seq: number | null } };
    }
  | { exported: false; finding_count: number };

/** Save `text` as a download named `name`. */
function download(name: string, text: string, type: string): void {
  const url = URL.createObjectURL(new Blob([text], { type }));
  const a = el('a', { href: url, download: name, hidden: true });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

/** Midnight at the start of a `yyyy-mm-dd` day in the browser's time zone, as ISO 8601 UTC. */
function dayStart(value: string): string | undefined {
  const d = new Date(`${value}T00:00:00`);
  return Number.isNaN(d.getTime()) ? undefined : d.toISOString();
}

async function runExport(ctx: DashboardContext, form: HTMLFormElement): Promise<void> {
  const status = byId('export-status');
  const data = new FormData(form);
  const from = dayStart(String(data.get('from') ?? ''));
  const toDay = String(data.get('to') ?? '');
  const to = toDay === '' ? undefined : dayStart(toDay);
  if (from === undefined || to === undefined) {
    status.textContent = 'Choose the first and the last day of the period.';
    return;
  }
  // The last day is included: the period ends at the next midnight.
  const end = new Date(Date.parse(to) + 24 * 3600_000).toISOString();
  const format = String(data.get('format') ?? 'ndjson');
  const button = byId<HTMLButtonElement>('export-run');
  button.disabled = true;
  status.textContent = 'Exporting…';
  try {
    const { envelope } = await ctx.call('audit.export', { from, to: end, format });
    if (!envelope.ok) {
      status.textContent = `Could not export: ${describeError(envelope)}`;
      return;
    }
    const d = (envelope.result as { data: ExportData }).data;
    if (!d.exported) {
      status.textContent = `Not exported: the log does not verify for this period (${d.finding_count} finding${d.finding_count === 1 ? '' : 's'}). Run solid audit verify on the server.`;
      return;
    }
    download(d.rows_file.name, d.rows_file.content, d.rows_file.media_type);
    download(d.manifest_file, `${JSON.stringify(d.manifest, null, 2)}\n`, 'application/json');
    const r = d.manifest.rows;
    status.textContent = `Saved ${d.rows_file.name} (${r.count} rows${r.first_seq === null ? '' : `, #${r.first_seq}–#${r.last_seq} of the log`}) and ${d.manifest_file}. Check them with: solid audit verify --export ${d.rows_file.name}`;
  } finally {
    button.disabled = false;
  }
}

let active: DashboardContext | undefined;

/** Show the export form when this session may export, and wire it (once). */
export function setupExport(context: DashboardContext): void {
  const first = active === undefined;
  active = context;
  const panel = byId('export-panel');
  panel.hidden = !context.canUse('audit.export');
  byId('export-status').textContent = '';
  if (!first) return;
  byId<HTMLFormElement>('export-form').addEventListener('submit', (event) => {
    event.preventDefault();
    void runExport(active!, event.target as HTMLFormElement);
  });
}
