"""How each command's data looks: a table (rich on a terminal, tabulate on a pipe), or an exact text.

Each command names its view when it emits its result (`inv.emit(result, views.brokers_list)`): a view is a
function of the result's data (`ViewFn`), which is a typed payload (kadmin/payloads.py) where the command
has one: the view reads its fields, and the JSON form (`to_json()`) is the renderer's business. There is no
table of views by command name and no fallback; a command without a view of its own names `key_values` (a
dict, or a payload: the keys of its JSON form) or `records` (a list of dicts or payloads).

`-o plain` prints a view's `text` exactly when it has one (what scripts capture with `$(kadmin ...)`: a
broker id, a connect string, kafka-metadata-quorum's text), else its rows in tabulate's plain columns under
a header line. Without rows it prints nothing (a script sees an empty stdout), unless the view says
`header_when_empty`. `-o table` always draws the table.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from kadmin.results import Payload

# The payload modules are imported where a view needs their classes at run time, not here: every command
# imports this module, and building their ~80 dataclasses is a third of a gate's start-up (issue 24 §2).
if TYPE_CHECKING:
    from kadmin.payloads import (
        BrokerEvent,
        BrokerRow,
        BrokersDiff,
        BrokerWait,
        CanStop,
        ClusterId,
        ClusterIdCheck,
        Drain,
        FeaturesDescription,
        FeaturesUpgrade,
        HostMapping,
        IdDecision,
        InSync,
        MaxEpoch,
        MigrationStatus,
        MissingId,
        PartitionRow,
        PartitionsCheck,
        QuorumCheck,
        QuorumDescription,
        Shutdown,
        StaleMapping,
    )
    from kadmin.payloads_ops import RollConfirm, RollPause, RollPlan, RollReport, SandboxDown, SandboxStatus


@dataclass
class View:
    headers: list[str]
    rows: list[list[Any]] = field(default_factory=list)
    title: str | None = None
    text: str | None = None  # -o plain prints exactly this (newlines included) instead of the rows
    header_when_empty: bool = False  # -o plain prints the header line even without rows


D = TypeVar("D")
ViewFn = Callable[[D], View]  # a result's data -> how it looks (bare `ViewFn`: of any data)


# C0 controls, DEL, C1 controls (0x9b is a one-byte CSI on some terminals), line and paragraph
# separators, and the bidirectional overrides ("Trojan Source"): never sent to a terminal as they are.
_NAMED = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}
# Each of them is unprintable to str.isprintable, so printable text (nearly all of it) is returned without the
# pattern, which `re` compiles when first needed (its Unicode ranges make it the dearest to compile of kadmin's).
_UNSAFE = "[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]"


def _visible(m: re.Match[str]) -> str:
    c = m.group()
    return _NAMED.get(c) or (f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}")


def inert(text: str, keep: str = "") -> str:
    """`text` with control characters shown as `\\x1b`-style escapes (those in `keep` left as they are).

    Strings from the cluster (hosts, raw znodes, ids) reach tables and plain columns through this, so
    a registration cannot set the terminal's title, clear the screen or forge rows; JSON keeps them exact.
    """
    if text.isprintable() or (keep and text.translate(dict.fromkeys(map(ord, keep))).isprintable()):
        return text  # nothing to escape (what `keep` names aside)
    if keep:
        return re.sub(_UNSAFE, lambda m: m.group() if m.group() in keep else _visible(m), text)
    return re.sub(_UNSAFE, _visible, text)


def cell(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, (list, tuple)):
        return ",".join(cell(x) for x in v) if v else "-"
    if isinstance(v, dict):
        return ",".join(f"{inert(str(k))}={cell(x)}" for k, x in v.items()) if v else "-"
    return inert(str(v))


def fixed(cells: list[Any], widths: tuple[int, ...] = (24, 12, 6, 14, 14)) -> str:
    """A streamed row in fixed-width columns, so rows line up without buffering the stream."""
    parts = [cell(c).ljust(w) for c, w in zip(cells, widths, strict=False)] + [cell(c) for c in cells[len(widths):]]
    return " ".join(parts).rstrip()


def brokers_list(data: Sequence[BrokerRow]) -> View:
    rows = [[b.id, b.host, b.port, b.rack, b.epoch, b.session, b.is_controller, b.state, b.version, b.endpoints]
            for b in data]
    return View(["ID", "HOST", "PORT", "RACK", "EPOCH", "SESSION", "CONTROLLER", "STATE", "VERSION", "ENDPOINTS"], rows)


def key_values(data: Mapping[str, Any] | Payload) -> View:
    """One KEY/VALUE row per key (a `stat` dict as stat.* rows): the view of a command without its own. A
    payload's keys are those of its JSON form (`brokers show`, `unregister`, `undrain`)."""
    rows: list[list[Any]] = []
    for k, v in (data.to_json() if isinstance(data, Payload) else data).items():
        if isinstance(v, dict) and k == "stat":
            rows += [[f"stat.{sk}", sv] for sk, sv in v.items()]
        else:
            rows.append([k, v])
    return View(["KEY", "VALUE"], rows)


