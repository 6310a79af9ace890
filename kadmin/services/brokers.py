"""`kadmin brokers ...`: registrations, epochs, bounces (KIP-380) and the max broker epoch."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from kadmin import interrupts
from kadmin.cluster.base import Cluster
from kadmin.domain import epochs
from kadmin.domain.addresses import host_port
from kadmin.domain.models import Broker, Generation
from kadmin.domain.znodes import INT32_MAX, INT64_MAX, INT64_MIN, loads_strict, show_value
from kadmin.errors import ConditionNotMet, NotFound, UsageError
from kadmin.exit_codes import ExitCode
from kadmin.results import Result

Clock = Callable[[], float]


def broker_json(b: Broker) -> dict[str, Any]:
    """The `brokers list` row: a JSON contract (keys pinned by a test)."""
    r = b.registration
    return {
        "id": b.id,
        "host": r.host if r else None,
        "port": r.port if r else None,
        "rack": r.rack if r else None,
        "endpoints": list(r.endpoints) if r else [],
        "listener_security_protocol_map": dict(r.listener_security_protocol_map) if r else {},
        "jmx_port": r.jmx_port if r else None,
        "version": r.version if r else None,
        "timestamp_ms": r.timestamp_ms if r else None,
        "features": {k: dict(v) for k, v in r.features.items()} if r else {},
        "epoch": b.epoch,
        "session": f"0x{b.session:x}",
        "is_controller": b.is_controller,
        "state": b.state,
    }


def _warn_chroot_empty(brokers: list[Broker]) -> list[str]:
    return [] if brokers else ["no brokers are registered (is the cluster down, or the chroot wrong?)"]


def list_brokers(cluster: Cluster) -> Result:
    listing = cluster.list_brokers()
    return Result(
        data=[broker_json(b) for b in listing.brokers],
        errors=listing.problems,
        warnings=_warn_chroot_empty(listing.brokers),
    )


def show_broker(cluster: Cluster, broker_id: int) -> Result:
    broker, problems = cluster.get_broker(broker_id)
    if broker is None:
        raise NotFound(f"broker {broker_id} is not registered")
    data = broker_json(broker)
    data["path"] = f"/brokers/ids/{broker_id}"
    data["raw"] = broker.raw.decode("utf-8", "replace")
    data["stat"] = broker.stat.as_dict()
    if broker.error:
        data["error"] = broker.error
    return Result(data=data, errors=problems)


def max_epoch(cluster: Cluster) -> Result:
    listing = cluster.list_brokers()
    found = epochs.max_broker_epoch({b.id: b.epoch for b in listing.brokers})
    data = {
        "max_broker_epoch": found[0] if found else None,
        "broker_id": found[1] if found else None,
        "brokers": len(listing.brokers),
    }
    if found is None:
        return Result(
            data=data,
            errors=listing.problems,
            exit_code=ExitCode.CONDITION_NOT_MET,
            message="no broker is registered: there is no max broker epoch",
        )
    return Result(data=data, errors=listing.problems)


def load_saved_epochs(path: Path) -> dict[int, int]:
    """Read a saved `kadmin brokers list -o json` (or its NDJSON): broker id → epoch."""
    try:
        text = path.read_text()
    except OSError as e:
        raise UsageError(f"--since {path}: cannot read: {e.strerror}") from e
    except UnicodeDecodeError as e:
        raise UsageError(f"--since {path}: not UTF-8 text ({e.reason} at byte {e.start})") from e
    return parse_saved_epochs(text, str(path))


def parse_saved_epochs(text: str, name: str) -> dict[int, int]:
    rows: Any
    if not text.strip():
        raise UsageError(f"--since {name}: the file is empty")
    try:
        doc = loads_strict(text)
        rows = doc.get("data") if isinstance(doc, dict) else doc
        if isinstance(doc, dict) and "kadmin_result_version" in doc and doc["kadmin_result_version"] not in (1, 2):
            raise UsageError(f"--since {name}: unknown kadmin_result_version "
                             f"{show_value(doc['kadmin_result_version'])}")
        if isinstance(doc, dict) and doc.get("command") not in (None, "brokers list"):
            raise UsageError(f"--since {name}: saved from `kadmin {show_value(doc.get('command'))}`, "
                             "not `kadmin brokers list`")
    except ValueError as e:
        # NDJSON: one broker object per line (the whole text is then not one JSON document)
        try:
            rows = [loads_strict(line) for line in text.splitlines() if line.strip()]
        except ValueError:
            raise UsageError(f"--since {name}: not a saved `kadmin brokers list -o json` ({e})") from e
    if not isinstance(rows, list):
        raise UsageError(f"--since {name}: no broker list in it")
    out: dict[int, int] = {}
    for i, row in enumerate(rows):
        bid = row.get("id") if isinstance(row, dict) else None
        epoch = row.get("epoch") if isinstance(row, dict) else None
        if not (isinstance(bid, int) and not isinstance(bid, bool) and 0 <= bid <= INT32_MAX
                and isinstance(epoch, int) and not isinstance(epoch, bool) and INT64_MIN <= epoch <= INT64_MAX):
            raise UsageError(f"--since {name}: entry {i} has no broker id and epoch (integers)")
        out[bid] = epoch
    return out


def diff(cluster: Cluster, before: Mapping[int, int], exit_code_on_change: bool = False) -> Result:
    listing = cluster.list_brokers()
    after = {b.id: b.epoch for b in listing.brokers}
    d = epochs.classify(before, after)
    bounced = d.bounced + d.went_backwards
    data = {
        "new": list(d.new),
        "dead": list(d.dead),
        "bounced": [{"id": b.id, "old_epoch": b.old_epoch, "new_epoch": b.new_epoch} for b in bounced],
        "unchanged": list(d.unchanged),
        # the two listings' epochs by broker id, so a dead broker shows its last epoch and a new one its first
        "old_epochs": dict(sorted(before.items())),
        "new_epochs": dict(sorted(after.items())),
    }
    warnings = [
        f"broker {b.id}: epoch went backwards ({b.old_epoch} → {b.new_epoch}): "
        "a different or restored ZooKeeper ensemble?"
        for b in d.went_backwards
    ]
    parts = [f"{len(d.new)} new", f"{len(d.dead)} dead", f"{len(bounced)} bounced", f"{len(d.unchanged)} unchanged"]
    code = ExitCode.CONDITION_NOT_MET if (exit_code_on_change and d.changed) else ExitCode.OK
    return Result(
        data=data,
        errors=listing.problems,
        warnings=warnings,
        exit_code=code,
        message=", ".join(parts),
    )


def iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def watch(
    cluster: Cluster,
    count: int | None = None,
    timeout: float | None = None,
    initial: bool = False,
    clock: Clock = time.time,
    on_resync: Callable[[str], None] | None = None,
    asked: float | None = None,
) -> Iterator[dict[str, Any]]:
    """Registration events as they happen. Stops after `count` events or `timeout` seconds.

    `asked` is the --timeout the user gave, for messages (`timeout` is what is left of it after connecting).

    Raises ConditionNotMet when `count` was asked for and not reached in time.
    """
    emitted = 0
    before: dict[int, Generation] | None = None
    last_epochs: dict[int, int] = {}
    for tick in cluster.watch_brokers(timeout):
        if before is None:
            before = {} if initial else tick.generations
        if tick.resynced and on_resync is not None:
            on_resync("reconnected: re-read every registration")
        events = epochs.registration_events(before, tick.generations, last_epochs)
        last_epochs.update({b: g.epoch for b, g in before.items()})
        last_epochs.update({b: g.epoch for b, g in tick.generations.items()})
        for ev in events:
            yield {"event": ev.event, "id": ev.id, "epoch": ev.epoch, "old_epoch": ev.old_epoch, "at": iso(clock())}
            emitted += 1
            if count is not None and emitted >= count:
                return
        before = tick.generations
    if count is not None:
        raise ConditionNotMet(f"saw {emitted} of {count} events before the timeout ({asked or timeout:g}s)")


WaitKind = Literal["registered", "gone", "epoch_gt"]


@dataclass(frozen=True)
class WaitCondition:
    kind: WaitKind
    broker_id: int
    epoch: int | None = None

    def holds(self, gens: Mapping[int, Generation]) -> bool:
        g = gens.get(self.broker_id)
        if self.kind == "registered":
            return g is not None
        if self.kind == "gone":
            return g is None
        assert self.epoch is not None
        return g is not None and g.epoch > self.epoch

    def describe(self) -> str:
        if self.kind == "registered":
            return f"broker {self.broker_id} registered"
        if self.kind == "gone":
            return f"broker {self.broker_id} gone"
        return f"broker {self.broker_id} registered with an epoch greater than {self.epoch}"

    def missing(self, gens: Mapping[int, Generation]) -> str:
        g = gens.get(self.broker_id)
        if self.kind == "gone":
            return f"broker {self.broker_id} is still registered (epoch {g.epoch if g else '?'})"
        if g is None:
            return f"broker {self.broker_id} is not registered"
        return f"broker {self.broker_id} is registered with epoch {g.epoch}, not greater than {self.epoch}"


def wait(cluster: Cluster, cond: WaitCondition, timeout: float, clock: Clock = time.monotonic,
         asked: float | None = None) -> Result:
    """`asked`: the --timeout the user gave, for messages (`timeout` is what is left of it after connecting)."""
    start = clock()
    last: Mapping[int, Generation] = {}
    met = False
    for tick in cluster.watch_brokers(timeout):
        last = tick.generations
        if cond.holds(last):
            met = True
            break
    g = last.get(cond.broker_id)
    return wait_result(cond.broker_id, cond.kind, {"epoch": g.epoch if g else None}, int((clock() - start) * 1000),
                       cond.describe() if met else None, lambda: cond.missing(last), asked or timeout)


def wait_result(broker_id: int, kind: str, fields: Mapping[str, Any], waited_ms: int, done: str | None,
                missing: Callable[[], str], timeout: float, warnings: Sequence[str] = ()) -> Result:
    """`brokers wait`'s result in both modes: met (`done` says what holds) or timed out (exit 1, `missing`
    says what does not); `fields` are the mode's own keys, between `met` and `waited_ms`."""
    data = {"broker_id": broker_id, "condition": kind, "met": done is not None, **fields, "waited_ms": waited_ms}
    if done is not None:
        return Result(data=data, warnings=list(warnings), message=done)
    return Result(data=data, warnings=list(warnings), exit_code=ExitCode.CONDITION_NOT_MET,
                  message=f"timed out after {timeout:g}s: {missing()}")


