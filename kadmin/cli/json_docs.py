"""docs/json.md, generated from the code (`python -m kadmin.cli.docs`, with docs/commands.md).

Every JSON example is printed by kadmin's own code from real objects: the envelope by `kadmin.render.renderer.envelope`
with `RESULT_VERSION`, each command's data by its payload's `to_json()` (kadmin/results.py, kadmin/payloads,
kadmin/payloads_ops.py), the `roll run -o ndjson` events by the journal's one serializer
(kadmin/domain/roll_events.py), and `roll status` / `roll run -o json` by replaying those very events into the
report `roll status` prints (kadmin/services/roll_report.py). The values are a made-up cluster's; the keys, their
order and the envelope's version are the code's, so the page cannot drift from what kadmin prints
(tests/cli/test_docs.py compares it with the checked-in file).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from kadmin.cli.docs import GENERATED
from kadmin.domain import roll as dom
from kadmin.domain import roll_estimate as est
from kadmin.domain import roll_events as ev
from kadmin.exit_codes import STATUS, VERDICT_STATUS, ExitCode, Verdict, status
from kadmin.payloads.brokers import BrokerRow
from kadmin.payloads.gates import MaxEpoch
from kadmin.payloads_ops import ControllerFailover, RollEstimate, RollPlan, RollPlanNode, RollRoleTime
from kadmin.render.renderer import RESULT_VERSION, dumps, envelope, json_data
from kadmin.results import Problem
from kadmin.services.roll_report import report

STATE_DIR = "/var/lib/kadmin/roll-2026-11-28"
CLUSTER_ID = "JIAuV85eR7yn5kIZdlz2Xw"
NODES = (dom.RollNode(1, "broker", "kafka-1.example", 9092, "eu-1a"),
         dom.RollNode(2, "broker", "kafka-2.example", 9092, "eu-1b"))
ZK_TRAITS = dom.Traits(receipt="epoch", controlled_shutdown=True, quorum_nodes=False)
STOP_START = frozenset({"stop_start"})  # the example roll: --stop and --start, nothing else asked
OLD_EPOCH = {1: 4294, 2: 4301}
NEW_EPOCH = {1: 4420, 2: 4436}


def _json(obj: Any) -> list[str]:
    return ["```json", dumps(obj, indent=2), "```"]


def _ndjson(lines: list[dict[str, Any]]) -> list[str]:
    return ["```json", *(dumps(x) for x in lines), "```"]


# ----------------------------------------------------------------------------------------- the envelope
def _broker_row() -> BrokerRow:
    return BrokerRow(id=1, host="kafka-1.example", port=9092, rack="eu-1a",
                     endpoints=("PLAINTEXT://kafka-1.example:9092",),
                     listener_security_protocol_map={"PLAINTEXT": "PLAINTEXT"}, jmx_port=9999, version=5,
                     timestamp_ms=1764369860229, features={}, epoch=4294, session="0x100000a3f2c0001",
                     is_controller=True, state="registered")


def _status_list() -> str:
    """`success` (0), ..., `error` (every other code): the general table, by exit code (kadmin/exit_codes.py)."""
    codes: dict[str, list[int]] = {}
    for code, name in STATUS.items():
        codes.setdefault(name, []).append(int(code))
    said = [f"`{name}` ({', '.join(map(str, c))})" for name, c in codes.items() if name != "error"]
    return ", ".join(said) + ", `error` (every other code)"


def _wrap(text: str, indent: str = "") -> list[str]:
    import textwrap

    return textwrap.wrap(text, 104, initial_indent=indent[:-2] + "- " if indent else "", subsequent_indent=indent,
                         break_on_hyphens=False, break_long_words=False)


def envelope_section() -> list[str]:
    ok = envelope("brokers list", status(ExitCode.OK), ExitCode.OK, json_data([_broker_row()]), [])
    failed = envelope("brokers max-epoch", status(ExitCode.UNREACHABLE), ExitCode.UNREACHABLE, None,
                      [Problem("unreachable", "no bootstrap server answered (kafka-1.example:9092): cannot reach "
                               "kafka-1.example:9092: it refused the connection (nothing listens there)")])
    checked = envelope("partitions check", status(Verdict.UNKNOWN, check=True), Verdict.UNKNOWN, None,
                       [Problem("unreachable", "cannot connect to ZooKeeper zk-1.example:2181: zk-1.example:2181 "
                                "refused the connection")])
    checks = ", ".join(f"`{VERDICT_STATUS[v]}` ({int(v)})" for v in Verdict)
    return [
        *_wrap("`-o/--output auto|table|plain|json|ndjson` on every command. `auto` is a rich table on a terminal "
               "and plain tabulate columns on a pipe. `json` is a versioned envelope (`kadmin_result_version` "
               f"{RESULT_VERSION}), here `brokers list -o json`:"),
        "",
        *_json(ok),
        "",
        "The envelope's key set is fixed (a test pins it) and `kadmin_result_version` changes only with an",
        "incompatible change to the envelope, which the [changelog](../CHANGELOG.md) calls out.",
        "",
        "- `command` is the command's name (`\"brokers list\"`), or `null` when the command line could not be",
        "  parsed far enough to know it.",
        "- `exit_code` is the process's exit code ([exit-codes.md](exit-codes.md)).",
        *_wrap(f"`status` follows from `exit_code` alone, so the two never disagree: {_status_list()}. The check "
               f"commands (`partitions check`, `quorum check`, `migration status`) say {checks}, and "
               f"`{STATUS[ExitCode.INTERRUPTED]}` on Ctrl-C.", "  "),
        "- `errors` lists each problem as `{\"code\", \"message\"}` (a partition's or znode's problems also name",
        "  it, e.g. `\"partition\": null` for a whole unreadable topic); the same messages go to stderr.",
        "- An error that ends the command (a usage error included) still prints the envelope under `-o json`,",
        "  with `data` null: `brokers max-epoch -o json` against a broker that refuses the connection,",
        "",
        *_json(failed),
        "",
        "and a check verb that could not reach a verdict (`partitions check -o json`, exit "
        f"{int(Verdict.UNKNOWN)}):",
        "",
        *_json(checked),
        "",
        *_wrap("`-o ndjson` prints one JSON document per line: the rows of a listing, or the events of a stream. "
               "`brokers max-epoch -o ndjson`:"),
        "",
        *_ndjson([MaxEpoch(4436, 2, 3).to_json()]),
    ]


# ----------------------------------------------------------------------------------------- the roll
class _Clock:
    """The example's timestamps: ISO 8601, UTC, milliseconds (as the journal writes them), a step apart."""

    def __init__(self) -> None:
        self.ms = 22 * 3600_000 + 44 * 60_000 + 20_229

    def __call__(self, seconds: float = 0.0) -> str:
        self.ms += int(seconds * 1000)
        h, rest = divmod(self.ms, 3600_000)
        m, rest = divmod(rest, 60_000)
        s, ms = divmod(rest, 1000)
        return f"2026-11-28T{h:02}:{m:02}:{s:02}.{ms:03}Z"


