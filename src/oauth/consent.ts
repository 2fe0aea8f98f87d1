/**
 * The OAuth consent screen (spec/oauth.md §consent): shown only to a **signed-in human** (a human
 * web session from identity's sign-in routes; an API-key or agent session is refused), who picks
 * for the client:
 *
 *   role        the highest role the agent acts with — never above the human's own (and capped
 *               again at each use by the human's role then)
 *   read_only   reads only, whatever the role
 *   reach       every toolset the role reaches, or only the ticked toolsets and named verbs (the
 *               token's principal gets that allow-list as its CredentialScope: the pipeline's
 *               scope step refuses the rest `scope_denied`, as for an API key)
 *   expiry      1, 7, 30 or 90 days; the grant and every token of it end then
 *
 * The page says in plain words what the agent will be able to do and which actions still ask the
 * human (confirmations, typed phrases and approvals: an OAuth token is an agent credential and
 * can never approve, type a phrase that counts, change consent settings or open a session).
 *
 *   GET  /oauth/consent/:uid   the page (401 page without a human session; 400 for an
 *                              unknown or expired authorization request)
 *   POST /oauth/consent/:uid   form: decision (allow|deny), role, read_only, expiry_days, reach
 *                              (all|listed), toolset (repeated), verbs (comma-separated), csrf;
 *                              same-origin Origin and the session's CSRF token required; allow →
 *                              the grant recorded (and audited `oauth.grant` in the tenant), 303 to
 *                              the authorization server, which redirects to the client with a code;
 *                              deny → 303, the client gets `access_denied`
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type Provider from 'oidc-provider';
import type { TransportRuntime as Runtime } from '../transports/runtime-surface.ts';
import { ROLES, type Role } from '../spec/types.ts';
import { VerbError } from '../runtime/errors.ts';
import { checkOrigin, sessionTokenOf } from '../identity/request-guard.ts';
import type { SessionStore, WebSession } from '../identity/session-store.ts';
import { appendHumanAudit } from '../identity/human-audit.ts';
import { GRANT_EXPIRY_DAYS, grantTtlSeconds, insertGrant, keepClientFor, type GrantScope } from './grants.ts';
import { consentPath, escapeHtml, OAUTH_TTL } from './provider.ts';

interface ConsentContext {
  rt: Runtime;
  provider: Provider;
  sessions: SessionStore;
  allowedOrigins: readonly string[];
  /** The resource a request without a resource indicator gets (the server's origin). */
  defaultResource: string;
}

const page = (title: string, body: string) =>
  `<!doctype html><html lang="en"><meta charset="utf-8"><meta name="viewport" content="width=device-width">` +
  `<title>${escapeHtml(title)}</title><style>body{font:16px system-ui,sans-serif;max-width:40rem;margin:2rem auto;padding:0 1rem}` +
  `fieldset{margin:1rem 0}li{margin:.3rem 0}</style><h1>${escapeHtml(title)}</h1>${body}</html>`;

/**
 * The CSP source of a redirect URI for `form-action`: browsers (Chromium) check form-action on
 * every redirect after the post, and Allow/Deny end in a redirect to the client's redirect URI
 * (validated by the authorization server against the client's registration). Its origin for
 * http(s), its scheme for an app's custom scheme (`cursor:`), else none (never a script or
 * local scheme: javascript:, data:, blob:, file:…).
 */
export function formActionSource(redirectUri: unknown): string | undefined {
  if (typeof redirectUri !== 'string') return undefined;
  try {
    const u = new URL(redirectUri);
    if (u.protocol === 'https:' || u.protocol === 'http:') return u.origin;
    if (['javascript:', 'data:', 'blob:', 'file:', 'vbscript:', 'filesystem:'].includes(u.protocol))
      return undefined;
    return /^[a-z][a-z0-9+.-]*:$/.test(u.protocol) ? u.protocol : undefined;
  } catch {
    return undefined;
  }
}

