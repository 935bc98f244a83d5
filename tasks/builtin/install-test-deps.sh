#!/bin/sh
# Test dependencies of tasks/builtin: a python3 (3.10 or newer) on PATH, used
# to run every reference solution and mutant against the task tests.
set -eu
if python3 -c 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else 1)' 2>/dev/null; then
	exit 0
fi
if command -v apt-get >/dev/null 2>&1; then
	apt-get update -qq >/dev/null
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3 >/dev/null
fi
python3 -c 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else 1)'