# how long each step takes in the example, and what it journals
TOOK = {"stop": 0.412, "wait_stopped": 3.118, "start": 1.204, "wait_restarted": 6.731, "wait_in_sync": 2.05,
        "drain": 0.87, "shutdown": 1.92, "undrain": 0.64, "settle": 10.0}
HOOKS = ("stop", "start")  # steps that run an operator's hook: journaled `started` before, then `done`


def _detail(node: int, step: str) -> dict[str, Any]:
    if step == "drain":
        return {"drain_file": f"{STATE_DIR}/drain-{node}.json"}
    if step == "shutdown":
        return {"old_epoch": OLD_EPOCH[node]}
    if step == "stop":
        return {"watched": True}
    if step == "wait_stopped":
        return {"seen_stopped": "unregistered"}
    if step == "wait_restarted":
        return {"new_epoch": NEW_EPOCH[node]}
    return {}


def _steps(node: dom.RollNode, clock: _Clock, steps: tuple[str, ...]) -> Iterator[ev.Event]:
    for step in steps:
        took = TOOK.get(step, 0.015)
        if step in HOOKS:
            yield ev.StepEvent(clock(), node.id, node.role, step, "started")
        if step == "wait_stopped":
            yield ev.SeenStopped(clock(took), node.id, node.role, "unregistered", step)
            yield ev.StepEvent(clock(), node.id, node.role, step, "done", took, _detail(node.id, step))
        else:
            yield ev.StepEvent(clock(took), node.id, node.role, step, "done", took, _detail(node.id, step))


