#!/usr/bin/env bash
# Single-node Apache Kafka (KRaft, combined broker+controller) for tests and local use.
#
#   deploy/kafka/kafka.sh install   resolve the jars through Maven into $MURPHY_KAFKA_HOME/libs
#   deploy/kafka/kafka.sh start     format storage (first time) and start on 127.0.0.1:$MURPHY_KAFKA_PORT
#   deploy/kafka/kafka.sh stop      stop it (SIGTERM, then SIGKILL after a grace period)
#   deploy/kafka/kafka.sh restart   stop then start, keeping the data
#   deploy/kafka/kafka.sh env       print MURPHY_KAFKA_BROKERS=... (one VAR=value a line) for the test suite:
#                                   export $(deploy/kafka/kafka.sh env)
#
# Listeners, all on 127.0.0.1 (see deploy/kafka/README.md):
#   $MURPHY_KAFKA_PORT       PLAINTEXT (inter-broker too)
#   $MURPHY_KAFKA_PORT+1     CONTROLLER (KRaft)
#   $MURPHY_KAFKA_SASL_PORT  SASL_SSL: SCRAM-SHA-256, SCRAM-SHA-512 or PLAIN over TLS,
#                            client certificate requested (default $MURPHY_KAFKA_PORT+2)
#   $MURPHY_KAFKA_MTLS_PORT  SSL with a client certificate required (mutual TLS)
#                            (default $MURPHY_KAFKA_PORT+3)
# The script makes a throwaway CA, a broker certificate (SAN 127.0.0.1, localhost) and
# a client certificate under $MURPHY_KAFKA_HOME/tls, and a SCRAM user "murphy" (both
# SCRAM mechanisms, and PLAIN) with a random password when it formats the storage.
#
# Environment: MURPHY_KAFKA_HOME (default .cache/kafka), MURPHY_KAFKA_PORT (default 39092),
# MURPHY_KAFKA_SASL_PORT, MURPHY_KAFKA_MTLS_PORT.
#
# A local three-broker cluster (same jars, KRaft, every node broker and controller, PLAINTEXT
# only), for tests of replication and broker failures and for users:
#
#   deploy/kafka/kafka.sh cluster start [N]   format (first time) and start every node (or node N)
#                                             that is not running; waits until each is ready
#   deploy/kafka/kafka.sh cluster stop [N]    stop every node (or node N): SIGTERM, then SIGKILL
#   deploy/kafka/kafka.sh cluster kill N      kill -9 node N (a crash; `cluster start` restarts it)
#   deploy/kafka/kafka.sh cluster pause N     SIGSTOP node N (a stalled broker: a GC pause, a frozen VM)
#   deploy/kafka/kafka.sh cluster resume N    SIGCONT node N
#   deploy/kafka/kafka.sh cluster status      one line per node: id, port, pid, running/paused/down
#   deploy/kafka/kafka.sh cluster clean       stop and delete the cluster's data
#   deploy/kafka/kafka.sh cluster env         MURPHY_KAFKA_BROKERS=... (the three brokers)
#
# Node N (1..3) has node.id N, PLAINTEXT on 127.0.0.1:$MURPHY_KAFKA_CLUSTER_PORT+2(N-1) and its
# controller listener on the port after it (default base 39400: brokers 39400, 39402, 39404).
# default.replication.factor 3, min.insync.replicas 2 (internal topics alike); failure detection
# is shortened for tests (broker session 6 s, replica lag 10 s). Data and logs live under
# $MURPHY_KAFKA_CLUSTER_HOME (default $MURPHY_KAFKA_HOME/cluster), node N in nodeN/.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
home=${MURPHY_KAFKA_HOME:-$root/.cache/kafka}
port=${MURPHY_KAFKA_PORT:-39092}
cport=$((port + 1))
sport=${MURPHY_KAFKA_SASL_PORT:-$((port + 2))}
mport=${MURPHY_KAFKA_MTLS_PORT:-$((port + 3))}
libs=$home/libs
data=$home/data
pidfile=$home/kafka.pid
log=$home/kafka.log
tlsdir=$home/tls
sasl_user=murphy
# scram_marker says the storage was formatted with the SCRAM user.
scram_marker=$data/.murphy-scram

install() {
  if [ -f "$libs/.complete" ]; then return; fi
  mkdir -p "$libs"
  mvn -q -B -f "$here/pom.xml" dependency:copy-dependencies \
    -DoutputDirectory="$libs" -DincludeScope=runtime
  touch "$libs/.complete"
}

