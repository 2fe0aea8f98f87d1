#!/usr/bin/env bash
# Node LTS smoke (CI, issue 30 row 13): a smoke part of the suite on each supported Node LTS line
# other than this machine's, so `engines` in package.json stays true.
#
# Per line: the Node binary comes from the npm registry's package (node-<platform>-<arch>@<line>,
# headers included; scripts/node-line.sh, cached); better-sqlite3 (native) is compiled for it from source against those headers
# (no other download), cached by better-sqlite3 version and Node ABI under
# ${XDG_CACHE_HOME:-~/.cache}/solid-verbs-ci (the lines compile in parallel, ≈ 1 min each the
# first time); the checkout is copied beside the other packages (symlinked) and SMOKE_TESTS run
# with that Node: `solid serve` as a real process, dispatch, the deadline and durability tests.
#
# Usage: bash scripts/node-lines-smoke.sh            (SOLID_NODE_LINES="22 24 26" by default)
#        SOLID_NODE_LINES=24 bash scripts/node-lines-smoke.sh
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

LINES="${SOLID_NODE_LINES:-22 24 26}"
SMOKE_TESTS=(
  test/runtime/dispatch.test.ts
  test/transports/http/serve.test.ts
  test/reliability/deadlines.test.ts
)

mine=$(node -p 'process.versions.node.split(".")[0]')
bsq=$(node -p 'require("./node_modules/better-sqlite3/package.json").version')
gyp="$(dirname "$(readlink -f "$(command -v npm)")")/../node_modules/node-gyp/bin/node-gyp.js"
cache="${XDG_CACHE_HOME:-$HOME/.cache}/solid-verbs-ci"
mkdir -p "$cache"
work=$(mktemp -d "${TMPDIR:-/tmp}/solid-node-lines.XXXXXX")
trap 'rm -rf "$work"' EXIT
fail() { echo "node lines smoke: FAIL: $*" >&2; exit 1; }

# 1. Each line's Node binary, and a copy of the checkout whose node_modules links to ours except
#    for better-sqlite3 (a real copy, rebuilt below).
lines=()
declare -A nodedir
for line in $LINES; do
  if [ "$line" = "$mine" ]; then
    echo "node $line: this machine's line (the whole suite runs on it); skipped here"
    continue
  fi
  lines+=("$line")
  bin=$(bash scripts/node-line.sh "$line")
  nodedir["$line"]=$(dirname "$(dirname "$bin")")
  tree="$work/tree$line"
  mkdir -p "$tree/node_modules"
  git ls-files -co --exclude-standard -z | xargs -0 cp --parents -t "$tree"
  for entry in "$root"/node_modules/* "$root"/node_modules/.bin; do
    [ "$(basename "$entry")" = better-sqlite3 ] || ln -s "$entry" "$tree/node_modules/"
  done
  cp -a "$root/node_modules/better-sqlite3" "$tree/node_modules/"
done

# 2. better-sqlite3 for each line's ABI: from the cache, else compiled (in parallel).
pids=()
for line in "${lines[@]}"; do
  nd="${nodedir[$line]}"
  abi=$("$nd/bin/node" -p 'process.versions.modules')
  cached="$cache/better-sqlite3-$bsq-abi$abi.node"
  addon="$work/tree$line/node_modules/better-sqlite3/build/Release/better_sqlite3.node"
  if [ -f "$cached" ]; then
    mkdir -p "$(dirname "$addon")"
    cp "$cached" "$addon"
    echo "node $line: better-sqlite3 $bsq for ABI $abi from the cache"
    continue
  fi
  echo "node $line: compiling better-sqlite3 $bsq for ABI $abi"
  (
    cd "$work/tree$line/node_modules/better-sqlite3"
    "$nd/bin/node" "$gyp" rebuild --release --nodedir="$nd" >"$work/gyp$line.log" 2>&1
    cp "$addon" "$cached"
  ) &
  pids+=("$!:$line")
done
for p in "${pids[@]}"; do
  wait "${p%%:*}" || { cat "$work/gyp${p##*:}.log" >&2; fail "better-sqlite3 did not compile for node ${p##*:}"; }
done

# 3. The smoke tests on each line.
for line in "${lines[@]}"; do
  nd="${nodedir[$line]}"
  echo "== node $("$nd/bin/node" --version): ${SMOKE_TESTS[*]}"
  (cd "$work/tree$line" && PATH="$nd/bin:$PATH" node --import tsx --test --test-concurrency=1 \
    --test-reporter=dot "${SMOKE_TESTS[@]}") || fail "the smoke tests failed on node $line"
done
echo "node lines smoke: ok (${lines[*]:-none})"
