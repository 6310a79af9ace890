#!/usr/bin/env bash
# rolling-bounce.sh: restart every broker of a Kafka cluster, one at a time, gated on kadmin's exit codes.
#
# Usage:
#   rolling-bounce.sh --stop 'CMD {id}' --start 'CMD {id}' [options] [BROKER_ID...]
#
# For each broker (the ids given, else every broker `kadmin brokers list` shows; in ZooKeeper mode the
# active controller goes last, so the controller moves once):
#    1. kadmin brokers can-stop ID              stopping it leaves every partition a leader and min ISR
#    2. kadmin brokers drain ID --save FILE     leaderships off it, no data moved (both modes)
#    3. kadmin brokers shutdown ID --epoch E    ZooKeeper mode only: epoch-fenced controlled shutdown
#    4. the --stop command                      e.g. 'systemctl stop kafka@{id}'
#    5. kadmin brokers wait ID --gone|--fenced  the old process is out (ZooKeeper: znode gone; KRaft: fenced)
#    6. the --start command
#    7. kadmin brokers wait ID --epoch-gt E     ZooKeeper: a new registration (E read before the stop)
#       kadmin brokers wait ID --unfenced       KRaft: the new process caught up
#    8. kadmin brokers wait ID --in-sync        back in the ISR of every partition it hosts
#    9. kadmin brokers undrain ID --from FILE   its preferred leaderships back
#   10. kadmin partitions check                 0 (OK) within --check-timeout (WARNING is retried)
# Before the first broker: `kadmin partitions check` must answer 0 (a cluster in trouble is not bounced).
#
# Why both drain and shutdown in ZooKeeper mode: `drain` moves the leaderships while the broker still
# serves (producers see a leader change, not an outage) and leaves it preferred nowhere, so the
# auto-rebalancer does not pull leaders back onto it while it restarts; `shutdown`, fenced by the epoch
# read before the stop, then takes it out of every ISR through the controller, for exactly that
# incarnation (exit 6 if it re-registered meanwhile), before the process is signalled. A KRaft cluster
# serves no ControlledShutdown: a KRaft broker's own SIGTERM path (its controller heartbeat) does that part.
# Why --unfenced and not --registered on KRaft: a stopped KRaft broker stays registered (fenced), so
# --registered would already hold for the old registration. Kafka 3.x in KRaft mode answers
# DescribeCluster below v2, which lists no fenced broker: there step 5 waits until `kadmin brokers list`
# no longer lists the broker (fenced or gone: out of the active set; said on stderr), so that a stop that
# left the old registration unfenced for a while (a crash: until its session times out) is not mistaken
# for a restart, and step 7 is --registered (= listed, i.e. unfenced, there).
#
# Options:
#   --stop CMD, --start CMD   command templates run with `bash -c`; {id} is replaced by the broker id.
#                             Each must return once the broker is stopped / started (the waits follow).
#                             kadmin's sandbox: --stop 'kadmin sandbox kill {id}' --start 'kadmin sandbox start {id}'
#   --zookeeper CONNECT       ZooKeeper mode (sets KADMIN_ZOOKEEPER for kadmin)
#   --bootstrap-server HOSTS  KRaft (sets KADMIN_BOOTSTRAP_SERVER); with --zookeeper too, drain uses the protocol
#   --mode zk|kraft           only needed when the cluster comes from a kadmin context (KADMIN_CONTEXT)
#   --kadmin PATH             the kadmin executable (default: $KADMIN_BIN, else `kadmin` on PATH)
#   --state-dir DIR           where drain files are saved (default: a new directory under ${TMPDIR:-/tmp})
#   --wait-timeout S          each wait: gone/fenced, registered, in-sync (default 600)
#   --drain-timeout S         drain, shutdown, undrain (default 300)
#   --check-timeout S         each partitions check (before the first broker, after each), retried while
#                             it answers 1 (WARNING: under-replicated) for up to this long (default 300)
#   --dry-run                 print the plan on stdout (reads the broker list only; changes nothing)
#   -h, --help
# The mode is taken from the connection kadmin would use: ZooKeeper mode when KADMIN_ZOOKEEPER (or
# --zookeeper) is set, as kadmin's own backend choice does; else KRaft when KADMIN_BOOTSTRAP_SERVER is.
# Progress lines go to stderr with kadmin's one-line messages; kadmin's data output (tables) goes to
# STATE_DIR/output.log; stdout gets the plan (--dry-run) or one summary line. $PYTHON (default python3)
# reads kadmin's JSON (the broker list and epochs).
#
# Exit codes (the step that failed; the message names the broker and kadmin's own exit code):
#    0  every broker bounced
#    2  usage error
#    3  setup: no cluster given, kadmin not found, the broker list could not be read
#   10  the partitions check before the first broker did not answer 0
#   11  can-stop refused (kadmin 1: a partition would lose its leader or min ISR)
#   12  drain failed                      13  shutdown failed (ZooKeeper mode)
#   14  the --stop command failed         15  wait --gone / --fenced / not listed failed
#   16  the --start command failed        17  wait --epoch-gt / --unfenced failed
#   18  wait --in-sync failed             19  undrain failed
#   20  the partitions check after a broker did not answer 0
#  130  interrupted
# Nothing is done to the next broker once a step failed. When the failure comes after the drain, the
# message says how to restore the broker's leaderships (`kadmin brokers undrain ID --from FILE`).