# secrets makes, once, the CA, the broker and client certificates (PEM, unencrypted
# PKCS#8 keys) and the SASL password.
secrets() {
  if [ -f "$tlsdir/.complete" ]; then return; fi
  rm -rf "$tlsdir"
  mkdir -p "$tlsdir"
  (
    cd "$tlsdir"
    umask 077
    openssl genpkey -quiet -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out ca.key
    openssl req -x509 -new -key ca.key -sha256 -days 3650 -subj "/CN=murphy test CA" -out ca.crt \
      -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign"
    sign() { # name subject extensions
      openssl genpkey -quiet -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$1.key"
      openssl req -new -key "$1.key" -subj "$2" -out "$1.csr"
      printf '%s\n' "$3" >"$1.ext"
      openssl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -sha256 -days 3650 \
        -extfile "$1.ext" -out "$1.crt" 2>/dev/null
      rm -f "$1.csr" "$1.ext"
    }
    sign broker "/CN=localhost" "subjectAltName=IP:127.0.0.1,DNS:localhost
extendedKeyUsage=serverAuth
keyUsage=critical,digitalSignature,keyEncipherment"
    sign client "/CN=murphy-client" "extendedKeyUsage=clientAuth
keyUsage=critical,digitalSignature,keyEncipherment"
    # Kafka's PEM key store: the private key and the certificate chain in one file.
    cat broker.key broker.crt ca.crt >broker.pem
    openssl rand -hex 16 | tr -d '\n' >sasl-password
    chmod 644 ca.crt client.crt broker.crt
  )
  touch "$tlsdir/.complete"
}

config() {
  mkdir -p "$home"
  local pw jaas
  pw=$(cat "$tlsdir/sasl-password")
  jaas=org.apache.kafka.common.security
  cat >"$home/server.properties" <<CONF
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$cport
listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$cport,SASL_SSL://127.0.0.1:$sport,MTLS://127.0.0.1:$mport
advertised.listeners=PLAINTEXT://127.0.0.1:$port,SASL_SSL://127.0.0.1:$sport,MTLS://127.0.0.1:$mport
controller.listener.names=CONTROLLER
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,SASL_SSL:SASL_SSL,MTLS:SSL
inter.broker.listener.name=PLAINTEXT
ssl.keystore.type=PEM
ssl.keystore.location=$tlsdir/broker.pem
ssl.truststore.type=PEM
ssl.truststore.location=$tlsdir/ca.crt
listener.name.sasl_ssl.ssl.client.auth=requested
listener.name.mtls.ssl.client.auth=required
listener.name.sasl_ssl.sasl.enabled.mechanisms=SCRAM-SHA-256,SCRAM-SHA-512,PLAIN
listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config=$jaas.scram.ScramLoginModule required;
listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=$jaas.scram.ScramLoginModule required;
listener.name.sasl_ssl.plain.sasl.jaas.config=$jaas.plain.PlainLoginModule required user_$sasl_user="$pw";
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
  log_config
}

