/**
 * View "Catalogue": every verb (GET /api/v1/dashboard/catalog), searchable (name, title,
 * description) and filterable by shape, grouped by category in collapsible groups so the page
 * stays short.
 */
import { byId, el } from './element.ts';
import type { CatalogEntry, DashboardContext } from './dashboard-context.ts';

function matches(v: CatalogEntry, q: string): boolean {
  if (q === '') return true;
  return `${v.name} ${v.title ?? ''} ${v.description} ${v.category}`.toLowerCase().includes(q);
}

function render(catalog: CatalogEntry[], shape: string, query: string): void {
  const q = query.trim().toLowerCase();
  const shown = catalog.filter((v) => (shape === '' || v.shape === shape) && matches(v, q));
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
        'details',
        { class: 'category', 'data-category': category, open: q !== '' || groups.length <= 2 },
        el('summary', {}, `${category} (${verbs.length})`),
        el(
          'ul',
          { class: 'verbs' },
          ...verbs.map((v) =>
            el(
              'li',
              { 'data-verb': v.name },
              el('p', { class: 'verb-title' }, v.title ?? v.name, ' ', el('code', {}, v.name)),
              el('p', {}, v.description),
              el(
                'p',
                { class: 'muted' },
                `${v.shape} · ${v.consent_class ?? 'consent per target'} · needs ${v.role_floor}${v.revertible ? ' · can be undone' : ''}`,
              ),
            ),
          ),
        ),
      ),
    ),
  );
  byId('catalogue-status').textContent =
    shown.length === 0
      ? 'No verb matches. Try another word or clear the search.'
      : `${shown.length} of ${catalog.length} verbs in ${groups.length} categor${groups.length === 1 ? 'y' : 'ies'}.`;
}

/** Fill the shape filter, wire the search and render the catalogue. */
export function setupCatalogue(ctx: DashboardContext): void {
  const select = byId<HTMLSelectElement>('catalogue-shape');
  const search = byId<HTMLInputElement>('catalogue-search');
  const shapes = [...new Set(ctx.catalog.map((v) => v.shape))].sort();
  select.replaceChildren(
    el('option', { value: '' }, 'all shapes'),
    ...shapes.map((s) => el('option', { value: s }, s)),
  );
  const update = (): void => render(ctx.catalog, select.value, search.value);
  select.onchange = update;
  search.oninput = update;
  byId<HTMLFormElement>('catalogue-filters').onsubmit = (e) => e.preventDefault();
  update();
}