def records(data: Sequence[Mapping[str, Any] | Payload]) -> View:
    """One column per key of the first record (upper-cased): the view of a list without a view of its own. A
    payload's keys are those of its JSON form (`history report`)."""
    rows = [r.to_json() if isinstance(r, Payload) else r for r in data]
    headers = list(rows[0]) if rows else []
    return View([h.upper() for h in headers], [[row.get(h) for h in headers] for row in rows])


def max_epoch(data: MaxEpoch) -> View:
    """Plain output is the bare integer (an empty line when no broker is registered)."""
    v = key_values(data)
    v.text = ("" if data.max_broker_epoch is None else str(data.max_broker_epoch)) + "\n"
    return v


def brokers_diff(data: BrokersDiff) -> View:
    # each listing's epochs (a dead broker's OLD_EPOCH is in the saved listing, a new one's NEW_EPOCH live)
    old, new = data.old_epochs, data.new_epochs
    rows: list[list[Any]] = [[i, "new", None, new.get(i)] for i in data.new]
    rows += [[i, "dead", old.get(i), None] for i in data.dead]
    rows += [[b.id, "bounced", b.old_epoch, b.new_epoch] for b in data.bounced]
    rows += [[i, "unchanged", old.get(i), new.get(i)] for i in data.unchanged]
    rows.sort(key=lambda r: r[0])
    return View(["ID", "CHANGE", "OLD_EPOCH", "NEW_EPOCH"], rows)


def broker_events(data: Sequence[BrokerEvent]) -> View:
    """`brokers watch`: one row per event (streamed: see Renderer.stream_item)."""
    return View(["AT", "EVENT", "ID", "EPOCH", "OLD_EPOCH"],
                [[e.at, e.event, e.id, e.epoch, e.old_epoch] for e in data])


def brokers_wait_in_sync(data: InSync) -> View:
    """`brokers wait --in-sync`: the partitions still waiting for the broker. Plain output is one line:
    `ID<TAB>in_sync<TAB>met|not-met<TAB>WAITING` (how many partitions still wait)."""
    v = View(["TOPIC", "PARTITION"], [[w.topic, w.partition] for w in data.waiting])
    v.text = f"{data.broker_id}\tin_sync\t{'met' if data.in_sync else 'not-met'}\t{len(data.waiting)}\n"
    return v


def brokers_wait(data: BrokerWait) -> View:
    """Plain output is one line: `ID<TAB>CONDITION<TAB>met|not-met<TAB>EPOCH`."""
    v = key_values(data)
    v.text = f"{data.broker_id}\t{data.condition}\t{'met' if data.met else 'not-met'}\t{cell(data.epoch)}\n"
    return v


def sandbox(data: SandboxStatus | Mapping[str, Any]) -> View:
    """`sandbox up/status`: plain output is what to connect to (the ZooKeeper connect string, or a KRaft
    sandbox's bootstrap servers). A mapping is read as the status it is the JSON form of."""
    from kadmin.payloads_ops import SandboxStatus

    if isinstance(data, Mapping):
        data = SandboxStatus.from_json(data)
    if data.engine == "kafka" and data.processes:
        # real JVMs: one row per process (an epoch exists only in ZooKeeper mode)
        v = View(["ROLE", "ID", "PID", "PORT", "ALIVE", "REGISTERED", "EPOCH"],
                 [[p.role, p.id, p.pid, p.port, p.alive, p.registered,
                   data.brokers.get(p.id) if p.role == "broker" and p.id is not None else None]
                  for p in data.processes])
        if data.mode == "migration":  # each node's configured phase
            v = View([*v.headers, "PHASE"], [[*r, p.phase] for r, p in zip(v.rows, data.processes, strict=True)])
    else:
        v = View(["ID", "EPOCH", "CONTROLLER"], [[b, e, b == data.controller] for b, e in data.brokers.items()])
    connect = data.bootstrap_servers if data.mode == "kraft" else (data.zookeeper or data.bootstrap_servers)
    v.text = None if connect is None else f"{connect}\n"
    return v


