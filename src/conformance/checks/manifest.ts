/**
 * Section `manifest`: GET /api/v1/agent/verbs and its records. Read-only, no key.
 * Spec: spec/manifest.md §record, §identity, §consistency, §tool-names, §manifest;
 * spec/transports.md §http-routes.
 */
import { validateOurs } from '../schemas.ts';
import { ALL_SURFACES, surfacesOf, type KitContext, type KitRecord } from '../context.ts';
import { canonicalJson, fail, pass, skip } from '../outcome.ts';
import type { Check } from '../types.ts';
import { VALID_SHAPES } from '../../spec/types.ts';

const NAME = /^[a-zA-Z][a-zA-Z0-9_.]*$/;
const TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;

/** The tool-name projection (spec/manifest.md §tool-names). */
export function toolNameOf(verb: string): string {
  return verb.replace(/\./g, '__');
}

/** Paths where company_id / user_id are declared as properties, at any depth. */
export function identityPaths(schema: unknown, at = ''): string[] {
  const found: string[] = [];
  const walk = (node: unknown, path: string): void => {
    if (node === null || typeof node !== 'object') return;
    if (Array.isArray(node)) {
      node.forEach((n, i) => walk(n, `${path}/${i}`));
      return;
    }
    for (const [k, v] of Object.entries(node)) {
      if (k === 'properties' && v !== null && typeof v === 'object' && !Array.isArray(v)) {
        for (const [name, sub] of Object.entries(v)) {
          if (name === 'company_id' || name === 'user_id') found.push(`${path}/properties/${name}`);
          walk(sub, `${path}/properties/${name}`);
        }
      } else if (k !== 'properties' && k !== 'examples' && k !== 'default' && k !== 'const' && k !== 'enum') {
        walk(v, `${path}/${k}`);
      }
    }
  };
  walk(schema, at);
  return found;
}

function names(records: KitRecord[]): string[] {
  return records.map((r) => r.name);
}

/** Differences between two name sets, as evidence. */
export function setDiff(expected: string[], actual: string[]): { missing: string[]; unexpected: string[] } {
  const a = new Set(actual);
  const e = new Set(expected);
  return {
    missing: expected.filter((n) => !a.has(n)).sort(),
    unexpected: actual.filter((n) => !e.has(n)).sort(),
  };
}

