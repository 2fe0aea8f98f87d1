/**
 * Infrastructure verbs (category `infrastructure`): the company's managed server (droplet).
 * infrastructure_diagnose (aggregate; CLI `solid infra diagnose`) answers the upstream example's
 * members (droplet_id, size, size_slug, region, ip, overall, health{…}, resources{…}, queue_depth,
 * recommendation) plus entity_id / entity_type / data so it is also a valid aggregate.
 * infrastructure_resize and infrastructure_scale_workers change production capacity and the
 * hosting bill: WRITE_FINANCIAL (admin + typed phrase "RESIZE droplet to MEDIUM", "SCALE celery
 * workers by +2"), reversible, with rollback handles `infra:resize:<droplet_id>:<previous size
 * slug>` and `infra:workers:<droplet_id>:<previous count>`. Previews and an explain complete the loop.
 *
 * Reasons: no_managed_droplet (the tenant has no droplet; hint), not_found ("droplet 9 not
 * found"), same_size, workers_out_of_range, invalid_input.
 * Spec: spec/shapes.md §aggregate §preview §explain §receipt, spec/receipts.md §rollback_handle.
 */
import { formatCents } from '../../runtime/consent/typed-phrase.ts';
import type { VerbContext } from '../../runtime/verb.ts';
import { DomainError, invalidInput, notFound } from '../data/domain-error.ts';
import {
  getDropletById,
  requireCompanyDroplet,
  resizeDroplet,
  scaleWorkers,
  type Droplet,
} from '../data/infrastructure.ts';
import { num } from '../data/row-values.ts';
import { DROPLET_SIZE_NAMES, DROPLET_SIZES, type DropletSizeName } from '../schema.ts';
import { valueWords } from './change-words.ts';
import { defineBusinessVerb } from './business-verb.ts';
import { buildCausalChain, chainForOutput, describeActor } from './causal-chain.ts';
import { dropletView } from './entity-views.ts';
import { enumProp, idProp, objectSchema } from './input-schema.ts';

/** Jobs one celery worker drains comfortably; a deeper queue asks for more workers. */
export const JOBS_PER_WORKER = 25;
/** Resource use (percent) from which a resize or clean-up is recommended. */
export const RESOURCE_ALERT_PCT = 85;

async function dropletOf(ctx: VerbContext, dropletId: number | undefined): Promise<Droplet> {
  if (dropletId === undefined) return requireCompanyDroplet(ctx.db, ctx.principal.company_id);
  const d = await getDropletById(ctx.db, ctx.principal.company_id, dropletId);
  if (d === undefined) throw notFound('droplet', dropletId, 'Omit droplet_id to use the company droplet.');
  return d;
}

function nextSize(size: DropletSizeName): DropletSizeName | undefined {
  return DROPLET_SIZE_NAMES[DROPLET_SIZE_NAMES.indexOf(size) + 1];
}

interface Diagnosis {
  overall: 'healthy' | 'degraded' | 'down';
  failing: string[];
  recommendation: string;
  actions: Array<{ verb: string; args: Record<string, unknown>; why: string }>;
}

/** Health verdict and recommendations for a droplet (pure; thresholds above). */
export function diagnose(d: Droplet): Diagnosis {
  const failing = (Object.entries(d.health) as Array<[string, boolean]>)
    .filter(([, ok]) => !ok)
    .map(([name]) => name);
  const max = DROPLET_SIZES[d.size].max_workers;
  const hot = Math.max(d.cpu_pct, d.memory_pct);
  const overall =
    failing.includes('backend') || failing.includes('database')
      ? 'down'
      : failing.length > 0 || hot >= 90 || d.disk_pct >= 90
        ? 'degraded'
        : 'healthy';
  const actions: Diagnosis['actions'] = [];
  const notes: string[] = [];
  if (failing.length > 0) notes.push(`Failing health checks: ${failing.join(', ')}.`);
  const wanted = Math.ceil(d.queue_depth / JOBS_PER_WORKER);
  if (wanted > d.workers) {
    if (d.workers < max) {
      const delta = Math.min(max, wanted) - d.workers;
      actions.push({
        verb: 'infrastructure_scale_workers',
        args: { delta },
        why: `queue depth ${d.queue_depth} needs about ${wanted} workers (${JOBS_PER_WORKER} jobs each)`,
      });
      notes.push(`Queue backlog of ${d.queue_depth} jobs: scale celery workers by +${delta}.`);
    } else if (nextSize(d.size) !== undefined) {
      actions.push({
        verb: 'infrastructure_resize',
        args: { size: nextSize(d.size) },
        why: `the ${d.size} size runs at most ${max} workers`,
      });
      notes.push(
        `Queue backlog of ${d.queue_depth} jobs and ${d.size} is at its worker limit: resize to ${nextSize(d.size)}.`,
      );
    }
  }
  if (
    hot >= RESOURCE_ALERT_PCT &&
    nextSize(d.size) !== undefined &&
    !actions.some((a) => a.verb === 'infrastructure_resize')
  ) {
    actions.push({
      verb: 'infrastructure_resize',
      args: { size: nextSize(d.size) },
      why: `CPU ${d.cpu_pct}% / memory ${d.memory_pct}%`,
    });
    notes.push(`CPU ${d.cpu_pct}% and memory ${d.memory_pct}%: resize to ${nextSize(d.size)}.`);
  }
  if (d.disk_pct >= RESOURCE_ALERT_PCT) notes.push(`Disk at ${d.disk_pct}%: rotate logs and old backups.`);
  return {
    overall,
    failing,
    recommendation: notes.length === 0 ? 'Healthy. No action recommended.' : notes.join(' '),
    actions,
  };
}