def roll_journal() -> tuple[list[ev.Event], list[ev.Event], list[ev.Event]]:
    """The example roll's events: the first run (broker 1 restarted; broker 2 not seen stopped, the roll stops,
    resumable), `roll confirm`, and the run that resumes it (broker 2 restarted, the roll done)."""
    clock = _Clock()
    b1, b2 = NODES
    steps = dom.steps(b1, ZK_TRAITS, STOP_START)
    first: list[ev.Event] = [ev.RollStarted(clock(), ev.JOURNAL_VERSION, CLUSTER_ID, "zookeeper", None, "first", 1,
                                            NODES, [1, 2], 600.0, 4711)]
    first += _steps(b1, clock, steps)
    first.append(ev.NodeDone(clock(), 1, "broker", "done",
                             round(sum(TOOK.get(s, 0.015) for s in steps), 3),
                             {"old_epoch": OLD_EPOCH[1], "new_epoch": NEW_EPOCH[1]}))
    first += [ev.Paused(clock(), "--pause-after", [1]), ev.Continued(clock(45), 45.0)]
    cut = steps.index("wait_stopped")
    first += _steps(b2, clock, steps[:cut])
    why = "broker 2 was not seen stopped within 600 s after its stop hook: see `kadmin roll confirm`"
    first += [ev.StepEvent(clock(600), 2, "broker", "wait_stopped", "failed", 600.0, message=why),
              ev.RollFailed(clock(), 2, "wait_stopped", "cannot_tell", why, int(ExitCode.CONDITION_NOT_MET), [2], [2])]
    confirm: list[ev.Event] = [ev.Confirmed(clock(120), 2, True, 4790)]
    second: list[ev.Event] = [ev.RollResumed(clock(30), 4802)]
    resumed = clock.ms
    second += _steps(b2, clock, steps[cut + 1:])
    second += [ev.NodeDone(clock(), 2, "broker", "done", round(sum(TOOK.get(s, 0.015) for s in steps), 3),
                           {"old_epoch": OLD_EPOCH[2], "new_epoch": NEW_EPOCH[2]}),
               ev.RollDone(clock(), (clock.ms - resumed) / 1000)]
    return first, confirm, second


def _plan() -> RollPlan:
    """`roll plan --from DIR`, DIR the example roll's: its estimate from that roll's times; the failover of a
    cluster of 1200 partitions (RF 3) on the two brokers."""
    rows = tuple(RollPlanNode(n.id, n.role, n.host, n.port, n.rack, i, dom.steps(n, ZK_TRAITS, STOP_START), None)
                 for i, n in enumerate(NODES, start=1))
    first, confirm, second = roll_journal()
    basis = est.role_times(ev.replay(first + confirm + second))
    e = est.plan_estimate([[est.PlannedNode(n.id, n.role)] for n in NODES], basis)
    f = est.failover_cost(1200, 2, est.UpdateMetadataSizes(19, 53.0, 67.0))
    return RollPlan("zookeeper", CLUSTER_ID, 1, "first", 1, "min-isr", (), ((1,), (2,)), rows, True, (),
                    ControllerFailover(f.partitions, f.live_brokers, f.request_bytes, f.update_metadata_bytes,
                                       f.threshold_bytes, f.warning),
                    RollEstimate(e.total_s, e.per_node, e.unestimated,
                                 tuple(RollRoleTime(b.role, b.nodes, b.mean_s, b.kadmin_s, b.hooks_s)
                                       for b in basis.values()), STATE_DIR))