# log_config writes the brokers' log4j2 configuration: warnings, and the line saying a
# server started (wait_ready looks for it).
log_config() {
  mkdir -p "$home"
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
      && (exec 3<>/dev/tcp/127.0.0.1/"$port") 2>/dev/null \
      && (exec 3<>/dev/tcp/127.0.0.1/"$sport") 2>/dev/null \
      && (exec 3<>/dev/tcp/127.0.0.1/"$mport") 2>/dev/null; then
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
  secrets
  config
  if [ ! -f "$data/meta.properties" ]; then
    mkdir -p "$data"
    local pw
    pw=$(cat "$tlsdir/sasl-password")
    java_run kafka.tools.StorageTool format -t "murphy-test-cluster-0001" \
      -c "$home/server.properties" --ignore-formatted \
      --add-scram "SCRAM-SHA-256=[name=$sasl_user,password=$pw]" \
      --add-scram "SCRAM-SHA-512=[name=$sasl_user,password=$pw]" >/dev/null
    touch "$scram_marker"
  elif [ ! -f "$scram_marker" ]; then
    echo "warning: $data was formatted before the SASL_SSL listener existed: it has no SCRAM user" \
      "(SCRAM logins fail; PLAIN and mutual TLS work). '$0 clean' reformats it." >&2
  fi
  : >"$log"
  nohup java -Xms256m -Xmx1g -XX:+UseG1GC -Djava.awt.headless=true \
    -Dlog4j2.configurationFile="$home/log4j2.yaml" \
    -cp "$libs/*" kafka.Kafka "$home/server.properties" >>"$log" 2>&1 &
  echo $! >"$pidfile"
  wait_ready
  echo "kafka ready on 127.0.0.1:$port, SASL_SSL on :$sport, mutual TLS on :$mport (pid $(cat "$pidfile"))"
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

# env_vars prints the variables the test suite reads, one VAR=value a line (the
# secured listeners' only once the certificates exist).
env_vars() {
  echo "MURPHY_KAFKA_BROKERS=127.0.0.1:$port"
  if [ -f "$tlsdir/.complete" ]; then
    echo "MURPHY_KAFKA_SASL_BROKERS=127.0.0.1:$sport"
    echo "MURPHY_KAFKA_MTLS_BROKERS=127.0.0.1:$mport"
    echo "MURPHY_KAFKA_SASL_USER=$sasl_user"
    echo "MURPHY_KAFKA_SASL_PASSWORD=$(cat "$tlsdir/sasl-password")"
    echo "MURPHY_KAFKA_SASL_PASSWORD_FILE=$tlsdir/sasl-password"
    echo "MURPHY_KAFKA_CA_FILE=$tlsdir/ca.crt"
    echo "MURPHY_KAFKA_CLIENT_CERT=$tlsdir/client.crt"
    echo "MURPHY_KAFKA_CLIENT_KEY=$tlsdir/client.key"
  fi
}

cluster_home=${MURPHY_KAFKA_CLUSTER_HOME:-$home/cluster}
cluster_base=${MURPHY_KAFKA_CLUSTER_PORT:-39400}
cluster_nodes=3

node_port() { echo $((cluster_base + 2 * ($1 - 1))); }
node_dir() { echo "$cluster_home/node$1"; }
node_pid() { cat "$(node_dir "$1")/kafka.pid" 2>/dev/null || true; }
node_running() {
  local pid
  pid=$(node_pid "$1")
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null
}
check_node() {
  case "${1:-}" in
    [1-9]) [ "$1" -le "$cluster_nodes" ] && return ;;
  esac
  echo "node must be 1..$cluster_nodes, got '${1:-}'" >&2
  exit 2
}

node_config() {
  local n=$1 dir voters="" i
  dir=$(node_dir "$n")
  mkdir -p "$dir"
  for i in $(seq 1 $cluster_nodes); do
    voters+="${voters:+,}$i@127.0.0.1:$(($(node_port "$i") + 1))"
  done
  cat >"$dir/server.properties" <<CONF
process.roles=broker,controller
node.id=$n
controller.quorum.voters=$voters
listeners=PLAINTEXT://127.0.0.1:$(node_port "$n"),CONTROLLER://127.0.0.1:$(($(node_port "$n") + 1))
advertised.listeners=PLAINTEXT://127.0.0.1:$(node_port "$n")
controller.listener.names=CONTROLLER
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
inter.broker.listener.name=PLAINTEXT
log.dirs=$dir/data
num.partitions=4
default.replication.factor=$cluster_nodes
min.insync.replicas=2
offsets.topic.replication.factor=$cluster_nodes
offsets.topic.num.partitions=8
transaction.state.log.replication.factor=$cluster_nodes
transaction.state.log.min.isr=2
share.coordinator.state.topic.replication.factor=$cluster_nodes
share.coordinator.state.topic.min.isr=2
group.initial.rebalance.delay.ms=0
group.consumer.min.session.timeout.ms=1000
group.classic.min.session.timeout.ms=1000
broker.session.timeout.ms=6000
broker.heartbeat.interval.ms=1000
replica.lag.time.max.ms=10000
unclean.leader.election.enable=false
auto.create.topics.enable=true
message.max.bytes=134217728
replica.fetch.max.bytes=134217728
log.retention.hours=168
log.segment.bytes=67108864
CONF
}

node_start() {
  local n=$1 dir
  dir=$(node_dir "$n")
  if node_running "$n"; then return; fi
  node_config "$n"
  if [ ! -f "$dir/data/meta.properties" ]; then
    mkdir -p "$dir/data"
    java -Xms128m -Xmx512m -Djava.awt.headless=true -Dlog4j2.configurationFile="$home/log4j2.yaml" \
      -cp "$libs/*" kafka.tools.StorageTool format -t "murphy-local-cluster-00001" \
      -c "$dir/server.properties" --ignore-formatted >/dev/null
  fi
  : >"$dir/kafka.log"
  # The node's config directory is in its command line, so that its processes can be told
  # apart from every other broker on the machine.
  nohup java -Xms128m -Xmx512m -XX:+UseG1GC -Djava.awt.headless=true \
    -Dlog4j2.configurationFile="$home/log4j2.yaml" \
    -cp "$libs/*" kafka.Kafka "$dir/server.properties" >>"$dir/kafka.log" 2>&1 &
  echo $! >"$dir/kafka.pid"
}