export const infrastructureDiagnose = defineBusinessVerb<{ droplet_id?: number }>({
  name: 'infrastructure_diagnose',
  title: 'Diagnose the managed server',
  description:
    "Check the company's managed server (droplet) in one call: size and slug, region, IP, the health of each service (backend, frontend, database, redis, mcp), CPU / memory / disk use in percent, background job queue depth and workers, an overall verdict (healthy, degraded, down) and a plain recommendation with ready-to-use verb calls (infrastructure_scale_workers, infrastructure_resize). A company without a managed server answers no_managed_droplet.",
  shape: 'aggregate',
  category: 'infrastructure',
  input: objectSchema({ droplet_id: idProp('A droplet of the company; default: its managed droplet.') }),
  idempotent: true,
  webmcp_surfaces: ['dashboard', 'developer'],
  cli: { command: ['infra', 'diagnose'] },
  async handler(ctx, args) {
    const d = await dropletOf(ctx, args.droplet_id);
    ctx.setEntity('droplet', d.id);
    const dx = diagnose(d);
    return {
      droplet_id: d.id,
      size: d.size,
      size_slug: d.size_slug,
      region: d.region,
      ip: d.ip,
      overall: dx.overall,
      health: { ...d.health, overall: dx.overall },
      resources: { cpu_pct: d.cpu_pct, memory_pct: d.memory_pct, disk_pct: d.disk_pct },
      queue_depth: d.queue_depth,
      recommendation: dx.recommendation,
      recommended_actions: dx.actions,
      entity_id: d.id,
      entity_type: 'droplet',
      data: { ...dropletView(d), failing_services: dx.failing },
      fetched_at: ctx.now.toISOString(),
    };
  },
});

// ---------------------------------------------------------------------------------------------
// Resize

interface ResizeArgs {
  size: DropletSizeName;
  droplet_id?: number;
}

const resizeInput = objectSchema(
  {
    size: enumProp(
      DROPLET_SIZE_NAMES,
      'Target size: SMALL (2 vCPU / 4 GB), MEDIUM (4 / 8), LARGE (8 / 16), XLARGE (8 / 32).',
    ),
    droplet_id: idProp('Default: the company droplet.'),
  },
  ['size'],
);

function sizeFacts(size: DropletSizeName, workers: number): Record<string, unknown> {
  const s = DROPLET_SIZES[size];
  return {
    size,
    size_slug: s.slug,
    vcpus: s.vcpus,
    memory_gb: s.memory_gb,
    disk_gb: s.disk_gb,
    monthly_price_cents: s.monthly_price_cents,
    workers,
    max_workers: s.max_workers,
  };
}

