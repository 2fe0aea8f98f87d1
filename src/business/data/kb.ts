/**
 * Knowledge-base articles: tenant-scoped reads (by id, by slug, search) and upsert / delete.
 * `slug` is unique per company; an upsert on an existing slug replaces title, body and tags.
 */
import { parseJson, type Queryable } from '../../store/store.ts';
import { invalidInput, notFound } from './domain-error.ts';
import { isoTime } from './iso-time.ts';
import { LIKE_ESCAPE, likePattern } from './like-pattern.ts';
import { pageBounds, toPage, type Page, type PageRequest } from './page.ts';
import { num } from './row-values.ts';

export interface KbArticle {
  id: number;
  company_id: number;
  slug: string;
  title: string;
  body: string;
  tags: string[];
  created_at: string;
  updated_at: string;
}

const KB_COLUMNS = 'id, company_id, slug, title, body, tags, created_at, updated_at';
const SLUG = /^[a-z0-9]+(?:-[a-z0-9]+)*$/;

function toArticle(row: Record<string, unknown>): KbArticle {
  return {
    id: num(row.id),
    company_id: num(row.company_id),
    slug: String(row.slug),
    title: String(row.title),
    body: String(row.body),
    tags: parseJson<string[]>(row.tags) ?? [],
    created_at: String(row.created_at),
    updated_at: String(row.updated_at),
  };
}

/** A URL slug from a title: lower case ASCII words joined by `-`, at most 80 characters. */
export function slugify(title: string): string {
  return title
    .normalize('NFKD')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 80)
    .replace(/-+$/g, '');
}

/** One article of the company, or undefined. */
export async function getKbArticle(
  q: Queryable,
  companyId: number,
  articleId: number,
): Promise<KbArticle | undefined> {
  const row = await q.get(`SELECT ${KB_COLUMNS} FROM kb_articles WHERE company_id = ? AND id = ?`, [
    companyId,
    articleId,
  ]);
  return row === undefined ? undefined : toArticle(row);
}

/** One article of the company by slug, or undefined. */
export async function getKbArticleBySlug(
  q: Queryable,
  companyId: number,
  slug: string,
): Promise<KbArticle | undefined> {
  const row = await q.get(`SELECT ${KB_COLUMNS} FROM kb_articles WHERE company_id = ? AND slug = ?`, [
    companyId,
    slug,
  ]);
  return row === undefined ? undefined : toArticle(row);
}

export interface KbSearch extends PageRequest {
  /** Case-insensitive substring of title or body; title matches rank first. */
  query?: string;
  tag?: string;
}

/** Search the company's knowledge base (title matches first, then most recently updated). */
export async function searchKbArticles(
  q: Queryable,
  companyId: number,
  search: KbSearch = {},
): Promise<Page<KbArticle>> {
  const bounds = pageBounds(search);
  const where = ['company_id = ?'];
  const params: unknown[] = [companyId];
  let rank = '0';
  const rankParams: unknown[] = [];
  if (search.query !== undefined && search.query.trim() !== '') {
    const pattern = likePattern(search.query.trim());
    where.push(`(lower(title) LIKE lower(?) ${LIKE_ESCAPE} OR lower(body) LIKE lower(?) ${LIKE_ESCAPE})`);
    params.push(pattern, pattern);
    rank = `CASE WHEN lower(title) LIKE lower(?) ${LIKE_ESCAPE} THEN 0 ELSE 1 END`;
    rankParams.push(pattern);
  }
  if (search.tag !== undefined) {
    where.push(`tags LIKE ? ${LIKE_ESCAPE}`);
    params.push(likePattern(JSON.stringify(search.tag)));
  }
  const whereSql = where.join(' AND ');
  const total = await q.get<{ n: unknown }>(
    `SELECT COUNT(*) AS n FROM kb_articles WHERE ${whereSql}`,
    params,
  );
  const rows = await q.all(
    `SELECT ${KB_COLUMNS}, ${rank} AS title_rank FROM kb_articles WHERE ${whereSql} ORDER BY title_rank, updated_at DESC, id LIMIT ? OFFSET ?`,
    [...rankParams, ...params, bounds.limit, bounds.offset],
  );
  return toPage(rows.map(toArticle), num(total?.n), bounds);
}

export interface KbArticleInput {
  /** Default: slugify(title). */
  slug?: string;
  title: string;
  body: string;
  tags?: string[];
}

/**
 * Create the article, or replace title, body and tags of the company's article with the same
 * slug. Returns the previous version (undefined when created) for a revert: re-upsert it, or
 * `deleteKbArticle` when `created`. Throws `invalid_input` (title 1..200, body 1..50 000
 * characters, slug lower-case words joined by `-`, at most 20 tags).
 */
export async function upsertKbArticle(
  tx: Queryable,
  companyId: number,
  input: KbArticleInput,
  now: Date,
): Promise<{ created: boolean; previous: KbArticle | undefined; article: KbArticle }> {
  if (typeof input.title !== 'string' || input.title.trim() === '' || input.title.length > 200)
    throw invalidInput('title', 'must be 1..200 characters');
  if (typeof input.body !== 'string' || input.body.trim() === '' || input.body.length > 50_000)
    throw invalidInput('body', 'must be 1..50000 characters');
  const slug = input.slug ?? slugify(input.title);
  if (!SLUG.test(slug) || slug.length > 80)
    throw invalidInput('slug', 'must be lower-case letters and digits joined by "-", at most 80 characters');
  const tags = input.tags ?? [];
  if (
    !Array.isArray(tags) ||
    tags.length > 20 ||
    tags.some((t) => typeof t !== 'string' || t.trim() === '' || t.length > 40)
  ) {
    throw invalidInput('tags', 'must be at most 20 non-empty strings of up to 40 characters');
  }
  const previous = await getKbArticleBySlug(tx, companyId, slug);
  const at = isoTime(now);
  const row = await tx.get(
    `INSERT INTO kb_articles (company_id, slug, title, body, tags, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)
     ON CONFLICT (company_id, slug) DO UPDATE SET title = excluded.title, body = excluded.body, tags = excluded.tags, updated_at = excluded.updated_at
     RETURNING ${KB_COLUMNS}`,
    [companyId, slug, input.title.trim(), input.body, JSON.stringify(tags), at, at],
  );
  return { created: previous === undefined, previous, article: toArticle(row!) };
}

/** Delete an article (the revert of its creation); returns it. Throws `not_found`. */
export async function deleteKbArticle(
  tx: Queryable,
  companyId: number,
  articleId: number,
): Promise<KbArticle> {
  const article = await getKbArticle(tx, companyId, articleId);
  if (article === undefined) throw notFound('kb article', articleId);
  await tx.run('DELETE FROM kb_articles WHERE company_id = ? AND id = ?', [companyId, articleId]);
  return article;
}