function sendPage(
  reply: FastifyReply,
  status: number,
  title: string,
  body: string,
  /** The client's redirect URI, which the form's post redirects to (formActionSource). */
  redirectUri?: unknown,
): FastifyReply {
  const target = formActionSource(redirectUri);
  return reply
    .code(status)
    .header('content-type', 'text/html; charset=utf-8')
    .header('cache-control', 'no-store')
    .header('x-frame-options', 'DENY')
    .header(
      'content-security-policy',
      `default-src 'none'; style-src 'unsafe-inline'; form-action 'self'${target !== undefined ? ` ${target}` : ''}`,
    )
    .send(page(title, body));
}

/** The human session of the request, or undefined (none, expired, or not a human's). */
async function humanSession(ctx: ConsentContext, request: FastifyRequest): Promise<WebSession | undefined> {
  const s = await ctx.sessions.lookup(sessionTokenOf(request));
  return s !== undefined && s.principal.actor === 'human' ? s : undefined;
}

/** Roles a human may hand on: their own and below. */
function rolesUpTo(role: Role): Role[] {
  return ROLES.slice(0, ROLES.indexOf(role) + 1);
}

/** The interaction, or undefined when the request's interaction cookie names none. */
async function details(ctx: ConsentContext, request: FastifyRequest, reply: FastifyReply) {
  try {
    return await ctx.provider.interactionDetails(request.raw, reply.raw);
  } catch {
    return undefined;
  }
}

/** How a verb of a consent class still asks the human, in plain words (undefined: it does not). */
const ASKS: Partial<Record<string, string>> = {
  WRITE_REVERSIBLE: 'a confirmation, when your settings ask for one',
  WRITE_FINANCIAL: 'a typed phrase or your approval',
  IRREVERSIBLE: 'a typed phrase or your approval',
};

/**
 * The toolsets a human may hand on, with what each lets the agent do: the verbs a remote agent can
 * reach (http or MCP surface, not BLOCKED) whose role floor is within the human's role, grouped by
 * toolset (verb category), sorted.
 */
export function toolsetsFor(
  rt: Runtime,
  role: Role,
): { name: string; reads: string[]; writes: { name: string; asks?: string }[] }[] {
  const by = new Map<string, { name: string; reads: string[]; writes: { name: string; asks?: string }[] }>();
  for (const v of rt.registry.all()) {
    if (v.consentClass === 'BLOCKED' || ROLES.indexOf(v.roleFloor) > ROLES.indexOf(role)) continue;
    if (!v.surfaces.includes('http') && !v.surfaces.includes('mcp_stdio')) continue;
    const t = by.get(v.category) ?? { name: v.category, reads: [], writes: [] };
    by.set(v.category, t);
    if (!v.isWrite) t.reads.push(v.name);
    else {
      const asks = ASKS[v.consentClass];
      t.writes.push({ name: v.name, ...(asks !== undefined ? { asks } : {}) });
    }
  }
  return [...by.values()].sort((a, b) => a.name.localeCompare(b.name));
}

/** The toolset checkboxes, each saying in plain words what it lets the agent do and what still asks. */
function toolsetChoices(rt: Runtime, role: Role): string {
  const items = toolsetsFor(rt, role).map((t) => {
    const parts: string[] = [];
    if (t.reads.length > 0)
      parts.push(`look up: ${t.reads.map((n) => `<code>${escapeHtml(n)}</code>`).join(', ')}`);
    const free = t.writes.filter((w) => w.asks === undefined);
    const gated = t.writes.filter((w) => w.asks !== undefined);
    if (free.length > 0)
      parts.push(`change: ${free.map((w) => `<code>${escapeHtml(w.name)}</code>`).join(', ')}`);
    if (gated.length > 0)
      parts.push(
        `change, still asking you: ${gated.map((w) => `<code>${escapeHtml(w.name)}</code> (${escapeHtml(w.asks!)})`).join(', ')}`,
      );
    return `<li><label><input type="checkbox" name="toolset" value="${escapeHtml(t.name)}"> <strong>${escapeHtml(t.name)}</strong></label>: ${parts.join('; ')}</li>`;
  });
  return (
    `<fieldset><legend>Which tools</legend>` +
    `<label><input type="radio" name="reach" value="all" checked> Every toolset my chosen role allows</label><br>` +
    `<label><input type="radio" name="reach" value="listed"> Only the toolsets ticked below and the verbs I name</label>` +
    `<ul>${items.join('')}</ul>` +
    `<label>Verbs (comma-separated, optional) <input name="verbs" size="40" autocomplete="off"></label>` +
    `<p>Listing and undoing (<code>verbs.list</code>, <code>audit.revert</code>) stay available; an undo reaches only what the grant reaches.</p>` +
    `</fieldset>`
  );
}

