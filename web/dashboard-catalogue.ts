/**
 * Dashboard panel: the verb catalogue (GET /api/v1/dashboard/catalog) grouped by category, with a
 * shape filter.
 */
import { byId, el } from './element.ts';
import type { CatalogEntry, DashboardContext } from './dashboard-context.ts';

function render(catalog: CatalogEntry[], shape: string): void {
  const shown = shape === '' ? catalog : catalog.filter((v) => v.shape === shape);
  const byCategory = new Map<string, CatalogEntry[]>();
  for (const v of shown) {
    const list = byCategory.get(v.category) ?? [];
    list.push(v);
    byCategory.set(v.category, list);
  }
  const groups = [...byCategory.entries()].sort(([a], [b]) => a.localeCompare(b));
  byId('catalogue-groups').replaceChildren(
    ...groups.map(([category, verbs]) =>
      el(
        'section',
        { class: 'category', 'data-category': category, 'aria-label': `Category ${category}` },
        el('h3', {}, `${category} (${verbs.length})`),
        el(
          'div',
          { class: 'table-wrap' },
          el(
            'table',
            {},
            el(
              'thead',
              {},
              el(
                'tr',
                {},
                ...['Verb', 'Shape', 'Consent', 'Role floor', 'Description'].map((h) =>
                  el('th', { scope: 'col' }, h),
                ),
              ),
            ),
            el(
              'tbody',
              {},
              ...verbs.map((v) =>
                el(
                  'tr',
                  { 'data-verb': v.name },
                  el('th', { scope: 'row' }, el('code', {}, v.name)),
                  el('td', {}, v.shape),
                  el('td', {}, v.consent_class ?? 'per target'),
                  el('td', {}, v.role_floor),
                  el('td', {}, v.description),
                ),
              ),
            ),
          ),
        ),
      ),
    ),
  );
  byId('catalogue-status').textContent =
    `${shown.length} of ${catalog.length} verbs in ${groups.length} categor${groups.length === 1 ? 'y' : 'ies'}.`;
}

/** Fill the shape filter and render the catalogue. */
export function setupCatalogue(ctx: DashboardContext): void {
  const select = byId<HTMLSelectElement>('catalogue-shape');
  const shapes = [...new Set(ctx.catalog.map((v) => v.shape))].sort();
  select.replaceChildren(
    el('option', { value: '' }, 'all shapes'),
    ...shapes.map((s) => el('option', { value: s }, s)),
  );
  select.onchange = () => render(ctx.catalog, select.value);
  render(ctx.catalog, '');
}