# ---------------------------------------------------------------------------- KRaft mode
def kraft_broker_json(b: Any) -> dict[str, Any]:
    """A KRaft registration as a `brokers list` row: the same keys as ZooKeeper mode.

    DescribeCluster does not expose the broker epoch, the registration's version, JMX port,
    listener names or features: those are null. `is_controller` is null because KRaft brokers
    report a random alive broker as the controller (the active controller is `kadmin quorum
    describe`'s leader). `state` is `fenced` or `active`.
    """
    return {
        "id": b.id,
        "host": b.host,
        "port": b.port,
        "rack": b.rack,
        "endpoints": [host_port(b.host, b.port)],
        "listener_security_protocol_map": {},
        "jmx_port": None,
        "version": None,
        "timestamp_ms": None,
        "features": {},
        "epoch": None,
        "session": None,
        "is_controller": None,
        "state": "fenced" if b.fenced else "active",
    }


def list_kraft_brokers(client: Any) -> Result:
    """Through --bootstrap-controller: exit 3 (the controllers describe only themselves, KIP-919)."""
    d = client.describe_brokers()
    warnings = []
    if d.version < 2:
        warnings.append(f"the cluster answers DescribeCluster v{d.version}: fenced brokers are not listed "
                        "(KIP-1073, Kafka 4.0+)")
    rows = [kraft_broker_json(b) for b in sorted(d.brokers, key=lambda b: b.id)]
    return Result(data=rows, warnings=warnings)


