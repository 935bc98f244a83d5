#!/usr/bin/env bash
# The whole test suite, from a fresh clone: installs what it needs (Go modules,
# bubblewrap, the Kafka jars through Maven, Python packages and the llama.cpp
# server through pip, golangci-lint, headless Chromium, promtool), starts a real
# Apache Kafka 4.4 broker (KRaft, single node; PLAINTEXT, SASL_SSL and
# mutual-TLS listeners), checks gofmt, runs the Go tests with the race detector,
# golangci-lint (go vet's analyzers among its linters) and the Python tests,
# and stops the broker even on failure.
#
# The installs run in the background from the start, each logging to
# .cache/test-logs/NAME.log; every step waits only for what it needs. The Go
# packages are tested two at a time (they share no resource: topics and
# consumer groups are unique per test, sandbox uids are leased with flock).
# The packages whose tests talk to the llama.cpp server (built from source,
# the longest install) are tested last; golangci-lint runs while that build
# finishes. The end prints how long each phase took.
#
#   scripts/test.sh            everything
#   MURPHY_TEST_SHORT=1 ...    go test -short (skips the slow suites)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

start=$(date +%s)
mark=$start
phase=""
timings=()
# stamp ends the current phase and starts the next one.
stamp() {
  local now
  now=$(date +%s)
  [ -z "$phase" ] || timings+=("$(printf '%5ds  %s' $((now - mark)) "$phase")")
  phase=$1
  mark=$now
  printf '\n== [%ds] %s\n' $((now - start)) "$1"
}

logs=$root/.cache/test-logs
rm -rf "$logs"
mkdir -p "$logs" "$root/.cache/bin"
declare -A pids
# background runs one install step in the background, its output in its log.
background() {
  local name=$1
  shift
  (
    s=$(date +%s)
    if "$@"; then rc=0; else rc=$?; fi
    echo $(($(date +%s) - s)) >"$logs/$name.seconds"
    exit $rc
  ) >"$logs/$name.log" 2>&1 &
  pids[$name]=$!
}
# await waits for install steps; a failed one ends the suite with its log.
await() {
  local name
  for name; do
    if ! wait "${pids[$name]}"; then
      echo "install step '$name' failed; the end of $logs/$name.log:"
      tail -n 80 "$logs/$name.log"
      exit 1
    fi
    timings+=("$(printf '%5ds  install %s (in the background)' "$(cat "$logs/$name.seconds")" "$name")")
  done
}
# await_marker waits until install step name has written marker (or failed).
await_marker() {
  local name=$1 marker=$2
  while [ ! -e "$marker" ]; do
    if ! kill -0 "${pids[$name]}" 2>/dev/null; then
      await "$name"
      [ -e "$marker" ] && return
      echo "install step '$name' ended without $marker"
      exit 1
    fi
    sleep 1
  done
}

export MURPHY_KAFKA_HOME=${MURPHY_KAFKA_HOME:-$root/.cache/kafka-test}
export MURPHY_KAFKA_PORT=${MURPHY_KAFKA_PORT:-39192}
# TestClusterChaos's three brokers: this port and the five after it.
export MURPHY_KAFKA_CLUSTER_PORT=${MURPHY_KAFKA_CLUSTER_PORT:-39200}
export PIP_ROOT_USER_ACTION=ignore PIP_DISABLE_PIP_VERSION_CHECK=1
# summary prints how long each phase took.
summary() {
  stamp "${1:-done}"
  printf '\n== phases (wall seconds; the installs overlap the phases after them)\n'
  printf '%s\n' "${timings[@]}"
  printf '%5ds  total\n' $(($(date +%s) - start))
}
cleanup() {
  local rc=$? p
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  deploy/kafka/kafka.sh stop || true
  # The three-broker cluster TestClusterChaos starts (it stops it itself;
  # this covers a test binary killed on its timeout).
  deploy/kafka/kafka.sh cluster stop || true
  [ $rc -eq 0 ] || summary "failed (exit $rc)"
}
trap cleanup EXIT

stamp "installs started"
# apt-get takes a lock: the Debian packages go one script after another.
background debian bash -c 'bash sandbox/install-test-deps.sh && bash backfill/install-test-deps.sh &&
  bash tasks/builtin/install-test-deps.sh && bash internal/inspect/install-test-deps.sh &&
  bash deploy/prometheus/install-test-deps.sh'
# pip, one process at a time: the reader's and trainer's packages, then the
# llama.cpp server.
python_ready=$logs/python.ready
background python bash -c "bash python/install-test-deps.sh && touch '$python_ready' && bash openai/install-test-deps.sh"
background kafka deploy/kafka/kafka.sh install
background gomod go mod download
# golangci-lint, built from the Go module proxy at a pinned version.
background lint env GOBIN="$root/.cache/bin" go install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@v2.15.0

await gomod
stamp "gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go'))
if [ -n "$unformatted" ]; then
  echo "gofmt would change:"
  echo "$unformatted"
  exit 1
fi

await kafka
stamp "starting Kafka"
deploy/kafka/kafka.sh clean >/dev/null 2>&1 || true
deploy/kafka/kafka.sh start
# MURPHY_KAFKA_BROKERS (PLAINTEXT) and the secured listeners' variables
# (MURPHY_KAFKA_SASL_BROKERS, ..., see deploy/kafka/README.md).
while IFS= read -r kv; do export "$kv"; done < <(deploy/kafka/kafka.sh env)
export MURPHY_REQUIRE_PYTHON=1 MURPHY_REQUIRE_PROMTOOL=1 CI=${CI:-true}
# Dependency resolution's host cache (what Maven Central, the Go proxy and
# PyPI served, and the index of resolutions), shared by the run's tests: the
# backfill, deps and CLI suites fetch each artifact once.
export MURPHY_DEPS_CACHE=${MURPHY_DEPS_CACHE:-$root/.cache/deps}
mkdir -p "$MURPHY_DEPS_CACHE"

short=()
[ -n "${MURPHY_TEST_SHORT:-}" ] && short=(-short)
gotest() { go test -race -p 2 -count=1 -timeout 30m "${short[@]}" "$@"; }

# The packages whose tests start the llama.cpp server.
mapfile -t llama < <(git grep -li llama -- "*_test.go" | xargs -r -n1 dirname | sort -u |
  sed 's#^#github.com/murphy-rl/murphy/#; s#/\.$##')
mapfile -t others < <(go list ./... | grep -vxF -f <(printf '%s\n' "${llama[@]}" ""))

await debian
await_marker python "$python_ready"
stamp "go test (${#others[@]} packages)"
gotest "${others[@]}"

await lint
stamp "golangci-lint (.golangci.yml)"
"$root/.cache/bin/golangci-lint" run ./...

await python
stamp "go test with the llama.cpp server (${#llama[@]} packages)"
gotest "${llama[@]}"

stamp "python tests"
python3 -m pytest -q python/tests

summary
