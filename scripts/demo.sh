#!/usr/bin/env bash
# `make demo`: rehearse a rolling bounce and watch kadmin see it.
#   scripts/demo.sh [KAFKA_HOME]
# With KAFKA_HOME (a Kafka 3.9 installation: HOME/libs/*.jar; `make demo` fetches 3.9.1 with
# scripts/fetch-kafka.sh), three real Apache Kafka brokers in ZooKeeper mode, and `kadmin sandbox bounce`
# is a real graceful restart. Without it, a real ZooKeeper with emulated brokers.
set -euo pipefail
kafka_home="${1:-}"
. "$(dirname "$0")/demo-lib.sh"
demo_sandbox kadmin-demo
step() { printf '\n\033[1m$ %s\033[0m\n' "$*" >&2; }

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

step "kadmin brokers can-stop 3"
kadmin brokers can-stop 3

epoch=$(kadmin brokers show 3 -o json | python3 -c 'import json,sys; print(json.load(sys.stdin)["data"]["epoch"])')
step "kadmin brokers shutdown 3   # ControlledShutdown with broker epoch $epoch"
kadmin brokers shutdown 3

step "kadmin partitions list --broker 3"
kadmin partitions list --broker 3

# No pause needed before the bounce: `--epoch-gt` is a condition on the registration, not an event, so
# the waiter returns as soon as it sees an epoch above $epoch, whether it starts before or after the bounce.
step "kadmin brokers wait 3 --epoch-gt $epoch --timeout $timeout &   # the restart receipt"
kadmin brokers wait 3 --epoch-gt "$epoch" --timeout "$timeout" &
waiter=$!

step "kadmin sandbox bounce 3"
kadmin sandbox bounce 3 -o plain >/dev/null
wait "$waiter"

step "kadmin brokers shutdown 3 --epoch $epoch   # a stale retry is fenced (exit 6)"
kadmin brokers shutdown 3 --epoch "$epoch" --force -o plain >/dev/null || echo "exit code $?" >&2

step "kadmin brokers wait 3 --in-sync --timeout $timeout"
kadmin brokers wait 3 --in-sync --timeout "$timeout"

step "kadmin brokers diff --since before.json"
kadmin brokers diff --since "$before"

step "kadmin brokers max-epoch"
kadmin brokers max-epoch

step "kadmin sandbox down"
kadmin sandbox down -o plain >/dev/null
echo "demo finished" >&2
