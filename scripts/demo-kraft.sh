#!/usr/bin/env bash
# `make demo-kraft`: a real KRaft cluster of Apache Kafka 4.x (3 controllers + 3 brokers) seen by kadmin, and
# rolled by `kadmin roll` (controllers first, then brokers).
#   scripts/demo-kraft.sh KAFKA_HOME      (`make demo-kraft` fetches 4.3.1 with scripts/fetch-kafka.sh)
set -euo pipefail
kafka_home="${1:-}"
if [ -z "$kafka_home" ]; then
    echo "demo-kraft: usage: $0 KAFKA_HOME   (a Kafka 4.x installation: KAFKA_HOME/libs/*.jar)" >&2
    exit 2
fi
. "$(dirname "$0")/demo-lib.sh"
demo_sandbox kadmin-demo-kraft

step "kadmin sandbox up --kafka-home $kafka_home --mode kraft --brokers 3 -o json > up.json"
kadmin sandbox up --kafka-home "$kafka_home" --mode kraft --brokers 3 -o json > "$KADMIN_SANDBOX_DIR/up.json"
servers=$(field bootstrap_servers < "$KADMIN_SANDBOX_DIR/up.json")
controllers=$(field bootstrap_controllers < "$KADMIN_SANDBOX_DIR/up.json")
echo "bootstrap servers:     $servers" >&2
echo "bootstrap controllers: $controllers" >&2

step "kadmin brokers list --bootstrap-server $servers"
kadmin brokers list --bootstrap-server "$servers"

step "kadmin brokers list --bootstrap-controller $controllers   # controllers do not describe brokers: exit 3"
rc=0; kadmin brokers list --bootstrap-controller "$controllers" || rc=$?
[ "$rc" -eq 3 ] || { echo "demo-kraft: expected exit 3, got $rc" >&2; exit 1; }

step "kadmin quorum describe --status --bootstrap-server $servers"
kadmin quorum describe --status --bootstrap-server "$servers"

step "kadmin quorum describe --status --bootstrap-controller $controllers"
kadmin quorum describe --status --bootstrap-controller "$controllers"

step "kafka-metadata-quorum --bootstrap-controller $controllers describe --status   # Kafka's own tool, to compare"
java -Xmx256m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 \
    "-Dlog4j2.configurationFile=$KADMIN_SANDBOX_DIR/tools-log4j2.properties" -cp "$kafka_home/libs/*" \
    org.apache.kafka.tools.MetadataQuorumCommand --bootstrap-controller "$controllers" describe --status

step "kadmin quorum describe --replication --bootstrap-server $servers"
kadmin quorum describe --replication --bootstrap-server "$servers"

step "kadmin quorum check --bootstrap-server $servers"
kadmin quorum check --bootstrap-server "$servers"

step "create topics orders (6x3, min.insync.replicas=2), payments (3x3), audit-log (4x2)   # Kafka admin API"
python3 "$(dirname "$0")/demo-topics.py" "$servers"

step "kadmin partitions check --bootstrap-server $servers"
kadmin partitions check --bootstrap-server "$servers"

step "kadmin brokers can-stop 2 --bootstrap-server $servers"
kadmin brokers can-stop 2 --bootstrap-server "$servers"

step "kadmin roll plan --bootstrap-server $servers"
kadmin roll plan --bootstrap-server "$servers"

# The controllers first (the quorum leader last), each behind `quorum check --restart` and caught up again
# before the next; then the brokers, each drained, stopped, fenced, started, unfenced, in sync, undrained.
state="$KADMIN_SANDBOX_DIR/roll"
step "kadmin roll run --bootstrap-server $servers --state roll --stop 'kadmin sandbox kill {id}' --start 'kadmin sandbox start {id}'"
kadmin roll run --bootstrap-server "$servers" --state "$state" --stop 'kadmin sandbox kill {id}' \
    --start 'kadmin sandbox start {id}' --step-timeout 300

step "kadmin brokers list --bootstrap-server $servers"
kadmin brokers list --bootstrap-server "$servers"

step "kadmin quorum check --bootstrap-controller $controllers"
kadmin quorum check --bootstrap-controller "$controllers"

step "kadmin sandbox down"
kadmin sandbox down -o plain >/dev/null
echo "demo finished" >&2
