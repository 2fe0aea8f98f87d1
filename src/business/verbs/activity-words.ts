/**
 * Names for the demo verbs' `activity` hooks (the Activity log in the owner's words, issue 32
 * item 4): the customer behind a contact, an invoice, a charge or a deal, read in the caller's
 * tenant. Each answers undefined when the row is gone, so the hook falls back to the summary.
 * docs/authoring.md §activity.
 */
import type { ActivityRead } from '../../runtime/verb.ts';

/** A contact's name by id: "Ada Lovelace". */
export async function contactName(read: ActivityRead, contactId: unknown): Promise<string | undefined> {
  const r = await read.db.get<{ name: string }>('SELECT name FROM contacts WHERE company_id = ? AND id = ?', [
    read.company_id,
    Number(contactId),
  ]);
  return r?.name;
}

/** The customer and number of an invoice, by its id or (`by: 'number'`) its number. */
export async function invoiceCustomer(
  read: ActivityRead,
  key: unknown,
  by: 'id' | 'number' = 'id',
): Promise<{ name: string; number: number } | undefined> {
  const r = await read.db.get<{ name: string; number: unknown }>(
    `SELECT c.name, i.number FROM invoices i JOIN contacts c ON c.company_id = i.company_id AND c.id = i.contact_id WHERE i.company_id = ? AND i.${by === 'id' ? 'id' : 'number'} = ?`,
    [read.company_id, Number(key)],
  );
  return r === undefined ? undefined : { name: r.name, number: Number(r.number) };
}

/** The customer and invoice number a charge (its ch_… reference) was taken for. */
export async function chargeCustomer(
  read: ActivityRead,
  chargeRef: unknown,
): Promise<{ name: string; number: number } | undefined> {
  const r = await read.db.get<{ name: string; number: unknown }>(
    'SELECT c.name, i.number FROM payments p JOIN invoices i ON i.company_id = p.company_id AND i.id = p.invoice_id JOIN contacts c ON c.company_id = i.company_id AND c.id = i.contact_id WHERE p.company_id = ? AND p.charge_ref = ?',
    [read.company_id, String(chargeRef)],
  );
  return r === undefined ? undefined : { name: r.name, number: Number(r.number) };
}

/** A deal's title and its customer's name. */
export async function dealCustomer(
  read: ActivityRead,
  dealId: unknown,
): Promise<{ title: string; name: string } | undefined> {
  return read.db.get<{ title: string; name: string }>(
    'SELECT d.title, c.name FROM deals d JOIN contacts c ON c.company_id = d.company_id AND c.id = d.contact_id WHERE d.company_id = ? AND d.id = ?',
    [read.company_id, Number(dealId)],
  );
}