export const infrastructureResize = defineBusinessVerb<ResizeArgs>({
  name: 'infrastructure_resize',
  title: 'Resize the managed server',
  description:
    'Resize the managed server (droplet) to SMALL, MEDIUM, LARGE or XLARGE: CPU, memory and the monthly price change. An admin must type the phrase shown, e.g. "RESIZE droplet to MEDIUM". Refused with same_size, or workers_out_of_range when shrinking below the running workers. Reversible: audit.revert resizes back (rollback_handle infra:resize:<droplet>:<previous size>). Preview with infrastructure.preview_resize.',
  shape: 'receipt',
  category: 'infrastructure',
  consent: 'WRITE_FINANCIAL',
  preview: 'infrastructure.preview_resize',
  input: resizeInput,
  open_world: true,
  webmcp_surfaces: ['dashboard', 'developer'],
  phrase: (a) => `RESIZE droplet to ${a.size}`,
  summary: (a) =>
    `Resize the droplet to ${a.size} (${DROPLET_SIZES[a.size].slug}, ${formatCents(DROPLET_SIZES[a.size].monthly_price_cents)}/month).`,
  async handler(ctx, args) {
    const d = await dropletOf(ctx, args.droplet_id);
    const { previous_size, previous_size_slug, droplet } = await resizeDroplet(
      ctx.db,
      ctx.principal.company_id,
      d.id,
      args.size,
      ctx.now,
    );
    ctx.setEntity('droplet', droplet.id);
    ctx.emit({
      type: 'droplet.resized',
      entity_type: 'droplet',
      entity_id: droplet.id,
      payload: { previous_size, previous_size_slug, size: droplet.size, size_slug: droplet.size_slug },
    });
    ctx.setRollback(`infra:resize:${droplet.id}:${previous_size_slug}`, {
      droplet_id: droplet.id,
      previous_size,
    });
    return {
      status: 'resized',
      droplet_id: droplet.id,
      previous_size,
      new_size: droplet.size,
      previous_size_slug,
      new_size_slug: droplet.size_slug,
      previous_monthly_price_cents: DROPLET_SIZES[previous_size].monthly_price_cents,
      monthly_price_cents: DROPLET_SIZES[droplet.size].monthly_price_cents,
    };
  },
  revert: {
    describe: ({ rollback, args }) =>
      `Size of droplet #${String(rollback.droplet_id)}: ${valueWords('size', rollback.previous_size)} → ${valueWords('size', args.size)}`,
    async handler(ctx, original) {
      const r = original.rollback as { droplet_id: number; previous_size: DropletSizeName };
      const { previous_size, droplet } = await resizeDroplet(
        ctx.db,
        ctx.principal.company_id,
        num(r.droplet_id),
        r.previous_size,
        ctx.now,
      );
      ctx.emit({
        type: 'droplet.resized',
        entity_type: 'droplet',
        entity_id: droplet.id,
        payload: {
          previous_size,
          previous_size_slug: DROPLET_SIZES[previous_size].slug,
          size: droplet.size,
          size_slug: droplet.size_slug,
          revert_of: original.audit_id,
        },
      });
      return {
        revert_action: `resized droplet ${droplet.id} back from ${previous_size} to ${droplet.size} (${droplet.size_slug})`,
        size: droplet.size,
        size_slug: droplet.size_slug,
      };
    },
  },
});

export const infrastructurePreviewResize = defineBusinessVerb<ResizeArgs>({
  name: 'infrastructure.preview_resize',
  title: 'Preview a server resize',
  description:
    'Show the droplet before and after infrastructure_resize with the same arguments — vCPUs, memory, disk, worker limit and monthly price in cents — without resizing; refuses as the resize would (same_size, workers_out_of_range, no_managed_droplet).',
  shape: 'preview',
  category: 'infrastructure',
  input: resizeInput,
  idempotent: true,
  webmcp_surfaces: ['dashboard', 'developer'],
  async handler(ctx, args) {
    const d = await dropletOf(ctx, args.droplet_id);
    const target = DROPLET_SIZES[args.size];
    if (d.size === args.size)
      throw new DomainError(
        'same_size',
        `droplet ${d.id} is already ${args.size} (${d.size_slug})`,
        'Pick another size.',
      );
    if (d.workers > target.max_workers)
      throw new DomainError(
        'workers_out_of_range',
        `droplet ${d.id} runs ${d.workers} workers; ${args.size} runs at most ${target.max_workers}`,
        `Scale workers down to ${target.max_workers} first.`,
      );
    const current = DROPLET_SIZES[d.size];
    const up = DROPLET_SIZE_NAMES.indexOf(args.size) > DROPLET_SIZE_NAMES.indexOf(d.size);
    return {
      current: { droplet_id: d.id, ...sizeFacts(d.size, d.workers) },
      projected: { droplet_id: d.id, ...sizeFacts(args.size, d.workers) },
      delta: {
        monthly_price_change_cents: target.monthly_price_cents - current.monthly_price_cents,
        vcpus: target.vcpus - current.vcpus,
        memory_gb: target.memory_gb - current.memory_gb,
        max_workers: target.max_workers - current.max_workers,
      },
      reversible: infrastructureResize.revert !== undefined,
      rollback_handle_preview: `infra:resize:${d.id}:${d.size_slug}`,
      notes:
        `${up ? 'Upsize' : 'Downsize'} from ${d.size} to ${args.size}: the droplet restarts (about a minute of downtime) and the bill changes by ${formatCents(target.monthly_price_cents - current.monthly_price_cents)} per month. ` +
        `audit.revert resizes back to ${d.size} (${d.size_slug}).`,
    };
  },
});

