#!/usr/bin/env bash
# Installs what the sandbox and its tests need: bubblewrap and the system
# Python 3 that runs inside the sandbox (/usr/bin/python3). Idempotent, quiet.
set -euo pipefail
need=()
command -v bwrap >/dev/null 2>&1 || need+=(bubblewrap)
[ -x /usr/bin/python3 ] || need+=(python3)
if [ "${#need[@]}" -gt 0 ]; then
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq >/dev/null
	apt-get install -y -qq "${need[@]}" >/dev/null
fi