def unregister(client: Any, broker_id: int, force: bool, dry_run: bool = False) -> Result:
    """UnregisterBroker, after checking the broker is not active (exit 7 unless `force`); `dry_run`
    checks the same and sends nothing."""
    from kadmin.errors import ConfigError, Unsafe

    live = {}
    if not (client.controllers and force):  # --force through the controllers: nothing to check, nothing asked
        try:
            live = {b.id: b for b in client.describe_brokers().brokers}
        except ConfigError as e:  # the controllers cannot tell whether the broker is active: never skip the check
            raise ConfigError(f"cannot check that broker {broker_id} is not active: {e.message}, or --force to "
                              "unregister without the check", code=e.code) from e
    b = live.get(broker_id)
    if b is not None and b.fenced is not True and not force:
        state = "active" if b.fenced is False else "registered (its fencing state is unknown below DescribeCluster v2)"
        raise Unsafe(f"broker {broker_id} is {state}: unregistering a running broker removes it from every ISR; "
                     "stop it first, or use --force")
    was = None if b is None else ("fenced" if b.fenced else "active")
    if dry_run:
        return Result(data={"broker_id": broker_id, "unregistered": False,
                             "was": was, "dry_run": True},
                      message=f"would unregister broker {broker_id} (UnregisterBroker); nothing sent")
    interrupts.arm()  # the request may take effect once sent: a Ctrl-C waits until the outcome is reported
    try:
        client.unregister_broker(broker_id)
    except BaseException:
        interrupts.disarm()  # it failed: nothing to report but the failure (or the interrupt)
        raise
    return Result(data={"broker_id": broker_id, "unregistered": True,
                         "was": None if b is None else ("fenced" if b.fenced else
                                                        "active")},
                  message=f"Broker {broker_id} is no longer registered.")


