/**
 * The agent's own free text in a call: the values of the verb's `agent_text` arguments (a
 * refund's reason, a note). They are shown apart from the sentence a human consents to, labelled
 * as the agent's words (spec/consent.md §pending); the summary is built from typed fields only.
 */

/** `{ name: text }` of the non-empty string `fields` of `args`; undefined when there are none. */
export function agentTextValues(
  fields: readonly string[] | undefined,
  args: Record<string, unknown>,
): Record<string, string> | undefined {
  if (fields === undefined || fields.length === 0) return undefined;
  const out: Record<string, string> = {};
  for (const f of fields) {
    const v = args[f];
    if (typeof v === 'string' && v !== '') out[f] = v;
  }
  return Object.keys(out).length === 0 ? undefined : out;
}
