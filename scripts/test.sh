#!/usr/bin/env bash
# The whole test suite, from a fresh clone: installs what it needs (Go modules,
# bubblewrap, the Kafka jars through Maven, Python packages through pip,
# golangci-lint, headless Chromium, promtool), starts a real Apache Kafka 4.4 broker
# (KRaft, single node; PLAINTEXT, SASL_SSL and mutual-TLS listeners), runs
# gofmt, go vet and golangci-lint, the Go tests (with -race on the concurrent
# packages), the Python tests, and stops the broker even on failure.
#
#   scripts/test.sh            everything
#   MURPHY_TEST_SHORT=1 ...    go test -short (skips the slow suites)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

log() { printf '\n== %s\n' "$*"; }

log "installing test dependencies"
export PIP_ROOT_USER_ACTION=ignore PIP_DISABLE_PIP_VERSION_CHECK=1
bash sandbox/install-test-deps.sh
bash tasks/builtin/install-test-deps.sh
bash internal/bench/install-test-deps.sh
bash python/install-test-deps.sh
bash openai/install-test-deps.sh
bash internal/inspect/install-test-deps.sh
bash deploy/prometheus/install-test-deps.sh   # promtool, in .cache/bin
go mod download
# golangci-lint, built from the Go module proxy at a pinned version.
GOBIN=$root/.cache/bin go install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@v2.15.0
export MURPHY_KAFKA_HOME=${MURPHY_KAFKA_HOME:-$root/.cache/kafka-test}
export MURPHY_KAFKA_PORT=${MURPHY_KAFKA_PORT:-39192}
deploy/kafka/kafka.sh install

log "starting Kafka"
deploy/kafka/kafka.sh clean >/dev/null 2>&1 || true
trap 'deploy/kafka/kafka.sh stop' EXIT
deploy/kafka/kafka.sh start
# MURPHY_KAFKA_BROKERS (PLAINTEXT) and the secured listeners' variables
# (MURPHY_KAFKA_SASL_BROKERS, ..., see deploy/kafka/README.md).
while IFS= read -r kv; do export "$kv"; done < <(deploy/kafka/kafka.sh env)
export MURPHY_REQUIRE_PYTHON=1 MURPHY_REQUIRE_PROMTOOL=1 CI=${CI:-true}

log "gofmt and go vet"
unformatted=$(gofmt -l $(git ls-files '*.go'))
if [ -n "$unformatted" ]; then
  echo "gofmt would change:"; echo "$unformatted"; exit 1
fi
go vet ./...

log "golangci-lint (.golangci.yml)"
"$root/.cache/bin/golangci-lint" run ./...

short=()
[ -n "${MURPHY_TEST_SHORT:-}" ] && short=(-short)

log "go test (race detector on)"
# One package at a time keeps timing-sensitive sandbox and broker tests
# honest on a 2-core machine.
go test -race -p 1 -count=1 -timeout 45m "${short[@]}" ./...

log "python tests"
python3 -m pytest -q python/tests
