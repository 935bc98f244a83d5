# The two commands of the README's quick start, and the build.
.PHONY: run test build

# The version `murphy version` prints: the closest tag, the commit and
# whether the tree is dirty; "dev" outside a git checkout. Override with
# make build VERSION=v1.2.3.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)

# Every stage in one process on the embedded broker, the simulated policy and
# the built-in tasks; Arrow files land in out/. Installs bubblewrap (the
# sandbox) when it is missing. Extra flags: make run ARGS="--turns 2".
# Built with -tags nocloud: without the s3:// and gs:// workspace-store
# drivers and their SDKs, a third less to compile on a fresh machine.
run:
	@bash sandbox/install-test-deps.sh
	go run -tags nocloud ./cmd/murphy run $(ARGS)

# The whole test suite; installs what it needs and starts a real Kafka broker.
test:
	scripts/test.sh

# bin/murphy, with the version linked in (main.version).
build:
	go build -ldflags "-X main.version=$(VERSION)" -o bin/murphy ./cmd/murphy
