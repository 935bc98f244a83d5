#!/usr/bin/env bash
# Single-node Apache Kafka (KRaft, combined broker+controller) for tests and local use.
#
#   deploy/kafka/kafka.sh install   resolve the jars through Maven into $MURPHY_KAFKA_HOME/libs
#   deploy/kafka/kafka.sh start     format storage (first time) and start on 127.0.0.1:$MURPHY_KAFKA_PORT
#   deploy/kafka/kafka.sh stop      stop it (SIGTERM, then SIGKILL after a grace period)
#   deploy/kafka/kafka.sh restart   stop then start, keeping the data
#   deploy/kafka/kafka.sh env       print MURPHY_KAFKA_BROKERS=... for the test suite
#
# Environment: MURPHY_KAFKA_HOME (default .cache/kafka), MURPHY_KAFKA_PORT (default 39092).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
home=${MURPHY_KAFKA_HOME:-$root/.cache/kafka}
port=${MURPHY_KAFKA_PORT:-39092}
cport=$((port + 1))
libs=$home/libs
data=$home/data
pidfile=$home/kafka.pid
log=$home/kafka.log

install() {
  if [ -f "$libs/.complete" ]; then return; fi
  mkdir -p "$libs"
  mvn -q -B -f "$here/pom.xml" dependency:copy-dependencies \
    -DoutputDirectory="$libs" -DincludeScope=runtime
  touch "$libs/.complete"
}

config() {
  mkdir -p "$home"
  cat >"$home/server.properties" <<CONF
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$cport
listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$cport
advertised.listeners=PLAINTEXT://127.0.0.1:$port
controller.listener.names=CONTROLLER
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
inter.broker.listener.name=PLAINTEXT
log.dirs=$data
num.partitions=4
offsets.topic.replication.factor=1
offsets.topic.num.partitions=8
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
group.consumer.min.session.timeout.ms=1000
group.classic.min.session.timeout.ms=1000
auto.create.topics.enable=true
message.max.bytes=134217728
replica.fetch.max.bytes=134217728
log.retention.hours=168
log.segment.bytes=67108864
CONF
  cat >"$home/log4j2.yaml" <<CONF
Configuration:
  Appenders:
    Console:
      name: STDOUT
      PatternLayout:
        Pattern: "[%d] %p %m (%c)%n"
  Loggers:
    Root:
      level: WARN
      AppenderRef:
        - ref: STDOUT
    Logger:
      - name: kafka.server.KafkaRaftServer
        level: INFO
CONF
}

java_run() {
  java -Xms256m -Xmx1g -XX:+UseG1GC -Djava.awt.headless=true \
    -Dlog4j2.configurationFile="$home/log4j2.yaml" \
    -cp "$libs/*" "$@"
}

running() {
  [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null
}

wait_ready() {
  for _ in $(seq 1 240); do
    if ! running; then
      echo "kafka exited during start; last log lines:" >&2
      tail -40 "$log" >&2 || true
      return 1
    fi
    # The broker accepts requests once the PLAINTEXT listener is bound and it has joined the quorum.
    if grep -q "Kafka Server started\|\[KafkaRaftServer nodeId=1\] Kafka Server started" "$log" 2>/dev/null \
      && (exec 3<>/dev/tcp/127.0.0.1/"$port") 2>/dev/null; then
      return 0
    fi
    sleep 0.5
  done
  echo "kafka did not become ready in 120 s; last log lines:" >&2
  tail -40 "$log" >&2 || true
  return 1
}

start() {
  install
  if running; then echo "kafka already running (pid $(cat "$pidfile"))"; return; fi
  config
  if [ ! -f "$data/meta.properties" ]; then
    mkdir -p "$data"
    java_run kafka.tools.StorageTool format -t "murphy-test-cluster-0001" \
      -c "$home/server.properties" --ignore-formatted >/dev/null
  fi
  : >"$log"
  nohup java -Xms256m -Xmx1g -XX:+UseG1GC -Djava.awt.headless=true \
    -Dlog4j2.configurationFile="$home/log4j2.yaml" \
    -cp "$libs/*" kafka.Kafka "$home/server.properties" >>"$log" 2>&1 &
  echo $! >"$pidfile"
  wait_ready
  echo "kafka ready on 127.0.0.1:$port (pid $(cat "$pidfile"))"
}

stop() {
  if ! running; then rm -f "$pidfile"; return; fi
  pid=$(cat "$pidfile")
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 1 60); do
    kill -0 "$pid" 2>/dev/null || { rm -f "$pidfile"; return; }
    sleep 0.5
  done
  kill -KILL "$pid" 2>/dev/null || true
  rm -f "$pidfile"
}

case "${1:-}" in
  install) install ;;
  start) start ;;
  stop) stop ;;
  restart) stop; start ;;
  clean) stop; rm -rf "$data" ;;
  env) echo "MURPHY_KAFKA_BROKERS=127.0.0.1:$port" ;;
  *) echo "usage: $0 install|start|stop|restart|clean|env" >&2; exit 2 ;;
esac