node_wait() {
  local n=$1 dir port
  dir=$(node_dir "$n")
  port=$(node_port "$n")
  local binds=0
  for _ in $(seq 1 360); do
    if ! node_running "$n"; then
      # A port still held by the connections of a node stopped a moment ago (TIME_WAIT)
      # frees itself within a minute: try again.
      if grep -q "Address already in use" "$dir/kafka.log" 2>/dev/null && [ $binds -lt 30 ]; then
        binds=$((binds + 1))
        sleep 2
        node_start "$n"
        continue
      fi
      echo "kafka node $n exited during start; last log lines:" >&2
      tail -40 "$dir/kafka.log" >&2 || true
      return 1
    fi
    if grep -q "Kafka Server started" "$dir/kafka.log" 2>/dev/null \
      && (exec 3<>/dev/tcp/127.0.0.1/"$port") 2>/dev/null; then
      return 0
    fi
    sleep 0.5
  done
  echo "kafka node $n did not become ready in 180 s; last log lines:" >&2
  tail -40 "$dir/kafka.log" >&2 || true
  return 1
}

node_stop() {
  local n=$1 pid
  pid=$(node_pid "$n")
  if [ -z "$pid" ] || ! kill -0 "$pid" 2>/dev/null; then rm -f "$(node_dir "$n")/kafka.pid"; return; fi
  kill -CONT "$pid" 2>/dev/null || true
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 1 60); do
    kill -0 "$pid" 2>/dev/null || { rm -f "$(node_dir "$n")/kafka.pid"; return; }
    sleep 0.5
  done
  kill -KILL "$pid" 2>/dev/null || true
  rm -f "$(node_dir "$n")/kafka.pid"
}

cluster() {
  local cmd=${1:-} n=${2:-} i
  case "$cmd" in
    start)
      install
      log_config
      if [ -n "$n" ]; then check_node "$n"; node_start "$n"; node_wait "$n"; else
        for i in $(seq 1 $cluster_nodes); do node_start "$i"; done
        for i in $(seq 1 $cluster_nodes); do node_wait "$i"; done
      fi
      echo "kafka cluster ready: $(cluster env | cut -d= -f2)"
      ;;
    stop)
      if [ -n "$n" ]; then check_node "$n"; node_stop "$n"; else
        # Together: a controller quorum stopping one node at a time waits for the others.
        for i in $(seq 1 $cluster_nodes); do node_stop "$i" & done
        wait
      fi
      ;;
    kill)
      check_node "$n"
      if node_running "$n"; then kill -KILL "$(node_pid "$n")"; fi
      rm -f "$(node_dir "$n")/kafka.pid"
      ;;
    pause) check_node "$n"; node_running "$n" && kill -STOP "$(node_pid "$n")" ;;
    resume) check_node "$n"; node_running "$n" && kill -CONT "$(node_pid "$n")" ;;
    status)
      for i in $(seq 1 $cluster_nodes); do
        local state=down pid
        pid=$(node_pid "$i")
        if node_running "$i"; then
          state=running
          if [ "$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)" = T ]; then state=paused; fi
        fi
        echo "node $i 127.0.0.1:$(node_port "$i") pid ${pid:--} $state"
      done
      ;;
    clean) cluster stop; rm -rf "$cluster_home" ;;
    env)
      local b=""
      for i in $(seq 1 $cluster_nodes); do b+="${b:+,}127.0.0.1:$(node_port "$i")"; done
      echo "MURPHY_KAFKA_BROKERS=$b"
      ;;
    *) echo "usage: $0 cluster start [N]|stop [N]|kill N|pause N|resume N|status|clean|env" >&2; exit 2 ;;
  esac
}

case "${1:-}" in
  cluster) shift; cluster "$@" ;;
  install) install ;;
  start) start ;;
  stop) stop ;;
  restart) stop; start ;;
  clean) stop; rm -rf "$data" ;;
  env) env_vars ;;
  *) echo "usage: $0 install|start|stop|restart|clean|env|cluster ..." >&2; exit 2 ;;
esac
