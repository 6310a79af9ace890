#!/usr/bin/env bash
# `make demo`: a real ZooKeeper with emulated brokers; list them, bounce one, and watch kadmin see it.
set -euo pipefail
export KADMIN_SANDBOX_DIR="${KADMIN_SANDBOX_DIR:-$(mktemp -d -t kadmin-demo.XXXXXX)}"
trap 'kadmin sandbox down >/dev/null 2>&1 || true' EXIT
step() { printf '\n\033[1m$ %s\033[0m\n' "$*" >&2; }

step 'export KADMIN_ZOOKEEPER=$(kadmin sandbox up --brokers 5 -o plain)'
KADMIN_ZOOKEEPER=$(kadmin sandbox up --brokers 5 -o plain)
export KADMIN_ZOOKEEPER

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

step "kadmin brokers wait 3 --epoch-gt $epoch --timeout 30 &   # the restart receipt"
kadmin brokers wait 3 --epoch-gt "$epoch" --timeout 30 &
waiter=$!
sleep 1

step "kadmin sandbox bounce 3"
kadmin sandbox bounce 3 -o plain >/dev/null
wait "$waiter"

step "kadmin brokers shutdown 3 --epoch $epoch   # a stale retry is fenced (exit 6)"
kadmin brokers shutdown 3 --epoch "$epoch" --force -o plain >/dev/null || echo "exit code $?" >&2

step "kadmin brokers wait 3 --in-sync --timeout 30"
kadmin brokers wait 3 --in-sync --timeout 30

step "kadmin brokers diff --since before.json"
kadmin brokers diff --since "$before"

step "kadmin brokers max-epoch"
kadmin brokers max-epoch

step "kadmin sandbox down"
kadmin sandbox down -o plain >/dev/null
trap - EXIT
echo "demo finished" >&2
