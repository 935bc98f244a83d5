#!/usr/bin/env bash
# The execute stage's tests run programs in the sandbox pool.
set -euo pipefail
exec bash "$(dirname "$0")/../../sandbox/install-test-deps.sh"