def _keys(cls: type[Any]) -> str:
    said = ["`event`"]
    for f in dataclasses.fields(cls):
        said.append(f"`{f.name}`" + (" (when set)" if f.metadata.get("omit") else ""))
    return ", ".join(said)


def roll_section() -> list[str]:
    first, confirm, second = roll_journal()
    stopped = report(ev.replay(first), Path(STATE_DIR))
    done = report(ev.replay(first + confirm + second), Path(STATE_DIR))
    shown = {type(e) for e in first + confirm + second}
    assert shown == set(ev.KINDS.values()), "the example roll shows every kind of event"
    ok = ExitCode.OK
    return [
        "## roll",
        "",
        "The roll's keys and what each value means: [roll.md](roll.md). The examples are one roll of a",
        "two-broker ZooKeeper-mode cluster: broker 1 restarted; paused there (`--pause-after 1`) until `roll",
        "continue`; broker 2 not seen stopped after its stop hook (the roll stops, resumable, exit 1); `roll confirm",
        "--node 2 --went-down`; the same `roll run` again finishes it.",
        "",
        "`roll plan --from DIR -o json`, DIR the example roll's (without `--from`, `estimate` is null;",
        "`controller_failover` is null in KRaft mode):",
        "",
        *_json(envelope("roll plan", status(ok), ok, json_data(_plan()), [])),
        "",
        "`roll run -o ndjson` streams the events as the journal (`DIR/journal.ndjson`) holds them, one per line.",
        "The keys of each kind (`at`: ISO 8601, UTC, milliseconds):",
        "",
        "| event | keys |",
        "|---|---|",
        *(f"| `{kind}` | {_keys(cls)} |" for kind, cls in ev.KINDS.items()),
        f"| `{ev.GateWaiting.event}` | {_keys(ev.GateWaiting)} |",
        "",
        "`gate_waiting` is in the stream only, never in the journal: while a gate holds a node, what holds it",
        "(`blockers`, the first 20: `topic` and `partition`, or `voter`, or `broker`, each with `why`) and",
        "`cause`, a cause the roll cannot fix (a broker outside it down, a reassignment in flight), again each",
        "time they change:",
        "",
        *_ndjson([ev.to_json(ev.GateWaiting("2026-05-04T09:12:01.250Z", 2, "broker", "can_stop",
                                            "broker 2 cannot stop safely: 1 partition would lose leader or min ISR "
                                            "or could not be read",
                                            [dom.Blocker("ISR would shrink to [1], below min.insync.replicas=2",
                                                         "orders", 0).to_json()],
                                            "broker 3 is down (not registered) and not being restarted here: the "
                                            "roll cannot bring it back; start it, or the gate waits until "
                                            "--step-timeout"))]),
        "",
        "The first run:",
        "",
        *_ndjson([ev.to_json(e) for e in first]),
        "",
        "`roll confirm` journals:",
        "",
        *_ndjson([ev.to_json(e) for e in confirm]),
        "",
        "and the run that resumes the roll streams:",
        "",
        *_ndjson([ev.to_json(e) for e in second]),
        "",
        "`roll status -o json` after the first run (`roll run -o json` ends with the same result; its exit code",
        "is the failure's):",
        "",
        *_json(envelope("roll status", status(ok), ok, json_data(stopped), [])),
        "",
        "`roll run -o json` of the run that finished it (and `roll status` from then on):",
        "",
        *_json(envelope("roll run", status(ok), ok, json_data(done), [])),
    ]


# ----------------------------------------------------------------------------------------- the page
def json_md() -> str:
    out = ["# Output and the JSON contract", "", GENERATED, "", *envelope_section(), "", PER_COMMAND, "",
           *roll_section(), "", HISTORY_AND_SAFETY]
    return "\n".join(out).rstrip() + "\n"


