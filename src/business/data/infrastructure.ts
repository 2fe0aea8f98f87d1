/**
 * The company's managed server (droplet): size, region, health of its services, resource
 * usage, background (celery) workers and queue depth; and the resize / scale-workers writes.
 * Sizes and their limits come from `DROPLET_SIZES` (schema.ts). Percentages are 0..100 floats.
 */
import { parseJson, type Queryable } from '../../store/store.ts';
import { DROPLET_SIZES, DROPLET_SIZE_NAMES, type DropletSize, type DropletSizeName } from '../schema.ts';
import { DomainError, invalidInput, notFound } from './domain-error.ts';
import { isoTime } from './iso-time.ts';
import { num } from './row-values.ts';

/** Whether each service on the droplet answers its health check. */
export interface DropletHealth {
  backend: boolean;
  frontend: boolean;
  database: boolean;
  redis: boolean;
  mcp: boolean;
}

export interface Droplet {
  id: number;
  company_id: number;
  name: string;
  size: DropletSizeName;
  /** Provider slug of the size, e.g. `s-2vcpu-4gb`. */
  size_slug: string;
  region: string;
  ip: string;
  health: DropletHealth;
  cpu_pct: number;
  memory_pct: number;
  disk_pct: number;
  workers: number;
  queue_depth: number;
  created_at: string;
  updated_at: string;
}

const DROPLET_COLUMNS =
  'id, company_id, name, size, size_slug, region, ip, health, cpu_pct, memory_pct, disk_pct, workers, queue_depth, created_at, updated_at';

function toDroplet(row: Record<string, unknown>): Droplet {
  return {
    id: num(row.id),
    company_id: num(row.company_id),
    name: String(row.name),
    size: row.size as DropletSizeName,
    size_slug: String(row.size_slug),
    region: String(row.region),
    ip: String(row.ip),
    health: parseJson<DropletHealth>(row.health),
    cpu_pct: num(row.cpu_pct),
    memory_pct: num(row.memory_pct),
    disk_pct: num(row.disk_pct),
    workers: num(row.workers),
    queue_depth: num(row.queue_depth),
    created_at: String(row.created_at),
    updated_at: String(row.updated_at),
  };
}

/** The company's droplet (its first, by id), or undefined when it has none. */
export async function getDroplet(q: Queryable, companyId: number): Promise<Droplet | undefined> {
  const row = await q.get(
    `SELECT ${DROPLET_COLUMNS} FROM droplets WHERE company_id = ? ORDER BY id LIMIT 1`,
    [companyId],
  );
  return row === undefined ? undefined : toDroplet(row);
}

/** The company's droplet or DomainError `no_managed_droplet`. */
export async function requireCompanyDroplet(q: Queryable, companyId: number): Promise<Droplet> {
  const droplet = await getDroplet(q, companyId);
  if (droplet === undefined)
    throw new DomainError(
      'no_managed_droplet',
      'this company has no managed droplet',
      'Provision a managed server first.',
    );
  return droplet;
}

/** One droplet of the company by id, or undefined. */
export async function getDropletById(
  q: Queryable,
  companyId: number,
  dropletId: number,
): Promise<Droplet | undefined> {
  const row = await q.get(`SELECT ${DROPLET_COLUMNS} FROM droplets WHERE company_id = ? AND id = ?`, [
    companyId,
    dropletId,
  ]);
  return row === undefined ? undefined : toDroplet(row);
}

async function requireDroplet(q: Queryable, companyId: number, dropletId: number): Promise<Droplet> {
  const droplet = await getDropletById(q, companyId, dropletId);
  if (droplet === undefined) throw notFound('droplet', dropletId);
  return droplet;
}

/** The catalogue entry of a size name, or undefined. */
export function dropletSize(size: string): DropletSize | undefined {
  return (DROPLET_SIZE_NAMES as readonly string[]).includes(size)
    ? DROPLET_SIZES[size as DropletSizeName]
    : undefined;
}

/**
 * Resize a droplet (SMALL, MEDIUM, LARGE, XLARGE); returns the previous size and slug (the
 * revert resizes back; rollback handles look like `infra:resize:<id>:<previous slug>`).
 * Throws `invalid_input` (unknown size), `not_found`, `same_size`, `workers_out_of_range`
 * (the current workers exceed what the smaller size can run: scale them down first).
 */
export async function resizeDroplet(
  tx: Queryable,
  companyId: number,
  dropletId: number,
  size: DropletSizeName,
  now: Date,
): Promise<{ previous_size: DropletSizeName; previous_size_slug: string; droplet: Droplet }> {
  const target = dropletSize(size);
  if (target === undefined) throw invalidInput('size', `must be one of ${DROPLET_SIZE_NAMES.join(', ')}`);
  const droplet = await requireDroplet(tx, companyId, dropletId);
  if (droplet.size === size)
    throw new DomainError(
      'same_size',
      `droplet ${dropletId} is already ${size} (${droplet.size_slug})`,
      'Pick another size.',
    );
  if (droplet.workers > target.max_workers) {
    throw new DomainError(
      'workers_out_of_range',
      `droplet ${dropletId} runs ${droplet.workers} workers; ${size} runs at most ${target.max_workers}`,
      `Scale workers down to ${target.max_workers} first.`,
    );
  }
  const row = await tx.get(
    `UPDATE droplets SET size = ?, size_slug = ?, updated_at = ? WHERE company_id = ? AND id = ? RETURNING ${DROPLET_COLUMNS}`,
    [size, target.slug, isoTime(now), companyId, dropletId],
  );
  return { previous_size: droplet.size, previous_size_slug: droplet.size_slug, droplet: toDroplet(row!) };
}

/**
 * Add (`delta` > 0) or remove workers; the result must stay within 1..max_workers of the size.
 * Returns the previous count (revert: scale by −delta). Throws `invalid_input` (delta not a
 * non-zero integer), `not_found`, `workers_out_of_range`.
 */
export async function scaleWorkers(
  tx: Queryable,
  companyId: number,
  dropletId: number,
  delta: number,
  now: Date,
): Promise<{ previous_workers: number; droplet: Droplet }> {
  if (!Number.isSafeInteger(delta) || delta === 0) throw invalidInput('delta', 'must be a non-zero integer');
  const droplet = await requireDroplet(tx, companyId, dropletId);
  const max = DROPLET_SIZES[droplet.size].max_workers;
  const next = droplet.workers + delta;
  if (next < 1 || next > max) {
    throw new DomainError(
      'workers_out_of_range',
      `droplet ${dropletId} would run ${next} workers; ${droplet.size} runs 1..${max}`,
      next > max ? 'Resize the droplet to a larger size first.' : 'Keep at least one worker.',
    );
  }
  const row = await tx.get(
    `UPDATE droplets SET workers = ?, updated_at = ? WHERE company_id = ? AND id = ? RETURNING ${DROPLET_COLUMNS}`,
    [next, isoTime(now), companyId, dropletId],
  );
  return { previous_workers: droplet.workers, droplet: toDroplet(row!) };
}
