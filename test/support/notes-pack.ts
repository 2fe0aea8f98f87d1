/**
 * The `notes` test pack, declared once for the pipeline and transport tests: a per-tenant notes
 * table (test migration, both engines) and small verbs over it.
 *
 * - notes.count (crm, READ aggregate): `{ notes, company_id, user_id, agent_type, role }`, the
 *   count and who asked (transports check the principal they built).
 * - notes.preview_add (crm, preview, READ): the preview notes_add points at.
 * - notes_add (crm, WRITE_REVERSIBLE receipt, preview notes.preview_add): inserts a note, emits
 *   note.added, keeps a rollback handle (revert deletes the note). `hold: true` waits inside the
 *   write transaction until `release()`; `explode` fails after the insert: 'verb_error' (a pack
 *   reason, note_rejected), 'crash' (an Error with a secret-looking message), 'store_value' (what
 *   PostgreSQL answers for a value out of range).
 * - notes_charge (payments, WRITE_FINANCIAL): typed phrase `CHARGE <n> CENTS`.
 * - notes.enterprise_report (crm, READ, tier floor enterprise).
 *
 * A harness adds its own verbs beside these (surfaces, crashes) with `h.rt.register`.
 */
import type { TestRuntime } from './runtime.ts';
import { defineVerb } from '../../src/runtime/verb.ts';
import { VerbError } from '../../src/runtime/errors.ts';
import { StoreError } from '../../src/store/store.ts';

/** What a test holds to drive a `hold: true` notes_add. */
export interface NotesPack {
  /** Resolve to let a held notes_add finish. */
  release(): void;
  /** Resolves when a notes_add with hold:true is inside its handler. */
  entered: Promise<void>;
}

/** Migrate the notes table (scope `test-notes`) and register the notes verbs on `h.rt`. */
export async function installNotesPack(h: TestRuntime): Promise<NotesPack> {
  await h.rt.store.migrate('test-notes', [
    {
      version: 1,
      name: 'notes',
      sqlite: 'CREATE TABLE notes (id INTEGER PRIMARY KEY, company_id INTEGER NOT NULL, text TEXT NOT NULL)',
      postgres:
        'CREATE TABLE notes (id BIGSERIAL PRIMARY KEY, company_id BIGINT NOT NULL, text TEXT NOT NULL)',
    },
  ]);
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  let signalEntered!: () => void;
  const entered = new Promise<void>((r) => (signalEntered = r));
  h.rt.register(
    defineVerb({
      name: 'notes.count',
      description: 'Count the notes of the tenant.',
      shape: 'aggregate',
      category: 'crm',
      input: {
        type: 'object',
        properties: { min_length: { type: 'integer', minimum: 0 } },
        additionalProperties: false,
      },
      async handler(ctx) {
        const r = await ctx.db.get<{ n: number }>('SELECT COUNT(*) AS n FROM notes WHERE company_id = ?', [
          ctx.principal.company_id,
        ]);
        return {
          entity_id: ctx.principal.company_id,
          data: {
            notes: Number(r!.n),
            company_id: ctx.principal.company_id,
            user_id: ctx.principal.user_id,
            agent_type: ctx.principal.agent_type,
            role: ctx.principal.role,
          },
        };
      },
    }),
    defineVerb({
      name: 'notes.preview_add',
      description: 'Preview adding a note.',
      shape: 'preview',
      category: 'crm',
      input: {
        type: 'object',
        properties: { text: { type: 'string', minLength: 1 } },
        required: ['text'],
        additionalProperties: false,
      },
      async handler(_ctx, args: { text: string }) {
        return {
          current: { notes: 0 },
          projected: { text: args.text },
          delta: { notes: 1 },
          reversible: true,
          notes: [],
        };
      },
    }),
    defineVerb({
      name: 'notes_add',
      description: 'Add a note.',
      shape: 'receipt',
      category: 'crm',
      consent: 'WRITE_REVERSIBLE',
      preview: 'notes.preview_add',
      input: {
        type: 'object',
        properties: {
          text: { type: 'string', minLength: 1 },
          hold: { type: 'boolean' },
          explode: { type: 'string', enum: ['verb_error', 'crash', 'store_value'] },
        },
        required: ['text'],
        additionalProperties: false,
      },
      async handler(ctx, args: { text: string; hold?: boolean; explode?: string }) {
        if (args.hold) {
          signalEntered();
          await gate;
        }
        const r = await ctx.db.get<{ id: number }>(
          'INSERT INTO notes (company_id, text) VALUES (?, ?) RETURNING id',
          [ctx.principal.company_id, args.text],
        );
        const id = Number(r!.id);
        ctx.emit({ type: 'note.added', entity_type: 'note', entity_id: id, payload: { text: args.text } });
        if (args.explode === 'verb_error')
          throw new VerbError<string>('note_rejected', 'Notes may not say that.', {
            hint: 'Say something else.',
          });
        if (args.explode === 'crash') throw new Error('secret stack detail /etc/passwd');
        // What PostgreSQL answers for an id beyond bigint (SQLSTATE 22003).
        if (args.explode === 'store_value')
          throw new StoreError(
            'invalid_value',
            'value "9223372036854776000" is out of range for type bigint',
          );
        ctx.setRollback(`notes:add:${id}`, { id });
        return { note_id: id };
      },
      revert: {
        async handler(ctx, original) {
          await ctx.db.run('DELETE FROM notes WHERE id = ? AND company_id = ?', [
            original.rollback.id,
            ctx.principal.company_id,
          ]);
          return { revert_action: `deleted note ${String(original.rollback.id)}` };
        },
      },
    }),
    defineVerb({
      name: 'notes_charge',
      description: 'Charge for notes (financial).',
      shape: 'receipt',
      category: 'payments',
      consent: 'WRITE_FINANCIAL',
      input: {
        type: 'object',
        properties: { amount_cents: { type: 'integer', minimum: 1 } },
        required: ['amount_cents'],
        additionalProperties: false,
      },
      phrase: (a: { amount_cents: number }) => `CHARGE ${a.amount_cents} CENTS`,
      async handler(_ctx, a: { amount_cents: number }) {
        return { charged_cents: a.amount_cents };
      },
    }),
    defineVerb({
      name: 'notes.enterprise_report',
      description: 'Enterprise only.',
      shape: 'aggregate',
      category: 'crm',
      tier_floor: 'enterprise',
      input: { type: 'object', properties: {} },
      handler: async (ctx) => ({ entity_id: ctx.principal.company_id, data: {} }),
    }),
  );
  return { release, entered };
}
