#!/usr/bin/env bash
# `make demo`: rehearse a rolling restart of a whole cluster with `kadmin roll`, and watch kadmin see it.
#   scripts/demo.sh [KAFKA_HOME]
# With KAFKA_HOME (a Kafka 3.9 installation: HOME/libs/*.jar; `make demo` fetches 3.9.1 with
# scripts/fetch-kafka.sh), three real Apache Kafka brokers in ZooKeeper mode, each really stopped and
# started by the roll's hooks. Without it, a real ZooKeeper with emulated brokers (kadmin/sandbox), whose
# controller carries out the roll's reorderings and preferred-leader elections as Kafka's does.
set -euo pipefail
kafka_home="${1:-}"
. "$(dirname "$0")/demo-lib.sh"
demo_sandbox kadmin-demo

if [ -n "$kafka_home" ]; then
    brokers=3
    timeout=120  # real JVMs on a small, busy machine take seconds to stop and register
    step "export KADMIN_ZOOKEEPER=\$(kadmin sandbox up --kafka-home $kafka_home --brokers $brokers -o plain)"
    KADMIN_ZOOKEEPER=$(kadmin sandbox up --kafka-home "$kafka_home" --brokers "$brokers" -o plain)
    export KADMIN_ZOOKEEPER
    bootstrap=$(kadmin sandbox status -o json | python3 -c 'import json,sys; print(json.load(sys.stdin)["data"]["bootstrap_servers"])')

    # A few topics, so that the brokers lead and follow partitions (Kafka's admin API, from the venv's
    # kafka-python); returns once every partition has a leader and its full ISR.
    step "create topics orders (6x3, min.insync.replicas=2), payments (3x3), audit-log (4x2)   # Kafka admin API"
    python3 "$(dirname "$0")/demo-topics.py" "$bootstrap"
else
    brokers=5
    timeout=30
    step 'export KADMIN_ZOOKEEPER=$(kadmin sandbox up --brokers 5 -o plain)'
    KADMIN_ZOOKEEPER=$(kadmin sandbox up --brokers "$brokers" -o plain)
    export KADMIN_ZOOKEEPER
fi

step "kadmin brokers list"
kadmin brokers list

step "kadmin brokers list -o json > before.json"
before="$KADMIN_SANDBOX_DIR/before.json"
kadmin brokers list -o json > "$before"

step "kadmin brokers max-epoch"
kadmin brokers max-epoch

step "kadmin partitions check"
kadmin partitions check

step "kadmin roll plan"
kadmin roll plan

# The main job: every broker restarted, one at a time, each behind kadmin's gates (can-stop, drain,
# ControlledShutdown fenced by its epoch, stop, wait gone, start, a new epoch, in every ISR, undrain,
# partitions check OK), journaled in a state directory: the same command again continues an interrupted roll.
state="$KADMIN_SANDBOX_DIR/roll"
step "kadmin roll run --state roll --stop 'kadmin sandbox kill {id}' --start 'kadmin sandbox start {id}'"
kadmin roll run --state "$state" --stop 'kadmin sandbox kill {id}' --start 'kadmin sandbox start {id}' \
    --step-timeout "$timeout"

step "kadmin roll status --state roll"
kadmin roll status --state "$state"

step "kadmin brokers diff --since before.json"
kadmin brokers diff --since "$before"

step "kadmin brokers max-epoch"
kadmin brokers max-epoch

step "kadmin sandbox down"
kadmin sandbox down -o plain >/dev/null
echo "demo finished" >&2