/** What the registry holds that still waits for the human, counted by consent class. */
function gatedSummary(rt: Runtime): string {
  const by = { WRITE_REVERSIBLE: 0, WRITE_FINANCIAL: 0, IRREVERSIBLE: 0 };
  for (const v of rt.registry.all()) if (v.consentClass in by) by[v.consentClass as keyof typeof by]++;
  return (
    `<ul><li>Actions that need a confirmation (${by.WRITE_REVERSIBLE} reversible writes, when your settings ask for one) wait for the confirmation.</li>` +
    `<li>Money and irreversible actions (${by.WRITE_FINANCIAL} financial, ${by.IRREVERSIBLE} irreversible) need a typed phrase or your approval: the agent cannot type the phrase for you, approve, change these settings or sign in as you. You approve them on the dashboard.</li></ul>`
  );
}

/** GET /oauth/consent/:uid */
export async function showConsent(
  ctx: ConsentContext,
  request: FastifyRequest<{ Params: { uid: string } }>,
  reply: FastifyReply,
): Promise<FastifyReply> {
  const interaction = await details(ctx, request, reply);
  if (interaction === undefined || interaction.uid !== request.params.uid)
    return sendPage(
      reply,
      400,
      'This authorization request has expired',
      '<p>Start the connection again from the app that sent you here.</p>',
    );
  const session = await humanSession(ctx, request);
  if (session === undefined)
    return sendPage(
      reply,
      401,
      'Sign in to continue',
      `<p>An app asks to act for your business. Only a person signed in to this server can allow it.</p>` +
        `<p><a href="/?oauth_return=${encodeURIComponent(consentPath(interaction.uid))}">Sign in</a> with your passkey or authenticator app; you come back here afterwards.</p>`,
    );
  const client = await ctx.provider.Client.find(String(interaction.params.client_id));
  const clientName = client?.clientName ?? String(interaction.params.client_id);
  const p = session.principal;
  const scopes = String(interaction.params.scope ?? '').split(' ');
  const wantsWrite = scopes.includes('solid:write') || !scopes.includes('solid:read');
  const roles = rolesUpTo(p.role);
  const defaultRole: Role = roles.includes('employee') ? 'employee' : p.role;
  const body =
    `<p><strong>${escapeHtml(clientName)}</strong> asks to act for <strong>${escapeHtml(session.tenantName)}</strong> as an agent, on your behalf (${escapeHtml(p.user_name ?? '')}, ${escapeHtml(p.role)}).</p>` +
    `<p>Redirects to: <code>${escapeHtml(String(interaction.params.redirect_uri ?? ''))}</code></p>` +
    `<form method="post" action="${escapeHtml(request.url)}">` +
    `<input type="hidden" name="csrf" value="${escapeHtml(session.csrfToken)}">` +
    `<fieldset><legend>What the agent may do</legend>` +
    `<label>Highest role <select name="role">${roles.map((r) => `<option value="${r}"${r === defaultRole ? ' selected' : ''}>${r}</option>`).join('')}</select></label> (never more than your own role)<br>` +
    `<label><input type="checkbox" name="read_only" value="1"${wantsWrite ? '' : ' checked'}> Read only: look things up, change nothing</label><br>` +
    `<label>For <select name="expiry_days">${GRANT_EXPIRY_DAYS.map((d) => `<option value="${d}"${d === 30 ? ' selected' : ''}>${d} day${d > 1 ? 's' : ''}</option>`).join('')}</select></label>` +
    `</fieldset>` +
    toolsetChoices(ctx.rt, p.role) +
    `<p>With this, the agent can read your business data and, unless you tick read only, make the changes your chosen role allows, in the toolsets you chose. Every call is in the audit log under its name, and you can revoke it any time (dashboard, or <code>solid grants revoke</code>).</p>` +
    `<p>These will still ask you:</p>${gatedSummary(ctx.rt)}` +
    `<button name="decision" value="allow">Allow</button> <button name="decision" value="deny">Deny</button></form>`;
  return sendPage(reply, 200, `Allow ${clientName}?`, body, interaction.params.redirect_uri);
}

