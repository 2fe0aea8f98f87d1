// Browser-side fixture for test/spike/webmcp-harness.test.ts (plain ES module, no build step).
// Registers three WebMCP tools on document.modelContext, native or polyfilled, each with its own
// AbortController so the test can unregister one by aborting its signal.
//
// window.__webmcpSpike = {
//   ready: Promise<string[]>   resolves with the registered names once every registerTool() settled
//   unregister(name): boolean  aborts that tool's registration signal
//   toolchangeEvents: number   count of `toolchange` events seen
//   executeArgs: Array<{tool, argCount, hasSignal}>  what each execute() call received
// }

const UNIT_PRICE_CENTS = { mug: 1250, tee: 2000 };

const modelContext = document.modelContext;
const controllers = new Map();
const spike = { toolchangeEvents: 0, executeArgs: [], unregister, ready: undefined };
window.__webmcpSpike = spike;

modelContext.addEventListener('toolchange', () => {
  spike.toolchangeEvents += 1;
});

function unregister(name) {
  const controller = controllers.get(name);
  if (!controller) return false;
  controller.abort(new DOMException(`unregistered ${name}`, 'AbortError'));
  controllers.delete(name);
  return true;
}

function text(value) {
  return { type: 'text', text: value };
}

// Lazily builds <dialog id="consent"> with a phrase input and Confirm / Cancel buttons.
function consentDialog() {
  let dialog = document.getElementById('consent');
  if (dialog) return dialog;
  dialog = document.createElement('dialog');
  dialog.id = 'consent';
  dialog.innerHTML = `
    <form method="dialog">
      <p id="consent-prompt"></p>
      <label>Confirmation phrase <input id="consent-phrase" name="phrase" autocomplete="off"></label>
      <p>
        <button id="consent-cancel" value="cancel">Cancel</button>
        <button id="consent-confirm" value="confirm">Confirm</button>
      </p>
    </form>`;
  document.body.append(dialog);
  return dialog;
}

// Opens the dialog and settles when the human closes it: confirm → { confirmed: true, phrase },
// Cancel or Escape → { confirmed: false }. An aborted call signal closes it and rejects.
function askHuman(promptText, signal) {
  const dialog = consentDialog();
  const phrase = dialog.querySelector('#consent-phrase');
  dialog.querySelector('#consent-prompt').textContent = promptText;
  phrase.value = '';
  dialog.returnValue = '';
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      dialog.removeEventListener('close', onClose);
      dialog.close();
      reject(signal.reason);
    };
    const onClose = () => {
      signal?.removeEventListener('abort', onAbort);
      resolve(
        dialog.returnValue === 'confirm' ? { confirmed: true, phrase: phrase.value } : { confirmed: false },
      );
    };
    if (signal?.aborted) return reject(signal.reason);
    signal?.addEventListener('abort', onAbort, { once: true });
    dialog.addEventListener('close', onClose, { once: true });
    dialog.showModal();
  });
}

function record(tool, args) {
  spike.executeArgs.push({ tool, argCount: args.length, hasSignal: args[1]?.signal instanceof AbortSignal });
}

const tools = [
  {
    name: 'quote_price',
    title: 'Quote a price',
    description: 'Price in cents for a quantity of one catalogue item.',
    inputSchema: {
      type: 'object',
      properties: {
        sku: { type: 'string', enum: Object.keys(UNIT_PRICE_CENTS) },
        quantity: { type: 'integer', minimum: 1 },
      },
      required: ['sku', 'quantity'],
      additionalProperties: false,
    },
    annotations: { readOnlyHint: true },
    execute(...args) {
      record('quote_price', args);
      const { sku, quantity } = args[0];
      const unit = UNIT_PRICE_CENTS[sku];
      // Browsers do not validate input against inputSchema: the tool must.
      if (unit === undefined) return { isError: true, content: [text(`unknown sku: ${sku}`)] };
      const totalCents = unit * quantity;
      return {
        content: [text(`${quantity} x ${sku} = ${totalCents} cents`)],
        structuredContent: { sku, quantity, totalCents },
      };
    },
  },
  {
    name: 'delete_draft',
    title: 'Delete a draft',
    description: 'Deletes a draft order after the human types a confirmation phrase.',
    inputSchema: {
      type: 'object',
      properties: { draftId: { type: 'string' } },
      required: ['draftId'],
      additionalProperties: false,
    },
    annotations: { consequentialHint: true },
    async execute(...args) {
      record('delete_draft', args);
      const [{ draftId }, options] = args;
      const answer = await askHuman(`Type "delete ${draftId}" to delete draft ${draftId}.`, options?.signal);
      if (!answer.confirmed) return { isError: true, content: [text('declined by the user')] };
      return {
        content: [text(`confirmed with: ${answer.phrase}`)],
        structuredContent: { draftId, phrase: answer.phrase },
      };
    },
  },
  {
    name: 'always_fails',
    description: 'Throws, to show how a thrown error reaches the caller.',
    execute(...args) {
      record('always_fails', args);
      throw new Error('inventory offline');
    },
  },
];

spike.ready = Promise.all(
  tools.map((tool) => {
    const controller = new AbortController();
    controllers.set(tool.name, controller);
    return modelContext.registerTool(tool, { signal: controller.signal }).then(() => tool.name);
  }),
);
