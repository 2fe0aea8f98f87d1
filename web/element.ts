/**
 * `el(tag, attrs, ...children)`: build a DOM element. Strings become text nodes (never parsed as
 * HTML), so data from the server cannot inject markup; boolean `true` attributes are set empty,
 * `false`/`undefined` ones are left out.
 */
export function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Record<string, string | number | boolean | undefined> = {},
  ...children: Array<Node | string | null | undefined>
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === false) continue;
    node.setAttribute(name, value === true ? '' : String(value));
  }
  for (const child of children) {
    if (child === null || child === undefined) continue;
    node.append(child);
  }
  return node;
}

/** The element with this id, typed; throws when the page lacks it (a programming error). */
export function byId<T extends HTMLElement = HTMLElement>(id: string): T {
  const node = document.getElementById(id);
  if (node === null) throw new Error(`dashboard: #${id} is missing from the page`);
  return node as T;
}