PER_COMMAND = """## Data, per command

`brokers list` rows have exactly the keys `id, host, port, rack, endpoints,
listener_security_protocol_map, jmx_port, version, timestamp_ms, features, epoch, session,
is_controller, state` (`session` is the ephemeralOwner in hex; `state` is `registered`, or
`invalid` when the znode cannot be parsed, which makes the result `partial`, exit 5).
`brokers max-epoch` data is `{"max_broker_epoch", "broker_id", "brokers"}`; `brokers diff` data is
`{"new": [ids], "dead": [ids], "bounced": [{"id", "old_epoch", "new_epoch"}], "unchanged": [ids]}`.
Registration versions 1 to 5 are all read, including `host: null` with `port: -1`. On KRaft,
`brokers list` rows have the same keys, with `state` `active` or `fenced` and `epoch`, `session`,
`version` and `is_controller` null (DescribeCluster does not expose them).

- `brokers watch -o ndjson`: one `{"event", "id", "epoch", "old_epoch", "at"}` per line, `event` one of
  `registered`, `deregistered`, `bounced`, `updated`. `-o json` ended by Ctrl-C still prints the
  envelope with the events seen.
- `brokers shutdown`: `{"broker_id", "broker_epoch", "controller_id", "attempts", "remaining_partitions":
  [{"topic", "partition"}], "error", "shutting_down_until_restart", "epoch_fenced"}` (and
  `isr_only_this_broker` when partitions remain).
- `partitions list` rows: `topic, partition, leader, leader_epoch, partition_epoch` (the state znode's
  version), `replicas, isr, adding_replicas, removing_replicas, min_isr, topic_id`, `min_isr_source`,
  `effective_min_isr` and `deleting`; on KRaft also `elr` and `last_known_elr` (KIP-966).
  Details: [partitions.md](partitions.md). `min_isr_source` is `topic`, `broker:<id>`, `cluster-default`,
  `static` (the brokers report it from server.properties), `default` (stated by `--min-isr-default`, never
  read from a broker) or `unknown` (KRaft: the leader's DescribeConfigs failed and nothing was stated).
- `partitions check`: `{"status", "partitions", "findings": [{"topic", "partition", "reasons"}], "deleting",
  "unseen": [{"broker_id", "reason"}]}`; `unseen` (KRaft) names the brokers whose log dirs could not be
  listed, so the check could not show it saw every partition (then never `ok`).
- `brokers can-stop`: `{"broker_id", "safe", "hosted_partitions", "blocking": [{"topic", "partition",
  "reason"}], "never_satisfiable": [...], "unseen": [{"broker_id", "reason"}]}`.
- `brokers wait --in-sync`: `{"broker_id", "in_sync", "hosted_partitions", "waiting": [{"topic",
  "partition"}], "waited_ms", "live", "unseen"}`; `unseen` rows name a broker whose log dirs could not be
  listed, or (with `topic` and `partition`) a partition its log dirs list that the principal cannot see.
  What each gate needs to see on KRaft: [kraft.md](kraft.md).
- `quorum describe`: `{"cluster_id", "leader_id", "leader_epoch", "high_watermark", "max_follower_lag",
  "max_follower_lag_time_ms", "voters": [...], "observers": [...]}`, each replica `{"id",
  "directory_id", "log_end_offset", "lag", "last_fetch_timestamp", "last_caught_up_timestamp",
  "status", "endpoints"}`, absent timestamps as null; with `--zookeeper` each replica adds a
  `zookeeper` object (latency, outstanding requests). Details: [kraft.md](kraft.md).
- `quorum check`: its findings, and `clock` (`source`, `now_ms`, `local_skew_ms`, `check_quorum_ms`): lag
  times are measured on the quorum leader's clock.
- `features describe`: `{"source", "epoch", "features": [{"name", "finalized_level", "finalized", "supported":
  {"min", "max"}, "every_node"}], "nodes": [{"id", "role", "address", "supported", "error"}]}`;
  `features upgrade`: `{"release_version", "finalized", "target", "dry_run", "upgraded", "validated", "changes",
  "unchanged", "refusals", "nodes"}` ([features.md](features.md)).
- `migration status`: `{"status", "state", "possible_states", "brokers": [{"id", "mode", "source"}], "controllers",
  "rollback_possible", "next_step", "rollback", "sources", "findings", "unread"}` ([migration.md](migration.md)).
- `ids resolve` and `ids claim`: `{"broker_id", "rule", "host", "missing_ids", "detail"}`
  ([ids.md](ids.md)).
- `sandbox up -o json` also has `bootstrap_controllers` in KRaft mode; `sandbox status -o json` says
  which `engine` runs.
- `roll plan`, `roll run` and `roll status`: [below](#roll)."""