# ---------------------------------------------------------------------------- KRaft: polled DescribeCluster
KraftWaitKind = Literal["registered", "gone", "fenced", "unfenced"]
Sleep = Callable[[float], None]


def kraft_seen(client: Any) -> tuple[dict[int, Any], int]:
    """One DescribeCluster answer as broker id -> kraft_registrations.Seen, and its version."""
    from kadmin.domain.kraft_registrations import Seen

    d = client.describe_brokers()
    return {b.id: Seen(b.fenced, host_port(b.host, b.port), b.rack) for b in d.brokers}, d.version


def poll_describe_cluster(client: Any, timeout: float | None, clock: Clock = time.monotonic,
                          sleep: Sleep = time.sleep, on_note: Callable[[str], None] | None = None,
                          first: float = 0.25, ceiling: float = 2.0) -> Iterator[tuple[dict[int, Any], int]]:
    """DescribeCluster answers, the first at once, then polled with backoff (`first` ×1.5 up to
    `ceiling` seconds) until `timeout` (None: forever). The first look must succeed; a later one that
    fails (a bootstrap broker went away) is said on stderr and retried."""
    from kadmin.domain.kraft_registrations import backoff
    from kadmin.errors import ClusterUnreachable

    start = clock()
    yield kraft_seen(client)
    if on_note is not None:
        on_note(f"polling DescribeCluster every {first:g}s, backing off to every {ceiling:g}s")
    interval: float | None = None
    while True:
        interval = backoff(interval, first, ceiling)
        if timeout is not None:
            left = timeout - (clock() - start)
            if left <= 0:
                return
            interval = min(interval, left)
        sleep(interval)
        try:
            yield kraft_seen(client)
        except ClusterUnreachable as e:
            if on_note is not None:
                on_note(f"DescribeCluster failed, retrying: {e.message}")


@dataclass(frozen=True)
class KraftWaitCondition:
    kind: KraftWaitKind
    broker_id: int

    def holds(self, seen: Mapping[int, Any]) -> bool:
        s = seen.get(self.broker_id)
        if self.kind == "registered":
            return s is not None
        if self.kind == "gone":
            return s is None
        if self.kind == "fenced":
            return s is not None and s.fenced is True
        return s is not None and s.fenced is False

    def describe(self) -> str:
        return f"broker {self.broker_id} {self.kind}"

    def missing(self, seen: Mapping[int, Any], version: int = 2) -> str:
        s = seen.get(self.broker_id)
        if s is None and version < 2:
            return (f"broker {self.broker_id} is not listed (DescribeCluster v{version} lists only unfenced "
                    "brokers: it is fenced or not registered)")
        if s is None:
            return f"broker {self.broker_id} is not registered"
        state = "fenced" if s.fenced else "active (unfenced)"
        return f"broker {self.broker_id} is registered and {state}"


def kraft_wait(client: Any, cond: KraftWaitCondition, timeout: float, clock: Clock = time.monotonic,
               sleep: Sleep = time.sleep, on_note: Callable[[str], None] | None = None,
               asked: float | None = None) -> Result:
    """`brokers wait` with --bootstrap-server: polls DescribeCluster (v2 lists fenced brokers).

    Below v2 a fenced broker is not listed at all: "not listed" cannot tell fenced from gone, so
    --fenced and --gone exit 3 there; --registered then means registered and unfenced."""
    from kadmin.errors import ConfigError

    start = clock()
    last: Mapping[int, Any] = {}
    met = False
    warnings: list[str] = []
    last_version = 2
    for seen, version in poll_describe_cluster(client, timeout, clock, sleep, on_note):
        last_version = version
        if version < 2:
            if cond.kind in ("fenced", "gone"):
                raise ConfigError(f"--{cond.kind} needs DescribeCluster v2 (Kafka 4.0+, KIP-1073): this cluster "
                                  f"answers v{version}, which does not list fenced brokers, so a fenced broker and "
                                  "a gone one look the same", code="describe_cluster_no_fenced")
            if not warnings:
                warnings.append(f"the cluster answers DescribeCluster v{version}: only unfenced brokers are listed, "
                                f"so --{cond.kind} waits for broker {cond.broker_id} registered and unfenced")
        last = seen
        if cond.holds(seen):
            met = True
            break
    s = last.get(cond.broker_id)
    fields = {"epoch": None,  # DescribeCluster carries no broker epoch
              "fenced": None if s is None else s.fenced}
    return wait_result(cond.broker_id, cond.kind, fields, int((clock() - start) * 1000),
                       cond.describe() if met else None, lambda: cond.missing(last, last_version), asked or timeout,
                       warnings)