def sandbox_down(data: SandboxDown | Mapping[str, Any]) -> View:
    """One row per process the sandbox started: stopped now, or already gone (and why). A mapping is read as
    the result it is the JSON form of."""
    from kadmin.payloads_ops import SandboxDown

    if isinstance(data, Mapping):
        data = SandboxDown.from_json(data)
    rows = [[p.process, p.pid, "stopped", p.reason] for p in data.stopped]
    rows += [[p.process, p.pid, "already-gone", p.reason] for p in data.already_gone]
    return View(["PROCESS", "PID", "STATE", "REASON"], rows)


def ids_hosts(data: Sequence[HostMapping]) -> View:
    """Its header even without mappings (chosen for `ids hosts`, a listing read by people; tested)."""
    return View(["HOST", "BROKER_ID", "REGISTERED", "REGISTERED_FROM"],
                [[m.host, m.broker_id, m.registered, m.registered_from] for m in data], header_when_empty=True)


def ids_missing(data: Sequence[MissingId]) -> View:
    return View(["BROKER_ID", "PARTITIONS", "MAPPED_HOST"], [[m.broker_id, m.partitions, m.mapped_host] for m in data])


def ids_gc(data: Sequence[StaleMapping]) -> View:
    return View(["HOST", "BROKER_ID", "REGISTERED_FROM", "DELETED"],
                [[g.host, g.broker_id, g.registered_from, g.deleted] for g in data])


def ids_decision(data: IdDecision) -> View:
    """`ids resolve/claim`: plain output is the broker id alone."""
    v = key_values(data)
    v.text = f"{data.broker_id}\n"
    return v


def cluster_id(data: ClusterId) -> View:
    """Plain output is the cluster id alone."""
    v = key_values(data)
    v.text = f"{data.cluster_id}\n"
    return v


def drain(data: Drain) -> View:
    """Plain output: the saved file's path; with --dry-run one line per partition to reorder,
    `topic<TAB>partition<TAB>replicas<TAB>new replicas`; a refused drain shows its keys and values."""
    v = key_values(data)
    refused = bool(data.in_flight) and not data.skipped  # with --force every in-flight one is skipped
    if refused:
        return v
    if data.dry_run:
        v.text = "".join(f"{r.topic}\t{r.partition}\t{','.join(map(str, r.replicas))}\t"
                         f"{','.join(map(str, r.new_replicas))}\n" for r in data.reorder)
    else:
        v.text = f"{data.file}\n"
    return v


def _min_isr_source(source: str) -> str:
    """One word per cell: "static (--min-isr-default)" is "static" in a table."""
    return "static" if source.startswith("static") else source


def partitions_list(data: Sequence[PartitionRow]) -> View:
    # MIN_ISR_SOURCE and DELETING come after the original columns, so scripts cutting fields keep working;
    # ELR and LAST_KNOWN_ELR (KIP-966, KRaft) are added last, and only when some partition has one
    elr = any(r.elr or r.last_known_elr for r in data)
    return View(
        ["TOPIC", "PARTITION", "LEADER", "LEADER_EPOCH", "PARTITION_EPOCH", "REPLICAS", "ISR", "MIN_ISR", "ADDING",
         "REMOVING", "MIN_ISR_SOURCE", "DELETING", *(["ELR", "LAST_KNOWN_ELR"] if elr else [])],
        [[r.topic, r.partition, r.leader, r.leader_epoch, r.partition_epoch, r.replicas, r.isr, r.min_isr,
          r.adding_replicas, r.removing_replicas, _min_isr_source(r.min_isr_source), "deleting" if r.deleting else "-",
          *([r.elr or (), r.last_known_elr or ()] if elr else [])]
         for r in data],
    )


def partitions_check(data: PartitionsCheck) -> View:
    return View(["TOPIC", "PARTITION", "REASONS"],
                [[f.topic, f.partition, "; ".join(f.reasons)] for f in data.findings])