// ---------------------------------------------------------------------------------------------
// Workers

interface ScaleArgs {
  delta: number;
  droplet_id?: number;
}

const scaleInput = objectSchema(
  {
    delta: {
      type: 'integer',
      minimum: -31,
      maximum: 31,
      description:
        'Workers to add (> 0) or remove (< 0); never 0. The result stays within 1 and the size’s limit.',
    },
    droplet_id: idProp('Default: the company droplet.'),
  },
  ['delta'],
);

const signed = (n: number): string => (n > 0 ? `+${n}` : String(n));

export const infrastructureScaleWorkers = defineBusinessVerb<ScaleArgs>({
  name: 'infrastructure_scale_workers',
  title: 'Scale background workers',
  description:
    'Add or remove celery (background job) workers on the managed server, within 1 and the size’s limit (workers_out_of_range otherwise: resize first). Changes production capacity and cost, so an admin must type the phrase shown, e.g. "SCALE celery workers by +2". Reversible: rollback_handle infra:workers:<droplet>:<previous count>; audit.revert restores the previous count. Preview with infrastructure.preview_scale_workers.',
  shape: 'receipt',
  category: 'infrastructure',
  consent: 'WRITE_FINANCIAL',
  preview: 'infrastructure.preview_scale_workers',
  input: scaleInput,
  open_world: true,
  webmcp_surfaces: ['dashboard', 'developer'],
  phrase: (a) => `SCALE celery workers by ${signed(a.delta)}`,
  summary: (a) => `Scale celery workers by ${signed(a.delta)}.`,
  async handler(ctx, args) {
    const d = await dropletOf(ctx, args.droplet_id);
    const { previous_workers, droplet } = await scaleWorkers(
      ctx.db,
      ctx.principal.company_id,
      d.id,
      args.delta,
      ctx.now,
    );
    ctx.setEntity('droplet', droplet.id);
    ctx.emit({
      type: 'droplet.workers_scaled',
      entity_type: 'droplet',
      entity_id: droplet.id,
      payload: { previous_workers, workers: droplet.workers, delta: args.delta },
    });
    ctx.setRollback(`infra:workers:${droplet.id}:${previous_workers}`, {
      droplet_id: droplet.id,
      previous_workers,
    });
    return {
      status: 'scaled',
      droplet_id: droplet.id,
      previous_workers,
      workers: droplet.workers,
      max_workers: DROPLET_SIZES[droplet.size].max_workers,
      queue_depth: droplet.queue_depth,
    };
  },
  revert: {
    describe: ({ rollback, args }) =>
      `Workers of droplet #${String(rollback.droplet_id)}: ${String(rollback.previous_workers)} → ${Number(rollback.previous_workers) + Number(args.delta)}`,
    async handler(ctx, original) {
      const r = original.rollback as { droplet_id: number; previous_workers: number };
      const c = ctx.principal.company_id;
      const d = await getDropletById(ctx.db, c, num(r.droplet_id));
      if (d === undefined) throw notFound('droplet', r.droplet_id);
      if (d.workers === r.previous_workers)
        throw new DomainError('no_change', `droplet ${d.id} already runs ${d.workers} workers`);
      const { previous_workers, droplet } = await scaleWorkers(
        ctx.db,
        c,
        d.id,
        r.previous_workers - d.workers,
        ctx.now,
      );
      ctx.emit({
        type: 'droplet.workers_scaled',
        entity_type: 'droplet',
        entity_id: droplet.id,
        payload: {
          previous_workers,
          workers: droplet.workers,
          delta: droplet.workers - previous_workers,
          revert_of: original.audit_id,
        },
      });
      return {
        revert_action: `scaled celery workers back from ${previous_workers} to ${droplet.workers}`,
        workers: droplet.workers,
      };
    },
  },
});