set -euo pipefail

PROG=${0##*/}
KADMIN=${KADMIN_BIN:-kadmin}
PYTHON=${PYTHON:-python3}
STOP_CMD=""
START_CMD=""
MODE=""
STATE_DIR=""
WAIT_TIMEOUT=600
DRAIN_TIMEOUT=300
CHECK_TIMEOUT=300
DRY_RUN=0
IDS=()
FENCED_SHOWN=1  # 0 once the cluster said it cannot show fenced brokers (DescribeCluster below v2)
CURRENT=""      # the broker being bounced
DRAIN_FILE=""   # its drain file, once drained

say() { printf '%s: %s\n' "$PROG" "$*" >&2; }
usage_error() { say "error: $*"; say "see: $PROG --help"; exit 2; }

fail() {  # fail EXIT STEP KADMIN_CODE [DETAIL]
    local code=$1 step=$2 kcode=$3 detail=${4:-}
    say "FAILED: step '$step' for broker ${CURRENT:-?} (exit $kcode)${detail:+: $detail}"
    if [[ -n $DRAIN_FILE ]]; then
        say "broker $CURRENT is drained; once it is back and in sync, restore its leaderships with:"
        say "  kadmin brokers undrain $CURRENT --from $DRAIN_FILE"
    fi
    say "stopped; no further broker was touched"
    exit "$code"
}

on_interrupt() {
    trap - INT TERM
    say "interrupted${CURRENT:+ while bouncing broker $CURRENT}"
    if [[ -n $DRAIN_FILE ]]; then
        say "restore broker $CURRENT's leaderships with: kadmin brokers undrain $CURRENT --from $DRAIN_FILE"
    fi
    exit 130
}
trap on_interrupt INT TERM

positive() {  # positive NAME VALUE
    [[ $2 =~ ^[0-9]+([.][0-9]+)?$ ]] || usage_error "$1 wants a number of seconds, not '$2'"
}

while (($#)); do
    case $1 in
        --stop) STOP_CMD=${2?}; shift 2 ;;
        --start) START_CMD=${2?}; shift 2 ;;
        --zookeeper) export KADMIN_ZOOKEEPER=${2?}; shift 2 ;;
        --bootstrap-server) export KADMIN_BOOTSTRAP_SERVER=${2?}; shift 2 ;;
        --mode) MODE=${2?}; shift 2 ;;
        --kadmin) KADMIN=${2?}; shift 2 ;;
        --state-dir) STATE_DIR=${2?}; shift 2 ;;
        --wait-timeout) positive "$1" "${2?}"; WAIT_TIMEOUT=$2; shift 2 ;;
        --drain-timeout) positive "$1" "${2?}"; DRAIN_TIMEOUT=$2; shift 2 ;;
        --check-timeout) positive "$1" "${2?}"; CHECK_TIMEOUT=$2; shift 2 ;;
        --dry-run) DRY_RUN=1; shift ;;
        -h | --help) sed -n '2,/^$/s/^# \{0,1\}//p' "$0"; exit 0 ;;
        --) shift; IDS+=("$@"); break ;;
        -*) usage_error "unknown option $1" ;;
        *) IDS+=("$1"); shift ;;
    esac