def can_stop(data: CanStop) -> View:
    rows = [[b.topic, b.partition, "blocking", b.reason] for b in data.blocking]
    rows += [[b.topic, b.partition, "never", b.reason] for b in data.never_satisfiable]
    return View(["TOPIC", "PARTITION", "VERDICT", "REASON"], rows)


def shutdown(data: Shutdown) -> View:
    """Its keys and values; the partitions as topic-partition, a dry run's request as request.* rows."""
    from kadmin.payloads import ShutdownDryRun

    shown = data.to_json()
    v = key_values({k: x for k, x in shown.items() if k not in ("remaining_partitions", "can_stop", "request")})
    v.rows.append(["remaining_partitions", [f"{r.topic}-{r.partition}" for r in data.remaining_partitions]])
    if isinstance(data, ShutdownDryRun):
        v.rows += [[f"request.{k}", x] for k, x in data.request.to_json().items()]
    return v


def check_id(data: ClusterIdCheck) -> View:
    return View(["PATH", "VERSION", "NODE_ID", "CLUSTER_ID", "MATCH", "ERROR"],
                [[f.path, f.version, f.node_id, f.cluster_id, f.match, f.error] for f in data.files])


def quorum_table(data: QuorumDescription) -> View:
    """`quorum describe` as a table (its plain text: `quorum_describe`)."""
    order = {"Leader": 0, "Follower": 1, "Down": 2, "Observer": 3}
    reps = sorted(data.voters + data.observers, key=lambda r: order.get(r.status, 4))
    title = (f"cluster {data.cluster_id}: leader {data.leader_id}, epoch {data.leader_epoch}, "
             f"high watermark {data.high_watermark}, max follower lag {data.max_follower_lag}")
    return View(["NODE_ID", "STATUS", "LOG_END_OFFSET", "LAG", "LAST_FETCH", "LAST_CAUGHT_UP", "DIRECTORY_ID",
                 "ENDPOINTS"],
                [[r.id, r.status, r.log_end_offset, r.lag, r.last_fetch_timestamp, r.last_caught_up_timestamp,
                  r.directory_id, r.endpoints] for r in reps], title=title)


def quorum_describe(data: QuorumDescription, which: Literal["status", "replication"], human_readable: bool,
                    now_ms: int, tool_format: str) -> ViewFn[QuorumDescription]:
    """`quorum describe`'s view for these options: a table, and as plain text exactly what
    `kafka-metadata-quorum describe --status|--replication` prints (kadmin/render/quorum_text.py), both
    of `data`, the description the service returned (it has a leader: services.quorum.describe refuses
    a quorum without).

    The text is made now, before anything is printed: with --human-readable a timestamp ahead of this
    machine's clock fails as Kafka's tool fails (exit 1, code clock_drift, one line; "N ms ago" would be a
    lie), in every output format."""
    from kadmin.errors import KadminError
    from kadmin.render.quorum_text import ClockDrift, replication_text, status_text

    try:
        text = (status_text(data, tool_format) if which == "status"
                else replication_text(data, human_readable, now_ms, tool_format))
    except ClockDrift as e:
        raise KadminError(f"{e}; drop --human-readable to see the raw timestamps", code="clock_drift") from e

    def view(shown: QuorumDescription) -> View:
        v = quorum_table(shown)
        v.text = text
        return v

    return view


def quorum_check(data: QuorumCheck) -> View:
    """Plain output: one line per finding, `LEVEL<TAB>CODE<TAB>MESSAGE` (nothing when all is well)."""
    v = View(["LEVEL", "CODE", "MESSAGE"], [[f.level, f.code, f.message] for f in data.findings])
    v.text = "".join(f"{f.level}\t{f.code}\t{f.message}\n" for f in data.findings)
    return v