/** The posted form (urlencoded, or a JSON object whose values are strings or lists of strings). */
function formOf(body: unknown): URLSearchParams {
  if (typeof body === 'string') return new URLSearchParams(body);
  const out = new URLSearchParams();
  if (body !== null && typeof body === 'object')
    for (const [k, v] of Object.entries(body as Record<string, unknown>)) {
      if (typeof v === 'string') out.append(k, v);
      else if (Array.isArray(v)) for (const x of v) if (typeof x === 'string') out.append(k, x);
    }
  return out;
}

/**
 * The allow-list the human chose: null for every toolset the role reaches (`reach` = all, the
 * default); otherwise the ticked toolsets and the named verbs, each checked against what the
 * human could hand on (toolsetsFor). Throws a message for the page on an unknown name or an empty
 * list.
 */
function chosenScope(rt: Runtime, role: Role, form: URLSearchParams): GrantScope | null {
  if (form.get('reach') !== 'listed') return null;
  const offered = toolsetsFor(rt, role);
  const toolsets = [
    ...new Set(
      form
        .getAll('toolset')
        .map((x) => x.trim())
        .filter((x) => x !== ''),
    ),
  ];
  const verbs = [
    ...new Set(
      (form.get('verbs') ?? '')
        .split(/[\s,]+/)
        .map((x) => x.trim())
        .filter((x) => x !== ''),
    ),
  ];
  const unknownToolset = toolsets.find((t) => !offered.some((o) => o.name === t));
  if (unknownToolset !== undefined)
    throw new Error(`There is no toolset “${unknownToolset.slice(0, 80)}” you can hand on.`);
  const reachable = new Set(offered.flatMap((o) => [...o.reads, ...o.writes.map((w) => w.name)]));
  const unknownVerb = verbs.find((v) => !reachable.has(v));
  if (unknownVerb !== undefined)
    throw new Error(`There is no verb “${unknownVerb.slice(0, 80)}” your role can hand on.`);
  if (toolsets.length === 0 && verbs.length === 0)
    throw new Error('Tick at least one toolset or name a verb, or choose every toolset.');
  return {
    ...(toolsets.length > 0 ? { toolsets: toolsets.sort() } : {}),
    ...(verbs.length > 0 ? { verbs: verbs.sort() } : {}),
  };
}

