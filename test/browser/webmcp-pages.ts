/**
 * Shared pieces of the browser tests: test pages that load /webmcp.js for a surface, a logged-in
 * browser context, and waiting for the module's first registration.
 */
import type { BrowserContext, Page } from 'playwright-core';

/** A minimal page loading the WebMCP module for `surface` (served by the fixture's page plugin). */
export function surfacePage(surface: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>WebMCP ${surface} test page</title>
<script type="module" src="/webmcp.js" data-surface="${surface}"></script></head>
<body><h1>${surface}</h1></body></html>`;
}

/** Test pages by path. */
export const SURFACE_PAGES: Record<string, string> = Object.fromEntries(
  ['dashboard', 'portal', 'developer', 'tenant-site', 'public'].map((surface) => [
    `/test/${surface}.html`,
    surfacePage(surface),
  ]),
);

/** Per-step timeout in ms (locators, page.webmcp calls). */
export const STEP_TIMEOUT_MS = 10_000;
/** Per-test timeout in ms. */
export const TEST_TIMEOUT_MS = 60_000;

/** Log a context in with an API key (the session cookie lands in the context's cookie jar). */
export async function logIn(context: BrowserContext, origin: string, apiKey: string): Promise<void> {
  const res = await context.request.post(`${origin}/api/v1/session`, { data: { api_key: apiKey } });
  if (res.status() !== 200) throw new Error(`login failed: ${res.status()} ${await res.text()}`);
}

/** Open a page and wait for the module's first manifest registration; returns the page and the names. */
export async function openToolPage(
  context: BrowserContext,
  url: string,
): Promise<{ page: Page; registered: string[] }> {
  const page = await context.newPage();
  page.setDefaultTimeout(STEP_TIMEOUT_MS);
  await page.goto(url);
  await page.waitForFunction(
    () => (window as unknown as { solidWebmcp?: unknown }).solidWebmcp !== undefined,
  );
  const registered = await page.evaluate(
    () => (window as unknown as { solidWebmcp: { ready: Promise<string[]> } }).solidWebmcp.ready,
  );
  return { page, registered };
}

/** The module's mode on a page: 'native', 'polyfill', 'mcp-b' (the @mcp-b/global bridge) or 'none'. */
export function moduleMode(page: Page): Promise<string> {
  return page.evaluate(() => (window as unknown as { solidWebmcp: { mode: string } }).solidWebmcp.mode);
}

/** Re-read the manifest now (instead of waiting for the 5-minute poll); returns the registered names. */
export function refreshTools(page: Page): Promise<string[]> {
  return page.evaluate(() =>
    (window as unknown as { solidWebmcp: { refresh(): Promise<string[]> } }).solidWebmcp.refresh(),
  );
}
