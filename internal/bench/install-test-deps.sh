#!/usr/bin/env bash
# The bench tests run the real sandbox pool (bottleneck and memory) and
# build the murphy command with the Go toolchain.
set -euo pipefail
exec bash "$(dirname "$0")/../../sandbox/install-test-deps.sh"
