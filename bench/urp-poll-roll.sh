#!/usr/bin/env bash
# The rolling restart most Kafka shops run (the loop of cp-ansible's kafka_broker health check, and of many
# in-house scripts): for each broker in turn, restart it, then run `kafka-topics --describe
# --under-replicated-partitions` (a whole JVM each time) until it prints nothing and logs no ERROR, sleeping
# --delay seconds between tries, before the next broker. Nothing else: no check before a stop, no drain (the
# broker's own controlled shutdown on SIGTERM moves its leaders), no leader put back afterwards.
#
# Usage: urp-poll-roll.sh --stop CMD --start CMD --brokers "1 2 3" --kafka-topics CMD --bootstrap HOST:PORT,...
#                         [--delay SECONDS] [--timeout SECONDS]
#   CMD: a shell command; {id} is replaced by the broker's id. --kafka-topics: what runs Kafka's TopicCommand
#   (bin/kafka-topics.sh). --timeout: give up on a broker's under-replicated partitions after this long (exit 1).
# Progress on stderr, one line per step: "urp-poll-roll.sh: broker ID: STEP".
set -euo pipefail

me=urp-poll-roll.sh
stop="" start="" brokers="" topics="" bootstrap="" delay=1 timeout=300
while [ $# -gt 0 ]; do
    case "$1" in
        --stop) stop=$2; shift 2 ;;
        --start) start=$2; shift 2 ;;
        --brokers) brokers=$2; shift 2 ;;
        --kafka-topics) topics=$2; shift 2 ;;
        --bootstrap) bootstrap=$2; shift 2 ;;
        --delay) delay=$2; shift 2 ;;
        --timeout) timeout=$2; shift 2 ;;
        *) echo "$me: unknown argument $1" >&2; exit 2 ;;
    esac
done
for v in stop start brokers topics bootstrap; do
    [ -n "${!v}" ] || { echo "$me: --${v/topics/kafka-topics} is required" >&2; exit 2; }
done

say() { echo "$me: $*" >&2; }
err=$(mktemp)
trap 'rm -f "$err"' EXIT

for id in $brokers; do
    say "broker $id: stop"
    sh -c "${stop//\{id\}/$id}" >/dev/null
    say "broker $id: start"
    sh -c "${start//\{id\}/$id}" >/dev/null
    say "broker $id: under-replicated partitions"
    polls=0
    began=$SECONDS
    while :; do
        polls=$((polls + 1))
        out=$($topics --bootstrap-server "$bootstrap" --describe --under-replicated-partitions 2>"$err") || true
        if [ -z "$out" ] && ! grep -q ERROR "$err"; then
            break
        fi
        if [ $((SECONDS - began)) -ge "$timeout" ]; then
            say "broker $id: still under-replicated after ${timeout} s: $out"
            exit 1
        fi
        sleep "$delay"
    done
    say "broker $id: done ($polls polls)"
done
say "all brokers restarted"