/** POST /oauth/consent/:uid */
export async function decideConsent(
  ctx: ConsentContext,
  request: FastifyRequest<{ Params: { uid: string } }>,
  reply: FastifyReply,
): Promise<FastifyReply> {
  const session = await humanSession(ctx, request);
  if (session === undefined)
    return sendPage(
      reply,
      401,
      'Sign in to continue',
      '<p>Only a person signed in to this server can allow an app.</p>',
    );
  const form = formOf(request.body);
  try {
    checkOrigin(request, ctx.allowedOrigins, true);
    const csrf = form.get('csrf');
    if (csrf === null || !ctx.sessions.csrfMatches(session, csrf))
      throw new VerbError('csrf_failed', 'The form did not carry this session’s CSRF token.', {
        hint: 'Reload the consent page and submit it again.',
      });
  } catch (err) {
    const e = err as VerbError;
    return sendPage(reply, 403, 'Refused', `<p>${escapeHtml(e.message)}</p>`);
  }
  const interaction = await details(ctx, request, reply);
  if (interaction === undefined || interaction.uid !== request.params.uid)
    return sendPage(reply, 400, 'This authorization request has expired', '<p>Start again from the app.</p>');
  const p = session.principal;
  const now = ctx.rt.clock();
  const clientId = String(interaction.params.client_id);
  const client = await ctx.provider.Client.find(clientId);
  const clientName = (client?.clientName ?? clientId).slice(0, 100);
  const audit = (status: 'completed' | 'denied', data: Record<string, unknown>, reason?: string) =>
    ctx.rt.store.write(async (tx) => {
      const row = await appendHumanAudit(tx, {
        company_id: p.company_id,
        action: 'oauth.grant',
        status,
        ...(reason !== undefined ? { reason } : {}),
        actor: { user_id: p.user_id, role: p.role },
        agent_type: 'human:dashboard',
        request_data: { client_id: clientId, client_name: clientName, ...data },
        subject_user_id: p.user_id,
        now,
      });
      ctx.rt.afterWrite(row);
    });
  if (form.get('decision') !== 'allow') {
    await audit('denied', {}, 'consent_declined');
    const to = await ctx.provider.interactionResult(request.raw, reply.raw, {
      error: 'access_denied',
      error_description: 'The person declined the request.',
    });
    return reply.code(303).header('location', to).send();
  }
  const role = form.get('role') as Role;
  const days = Number(form.get('expiry_days'));
  if (!rolesUpTo(p.role).includes(role) || !(GRANT_EXPIRY_DAYS as readonly number[]).includes(days))
    return sendPage(
      reply,
      400,
      'Not allowed',
      `<p>Pick a role up to your own (${escapeHtml(p.role)}) and one of the offered expiries.</p>`,
    );
  let scope: GrantScope | null;
  try {
    scope = chosenScope(ctx.rt, p.role, form);
  } catch (err) {
    return sendPage(reply, 400, 'Not allowed', `<p>${escapeHtml((err as Error).message)}</p>`);
  }
  const readOnly = form.get('read_only') === '1' || role === 'read_only';
  const resource = String(interaction.params.resource ?? '') || ctx.defaultResource;
  const accountId = `${p.company_id}:${p.user_id}`;
  const grant = new ctx.provider.Grant({ accountId, clientId });
  const ttl = Math.min(days * 86_400, OAUTH_TTL.Grant);
  grantTtlSeconds.set(grant, ttl);
  // Every requested scope is decided: granted, or (read-only) rejected, so the authorization
  // server does not ask again; what the agent may do is the grant row's role and read_only.
  const requested = String(interaction.params.scope ?? '')
    .split(' ')
    .filter((x) => x === 'solid:read' || x === 'solid:write' || x === 'offline_access');
  const granted = readOnly ? requested.filter((x) => x !== 'solid:write') : requested;
  const refused = requested.filter((x) => !granted.includes(x));
  if (granted.length > 0) grant.addOIDCScope(granted.join(' '));
  if (refused.length > 0) grant.rejectOIDCScope(refused.join(' '));
  const rsGranted = granted.filter((x) => x !== 'offline_access');
  grant.addResourceScope(resource, (rsGranted.length > 0 ? rsGranted : ['solid:read']).join(' '));
  if (refused.length > 0) grant.rejectResourceScope(resource, refused.join(' '));
  const grantId = await grant.save();
  await ctx.rt.store.write(async (tx) => {
    await insertGrant(tx, {
      grant_id: grantId,
      company_id: p.company_id,
      user_id: p.user_id,
      user_name: p.user_name ?? '',
      client_id: clientId,
      client_name: clientName,
      role,
      read_only: readOnly,
      scope,
      resource,
      created_at: now.toISOString(),
      expires_at: new Date(now.getTime() + ttl * 1000).toISOString(),
    });
    await keepClientFor(tx, clientId, new Date(now.getTime() + ttl * 1000).toISOString());
    const row = await appendHumanAudit(tx, {
      company_id: p.company_id,
      action: 'oauth.grant',
      status: 'completed',
      actor: { user_id: p.user_id, role: p.role },
      agent_type: 'human:dashboard',
      request_data: {
        grant_id: grantId,
        client_id: clientId,
        client_name: clientName,
        role,
        read_only: readOnly,
        toolsets: scope?.toolsets ?? null,
        verbs: scope?.verbs ?? null,
        expiry_days: days,
      },
      subject_user_id: p.user_id,
      now,
    });
    ctx.rt.afterWrite(row);
  });
  const to = await ctx.provider.interactionResult(request.raw, reply.raw, {
    login: { accountId },
    consent: { grantId },
  });
  return reply.code(303).header('location', to).send();
}
