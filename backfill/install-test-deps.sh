#!/usr/bin/env bash
# Installs what backfill's tests need beyond the sandbox's toolchains
# (sandbox/install-test-deps.sh): pip for the sandbox's system Python (the
# dependency resolver installs Python requirements with it) and Maven (the
# real pairs resolve and build a Maven project). Registries are reached at
# test time, from inside the build sandbox through the resolver's mirror.
# Idempotent, quiet.
set -euo pipefail
need=()
/usr/bin/python3 -m pip --version >/dev/null 2>&1 || need+=(python3-pip)
/usr/bin/python3 -c 'import venv, ensurepip' >/dev/null 2>&1 || need+=(python3-venv)
command -v mvn >/dev/null 2>&1 || need+=(maven)
command -v git >/dev/null 2>&1 || need+=(git)
if [ "${#need[@]}" -gt 0 ]; then
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq >/dev/null
	apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
