#!/bin/sh
# Container entry point (Dockerfile, compose.yaml): migrate, then serve in the foreground.
#
#   SOLID_DATABASE_URL  PostgreSQL (postgres://…); unset = SQLite at SOLID_DB (default /data/solid.db)
#   PORT                port to listen on (default 4400); SOLID_HOST interface (default 0.0.0.0)
#   SOLID_MIGRATE       1 (default): run `solid db migrate` first; 0: the nodes leave it to a setup job
#   SOLID_BIN           the solid command (default: solid on PATH)
# Extra arguments go to `solid serve` (e.g. --trust-proxy --allowed-origin https://agents.example.com).
# `exec` hands PID 1 to node, so SIGTERM from `docker stop` drains requests and flushes the audit
# buffer (spec/transports.md §cli-serve) instead of killing a shell.
set -eu
SOLID_BIN="${SOLID_BIN:-solid}"
PORT="${PORT:-4400}"
SOLID_HOST="${SOLID_HOST:-0.0.0.0}"
if [ -z "${SOLID_DATABASE_URL:-}" ]; then
  export SOLID_DB="${SOLID_DB:-/data/solid.db}"
  if [ ! -e "$SOLID_DB" ]; then
    echo "solid: no database at $SOLID_DB; creating it (solid init prints the first owner key once)" >&2
    $SOLID_BIN init
  fi
fi
if [ "${SOLID_MIGRATE:-1}" = 1 ]; then
  $SOLID_BIN db migrate >&2
fi
exec $SOLID_BIN serve --host "$SOLID_HOST" --port "$PORT" "$@"