done
for id in "${IDS[@]+"${IDS[@]}"}"; do
    [[ $id =~ ^[0-9]+$ ]] || usage_error "broker id '$id' is not a number"
done
if ((!DRY_RUN)); then
    [[ -n $STOP_CMD ]] || usage_error "--stop CMD is required (e.g. --stop 'systemctl stop kafka@{id}')"
    [[ -n $START_CMD ]] || usage_error "--start CMD is required (e.g. --start 'systemctl start kafka@{id}')"
fi
command -v "$KADMIN" >/dev/null 2>&1 || { say "error: kadmin not found: $KADMIN (use --kadmin PATH)"; exit 3; }
command -v "$PYTHON" >/dev/null 2>&1 || { say "error: $PYTHON not found (set PYTHON=...)"; exit 3; }

if [[ -z $MODE ]]; then
    if [[ -n ${KADMIN_ZOOKEEPER:-} ]]; then MODE=zk
    elif [[ -n ${KADMIN_BOOTSTRAP_SERVER:-} ]]; then MODE=kraft
    else
        say "error: no cluster given: --zookeeper / KADMIN_ZOOKEEPER (ZooKeeper mode) or --bootstrap-server /"
        say "       KADMIN_BOOTSTRAP_SERVER (KRaft); with KADMIN_CONTEXT, say --mode zk|kraft"
        exit 3
    fi
fi
[[ $MODE == zk || $MODE == kraft ]] || usage_error "--mode must be zk or kraft, not '$MODE'"

json() {  # json EXPR: evaluate a Python expression over the kadmin JSON envelope on stdin (`d` = its data)
    "$PYTHON" -c 'import json, sys
d = json.load(sys.stdin)["data"]
r = eval(sys.argv[1])
print("\n".join(map(str, r)) if isinstance(r, list) else r)' "$1"
}