export const infrastructurePreviewScaleWorkers = defineBusinessVerb<ScaleArgs>({
  name: 'infrastructure.preview_scale_workers',
  title: 'Preview scaling workers',
  description:
    'Show the workers and queue capacity before and after infrastructure_scale_workers with the same arguments, without scaling; refuses as the scaling would (workers_out_of_range).',
  shape: 'preview',
  category: 'infrastructure',
  input: scaleInput,
  idempotent: true,
  webmcp_surfaces: ['dashboard', 'developer'],
  async handler(ctx, args) {
    if (args.delta === 0) throw invalidInput('delta', 'must be a non-zero integer');
    const d = await dropletOf(ctx, args.droplet_id);
    const max = DROPLET_SIZES[d.size].max_workers;
    const next = d.workers + args.delta;
    if (next < 1 || next > max)
      throw new DomainError(
        'workers_out_of_range',
        `droplet ${d.id} would run ${next} workers; ${d.size} runs 1..${max}`,
        next > max ? 'Resize the droplet to a larger size first.' : 'Keep at least one worker.',
      );
    return {
      current: {
        droplet_id: d.id,
        workers: d.workers,
        max_workers: max,
        queue_depth: d.queue_depth,
        queue_capacity: d.workers * JOBS_PER_WORKER,
      },
      projected: {
        droplet_id: d.id,
        workers: next,
        max_workers: max,
        queue_depth: d.queue_depth,
        queue_capacity: next * JOBS_PER_WORKER,
      },
      delta: { workers: args.delta },
      reversible: infrastructureScaleWorkers.revert !== undefined,
      rollback_handle_preview: `infra:workers:${d.id}:${d.workers}`,
      notes: `Workers ${d.workers} → ${next} (limit ${max} on ${d.size}). audit.revert restores ${d.workers}.`,
    };
  },
});

// ---------------------------------------------------------------------------------------------
// Explain

export const infrastructureExplainDropletState = defineBusinessVerb<{ droplet_id?: number }>({
  name: 'infrastructure.explain_droplet_state',
  title: 'Explain the server state',
  description:
    'Explain how the managed server reached its current size and worker count: provisioning, every resize and worker scaling from the event log with who did it and when, refused attempts, and a plain-language reasoning with the current diagnosis.',
  shape: 'explain',
  category: 'infrastructure',
  input: objectSchema({ droplet_id: idProp('Default: the company droplet.') }),
  idempotent: true,
  webmcp_surfaces: ['dashboard', 'developer'],
  async handler(ctx, args) {
    const d = await dropletOf(ctx, args.droplet_id);
    ctx.setEntity('droplet', d.id);
    const chain = await buildCausalChain(
      ctx.db,
      ctx.principal.company_id,
      { type: 'droplet', id: d.id, verbs: ['infrastructure_resize', 'infrastructure_scale_workers'] },
      [{ type: 'droplet', ids: [d.id] }],
    );
    const dx = diagnose(d);
    const events = chain.filter((i) => i.source === 'event');
    const parts = [
      `Droplet ${d.id} (${d.name}) is ${d.size} (${d.size_slug}) in ${d.region} with ${d.workers} celery worker(s); it is ${dx.overall}.`,
    ];
    for (const e of events) parts.push(`${e.timestamp}: ${e.detail} (${describeActor(e.actor)}).`);
    const refused = chain.filter(
      (i) => i.source === 'audit' && (i.status === 'denied' || i.status === 'failed'),
    );
    if (refused.length > 0)
      parts.push(
        `${refused.length} attempt(s) were refused or failed: ${[...new Set(refused.map((r) => `${r.action} ${r.detail}`))].join('; ')}.`,
      );
    parts.push(dx.recommendation);
    return {
      entity_id: d.id,
      entity_type: 'droplet',
      current_state: { ...dropletView(d), overall: dx.overall, health: d.health },
      causal_chain: chainForOutput(chain),
      reasoning: parts.join(' '),
    };
  },
});

export const infrastructureVerbs = [
  infrastructureDiagnose,
  infrastructureResize,
  infrastructurePreviewResize,
  infrastructureScaleWorkers,
  infrastructurePreviewScaleWorkers,
  infrastructureExplainDropletState,
];
