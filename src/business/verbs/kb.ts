/**
 * Knowledge-base verbs (category `kb`): search and read the company's articles (customer-facing
 * too: the portal, the tenant's site and public pages expose them through WebMCP, buyer agents
 * through UCP), and publish an article (create or replace by slug; reversible, previewable).
 *
 * Reasons: not_found ("kb article 3 not found"), invalid_input.
 * Spec: spec/shapes.md §aggregate §preview §receipt, spec/transports.md §webmcp.
 */
import { DomainError, notFound } from '../data/domain-error.ts';
import {
  deleteKbArticle,
  getKbArticle,
  getKbArticleBySlug,
  searchKbArticles,
  slugify,
  upsertKbArticle,
  type KbArticle,
} from '../data/kb.ts';
import { num } from '../data/row-values.ts';
import { defineBusinessVerb } from './business-verb.ts';
import { collectionResult } from './collection-result.ts';
import { kbArticleView } from './entity-views.ts';
import { idProp, objectSchema, PAGE_PROPS, textProp } from './input-schema.ts';

const SLUG = {
  type: 'string',
  pattern: '^[a-z0-9]+(?:-[a-z0-9]+)*$',
  maxLength: 80,
  description: 'URL slug, lower-case words joined by "-", e.g. refund-policy.',
};

export const kbSearch = defineBusinessVerb<{ query?: string; tag?: string; limit?: number; offset?: number }>(
  {
    name: 'kb.search',
    title: 'Search the knowledge base',
    description:
      "Search the company's knowledge base (policies, pricing, troubleshooting, checklists) by text in the title or body, or by tag (billing, policy, plumbing, hvac, emergency…). Title matches come first. Answers excerpts; read a whole article with kb.get_article. Use it to answer a customer's question with the company's own policy.",
    shape: 'aggregate',
    category: 'kb',
    input: objectSchema({
      query: textProp('Words to look for, e.g. "refund".', 200),
      tag: textProp('Only articles with this tag.', 40),
      ...PAGE_PROPS,
    }),
    idempotent: true,
    untrusted_content: true,
    webmcp_surfaces: ['dashboard', 'portal', 'tenant-site', 'public'],
    async handler(ctx, args) {
      const page = await searchKbArticles(ctx.db, ctx.principal.company_id, args);
      return collectionResult(
        'kb_articles',
        { ...page, items: page.items.map((a) => kbArticleView(a, false)) },
        args as Record<string, unknown>,
        ctx.now,
      );
    },
  },
);

export const kbGetArticle = defineBusinessVerb<{ article_id?: number; slug?: string }>({
  name: 'kb.get_article',
  title: 'Read a knowledge-base article',
  description:
    'Read one knowledge-base article in full (title, body, tags), by id or by slug (e.g. refund-policy), to quote the company’s own policy or procedure accurately.',
  shape: 'aggregate',
  category: 'kb',
  input: objectSchema({ article_id: idProp('The article id (give this or slug).'), slug: SLUG }),
  idempotent: true,
  untrusted_content: true,
  webmcp_surfaces: ['dashboard', 'portal', 'tenant-site', 'public'],
  async handler(ctx, args) {
    const c = ctx.principal.company_id;
    if ((args.article_id === undefined) === (args.slug === undefined))
      throw new DomainError('invalid_input', 'article_id: give exactly one of article_id or slug');
    const article =
      args.article_id !== undefined
        ? await getKbArticle(ctx.db, c, args.article_id)
        : await getKbArticleBySlug(ctx.db, c, args.slug!);
    if (article === undefined) throw notFound('kb article', args.article_id ?? args.slug!);
    ctx.setEntity('kb_article', article.id);
    return {
      entity_id: article.id,
      entity_type: 'kb_article',
      data: kbArticleView(article),
      fetched_at: ctx.now.toISOString(),
    };
  },
});

interface PublishArgs {
  title: string;
  body: string;
  tags?: string[];
  slug?: string;
}

const publishInput = objectSchema(
  {
    title: textProp('Article title.', 200),
    body: textProp('Article text (plain text or Markdown).', 50_000),
    tags: {
      type: 'array',
      maxItems: 20,
      items: { type: 'string', minLength: 1, maxLength: 40 },
      description: 'Tags, e.g. ["billing", "policy"].',
    },
    slug: SLUG,
  },
  ['title', 'body'],
);