HISTORY_AND_SAFETY = """## history report

`history report DIR KIND -o json` data is a list of rows; keys are only ever added:

- `generations`: `broker_id, epoch, start, end, gap_ms, fence_episodes, fenced_ms` (`start`/`end`
  ISO 8601 UTC, `end` null while the generation is open, `gap_ms` the downtime before the next
  generation or null; `fence_episodes` and `fenced_ms` count the generation's KRaft fence episodes,
  0 on ZooKeeper: [history.md](history.md#fences-on-kraft)).
- `bounces`: `broker_id, generations, bounces, downtime_p50_ms, downtime_p90_ms, downtime_max_ms,
  fence_episodes, fenced_ms, fenced_max_ms` (`fenced_ms` the sum over the broker's episodes,
  `fenced_max_ms` the longest or null).
- `controllers`: `at, event, controller_id, controller_epoch`.
- `isr-churn`: `broker_id, isr_shrinks, isr_expands, rejoins, rejoin_p50_ms, rejoin_max_ms`.
- `epochs`: `at, max_broker_epoch, broker_id`.

## Tables never hide data

A table on a terminal (`-o table`, and `auto` on a terminal) is fitted to the terminal's width by one rule
(kadmin/render/tables.py). No value is ever cut or elided with `…`: the first
of these layouts that fits is drawn.

1. The boxed table, one line per row.
2. The boxed table with cells folded onto more lines, only at their separators: a list (an ISR, replicas,
   endpoints) after its commas, as many elements to a line as fit, the comma ending the line; text at its
   spaces; a header after `_` (`LEADER_` / `EPOCH`). A host, an endpoint, a topic or a broker id is never
   split, so the terminal's search, a double-click and `grep` of a saved screen find it whole.
3. The same two without the box, columns two spaces apart.
4. One block per row, `KEY: value` lines, a blank line between rows; a long list folds after its commas
   under its value:

   ```console
   $ kadmin partitions list          # an 80-column terminal
   TOPIC:           payments.settlement.eu-west-1.v2.dead-letter-queue-for-retries
   PARTITION:       0
   LEADER:          70001
   ...
   ISR:             70001,70002,70003,70004,70005,70006,70007,70008,70009,70010,
                    70011,70012
   ```

No line is wider than the terminal, except one word or list element longer than the terminal itself, which
is printed whole on a line of its own (the terminal wraps it). `-o table` to a pipe or a file is as wide as it
needs to be (or `COLUMNS` wide when set). Plain output is never fitted: one line per row, for scripts.

## Safe to show, exact to parse

Strings read from the cluster are shown inert in table and plain output: rich markup is escaped
and control characters appear as `\\x1b`-style escapes, so a hostile registration cannot drive the
terminal. JSON keeps the data exact, and never contains bare `NaN` or `Infinity`. An absurd value
in a znode (a 5000-digit integer, deep nesting, an integer beyond Kafka's field type) is an invalid
row like any other malformed data (exit 5).

Ctrl-C exits 130; `brokers watch -o json` ended by Ctrl-C still prints the envelope with the events
seen. A Ctrl-C that arrives after a change was sent (an `ids` multi, a ControlledShutdown the
controller accepted, an UnregisterBroker) does not hide it: the result is reported with its own
exit code, and stderr says the command was interrupted."""
