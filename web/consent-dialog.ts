/**
 * The in-page consent dialog: a modal `<dialog id="solid-consent">` that shows what a pending
 * dispatch will do (summary, preview, consent class, expiry) and, for typed-phrase gates, the exact
 * phrase with a labelled text field the human types it into.
 *
 *   askConsent({ title, consent, error? }, signal) → { confirmed: true, phrase? } | { confirmed: false }
 *
 * Confirm submits the form (the phrase field is `required` for typed-phrase gates); Cancel or Escape
 * declines; an aborted `signal` closes the dialog and declines. One dialog at a time: calls queue
 * (the queue lives on `window`, so the dashboard and /webmcp.js share it). Every text is set with
 * `textContent` (summaries carry user data), nothing uses inline script or style (strict CSP).
 * Element ids the tests and the style sheet rely on: solid-consent, solid-consent-title,
 * solid-consent-summary, solid-consent-phrase, solid-consent-input, solid-consent-error,
 * solid-consent-cancel, solid-consent-confirm.
 *
 * Spec: spec/transports.md §webmcp-consent, spec/consent.md §protocol.
 */
import type { ConsentRequest } from '../src/spec/types.ts';
import { clockTime, impactWords } from './dashboard-words.ts';

/** A consent class in the owner's words (the class name stays in the element's title). */
const CLASS_WORDS: Readonly<Record<string, string>> = {
  WRITE_REVERSIBLE: 'A change that can be undone',
  WRITE_FINANCIAL: 'Moves money',
  IRREVERSIBLE: 'Cannot be undone',
  READ: 'Only reads',
};

export interface ConsentPrompt {
  /** Dialog heading: what is being confirmed (the tool title or verb name). */
  title: string;
  consent: ConsentRequest;
  /** An error from the previous attempt (phrase mismatch), shown in an alert. */
  error?: string;
}

export interface ConsentAnswer {
  confirmed: boolean;
  /** What the human typed (typed-phrase gates). */
  phrase?: string;
}

const QUEUE_KEY = Symbol.for('solid-verbs.consent-queue');

type QueueHost = Record<symbol, Promise<unknown> | undefined>;

function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Record<string, string> = {},
  text?: string,
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  if (text !== undefined) node.textContent = text;
  return node;
}

function build(prompt: ConsentPrompt): { dialog: HTMLDialogElement; input: HTMLInputElement | undefined } {
  const { consent } = prompt;
  const typed = consent.gate === 'typed_phrase';
  const dialog = el('dialog', {
    id: 'solid-consent',
    class: 'solid-consent',
    'aria-labelledby': 'solid-consent-title',
    'aria-describedby': 'solid-consent-summary',
  });
  const form = el('form', { method: 'dialog' });
  form.append(el('h2', { id: 'solid-consent-title' }, `Confirm: ${prompt.title}`));
  form.append(el('p', { id: 'solid-consent-summary' }, consent.summary));
  const expires = new Date(consent.expires_at);
  form.append(
    el(
      'p',
      { class: 'solid-consent-meta', title: consent.class, 'data-class': consent.class },
      `${CLASS_WORDS[consent.class] ?? consent.class} · ${typed ? 'you type a phrase' : 'you confirm'} · this request ends at ${Number.isNaN(expires.getTime()) ? consent.expires_at : clockTime(consent.expires_at)}`,
    ),
  );
  // Before → after in words, when the preview says what changes (spec/shapes.md §preview).
  const impact = impactWords(consent.preview as Record<string, unknown> | undefined);
  if (impact !== undefined && impact.changes.length > 0) {
    const list = el('ul', { class: 'solid-consent-impact' });
    for (const [k, before, after] of impact.changes) list.append(el('li', {}, `${k}: ${before} → ${after}`));
    for (const note of impact.notes) list.append(el('li', {}, note));
    form.append(list);
  } else if (consent.preview !== undefined) {
    const details = el('details', { class: 'solid-consent-preview', open: '' });
    details.append(el('summary', {}, 'Preview'));
    details.append(el('pre', {}, JSON.stringify(consent.preview, null, 2)));
    form.append(details);
  }
  let input: HTMLInputElement | undefined;
  if (typed) {
    form.append(el('p', {}, 'To go ahead, type this phrase exactly:'));
    const phrase = el('p', { class: 'solid-consent-phrase-line' });
    phrase.append(el('code', { id: 'solid-consent-phrase' }, consent.typed_phrase ?? ''));
    form.append(phrase);
    form.append(el('label', { for: 'solid-consent-input' }, 'Confirmation phrase'));
    input = el('input', {
      id: 'solid-consent-input',
      name: 'typed_phrase',
      type: 'text',
      autocomplete: 'off',
      spellcheck: 'false',
      required: '',
      autofocus: '',
    });
    form.append(input);
  }
  const error = el('p', { id: 'solid-consent-error', role: 'alert' }, prompt.error ?? '');
  if (prompt.error === undefined) error.hidden = true;
  form.append(error);
  const actions = el('p', { class: 'solid-consent-actions' });
  actions.append(
    el(
      'button',
      { id: 'solid-consent-cancel', type: 'submit', value: 'cancel', formnovalidate: '' },
      'Cancel',
    ),
  );
  actions.append(
    el(
      'button',
      { id: 'solid-consent-confirm', type: 'submit', value: 'confirm' },
      typed ? 'Confirm with phrase' : 'Confirm',
    ),
  );
  form.append(actions);
  dialog.append(form);
  return { dialog, input };
}

function show(prompt: ConsentPrompt, signal?: AbortSignal): Promise<ConsentAnswer> {
  return new Promise<ConsentAnswer>((resolve) => {
    if (signal?.aborted) {
      resolve({ confirmed: false });
      return;
    }
    document.getElementById('solid-consent')?.remove();
    const { dialog, input } = build(prompt);
    const onAbort = (): void => {
      dialog.close('cancel');
    };
    dialog.addEventListener(
      'close',
      () => {
        signal?.removeEventListener('abort', onAbort);
        const confirmed = dialog.returnValue === 'confirm' && signal?.aborted !== true;
        dialog.remove();
        resolve(
          confirmed
            ? { confirmed: true, ...(input !== undefined ? { phrase: input.value } : {}) }
            : { confirmed: false },
        );
      },
      { once: true },
    );
    signal?.addEventListener('abort', onAbort, { once: true });
    document.body.append(dialog);
    dialog.returnValue = '';
    dialog.showModal();
    if (input !== undefined) input.focus();
  });
}

/**
 * Ask the human to confirm a pending dispatch (see the header). Resolves, never rejects.
 */
export function askConsent(prompt: ConsentPrompt, signal?: AbortSignal): Promise<ConsentAnswer> {
  const host = window as unknown as QueueHost;
  const previous = host[QUEUE_KEY] ?? Promise.resolve();
  const next = previous.then(() => show(prompt, signal));
  host[QUEUE_KEY] = next.catch(() => undefined);
  return next;
}
