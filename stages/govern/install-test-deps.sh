#!/usr/bin/env bash
# Installs what the govern stage's tests need beyond Go: the real CPU
# inference server used by the LLM judge and scorer tests (llama.cpp's
# OpenAI-compatible server from llama-cpp-python, serving a tiny random-weight
# model). That server is the openai package's test fixture, so its installer
# is reused. Idempotent and quiet.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
exec bash "$here/../../openai/install-test-deps.sh"