# The brokers (ZooKeeper mode: active controller last) and, in ZooKeeper mode, their epochs.
LISTING=$("$KADMIN" brokers list -o json) || { say "error: kadmin brokers list failed (exit $?)"; exit 3; }
if ((${#IDS[@]} == 0)); then
    mapfile -t IDS < <(json '[b["id"] for b in sorted(d, key=lambda b: (bool(b.get("is_controller")), b["id"]))]' \
        <<<"$LISTING")
    ((${#IDS[@]})) || { say "error: kadmin brokers list shows no broker"; exit 3; }
fi
epoch_of() {  # epoch_of ID: the broker's registration epoch now (ZooKeeper mode), empty when unregistered
    "$KADMIN" brokers list -o json | json "next((b['epoch'] for b in d if b['id'] == $1), '')"
}

expand() { printf '%s' "${1//\{id\}/$2}"; }

if ((DRY_RUN)); then
    echo "mode: $MODE; brokers in order: ${IDS[*]}"
    echo "before: kadmin partitions check (must answer 0)"
    for id in "${IDS[@]}"; do
        echo "broker $id:"
        echo "  kadmin brokers can-stop $id"
        echo "  kadmin brokers drain $id --save <state-dir>/drain-$id-<time>.json --timeout $DRAIN_TIMEOUT"
        if [[ $MODE == zk ]]; then
            echo "  kadmin brokers shutdown $id --epoch <its epoch now> --wait --timeout $DRAIN_TIMEOUT"
            echo "  stop: $(expand "${STOP_CMD:-<--stop>}" "$id")"
            echo "  kadmin brokers wait $id --gone --timeout $WAIT_TIMEOUT"
            echo "  start: $(expand "${START_CMD:-<--start>}" "$id")"
            echo "  kadmin brokers wait $id --epoch-gt <its epoch before the stop> --timeout $WAIT_TIMEOUT"
        else
            echo "  stop: $(expand "${STOP_CMD:-<--stop>}" "$id")"
            echo "  kadmin brokers wait $id --fenced --timeout $WAIT_TIMEOUT"
            echo "  start: $(expand "${START_CMD:-<--start>}" "$id")"
            echo "  kadmin brokers wait $id --unfenced --timeout $WAIT_TIMEOUT"
        fi
        echo "  kadmin brokers wait $id --in-sync --timeout $WAIT_TIMEOUT"
        echo "  kadmin brokers undrain $id --from <state-dir>/drain-$id-<time>.json --timeout $DRAIN_TIMEOUT"
        echo "  kadmin partitions check (0 within ${CHECK_TIMEOUT}s)"
    done
    exit 0
fi

if [[ -z $STATE_DIR ]]; then
    STATE_DIR=$(mktemp -d "${TMPDIR:-/tmp}/rolling-bounce.XXXXXX")
fi
mkdir -p "$STATE_DIR"

LOG=$STATE_DIR/output.log  # every step's stdout (kadmin's tables); its one-line messages stay on stderr

# step NAME EXIT -- CMD...: run a gate (stdout to $LOG); fail with EXIT naming NAME on non-zero.
step() {
    local name=$1 code=$2 rc=0
    shift 3
    say "broker ${CURRENT:-*}: $name"
    printf '## broker %s: %s: %s\n' "${CURRENT:-*}" "$name" "$*" >>"$LOG"
    "$@" >>"$LOG" || rc=$?
    ((rc == 0)) || fail "$code" "$name" "$rc"
}

# check_healthy EXIT: `kadmin partitions check` must answer 0; 1 (WARNING: under-replicated) is asked
# again, 0.5 s doubling to 5 s, until --check-timeout; 2 (CRITICAL) or any other code fails at once.
check_healthy() {
    local code=$1 rc delay=0.5 start=$SECONDS
    say "broker ${CURRENT:-*}: partitions check"
    while :; do
        rc=0
        "$KADMIN" partitions check -o plain >>"$LOG" || rc=$?
        ((rc == 0)) && return 0
        if ((rc != 1)) || ((SECONDS - start >= ${CHECK_TIMEOUT%.*})); then
            fail "$code" "partitions check" "$rc" "$( ((rc == 1)) && echo "still WARNING after ${CHECK_TIMEOUT}s")"
        fi
        say "partitions check: WARNING, asking again in ${delay}s"
        sleep "$delay"
        delay=$("$PYTHON" -c "print(min(5.0, $delay * 2))")
    done
}

# wait_unlisted ID: Kafka 3.x in KRaft mode lists only unfenced brokers (DescribeCluster below v2): wait until
# `kadmin brokers list` does not list ID (fenced or gone), asking 0.5 s doubling to 5 s, until --wait-timeout.
wait_unlisted() {
    local id=$1 delay=0.5 start=$SECONDS out listed rc
    say "broker $id: wait until it is not listed (fenced or gone: this cluster lists only unfenced brokers)"
    while :; do
        rc=0
        out=$("$KADMIN" brokers list -o json 2>>"$LOG") || rc=$?
        ((rc == 0)) || fail 15 "wait unlisted" "$rc" "kadmin brokers list failed"
        listed=$(json "any(b['id'] == $id for b in d)" <<<"$out") || fail 15 "wait unlisted" 1 "unreadable listing"
        [[ $listed == False ]] && return 0
        ((SECONDS - start < ${WAIT_TIMEOUT%.*})) || fail 15 "wait unlisted" 1 "still listed after ${WAIT_TIMEOUT}s"
        sleep "$delay"
        delay=$("$PYTHON" -c "print(min(5.0, $delay * 2))")
    done
}

run_template() {  # run_template NAME EXIT TEMPLATE
    local cmd
    cmd=$(expand "$3" "$CURRENT")
    step "$1: $cmd" "$2" -- bash -c "$cmd"
}

say "mode: $MODE; bouncing brokers ${IDS[*]} one at a time; drain files and output.log in $STATE_DIR"
check_healthy 10

n=0
for id in "${IDS[@]}"; do
    CURRENT=$id
    DRAIN_FILE=""
    t0=$SECONDS
    say "=== broker $id ($((n + 1)) of ${#IDS[@]}) ==="
    step "can-stop" 11 -- "$KADMIN" brokers can-stop "$id" -o plain
    file="$STATE_DIR/drain-$id-$(date +%Y%m%dT%H%M%S).json"
    old_epoch=""
    if [[ $MODE == zk ]]; then
        old_epoch=$(epoch_of "$id") || fail 3 "read epoch" $?
        [[ -n $old_epoch ]] || fail 11 "read epoch" 1 "broker $id is not registered"
        say "broker $id: epoch $old_epoch"
    fi
    step "drain" 12 -- "$KADMIN" brokers drain "$id" --save "$file" --timeout "$DRAIN_TIMEOUT" -o plain
    DRAIN_FILE=$file
    if [[ $MODE == zk ]]; then
        step "shutdown (epoch $old_epoch)" 13 -- "$KADMIN" brokers shutdown "$id" --epoch "$old_epoch" --wait \
            --timeout "$DRAIN_TIMEOUT" -o plain
    fi
    run_template "stop" 14 "$STOP_CMD"
    if [[ $MODE == zk ]]; then
        step "wait --gone" 15 -- "$KADMIN" brokers wait "$id" --gone --timeout "$WAIT_TIMEOUT" -o plain
    elif ((FENCED_SHOWN)); then
        rc=0
        say "broker $id: wait --fenced"
        "$KADMIN" brokers wait "$id" --fenced --timeout "$WAIT_TIMEOUT" -o plain >>"$LOG" || rc=$?
        if ((rc == 3)); then  # DescribeCluster below v2 (Kafka 3.x) does not list fenced brokers
            say "broker $id: this cluster cannot show a fenced broker"
            FENCED_SHOWN=0
            wait_unlisted "$id"
        elif ((rc != 0)); then
            fail 15 "wait --fenced" "$rc"
        fi
    else
        wait_unlisted "$id"
    fi
    run_template "start" 16 "$START_CMD"
    if [[ $MODE == zk ]]; then
        step "wait --epoch-gt $old_epoch" 17 -- "$KADMIN" brokers wait "$id" --epoch-gt "$old_epoch" \
            --timeout "$WAIT_TIMEOUT" -o plain
    elif ((FENCED_SHOWN)); then
        step "wait --unfenced" 17 -- "$KADMIN" brokers wait "$id" --unfenced --timeout "$WAIT_TIMEOUT" -o plain
    else
        step "wait --registered" 17 -- "$KADMIN" brokers wait "$id" --registered --timeout "$WAIT_TIMEOUT" -o plain
    fi
    step "wait --in-sync" 18 -- "$KADMIN" brokers wait "$id" --in-sync --timeout "$WAIT_TIMEOUT" -o plain
    step "undrain" 19 -- "$KADMIN" brokers undrain "$id" --from "$file" --timeout "$DRAIN_TIMEOUT" -o plain
    DRAIN_FILE=""
    check_healthy 20
    n=$((n + 1))
    say "broker $id: bounced in $((SECONDS - t0))s"
done
CURRENT=""
say "done: $n broker$([ "$n" = 1 ] || echo s) bounced"
echo "bounced ${IDS[*]}"