def kraft_watch(client: Any, count: int | None = None, timeout: float | None = None, initial: bool = False,
                clock: Clock = time.time, monotonic: Clock = time.monotonic, sleep: Sleep = time.sleep,
                on_note: Callable[[str], None] | None = None, asked: float | None = None) -> Iterator[dict[str, Any]]:
    """`brokers watch` with --bootstrap-server: events between polled DescribeCluster answers
    (registered, unregistered, fenced, unfenced, endpoint_changed). The ZooKeeper-mode keys (`epoch`,
    `old_epoch` null: DescribeCluster has no epoch) plus `fenced`, `endpoint` (and `old_endpoint`).
    A change undone between two polls is not seen."""
    from kadmin.domain.kraft_registrations import poll_events

    emitted = 0
    before: dict[int, Any] | None = None
    warned = False
    for seen, version in poll_describe_cluster(client, timeout, monotonic, sleep, on_note):
        if version < 2 and not warned and on_note is not None:
            on_note(f"the cluster answers DescribeCluster v{version}: fenced brokers are not listed, so a fence "
                    "shows as unregistered and an unfence as registered")
            warned = True
        if before is None:
            before = {} if initial else seen
        for ev in poll_events(before, seen):
            yield {"event": ev["event"], "id": ev["id"], "epoch": None, "old_epoch": None, "at": iso(clock()),
                   **{k: v for k, v in ev.items() if k not in ("event", "id")}}
            emitted += 1
            if count is not None and emitted >= count:
                return
        before = seen
    if count is not None:
        raise ConditionNotMet(f"saw {emitted} of {count} events before the timeout ({asked or timeout:g}s)")


# ---------------------------------------------------------------------------- KRaft: offline metadata log
def metadata_partition_dir(path: Path) -> Path:
    """DIR is a metadata.log.dir (holding __cluster_metadata-0) or that partition directory itself."""
    if (path / "__cluster_metadata-0").is_dir():
        return path / "__cluster_metadata-0"
    if path.is_dir() and path.name == "__cluster_metadata-0":
        return path
    if not path.exists():
        raise UsageError(f"--metadata-dir {path}: no such directory")
    raise UsageError(f"--metadata-dir {path}: no __cluster_metadata-0 in it (give a controller's metadata.log.dir)")


def read_registrations(path: Path) -> tuple[dict[int, Any], list[str], dict[str, Any]]:
    """Replay the newest snapshot (`<offset>-<epoch>.checkpoint`) then the log segments from its end
    offset: broker id -> kraft_registrations.Registration, damage found, and what was read."""
    from kadmin.cluster.metadata_records import CRC32C, DECODER
    from kadmin.domain.kraft_registrations import apply
    from kadmin.formats import kraft_log

    part = metadata_partition_dir(path)
    damage: list[str] = []
    regs: dict[int, Any] = {}
    try:
        names = sorted(p.name for p in part.iterdir())
    except OSError as e:
        raise UsageError(f"--metadata-dir {path}: cannot read: {e.strerror}") from e
    snapshots = sorted((sid, n) for n in names if (sid := kraft_log.snapshot_id(n)) is not None)
    segments = sorted((b, n) for n in names if (b := kraft_log.segment_base_offset(n)) is not None)
    snap_end = 0
    snapshot_name = None
    last_offset = None

    tail: list[str] = []

    def note(prefix: str, active: bool = False) -> Callable[[Any], None]:
        def report(d: Any) -> None:
            text = f"{prefix}: {d.reason} (offset {d.offset})"
            # the active segment of a running controller may end in a batch still being written
            (tail if active and d.reason.startswith("truncated batch") else damage).append(text)
        return report

    try:
        if snapshots:
            (snap_end, _epoch), snapshot_name = snapshots[-1]
            for rec in kraft_log.iter_checkpoint(part / snapshot_name, DECODER, note(snapshot_name), CRC32C):
                if not rec.control:
                    apply(regs, rec.type_name, rec.fields, None, "snapshot")
        for i, (_base, name) in enumerate(segments):
            active = i == len(segments) - 1
            for rec in kraft_log.iter_segment(part / name, DECODER, note(name, active), CRC32C):
                if rec.offset < snap_end:
                    continue
                last_offset = rec.offset
                if not rec.control:
                    apply(regs, rec.type_name, rec.fields, rec.offset, "log")
    except OSError as e:
        raise UsageError(f"--metadata-dir {path}: cannot read: {e.strerror}") from e
    info = {"snapshot": snapshot_name, "segments": [n for _, n in segments], "last_offset": last_offset,
            "tail": tail}
    return regs, damage, info


