# The two commands of the README's quick start.
.PHONY: run test build

# Every stage in one process on the embedded broker, the simulated policy and
# the built-in tasks; Arrow files land in out/. Installs bubblewrap (the
# sandbox) when it is missing. Extra flags: make run ARGS="--turns 2".
run:
	@bash sandbox/install-test-deps.sh
	go run ./cmd/murphy run $(ARGS)

# The whole test suite; installs what it needs and starts a real Kafka broker.
test:
	scripts/test.sh

build:
	go build -o murphy ./cmd/murphy