def migration_status(data: MigrationStatus) -> View:
    """One row per node (brokers, then controllers) with its mode; the title says the state. Plain output: `STATE`,
    then `BROKER<TAB>ID<TAB>MODE` and `CONTROLLER<TAB>ID<TAB>MIGRATION_ENABLED` lines, then `NEXT`, `ROLLBACK` and
    each finding as `LEVEL<TAB>CODE<TAB>MESSAGE`."""
    def shown(v: object) -> str:
        return "unknown" if v is None else str(v).lower() if isinstance(v, bool) else str(v)

    state = data.state or "unknown (" + " or ".join(data.possible_states) + ")"
    c = data.controllers
    rows: list[list[Any]] = [["broker", b.id, shown(b.mode), b.source] for b in data.brokers]
    rows += [["controller", n.id, "migration enabled" if n.migration_enabled else "finalized"
              if n.migration_enabled is False else "unknown", ("leader; " if n.id == c.leader else "")
              + (n.error or n.address or "")] for n in c.nodes]
    kind = "unknown" if c.active_is_kraft is None else "KRaft" if c.active_is_kraft else "ZooKeeper"
    active = f"active controller {shown(c.active)} ({kind})"
    title = f"{data.status.upper()}: {state}; {active}; rollback possible: {shown(data.rollback_possible)}"
    lines = [f"STATE\t{shown(data.state)}\n"]
    lines += [f"BROKER\t{b.id}\t{shown(b.mode)}\n" for b in data.brokers]
    lines += [f"CONTROLLER\t{n.id}\t{shown(n.migration_enabled)}\n" for n in c.nodes]
    lines += [f"NEXT\t{data.next_step}\n", f"ROLLBACK\t{data.rollback}\n"]
    lines += [f"{f.level}\t{f.code}\t{f.message}\n" for f in data.findings]
    return View(["NODE", "ID", "MODE", "SOURCE"], rows, title=title, text="".join(lines))


FEATURE_TOOL_FORMATS = ("4.3", "3.9")  # kafka-features describe: padded columns (4.3), TABs (3.9 and 4.0)


def features_text(data: FeaturesDescription, tool_format: str = FEATURE_TOOL_FORMATS[0]) -> str:
    """What `kafka-features describe` prints, byte for byte (FeatureCommand.handleDescribe): one line per feature the
    answering node supports, sorted, metadata.version by name; 4.3's tool pads the columns, 3.9's and 4.0's
    separate them with TABs."""
    from kadmin.domain.features import level_text

    epoch = "-" if data.epoch is None else str(data.epoch)
    lines = []
    for f in data.features:
        cells = (f.name, level_text(f.name, f.supported.min), level_text(f.name, f.supported.max), f.finalized)
        if tool_format == "3.9":
            lines.append("Feature: {}\tSupportedMinVersion: {}\tSupportedMaxVersion: {}\tFinalizedVersionLevel: {}"
                         "\tEpoch: {}\n".format(*cells, epoch))
        else:
            lines.append("Feature: {:<40}  SupportedMinVersion: {:<15}  SupportedMaxVersion: {:<15}  "
                         "FinalizedVersionLevel: {:<15}  Epoch: {}\n".format(*cells, epoch))
    return "".join(lines)


def features_describe(tool_format: str) -> ViewFn[FeaturesDescription]:
    """`features describe`: a table (each feature's finalized level, the answering node's supported range and the
    range every registered node that answered supports); -o plain is kafka-features describe's text."""
    from kadmin.domain.features import level_text

    def view(data: FeaturesDescription) -> View:
        def span(name: str, r: Any) -> str:
            return "-" if r is None else f"{level_text(name, r.min)}..{level_text(name, r.max)}"

        rows = [[f.name, f.finalized, f.finalized_level, span(f.name, f.supported), span(f.name, f.every_node)]
                for f in data.features]
        title = f"finalized features from {data.source}, epoch {'-' if data.epoch is None else data.epoch}; " \
            f"{sum(n.supported is not None for n in data.nodes)} of {len(data.nodes)} nodes asked"
        return View(["FEATURE", "FINALIZED", "LEVEL", "SUPPORTED", "EVERY_NODE"], rows, title=title,
                    text=features_text(data, tool_format))

    return view


def features_upgrade(data: FeaturesUpgrade) -> View:
    """One row per feature the release version sets: its finalized level, its target, and what became of it. Plain
    output: `FEATURE<TAB>FROM<TAB>TO<TAB>STATUS` for each feature that is not left unchanged."""
    from kadmin.domain.features import level_text

    changed = {c.feature for c in data.changes}
    why = {r.feature: r.reason for r in data.refusals if r.feature is not None}
    ok = "upgraded" if data.upgraded else "valid (dry run)" if data.validated else "not sent"
    rows: list[list[Any]] = []
    for name, level in data.target.items():
        now = data.finalized.get(name, 0)
        status = f"refused: {why[name]}" if name in why else ok if name in changed else \
            "unchanged" if now == level else "kept"  # a release's level 0 never lowers a finalized feature
        rows.append([name, level_text(name, now), level_text(name, level), status])
    v = View(["FEATURE", "FROM", "TO", "STATUS"], rows, title=f"release version {data.release_version}")
    v.text = "".join("\t".join(map(str, r)) + "\n" for r in rows if r[3] != "unchanged")
    return v