def list_metadata_dir(path: Path) -> Result:
    """`brokers list --metadata-dir DIR`: registrations as this controller's metadata log has them."""
    from kadmin.domain.kraft_registrations import registration_json
    from kadmin.results import Problem

    regs, damage, info = read_registrations(path)
    rows = [registration_json(regs[i]) for i in sorted(regs)]
    warnings = [] if rows else [f"no broker registration in {path} (is it a controller's metadata.log.dir?)"]
    warnings += [f"{t}: read up to the last complete batch (a write in progress?)" for t in info["tail"]]
    if info["snapshot"] is None and not info["segments"]:
        warnings.append(f"{path}: no snapshot and no log segment")
    return Result(data=rows, warnings=warnings,
                  errors=[Problem("damaged_metadata_log", d) for d in damage],
                  exit_code=ExitCode.PARTIAL if damage else ExitCode.OK)


def parse_saved_registrations(text: str, name: str) -> dict[int, Any]:
    """A saved `brokers list -o json` as broker id -> kraft_registrations.Saved (epoch and, when the
    listing has it, the incarnation id)."""
    from kadmin.domain.kraft_registrations import Saved

    epochs_by_id = parse_saved_epochs(text, name)
    incarnations: dict[int, str] = {}
    try:
        doc = loads_strict(text)
        rows = doc.get("data") if isinstance(doc, dict) else doc
    except ValueError:
        rows = [loads_strict(line) for line in text.splitlines() if line.strip()]
    for row in rows if isinstance(rows, list) else []:
        inc = row.get("incarnation_id") if isinstance(row, dict) else None
        if isinstance(inc, str) and isinstance(row.get("id"), int):
            incarnations[row["id"]] = inc
    return {i: Saved(e, incarnations.get(i)) for i, e in epochs_by_id.items()}


def load_saved_registrations(path: Path) -> dict[int, Any]:
    load_saved_epochs(path)  # the same readable/UTF-8 checks and messages
    return parse_saved_registrations(path.read_text(), str(path))


def diff_registrations(before: Mapping[int, Any], after: Mapping[int, Any], exit_code_on_change: bool = False,
                       errors: list[Any] | None = None) -> Result:
    """`brokers diff` between two KRaft listings: bounced = a new incarnation id or a larger epoch."""
    from kadmin.domain.kraft_registrations import classify

    d = classify(before, after)
    data = {
        "new": list(d.new),
        "dead": list(d.dead),
        "bounced": [{"id": b.id, "old_epoch": b.old_epoch, "new_epoch": b.new_epoch,
                     "old_incarnation_id": b.old_incarnation_id, "new_incarnation_id": b.new_incarnation_id}
                    for b in d.bounced + d.went_backwards],
        "unchanged": list(d.unchanged),
        "old_epochs": {i: before[i].epoch for i in sorted(before)},
        "new_epochs": {i: after[i].epoch for i in sorted(after)},
    }
    warnings = [f"broker {b.id}: epoch went backwards ({b.old_epoch} → {b.new_epoch}) with the same incarnation: "
                "another cluster's metadata log?" for b in d.went_backwards]
    nb = len(d.bounced) + len(d.went_backwards)
    parts = [f"{len(d.new)} new", f"{len(d.dead)} dead", f"{nb} bounced", f"{len(d.unchanged)} unchanged"]
    code = ExitCode.CONDITION_NOT_MET if (exit_code_on_change and d.changed) else ExitCode.OK
    return Result(data=data, errors=errors or [], warnings=warnings, exit_code=code,
                  message=", ".join(parts))
