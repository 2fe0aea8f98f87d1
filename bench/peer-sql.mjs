/**
 * The SQL and the fixture of the peer benchmarks, shared by the pack `solid serve` loads
 * (bench/peer-pack.mjs) and the baselines (bench/peer-server.mjs), which must not load
 * solid-verbs itself.
 */
export const TABLE = 'benchpeer_contacts';
export const SEARCH_SQL = `SELECT id, name, email FROM ${TABLE} WHERE company_id = ? AND lower(name) LIKE lower(?) ORDER BY name LIMIT 20`;
export const GET_SQL = `SELECT id, name, email, phone FROM ${TABLE} WHERE company_id = ? AND id = ?`;
export const UPDATE_SQL = `UPDATE ${TABLE} SET phone = ? WHERE company_id = ? AND id = ?`;
/** How many contacts the fixture holds for the bench tenant. */
export const CONTACTS = 200;
/** The bench tenant. */
export const COMPANY_ID = 2;

/** The fixture rows: [id, company_id, name, email, phone]. */
export function contactRows() {
  return Array.from({ length: CONTACTS }, (_, k) => {
    const i = k + 1;
    return [
      i,
      COMPANY_ID,
      `Contact ${i} ${['Smith', 'Jones', 'Garcia', 'Lee'][i % 4]}`,
      `c${i}@example.com`,
      `+1555000${i}`,
    ];
  });
}
