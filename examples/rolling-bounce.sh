#!/usr/bin/env bash
# rolling-bounce.sh: restart every node of a Kafka cluster with `kadmin roll`, over ssh and systemd.
#
# Usage:
#   rolling-bounce.sh STATE_DIR [kadmin roll run options...]
#
# The cluster is the one kadmin is given (KADMIN_ZOOKEEPER, KADMIN_BOOTSTRAP_SERVER or a context; or pass -z/-b
# after STATE_DIR). Every node is restarted, KRaft controllers first (the
# quorum leader last), then the brokers, each behind kadmin's gates (docs/roll.md). Run the same command again
# with the same STATE_DIR after an interruption (Ctrl-C, a lost ssh session, a crashed bastion): it continues
# where it stopped and never restarts a node twice. `kadmin roll status --state STATE_DIR` shows where it is.
#
# The hooks (override with STOP, START, ONLY_IF): {id} {host} {port} {rack} {role} are the node's.
#   STOP='ssh {host} sudo systemctl stop kafka'      returns once the node is stopped
#   START='ssh {host} sudo systemctl start kafka'    returns once it was started (kadmin waits for the receipt)
#   ONLY_IF='ssh {host} test -e /etc/kafka/.needs-restart'   optional: skip the nodes that do not need it
# Exit codes: kadmin roll run's (docs/exit-codes.md): 0 done, 1 a gate not met or a node not back, 3 STATE_DIR
# is another cluster's or another roll's, 7 the cluster is unhealthy (nothing touched) or another roll runs,
# 9 a hook failed, 130 interrupted. The old 319-line script is kept as bench/rolling-bounce-v1.sh (benchmarks).
set -euo pipefail

KADMIN=${KADMIN_BIN:-kadmin}
state=${1:?usage: rolling-bounce.sh STATE_DIR [kadmin roll run options...]}
shift
STOP=${STOP:-'ssh {host} sudo systemctl stop kafka'}
START=${START:-'ssh {host} sudo systemctl start kafka'}
extra=()
if [ -n "${ONLY_IF:-}" ]; then
    extra=(--only-if "$ONLY_IF")
fi

exec "$KADMIN" roll run --state "$state" --stop "$STOP" --start "$START" "${extra[@]}" "$@"