export const kbPublishArticle = defineBusinessVerb<PublishArgs>({
  name: 'kb.publish_article',
  title: 'Publish a knowledge-base article',
  description:
    'Publish an article: creates it, or replaces the title, body and tags of the article with the same slug (default: the slug of the title). Customer-facing surfaces show it at once. Reversible: audit.revert deletes a created article or restores the previous version. Preview with kb.preview_publish.',
  shape: 'receipt',
  category: 'kb',
  consent: 'WRITE_REVERSIBLE',
  preview: 'kb.preview_publish',
  input: publishInput,
  summary: (a) => `Publish the article "${a.title}" (${a.slug ?? slugify(a.title)}).`,
  async handler(ctx, args) {
    const { created, previous, article } = await upsertKbArticle(
      ctx.db,
      ctx.principal.company_id,
      args,
      ctx.now,
    );
    ctx.setEntity('kb_article', article.id);
    ctx.emit({
      type: created ? 'kb_article.published' : 'kb_article.updated',
      entity_type: 'kb_article',
      entity_id: article.id,
      payload: { slug: article.slug, title: article.title },
    });
    ctx.setRollback(`kb:${article.slug}:${created ? 'created' : 'updated'}`, {
      article_id: article.id,
      created,
      previous:
        previous === undefined
          ? null
          : { slug: previous.slug, title: previous.title, body: previous.body, tags: previous.tags },
    });
    return { status: created ? 'published' : 'updated', article_id: article.id, slug: article.slug, created };
  },
  revert: {
    async handler(ctx, original) {
      const c = ctx.principal.company_id;
      const r = original.rollback as {
        article_id: number;
        created: boolean;
        previous: Pick<KbArticle, 'slug' | 'title' | 'body' | 'tags'> | null;
      };
      if (r.created || r.previous === null) {
        const gone = await deleteKbArticle(ctx.db, c, num(r.article_id));
        ctx.emit({
          type: 'kb_article.deleted',
          entity_type: 'kb_article',
          entity_id: gone.id,
          payload: { slug: gone.slug, title: gone.title },
        });
        return { revert_action: `deleted article ${gone.slug}` };
      }
      const { article } = await upsertKbArticle(ctx.db, c, r.previous, ctx.now);
      ctx.emit({
        type: 'kb_article.updated',
        entity_type: 'kb_article',
        entity_id: article.id,
        payload: { slug: article.slug, title: article.title, revert_of: original.audit_id },
      });
      return { revert_action: `restored the previous version of ${article.slug}` };
    },
  },
});

export const kbPreviewPublish = defineBusinessVerb<PublishArgs>({
  name: 'kb.preview_publish',
  title: 'Preview publishing an article',
  description:
    'Show whether kb.publish_article would create an article or replace an existing one (and what changes), without writing. Same arguments.',
  shape: 'preview',
  category: 'kb',
  input: publishInput,
  idempotent: true,
  async handler(ctx, args) {
    const slug = args.slug ?? slugify(args.title);
    if (slug === '') throw new DomainError('invalid_input', 'slug: the title gives an empty slug; pass slug');
    const existing = await getKbArticleBySlug(ctx.db, ctx.principal.company_id, slug);
    return {
      current: existing === undefined ? { article: null } : { article: kbArticleView(existing, false) },
      projected: {
        article: {
          id: existing?.id ?? null,
          slug,
          title: args.title.trim(),
          tags: args.tags ?? [],
          body_chars: args.body.length,
        },
      },
      delta: {
        created: existing === undefined,
        title_changed: existing !== undefined && existing.title !== args.title.trim(),
        body_changed: existing !== undefined && existing.body !== args.body,
      },
      reversible: kbPublishArticle.revert !== undefined,
      notes:
        existing === undefined
          ? 'A new article; audit.revert deletes it.'
          : `Replaces the article "${existing.title}" updated ${existing.updated_at}; audit.revert restores that version.`,
    };
  },
});

export const kbVerbs = [kbSearch, kbGetArticle, kbPublishArticle, kbPreviewPublish];