export const manifestChecks: Check[] = [
  {
    id: 'manifest.list',
    section: 'manifest',
    requirement:
      'GET /api/v1/agent/verbs answers 200 with { verbs, total }: total counts the records, which are sorted by name with no name twice.',
    spec: 'spec/transports.md §http-routes',
    async run(ctx) {
      const answer = await ctx.http.get('/api/v1/agent/verbs', { key: false });
      const j = answer.json as { verbs?: unknown; total?: unknown } | undefined;
      if (answer.status !== 200 || !Array.isArray(j?.verbs))
        return fail(`answered HTTP ${answer.status} without a verbs array`, ctx.ev(answer));
      const list = names(j.verbs as KitRecord[]);
      if (j.total !== list.length)
        return fail(
          `total is ${JSON.stringify(j.total)} for ${list.length} records`,
          ctx.ev(answer, { total: j.total }),
        );
      const sorted = [...list].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
      const at = list.findIndex((n, i) => n !== sorted[i]);
      if (at >= 0)
        return fail(
          `records are not sorted by name (${list[at]} at position ${at})`,
          ctx.ev(answer, list.slice(0, at + 2)),
        );
      const dup = list.find((n, i) => list.indexOf(n) !== i);
      if (dup !== undefined) return fail(`${dup} is listed twice`, ctx.ev(answer, { name: dup }));
      if (list.length === 0) return fail('the manifest lists no verb', ctx.ev(answer));
      return pass(`${list.length} records, sorted`, ctx.ev(answer, { total: j.total }));
    },
  },
  {
    id: 'manifest.records',
    section: 'manifest',
    requirement:
      'Every record is valid against the VerbRecord schema (schema/verb-record.json: the nine members and no other).',
    spec: 'spec/manifest.md §record',
    async run(ctx) {
      const all = await ctx.allRecords();
      const bad: Record<string, string[]> = {};
      for (const r of all) {
        const errors = validateOurs('verb-record.json', r);
        if (errors.length > 0) bad[r.name] = errors;
      }
      const n = Object.keys(bad).length;
      if (n > 0)
        return fail(`${n} of ${all.length} records are invalid: ${Object.keys(bad).slice(0, 3).join(', ')}`, {
          request: 'GET /api/v1/agent/verbs?surface=… (every surface)',
          answer: bad,
        });
      return pass(`${all.length} records valid`);
    },
  },
  {
    id: 'manifest.names',
    section: 'manifest',
    requirement:
      "Every verb name matches ^[a-zA-Z][a-zA-Z0-9_.]*$, and its tool name (each . as __) matches ^[a-zA-Z0-9_-]{1,64}$ and is no other verb's.",
    spec: 'spec/manifest.md §tool-names',
    async run(ctx) {
      const all = await ctx.allRecords();
      const problems: string[] = [];
      const byTool = new Map<string, string>();
      for (const r of all) {
        if (!NAME.test(r.name)) problems.push(`${r.name}: the name does not match the pattern`);
        const tool = toolNameOf(r.name);
        if (!TOOL_NAME.test(tool))
          problems.push(`${r.name}: the tool name ${tool} is not ^[a-zA-Z0-9_-]{1,64}$`);
        const other = byTool.get(tool);
        if (other !== undefined) problems.push(`${r.name} and ${other} project onto one tool name ${tool}`);
        byTool.set(tool, r.name);
      }
      if (problems.length > 0)
        return fail(problems[0]!, {
          request: 'GET /api/v1/agent/verbs (every surface)',
          answer: problems.slice(0, 10),
        });
      return pass(`${all.length} names and tool names`);
    },
  },
  {
    id: 'manifest.identity',
    section: 'manifest',
    requirement: 'No input schema declares company_id or user_id, at any depth.',
    spec: 'spec/manifest.md §identity',
    async run(ctx) {
      const all = await ctx.allRecords();
      const found: Record<string, string[]> = {};
      for (const r of all) {
        const paths = identityPaths(r.input_schema, '/input_schema');
        if (paths.length > 0) found[r.name] = paths;
      }
      if (Object.keys(found).length > 0)
        return fail(`${Object.keys(found).join(', ')} declare identity properties`, {
          request: 'GET /api/v1/agent/verbs (every surface)',
          answer: found,
        });
      return pass(`none in ${all.length} input schemas`);
    },
  },
  {
    id: 'manifest.input_schemas',
    section: 'manifest',
    requirement: 'Every input schema compiles as JSON Schema 2020-12 and has root type object.',
    spec: 'spec/manifest.md §record',
    async run(ctx) {
      const all = await ctx.allRecords();
      const bad: Record<string, string> = {};
      for (const r of all) {
        if (r.input_schema?.type !== 'object') {
          bad[r.name] = `root type is ${JSON.stringify(r.input_schema?.type)}`;
          continue;
        }
        const v = ctx.compile(r.input_schema);
        if (typeof v === 'string') bad[r.name] = v;
        if (r.output_schema !== undefined) {
          const o = ctx.compile(r.output_schema);
          if (typeof o === 'string') bad[r.name] = `output_schema: ${o}`;
        }
      }
      if (Object.keys(bad).length > 0)
        return fail(`${Object.keys(bad).length} schemas do not compile: ${Object.keys(bad)[0]}`, {
          request: 'GET /api/v1/agent/verbs (every surface)',
          answer: bad,
        });
      return pass(`${all.length} input schemas compile`);
    },
  },
  {
    id: 'manifest.consistency',
    section: 'manifest',
    requirement:
      'side_effects and requires_consent agree in every record: a read needs no consent, a gated verb is not read-only, a write without consent says why ("No consent gate: …").',
    spec: 'spec/manifest.md §consistency',
    async run(ctx) {
      const all = await ctx.allRecords();
      const bad: string[] = [];
      for (const r of all) {
        if (r.side_effects === 'read' && r.requires_consent === true)
          bad.push(`${r.name}: side_effects read but requires_consent true`);
        // A write that asks no consent must say why in its description (spec/manifest.md §consistency).
        if (
          (r.side_effects === 'write' || r.side_effects === 'mixed') &&
          r.requires_consent === false &&
          !/No consent gate: \S/.test(r.description ?? '')
        )
          bad.push(
            `${r.name}: side_effects ${r.side_effects} but requires_consent false, and no reason given`,
          );
      }
      if (bad.length > 0)
        return fail(bad[0]!, { request: 'GET /api/v1/agent/verbs (every surface)', answer: bad });
      return pass(`${all.length} records consistent`);
    },
  },
  {
    id: 'manifest.surface_filter',
    section: 'manifest',
    requirement:
      '?surface=<s> lists exactly the records whose surfaces (absent: all five) include s, for each of the five surfaces; no surface means http.',
    spec: 'spec/manifest.md §manifest',
    async run(ctx) {
      const all = await ctx.allRecords();
      const evidence = [];
      for (const s of ALL_SURFACES) {
        const { answer, records } = await ctx.records(`?surface=${s}`);
        const expected = all.filter((r) => surfacesOf(r).includes(s)).map((r) => r.name);
        const diff = setDiff(expected, names(records));
        const wrong = records.filter((r) => !surfacesOf(r).includes(s)).map((r) => r.name);
        if (diff.missing.length > 0 || wrong.length > 0)
          return fail(
            `?surface=${s} is not the records on ${s}`,
            ctx.ev(answer, { ...diff, not_on_surface: wrong }),
          );
        evidence.push(`${s}: ${records.length}`);
      }
      const def = await ctx.records();
      const http = await ctx.records('?surface=http');
      const diff = setDiff(names(http.records), names(def.records));
      if (diff.missing.length + diff.unexpected.length > 0)
        return fail('the list without ?surface is not the http list', ctx.ev(def.answer, diff));
      return pass(evidence.join(', '));
    },
  },
  {
    id: 'manifest.shape_filter',
    section: 'manifest',
    requirement:
      '?shape=<shape> lists exactly the http records of that shape, for each shape the server offers.',
    spec: 'spec/transports.md §http-routes',
    async run(ctx) {
      const { records } = await ctx.records('?surface=http');
      const shapes = [...new Set(records.map((r) => r.shape))].filter((s) =>
        (VALID_SHAPES as readonly string[]).includes(s),
      );
      const counts: string[] = [];
      for (const shape of shapes) {
        const answer = await ctx.http.get(`/api/v1/agent/verbs?shape=${encodeURIComponent(shape)}`, {
          key: false,
        });
        const got = ((answer.json as { verbs?: KitRecord[] } | undefined)?.verbs ?? []) as KitRecord[];
        const diff = setDiff(
          records.filter((r) => r.shape === shape).map((r) => r.name),
          names(got),
        );
        if (answer.status !== 200 || diff.missing.length + diff.unexpected.length > 0)
          return fail(`?shape=${shape} is not the http records of shape ${shape}`, ctx.ev(answer, diff));
        counts.push(`${shape} ${got.length}`);
      }
      return pass(counts.join(', '));
    },
  },
  {
    id: 'manifest.bad_filter',
    section: 'manifest',
    requirement: 'An unknown surface or shape filter answers 400 invalid_request.',
    spec: 'spec/transports.md §http-routes',
    async run(ctx) {
      for (const q of ['surface=conformance_no_such_surface', 'shape=conformance_no_such_shape']) {
        const answer = await ctx.http.get(`/api/v1/agent/verbs?${q}`, { key: false });
        ctx.noteEnvelope(answer);
        const reason = (answer.json as { error?: { reason?: unknown } } | undefined)?.error?.reason;
        if (answer.status !== 400 || reason !== 'invalid_request')
          return fail(`?${q} answered HTTP ${answer.status} ${String(reason ?? '')}`, ctx.ev(answer));
      }
      return pass('both answered 400 invalid_request');
    },
  },
  {
    id: 'manifest.etag',
    section: 'manifest',
    requirement:
      'The manifest carries a strong ETag and Cache-Control with a max-age; If-None-Match with that tag answers 304 without a body.',
    spec: 'spec/transports.md §http-routes',
    async run(ctx) {
      const { answer } = await ctx.records();
      const etag = answer.headers.get('etag');
      const cc = answer.headers.get('cache-control') ?? '';
      if (etag === null || etag.startsWith('W/'))
        return fail(`the ETag is ${etag === null ? 'missing' : `weak (${etag})`}`, ctx.ev(answer, { etag }));
      if (!/max-age=\d+/.test(cc))
        return fail(
          `Cache-Control has no max-age: ${JSON.stringify(cc)}`,
          ctx.ev(answer, { 'cache-control': cc }),
        );
      const again = await ctx.http.get('/api/v1/agent/verbs', {
        key: false,
        headers: { 'if-none-match': etag },
      });
      if (again.status !== 304 || again.bytes.length > 0)
        return fail(
          `If-None-Match answered HTTP ${again.status} with ${again.bytes.length} bytes`,
          ctx.ev(again, again.text.slice(0, 200)),
        );
      return pass(`304 for ${etag}`, ctx.ev(again, { status: 304 }));
    },
  },
  {
    id: 'manifest.record_lookup',
    section: 'manifest',
    requirement:
      'GET /api/v1/agent/verbs/{name} answers the same record by verb name and by tool name; an unknown name answers 404 unknown_verb.',
    spec: 'spec/transports.md §http-routes',
    async run(ctx) {
      const { records } = await ctx.records();
      const r = records.find((x) => x.name.includes('.')) ?? records[0];
      if (r === undefined) return skip('the manifest lists no verb');
      for (const name of [r.name, toolNameOf(r.name)]) {
        const answer = await ctx.http.get(`/api/v1/agent/verbs/${encodeURIComponent(name)}`, { key: false });
        if (answer.status !== 200 || canonicalJson(answer.json) !== canonicalJson(r))
          return fail(
            `GET …/verbs/${name} is not the listed record of ${r.name}`,
            ctx.ev(answer, answer.json),
          );
      }
      const answer = await ctx.http.get('/api/v1/agent/verbs/conformance.no_such_verb', { key: false });
      ctx.noteEnvelope(answer);
      const reason = (answer.json as { error?: { reason?: unknown } } | undefined)?.error?.reason;
      if (answer.status !== 404 || reason !== 'unknown_verb')
        return fail(`an unknown name answered HTTP ${answer.status} ${String(reason ?? '')}`, ctx.ev(answer));
      return pass(`${r.name} by both names; unknown → 404`);
    },
  },
];

/** Used by other sections: every record of a surface from the full manifest. */
export async function expectedOn(ctx: KitContext, surface: string): Promise<string[]> {
  return (await ctx.allRecords()).filter((r) => surfacesOf(r).includes(surface)).map((r) => r.name);
}
