#!/usr/bin/env bash
# Installs what the sandbox and its tests need: bubblewrap, the system
# Python 3 that runs inside the sandbox (/usr/bin/python3), and the
# toolchains of the compile-fix tasks' offline builds (gcc and make, a JDK's
# javac, git for the real-repository tests; Go is the project's own).
# Idempotent, quiet.
set -euo pipefail
need=()
command -v bwrap >/dev/null 2>&1 || need+=(bubblewrap)
[ -x /usr/bin/python3 ] || need+=(python3)
[ -x /usr/bin/gcc ] || need+=(gcc)
[ -x /usr/bin/make ] || need+=(make)
[ -x /usr/bin/patch ] || need+=(patch)
[ -x /usr/bin/git ] || need+=(git)
command -v javac >/dev/null 2>&1 || need+=(openjdk-17-jdk-headless)
if [ "${#need[@]}" -gt 0 ]; then
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq >/dev/null
	apt-get install -y -qq "${need[@]}" >/dev/null
fi
