#!/usr/bin/env bash
# Install Debian's Chromium for the headless browser tests (test/support/browser.ts).
#
# Idempotent: does nothing when the binary already exists. Playwright's own browser download
# (`npx playwright install`) does not work on this network; the tests drive Debian's build through
# playwright-core's `executablePath` instead.
#
#   CHROMIUM_PATH   binary to check (default /usr/bin/chromium, the path Debian's package installs)
#
# Exit 0 when the binary is present afterwards; non-zero with a message on stderr otherwise.
set -euo pipefail

CHROMIUM_PATH="${CHROMIUM_PATH:-/usr/bin/chromium}"

fail() {
  echo "install-chromium: $*" >&2
  exit 1
}

if [ -x "$CHROMIUM_PATH" ]; then
  echo "install-chromium: found $CHROMIUM_PATH ($("$CHROMIUM_PATH" --version 2>/dev/null || echo 'version unknown'))"
  exit 0
fi

if [ "$CHROMIUM_PATH" != "/usr/bin/chromium" ]; then
  fail "CHROMIUM_PATH=$CHROMIUM_PATH does not exist and apt only installs /usr/bin/chromium"
fi

command -v apt-get >/dev/null 2>&1 || fail "apt-get not found; install Debian's 'chromium' package by other means"

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null 2>&1 || fail "not root and no sudo; run as root: apt-get install -y chromium"
  SUDO="sudo"
fi

log="$(mktemp -t install-chromium.XXXXXX.log)"
export DEBIAN_FRONTEND=noninteractive
echo "install-chromium: installing Debian package 'chromium' (log: $log)"
if ! $SUDO apt-get update -qq >"$log" 2>&1; then
  tail -n 20 "$log" >&2
  fail "apt-get update failed"
fi
if ! $SUDO apt-get install -y -qq chromium >>"$log" 2>&1; then
  tail -n 20 "$log" >&2
  fail "apt-get install chromium failed"
fi

[ -x "$CHROMIUM_PATH" ] || fail "apt-get finished but $CHROMIUM_PATH is still missing"
echo "install-chromium: installed $("$CHROMIUM_PATH" --version 2>/dev/null)"
