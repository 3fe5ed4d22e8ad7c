#!/usr/bin/env bash
# Make Debian's `chromium` available for the report's browser test (tests/report/test_browser.py).
# Installs it with apt-get only when no chromium is on PATH; never fails the tox env: when it cannot be
# had (not root, no apt, no registry) the browser test reports "skipped: <reason>" instead.
set -uo pipefail
for candidate in "${CHROMIUM:-}" chromium chromium-browser; do
  if [ -n "$candidate" ] && command -v "$candidate" >/dev/null 2>&1; then
    echo "ensure_chromium: using $(command -v "$candidate")"
    exit 0
  fi
done
if ! command -v apt-get >/dev/null 2>&1; then
  echo "ensure_chromium: no chromium and no apt-get; the browser test will be skipped" >&2
  exit 0
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then SUDO="sudo -n"; else
    echo "ensure_chromium: not root and no sudo; the browser test will be skipped" >&2
    exit 0
  fi
fi
export DEBIAN_FRONTEND=noninteractive
install() { $SUDO apt-get install -y -q -o DPkg::Lock::Timeout=600 --no-install-recommends chromium fonts-dejavu-core >/dev/null; }
if ! install; then
  $SUDO apt-get update -q -o DPkg::Lock::Timeout=600 >/dev/null && install || {
    echo "ensure_chromium: apt-get install chromium failed; the browser test will be skipped" >&2
    exit 0
  }
fi
echo "ensure_chromium: installed $(command -v chromium)"
