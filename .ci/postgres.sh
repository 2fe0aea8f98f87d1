#!/usr/bin/env bash
# Start a throwaway PostgreSQL 15 cluster for the tests (sourced by .ci/run).
# Exports SOLID_TEST_DATABASE_URL and registers `pg_stop` to stop and remove it.
# PostgreSQL refuses to run as root, so the cluster runs as the `postgres` system user when we are root.
set -euo pipefail

PG_BIN="${PG_BIN:-}"
if [ -z "$PG_BIN" ]; then
  for d in /usr/lib/postgresql/15/bin /usr/lib/postgresql/*/bin; do
    if [ -x "$d/pg_ctl" ]; then PG_BIN="$d"; break; fi
  done
fi
if [ -z "$PG_BIN" ] || [ ! -x "$PG_BIN/pg_ctl" ]; then
  echo "postgres.sh: no PostgreSQL server binaries found (looked in /usr/lib/postgresql/*/bin); PostgreSQL tests will be skipped" >&2
  return 0 2>/dev/null || exit 0
fi

PG_DIR="$(mktemp -d /tmp/solid-pg.XXXXXX)"
PG_PORT="$(node -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')"
as_pg() {
  if [ "$(id -u)" = "0" ]; then runuser -u postgres -- "$@"; else "$@"; fi
}
if [ "$(id -u)" = "0" ]; then chown postgres:postgres "$PG_DIR"; fi
as_pg "$PG_BIN/initdb" -D "$PG_DIR/data" -U solid --auth=trust --no-sync -E UTF8 >"$PG_DIR/initdb.log" 2>&1 || { cat "$PG_DIR/initdb.log" >&2; exit 1; }
as_pg "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -l "$PG_DIR/server.log" -w -t 30 \
  -o "-p $PG_PORT -k $PG_DIR -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200" start >/dev/null
as_pg "$PG_BIN/createdb" -h 127.0.0.1 -p "$PG_PORT" -U solid solid_test
export SOLID_TEST_DATABASE_URL="postgres://solid@127.0.0.1:$PG_PORT/solid_test"
export SOLID_TEST_PG_BIN="$PG_BIN"
export SOLID_TEST_PG_DATA="$PG_DIR/data"
echo "postgres.sh: PostgreSQL $("$PG_BIN/postgres" --version | awk '{print $3}') on 127.0.0.1:$PG_PORT ($PG_DIR)" >&2

pg_stop() {
  as_pg "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -m immediate stop >/dev/null 2>&1 || true
  rm -rf "$PG_DIR"
}
