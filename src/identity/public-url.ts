/**
 * The server's public base URL as the database remembers it (`runtime_meta` key `public_url`):
 * `solid serve` records where people reach it once it listens, so other processes on the same
 * database (`solid agent dispatch`, `solid mcp`) put the same `consent.approval_url` in their
 * pending answers without being told. SOLID_PUBLIC_URL, when set, wins. spec/consent.md §approval-page
 */
import type { Store } from '../store/store.ts';

/** The recorded public URL, or undefined (never served, or an older database). */
export async function recordedPublicUrl(store: Store): Promise<string | undefined> {
  const row = await store.read((q) =>
    q.get<{ value: string }>(`SELECT value FROM runtime_meta WHERE key = 'public_url'`),
  );
  return row?.value === undefined || row.value === '' ? undefined : row.value;
}

/** Record the public URL `solid serve` answers on (replacing an earlier one). */
export async function recordPublicUrl(store: Store, url: string): Promise<void> {
  await store.write((tx) =>
    tx.run(
      `INSERT INTO runtime_meta (key, value) VALUES ('public_url', ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value`,
      [url],
    ),
  );
}
