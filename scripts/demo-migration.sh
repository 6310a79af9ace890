#!/usr/bin/env bash
# `make demo-migration`: the journey every ZooKeeper-mode cluster must make, rehearsed on real Apache Kafka:
# three 3.9.1 brokers in ZooKeeper mode and three KRaft controllers ready to migrate them (`sandbox up --mode
# migration`), carried phase by phase with `kadmin migration roll` (brokers-migrating, brokers-kraft,
# controllers-finalize), then onto 4.3.1 with `kadmin roll run` and `kadmin features upgrade`.
#   scripts/demo-migration.sh KAFKA_3_9_HOME KAFKA_4_HOME   (`make demo-migration` fetches 3.9.1 and 4.3.1)
set -euo pipefail
old="${1:-}" new="${2:-}"
if [ -z "$old" ] || [ -z "$new" ]; then
    echo "demo-migration: usage: $0 KAFKA_3_9_HOME KAFKA_4_HOME" >&2
    exit 2
fi
. "$(dirname "$0")/demo-lib.sh"
demo_sandbox kadmin-demo-migration

step "kadmin sandbox up --kafka-home $old --mode migration --brokers 3 -o json > up.json"
kadmin sandbox up --kafka-home "$old" --mode migration --brokers 3 -o json > "$KADMIN_SANDBOX_DIR/up.json"
KADMIN_ZOOKEEPER=$(field zookeeper < "$KADMIN_SANDBOX_DIR/up.json")
KADMIN_BOOTSTRAP_SERVER=$(field bootstrap_servers < "$KADMIN_SANDBOX_DIR/up.json")
KADMIN_BOOTSTRAP_CONTROLLER=$(field bootstrap_controllers < "$KADMIN_SANDBOX_DIR/up.json")
export KADMIN_ZOOKEEPER KADMIN_BOOTSTRAP_SERVER KADMIN_BOOTSTRAP_CONTROLLER
echo "export KADMIN_ZOOKEEPER=$KADMIN_ZOOKEEPER KADMIN_BOOTSTRAP_SERVER=$KADMIN_BOOTSTRAP_SERVER" \
     "KADMIN_BOOTSTRAP_CONTROLLER=$KADMIN_BOOTSTRAP_CONTROLLER" >&2

step "kadmin migration status"
kadmin migration status

step "kadmin migration roll --phase brokers-kraft ...   # the wrong phase: refused, nothing touched (exit 7)"
rc=0; kadmin migration roll --phase brokers-kraft --state "$KADMIN_SANDBOX_DIR/refused" \
    --stop 'kadmin sandbox kill {id}' --start 'kadmin sandbox start {id}' || rc=$?
[ "$rc" -eq 7 ] || { echo "demo-migration: expected exit 7, got $rc" >&2; exit 1; }

n=0
for phase in brokers-migrating:migrating brokers-kraft:kraft controllers-finalize:finalized; do
    n=$((n + 1))
    name=${phase%%:*} node=${phase##*:}
    step "kadmin migration roll --phase $name --state roll-$n --stop 'kadmin sandbox kill {id}' --start 'kadmin sandbox phase {id} $node && kadmin sandbox start {id}'"
    kadmin migration roll --phase "$name" --state "$KADMIN_SANDBOX_DIR/roll-$n" --step-timeout 180 \
        --stop 'kadmin sandbox kill {id}' --start "kadmin sandbox phase {id} $node && kadmin sandbox start {id}"
    step "kadmin migration status"
    kadmin migration status
done

step "kadmin roll run --state roll-4 --stop 'kadmin sandbox kill {id}' --start 'kadmin sandbox start {id} --kafka-home $new'"
kadmin roll run --bootstrap-server "$KADMIN_BOOTSTRAP_SERVER" --state "$KADMIN_SANDBOX_DIR/roll-4" --step-timeout 180 \
    --stop 'kadmin sandbox kill {id}' --start "kadmin sandbox start {id} --kafka-home $(printf %q "$new")"

step "kadmin features upgrade --release-version 4.3 --bootstrap-server ..."
kadmin features upgrade --release-version 4.3 --bootstrap-server "$KADMIN_BOOTSTRAP_SERVER"

step "kadmin features describe --bootstrap-server ..."
kadmin features describe --bootstrap-server "$KADMIN_BOOTSTRAP_SERVER"
