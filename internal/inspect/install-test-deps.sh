#!/usr/bin/env bash
# Installs what the inspect page's browser tests need: headless Chromium (the
# Debian package chromium, without its recommended extras). Idempotent: does
# nothing when a chromium binary is already on PATH (or MURPHY_CHROMIUM names
# one). About 45 s and 350 MB on a fresh Debian 12, apt-get update included.
set -euo pipefail
if [ -n "${MURPHY_CHROMIUM:-}" ] && command -v "$MURPHY_CHROMIUM" >/dev/null 2>&1; then
	exit 0
fi
for bin in chromium chromium-headless-shell chromium-browser; do
	command -v "$bin" >/dev/null 2>&1 && exit 0
done
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null
apt-get install -y -qq --no-install-recommends chromium >/dev/null
command -v chromium >/dev/null
