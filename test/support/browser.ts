/**
 * Headless-Chromium harness for browser tests (WebMCP projection, consent dialogs, screenshots).
 *
 * - `launchChromium({ webmcp })`: playwright-core driving Debian's `chromium` (Playwright's own
 *   browser download does not work on this network; `.ci/install-chromium.sh` installs the binary).
 * - `skipUnlessChromium()`: a `node:test` skip reason, only when the binary is absent.
 * - `listToolsInMainWorld` / `callToolInMainWorld`: WebMCP calls from the page's main world, which work
 *   for both native WebMCP and the `@mcp-b/webmcp-polyfill` (Playwright's `page.webmcp` only sees the
 *   native one; see docs/webmcp-browser-testing.md).
 */
import { accessSync, constants as fsConstants } from 'node:fs';
import { chromium, type Browser, type Page } from 'playwright-core';

/** Where Debian's `chromium` package puts its launcher. */
export const DEFAULT_CHROMIUM_PATH = '/usr/bin/chromium';

/**
 * Flags every launch gets. Playwright adds `--headless`, `--no-sandbox` (we set
 * `chromiumSandbox: false`; tests run as root) and a fresh temporary `--user-data-dir` per launch
 * itself (passing `--user-data-dir` in `args` makes `launch()` throw). Without the
 * background-networking flags Chromium keeps dialling Google hosts that this closed network refuses.
 */
