/**
 * One autocannon run in its own process (bench/http.ts spawns it), so the load generator's CPU is
 * not counted against the server it measures. argv[2]: JSON of autocannon's options (url, method,
 * body, headers, connections, duration). Prints one JSON line: { rps, total, non2xx, errors }
 * (total: requests answered).
 */
import autocannon from 'autocannon';

const opts = JSON.parse(process.argv[2] ?? '{}');
const r = await autocannon(opts);
process.stdout.write(
  `${JSON.stringify({ rps: r.requests.average, total: r.requests.total, non2xx: r.non2xx, errors: r.errors + r.timeouts })}\n`,
);
