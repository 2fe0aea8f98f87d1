/**
 * Which built-in packs a database serves (`runtime_meta` key `packs`), so every process that opens
 * it registers the same verbs. Spec: spec/manifest.md §packs.
 */
import type { Store } from '../store/store.ts';

/** The names of the packs the database serves, sorted; [] when none was ever recorded. */
export async function readServedPacks(store: Store): Promise<string[]> {
  const row = await store.read((q) =>
    q.get<{ value: string }>(`SELECT value FROM runtime_meta WHERE key = 'packs'`),
  );
  return row === undefined ? [] : (JSON.parse(row.value) as string[]);
}

/** Record `names` (sorted, replacing what was there) as the packs the database serves. */
export async function recordServedPacks(store: Store, names: readonly string[]): Promise<void> {
  await store.write((tx) =>
    tx.run(
      `INSERT INTO runtime_meta (key, value) VALUES ('packs', ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value`,
      [JSON.stringify([...names].sort())],
    ),
  );
}