# rich's width for a file that is no terminal is 80 columns (it cuts cells with "…"); a table written to a
# pipe or a file is for reading in full, so it gets the width it needs unless COLUMNS says otherwise
_UNBOUNDED = 100_000


def table_width(isatty: bool, environ: Mapping[str, str] | None = None) -> int | None:
    """The width for `-o table`: None on a terminal (rich measures it), else COLUMNS when it is a positive
    number, else unbounded (a table never grows past its content)."""
    if isatty:
        return None
    columns = (os.environ if environ is None else environ).get("COLUMNS", "")
    return int(columns) if columns.isdigit() and int(columns) > 0 else _UNBOUNDED


def roll_plan(data: RollPlan) -> View:
    """One row per node in the order a run would start with; plain output: `batch<TAB>node<TAB>role` lines under
    the header line `BATCH<TAB>NODE<TAB>ROLE` (none without nodes, as every plain layout)."""
    from kadmin.domain.roll_estimate import clock_text

    e = data.estimate
    rows = [[n.batch, n.node, n.role, n.host or "", "" if n.port is None else n.port, n.rack or "",
             "" if n.skip is None else ("skip" if n.skip else "restart"), " ".join(n.steps)] for n in data.nodes]
    headers = ["BATCH", "NODE", "ROLE", "HOST", "PORT", "RACK", "ONLY-IF", "STEPS"]
    title = f"roll plan ({data.mode}, --parallel {data.parallel})"
    if e is not None:  # with --from DIR: each node's estimate after its role, the total in the title
        headers.insert(3, "EST. SECONDS")
        for row, n in zip(rows, data.nodes, strict=True):
            row.insert(3, _seconds(e.per_node.get(n.node)))
        title += f": {'at least' if e.unestimated else 'about'} {clock_text(e.total_s)} (from {e.from_})"
    v = View(headers, rows, title=title)
    if e is None:
        v.text = "".join(["BATCH\tNODE\tROLE\n" if data.nodes else "", *(f"{n.batch}\t{n.node}\t{n.role}\n"
                                                                      for n in data.nodes)])
    else:
        v.text = "".join(["BATCH\tNODE\tROLE\tEST_SECONDS\n" if data.nodes else "",
                          *(f"{n.batch}\t{n.node}\t{n.role}\t{_seconds(e.per_node.get(n.node))}\n"
                            for n in data.nodes)])
    return v


def _seconds(s: float | None) -> str:
    return "-" if s is None else f"{s:.1f}"


def roll_confirm(data: RollConfirm) -> View:
    """One row: the node, what was confirmed, its phase before and after."""
    said = "went down" if data.went_down else "never went down"
    v = View(["NODE", "CONFIRMED", "PHASE BEFORE", "PHASE AFTER"], [[data.node, said, data.phase_before,
                                                                   data.phase_after]], title="roll confirm")
    v.text = f"{data.node}\t{said}\t{data.phase_before}\t{data.phase_after}\n"
    return v


def roll_pause(data: RollPause) -> View:
    """One row: the state directory, paused or not, and whether this command changed it."""
    said = "paused" if data.paused else "not paused"
    v = View(["STATE", "NOW", "CHANGED"], [[data.state_dir, said, "yes" if data.changed else "no"]],
             title="roll pause" if data.paused else "roll continue")
    v.text = f"{data.state_dir}\t{said}\t{'changed' if data.changed else 'unchanged'}\n"
    return v


def roll_report(data: RollReport) -> View:
    """One row per node: its status, the step it reached (`-` for none: a node done or not begun), its time, and
    its epochs where the mode has them."""
    rows = [[r.node, r.role, r.status, r.step or None, "" if r.elapsed_s is None else f"{r.elapsed_s:.1f}",
             "" if r.old_epoch is None else r.old_epoch, "" if r.new_epoch is None else r.new_epoch]
            for r in data.nodes]
    from kadmin.domain.roll_estimate import clock_text

    left = "" if data.estimate_left_s is None else f", about {clock_text(data.estimate_left_s)} left"
    return View(["NODE", "ROLE", "STATUS", "STEP", "SECONDS", "OLD EPOCH", "NEW EPOCH"], rows,
                title=f"roll: {data.status}{left}")