export const CHROMIUM_BASE_FLAGS: readonly string[] = [
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/**
 * Turns native WebMCP on. Chromium keeps only the LAST `--enable-features=` switch, so this replaces
 * Playwright's own default `--enable-features=…` list; Playwright's `page.webmcp` also refuses to run
 * unless a launch arg literally lists `WebMCP` in an `--enable-features=` value.
 */
export const WEBMCP_ENABLE_FLAG = '--enable-features=WebMCP';

/**
 * Turns native WebMCP off even if something else enabled it (checked on Chromium 156: wins over
 * `--enable-features=WebMCP` and `--enable-features=WebMCPTesting`, in either order). A Blink
 * runtime-feature switch is used instead of `--disable-features=WebMCP` because the latter would
 * replace Playwright's long default `--disable-features=…` list (last switch wins). It does NOT cover
 * `--enable-experimental-web-platform-features`, which exposes WebMCP by another route; never pass it.
 */
export const WEBMCP_DISABLE_FLAG = '--disable-blink-features=WebMCP,WebMCPTesting';

/** Binary the harness launches: env `CHROMIUM_PATH`, else {@link DEFAULT_CHROMIUM_PATH}. */
export function chromiumPath(): string {
  const fromEnv = process.env.CHROMIUM_PATH;
  return fromEnv !== undefined && fromEnv !== '' ? fromEnv : DEFAULT_CHROMIUM_PATH;
}

/**
 * Skip reason for `node:test` (`describe(name, { skip: skipUnlessChromium() }, …)`).
 *
 * @returns a string naming the missing binary and the install script when the Chromium binary is
 *   absent or not executable; `undefined` (= run) otherwise. CI installs the binary, so browser tests
 *   normally run.
 */
export function skipUnlessChromium(): string | undefined {
  const path = chromiumPath();
  try {
    accessSync(path, fsConstants.X_OK);
    return undefined;
  } catch {
    return `Chromium not found at ${path} (set CHROMIUM_PATH or run .ci/install-chromium.sh)`;
  }
}

/** Options for {@link launchChromium}. */
export interface LaunchChromiumOptions {
  /** `true`: native `document.modelContext` on; `false`: forced off (polyfill runs). */
  webmcp: boolean;
  /** Browser start-up timeout in ms (default 30 000). */
  timeoutMs?: number;
}

/**
 * The full `args` list {@link launchChromium} passes (exported so tests and docs can show it).
 *
 * @returns {@link CHROMIUM_BASE_FLAGS} plus {@link WEBMCP_ENABLE_FLAG} or {@link WEBMCP_DISABLE_FLAG}.
 */
export function chromiumArgs(options: { webmcp: boolean }): string[] {
  return [...CHROMIUM_BASE_FLAGS, options.webmcp ? WEBMCP_ENABLE_FLAG : WEBMCP_DISABLE_FLAG];
}

/**
 * Launch headless Chromium through playwright-core.
 *
 * @returns a playwright-core `Browser`; the caller closes it (`await browser.close()`).
 * @throws the playwright-core launch error (binary missing, start-up timeout) unchanged.
 */
export async function launchChromium(options: LaunchChromiumOptions): Promise<Browser> {
  return chromium.launch({
    executablePath: chromiumPath(),
    headless: true,
    chromiumSandbox: false,
    args: chromiumArgs(options),
    timeout: options.timeoutMs ?? 30_000,
  });
}

/** A tool as `document.modelContext.getTools()` describes it, minus the non-serializable `window`. */
export interface MainWorldTool {
  name: string;
  title: string;
  description: string;
  /** An object on Chromium 156 and the polyfill; a JSON string on Chromium 149–154 (parsed here). */
  inputSchema?: unknown;
  origin: string;
  annotations?: Record<string, boolean>;
}

/**
 * List the page's WebMCP tools from its main world (`document.modelContext.getTools()`), sorted by
 * name. Works for native WebMCP and for the polyfill.
 *
 * @throws Error "document.modelContext is not available" when the page has neither.
 */
export async function listToolsInMainWorld(page: Page): Promise<MainWorldTool[]> {
  // No named inner functions in evaluate callbacks: tsx's keepNames would inject `__name`, which does
  // not exist in the page.
  return page.evaluate(async () => {
    const modelContext = (
      document as unknown as { modelContext?: { getTools(): Promise<Array<Record<string, unknown>>> } }
    ).modelContext;
    if (modelContext === undefined) throw new Error('document.modelContext is not available');
    return (await modelContext.getTools()).map((tool) => ({
      name: tool.name as string,
      title: tool.title as string,
      description: tool.description as string,
      inputSchema: typeof tool.inputSchema === 'string' ? JSON.parse(tool.inputSchema) : tool.inputSchema,
      origin: tool.origin as string,
      ...(tool.annotations === undefined ? {} : { annotations: tool.annotations as Record<string, boolean> }),
    }));
  });
}

/**
 * Call a WebMCP tool from the page's main world, the way Playwright's injected script does:
 * `executeTool(tool, inputObject)` (native Chromium 156 wants an object), retried with
 * `JSON.stringify(input)` when it rejects with "Failed to parse input" (the polyfill wants a string);
 * a string result is `JSON.parse`d ("undefined" → `undefined`; non-JSON text returned as is).
 *
 * The page-side promise stays pending until `execute` settles, so a test can drive an in-page
 * dialog while this call is pending (start it, interact, then await it).
 *
 * @returns the tool's result (typically `{ content: [...], isError? }`).
 * @throws Error "No WebMCP tool named …" when the tool is not registered; the page's rejection
 *   (native: DOMException UnknownError "Tool was executed but the invocation failed…") otherwise.
 */
export async function callToolInMainWorld(
  page: Page,
  name: string,
  input: Record<string, unknown> = {},
): Promise<unknown> {
  return page.evaluate(
    async ({ name: toolName, input: toolInput }) => {
      const modelContext = (
        document as unknown as {
          modelContext?: {
            getTools(): Promise<Array<{ name: string }>>;
            executeTool(tool: unknown, input: unknown): Promise<string | null>;
          };
        }
      ).modelContext;
      if (modelContext === undefined) throw new Error('document.modelContext is not available');
      const tool = (await modelContext.getTools()).find((candidate) => candidate.name === toolName);
      if (tool === undefined) throw new Error(`No WebMCP tool named "${toolName}"`);
      let raw: string | null;
      try {
        raw = await modelContext.executeTool(tool, toolInput);
      } catch (error) {
        if (!String((error as Error | undefined)?.message).includes('Failed to parse input')) throw error;
        raw = await modelContext.executeTool(tool, JSON.stringify(toolInput));
      }
      if (typeof raw !== 'string') return raw;
      if (raw === 'undefined') return undefined;
      try {
        return JSON.parse(raw) as unknown;
      } catch {
        return raw;
      }
    },
    { name, input },
  );
}
