"""`kadmin brokers ...`: registrations, epochs, bounces (KIP-380) and the max broker epoch."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from kadmin import interrupts, payloads  # payloads.X: a group's payload classes are built when first named
from kadmin.cluster.base import BrokerEpochs, Registrations, RegistrationTick, Unregistration
from kadmin.domain.addresses import host_port
from kadmin.domain.models import Broker, Registered
from kadmin.domain.znodes import INT32_MAX, INT64_MAX, INT64_MIN, loads_strict, show_value
from kadmin.errors import ConditionNotMet, ConfigError, NotFound, UsageError
from kadmin.exit_codes import ExitCode
from kadmin.inputs import check_input, read_input
from kadmin.results import Problem, Result

if TYPE_CHECKING:
    from kadmin.domain.kraft_registrations import Registration, Saved
    from kadmin.payloads import (
        BrokerEvent,
        BrokerRow,
        BrokersDiff,
        BrokerShow,
        BrokerWait,
        LoggedBrokerRow,
        MaxEpoch,
        Unregistered,
    )

Clock = Callable[[], float]


def broker_row(b: Broker) -> BrokerRow:
    """A registration znode as the `brokers list` row: a JSON contract (keys pinned by a test)."""
    r = b.registration
    return payloads.BrokerRow(
        id=b.id,
        host=r.host if r else None,
        port=r.port if r else None,
        rack=r.rack if r else None,
        endpoints=r.endpoints if r else (),
        listener_security_protocol_map=r.listener_security_protocol_map if r else {},
        jmx_port=r.jmx_port if r else None,
        version=r.version if r else None,
        timestamp_ms=r.timestamp_ms if r else None,
        features=r.features if r else {},
        epoch=b.epoch,
        session=f"0x{b.session:x}",
        is_controller=b.is_controller,
        state=b.state,
    )


def registration_row(r: Registered) -> BrokerRow:
    """The `brokers list` row in both modes: the registration znode in full (ZooKeeper mode), or what
    DescribeCluster serves (KRaft) with the same keys. DescribeCluster does not expose the broker epoch,
    the registration's version, JMX port, listener names or features: those are null. `is_controller`
    is null because KRaft brokers report a random alive broker as the controller (the active controller
    is `kadmin quorum describe`'s leader). `state` is `fenced` or `active` there."""
    if r.broker is not None:
        return broker_row(r.broker)
    return payloads.BrokerRow(
        id=r.id,
        host=r.host,
        port=r.port,
        rack=r.rack,
        endpoints=(host_port(r.host or "", r.port or 0),),
        listener_security_protocol_map={},
        jmx_port=None,
        version=None,
        timestamp_ms=None,
        features={},
        epoch=None,
        session=None,
        is_controller=None,
        state="fenced" if r.fenced else "active",
    )


def list_brokers(regs: Registrations) -> Result[list[BrokerRow]]:
    """`brokers list`: every registration (KRaft: fenced ones too from DescribeCluster v2)."""
    tick = regs.registrations()
    warnings = []
    if tick.fencing == "unlisted":
        warnings.append(f"the cluster answers DescribeCluster v{tick.version}: fenced brokers are not listed "
                        "(KIP-1073, Kafka 4.0+)")
    if tick.fencing == "none" and not tick.brokers:
        warnings.append("no brokers are registered (is the cluster down, or the chroot wrong?)")
    rows = [registration_row(tick.brokers[i]) for i in sorted(tick.brokers)]
    return Result(data=rows, errors=tick.problems, warnings=warnings)


def show_broker(cluster: BrokerEpochs, broker_id: int) -> Result[BrokerShow]:
    broker, problems = cluster.get_broker(broker_id)
    if broker is None:
        raise NotFound(f"broker {broker_id} is not registered")
    data = payloads.BrokerShow(broker_row(broker), path=f"/brokers/ids/{broker_id}",
                               raw=broker.raw.decode("utf-8", "replace"), stat=broker.stat.as_dict(),
                               error=broker.error)
    return Result(data=data, errors=problems)


def max_epoch(cluster: BrokerEpochs) -> Result[MaxEpoch]:
    from kadmin.domain import epochs  # here and in diff and watch: `brokers wait` builds none of its types

    listing = cluster.list_brokers()
    found = epochs.max_broker_epoch({b.id: b.epoch for b in listing.brokers})
    data = payloads.MaxEpoch(max_broker_epoch=found[0] if found else None, broker_id=found[1] if found else None,
                    brokers=len(listing.brokers))
    if found is None:
        return Result(
            data=data,
            errors=listing.problems,
            exit_code=ExitCode.CONDITION_NOT_MET,
            message="no broker is registered: there is no max broker epoch",
        )
    return Result(data=data, errors=listing.problems)


def load_saved_epochs(path: Path, flag: str = "--since") -> dict[int, int]:
    """Read a saved `kadmin brokers list -o json` (or its NDJSON): broker id → epoch."""
    return parse_saved_epochs(read_saved(path, flag), str(path))


def read_saved(path: Path, flag: str) -> str:
    """The text of a saved listing: a regular file under kadmin.inputs' limit, UTF-8 (else exit 2, one line)."""
    try:
        return read_input(path, flag).decode("utf-8")
    except OSError as e:
        raise UsageError(f"{flag} {path}: cannot read: {e.strerror}") from e
    except UnicodeDecodeError as e:
        raise UsageError(f"{flag} {path}: not UTF-8 text ({e.reason} at byte {e.start})") from e


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


def diff(cluster: BrokerEpochs, before: Mapping[int, int], exit_code_on_change: bool = False) -> Result[BrokersDiff]:
    from kadmin.domain import epochs

    listing = cluster.list_brokers()
    after = {b.id: b.epoch for b in listing.brokers}
    d = epochs.classify(before, after)
    bounced = d.bounced + d.went_backwards
    data = payloads.BrokersDiff(
        new=d.new,
        dead=d.dead,
        bounced=tuple(payloads.Bounced(b.id, b.old_epoch, b.new_epoch) for b in bounced),
        unchanged=d.unchanged,
        old_epochs=dict(sorted(before.items())),
        new_epochs=dict(sorted(after.items())),
    )
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
    regs: Registrations,
    count: int | None = None,
    timeout: float | None = None,
    initial: bool = False,
    clock: Clock = time.time,
    on_note: Callable[[str], None] | None = None,
    asked: float | None = None,
) -> Iterator[BrokerEvent]:
    """Registration events as they happen, in both modes (kadmin.domain.epochs.registration_changes). Stops
    after `count` events or `timeout` seconds. `asked` is the --timeout the user gave, for messages
    (`timeout` is what is left of it after connecting).

    Raises ConditionNotMet when `count` was asked for and not reached in time.
    """
    from kadmin.domain import epochs

    emitted = 0
    before: dict[int, Registered] | None = None
    last_epochs: dict[int, int] = {}
    warned = False
    for tick in regs.watch_registrations(timeout, on_note):
        if tick.resynced and on_note is not None:
            on_note("reconnected: re-read every registration")
        if tick.fencing == "unlisted" and not warned and on_note is not None:
            on_note(f"the cluster answers DescribeCluster v{tick.version}: fenced brokers are not listed, so a fence "
                    "shows as unregistered and an unfence as registered")
            warned = True
        if before is None:
            before = {} if initial else tick.brokers
        events = epochs.registration_changes(before, tick.brokers, last_epochs)
        last_epochs.update({b: r.epoch for b, r in before.items() if r.epoch is not None})
        last_epochs.update({b: r.epoch for b, r in tick.brokers.items() if r.epoch is not None})
        for ev in events:
            yield _event(ev, iso(clock()))
            emitted += 1
            if count is not None and emitted >= count:
                return
        before = tick.brokers
    if count is not None:
        raise ConditionNotMet(f"saw {emitted} of {count} events before the timeout ({asked or timeout:g}s)")


def _event(ev: Mapping[str, Any], at: str) -> BrokerEvent:
    """One of kadmin.domain.epochs.registration_changes's events, seen `at`: a KRaft one has an endpoint."""
    if "endpoint" in ev:
        return payloads.FencingEvent(ev["event"], ev["id"], ev["epoch"], ev["old_epoch"], at, fenced=ev["fenced"],
                            endpoint=ev["endpoint"], old_endpoint=ev.get("old_endpoint"))
    return payloads.BrokerEvent(ev["event"], ev["id"], ev["epoch"], ev["old_epoch"], at)


WaitKind = Literal["registered", "gone", "epoch_gt", "fenced", "unfenced"]


@dataclass(frozen=True)
class WaitCondition:
    """What `brokers wait` waits for, over the registrations of either mode."""

    kind: WaitKind
    broker_id: int
    epoch: int | None = None

    def holds(self, regs: Mapping[int, Registered]) -> bool:
        r = regs.get(self.broker_id)
        if self.kind == "registered":
            return r is not None
        if self.kind == "gone":
            return r is None
        if self.kind == "fenced":
            return r is not None and r.fenced is True
        if self.kind == "unfenced":
            return r is not None and r.fenced is False
        assert self.epoch is not None
        return r is not None and r.epoch is not None and r.epoch > self.epoch

    def describe(self) -> str:
        if self.kind == "epoch_gt":
            return f"broker {self.broker_id} registered with an epoch greater than {self.epoch}"
        return f"broker {self.broker_id} {self.kind}"

    def missing(self, tick: RegistrationTick) -> str:
        r = tick.brokers.get(self.broker_id)
        if tick.fencing == "none":  # ZooKeeper mode: registered or not, with an epoch
            if self.kind == "gone":
                return f"broker {self.broker_id} is still registered (epoch {r.epoch if r else '?'})"
            if r is None:
                return f"broker {self.broker_id} is not registered"
            return f"broker {self.broker_id} is registered with epoch {r.epoch}, not greater than {self.epoch}"
        if r is None and tick.fencing == "unlisted":
            return (f"broker {self.broker_id} is not listed (DescribeCluster v{tick.version} lists only unfenced "
                    "brokers: it is fenced or not registered)")
        if r is None:
            return f"broker {self.broker_id} is not registered"
        return f"broker {self.broker_id} is registered and {'fenced' if r.fenced else 'active (unfenced)'}"


def wait(regs: Registrations, cond: WaitCondition, timeout: float, clock: Clock = time.monotonic,
         on_note: Callable[[str], None] | None = None, asked: float | None = None) -> Result[BrokerWait]:
    """`brokers wait --registered/--gone/--epoch-gt/--fenced/--unfenced` in both modes: ZooKeeper watches, or
    DescribeCluster polled with backoff (v2 lists fenced brokers). `asked`: the --timeout the user gave, for
    messages (`timeout` is what is left of it after connecting).

    Below DescribeCluster v2 a fenced broker is not listed at all: "not listed" cannot tell fenced from gone,
    so --fenced and --gone exit 3 there; --registered then means registered and unfenced."""
    if cond.kind == "epoch_gt" and not regs.epochs:
        raise ConfigError("brokers wait --epoch-gt needs the broker epoch, which these registrations do not carry",
                          code="no_broker_epoch")
    if cond.kind in ("fenced", "unfenced") and not regs.fencing:
        raise ConfigError(f"--{cond.kind} is a KRaft broker state: give --bootstrap-server (in ZooKeeper mode a "
                          "broker is registered or not)", code="kraft_only")
    start = clock()
    last: RegistrationTick | None = None
    met = False
    warnings: list[str] = []
    for tick in regs.watch_registrations(timeout, on_note):
        if tick.fencing == "unlisted":
            if cond.kind in ("fenced", "gone"):
                raise ConfigError(f"--{cond.kind} needs DescribeCluster v2 (Kafka 4.0+, KIP-1073): this cluster "
                                  f"answers v{tick.version}, which does not list fenced brokers, so a fenced broker "
                                  "and a gone one look the same", code="describe_cluster_no_fenced")
            if not warnings:
                warnings.append(f"the cluster answers DescribeCluster v{tick.version}: only unfenced brokers are "
                                f"listed, so --{cond.kind} waits for broker {cond.broker_id} registered and unfenced")
        last = tick
        if cond.holds(tick.brokers):
            met = True
            break
    r = None if last is None else last.brokers.get(cond.broker_id)
    data = payloads.BrokerWait(cond.broker_id, cond.kind, met, epoch=None if r is None else r.epoch,
                      fenced=None if r is None else r.fenced, waited_ms=int((clock() - start) * 1000),
                      fencing=regs.fencing)
    return wait_result(data, cond.describe() if met else None,
                       lambda: cond.missing(last or RegistrationTick({}, "none")), asked or timeout, warnings)


def wait_result(data: BrokerWait, done: str | None, missing: Callable[[], str], timeout: float,
                warnings: Sequence[str] = ()) -> Result[BrokerWait]:
    """`brokers wait`'s result in both modes: met (`done` says what holds) or timed out (exit 1, `missing`
    says what does not)."""
    if done is not None:
        return Result(data=data, warnings=list(warnings), message=done)
    return Result(data=data, warnings=list(warnings), exit_code=ExitCode.CONDITION_NOT_MET,
                  message=f"timed out after {timeout:g}s: {missing()}")


def unregister(client: Unregistration, broker_id: int, force: bool, dry_run: bool = False) -> Result[Unregistered]:
    """UnregisterBroker, after checking the broker is not active (exit 7 unless `force`); `dry_run`
    checks the same and sends nothing."""
    from kadmin.errors import Unsafe

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
        return Result(data=payloads.Unregistered(broker_id, unregistered=False, was=was, dry_run=True),
                      message=f"would unregister broker {broker_id} (UnregisterBroker); nothing sent")
    interrupts.arm()  # the request may take effect once sent: a Ctrl-C waits until the outcome is reported
    try:
        client.unregister_broker(broker_id)
    except BaseException:
        interrupts.disarm()  # it failed: nothing to report but the failure (or the interrupt)
        raise
    return Result(data=payloads.Unregistered(broker_id, unregistered=True, was=was),
                  message=f"Broker {broker_id} is no longer registered.")


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


def read_registrations(path: Path) -> tuple[dict[int, Registration], list[str], dict[str, Any]]:
    """Replay the newest snapshot (`<offset>-<epoch>.checkpoint`) then the log segments from its end
    offset: broker id -> kraft_registrations.Registration, damage found, and what was read."""
    from kadmin.cluster.metadata_records import CRC32C, DECODER
    from kadmin.domain.kraft_registrations import apply
    from kadmin.formats import kraft_log

    part = metadata_partition_dir(path)
    damage: list[str] = []
    regs: dict[int, Registration] = {}
    try:
        names = sorted(p.name for p in part.iterdir())
    except OSError as e:
        raise UsageError(f"--metadata-dir {path}: cannot read: {e.strerror}") from e
    snapshots = sorted((sid, n) for n in names if (sid := kraft_log.snapshot_id(n)) is not None)
    segments = sorted((b, n) for n in names if (b := kraft_log.segment_base_offset(n)) is not None)
    for _, n in [*snapshots, *segments]:  # a FIFO named like a segment would hang the read: refused first
        check_input(part / n, "--metadata-dir", limit=sys.maxsize)
    snap_end = 0
    snapshot_name = None
    last_offset = None

    tail: list[str] = []

    def note(prefix: str, active: bool = False) -> Callable[[kraft_log.Damage], None]:
        def report(d: kraft_log.Damage) -> None:
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


def logged_row(r: Registration) -> LoggedBrokerRow:
    """A `brokers list --metadata-dir` row: what the controller's metadata log says of one broker."""
    from kadmin.domain.kraft_registrations import registration_json

    first = registration_json(r)  # its host and port: those of the first endpoint, as the domain reads them
    return payloads.LoggedBrokerRow(
        id=r.id, host=first["host"], port=first["port"], rack=r.rack, endpoints=r.endpoints,
        listener_security_protocol_map=r.listener_security_protocol_map, jmx_port=None, version=None,
        timestamp_ms=None, features=r.features, epoch=r.epoch, session=None, is_controller=None, state=r.state,
        incarnation_id=r.incarnation_id, fenced=r.fenced, in_controlled_shutdown=r.in_controlled_shutdown,
        offset=r.offset, source=r.source,
    )


def list_metadata_dir(path: Path) -> Result[list[LoggedBrokerRow]]:
    """`brokers list --metadata-dir DIR`: registrations as this controller's metadata log has them."""
    regs, damage, info = read_registrations(path)
    rows = [logged_row(regs[i]) for i in sorted(regs)]
    warnings = [] if rows else [f"no broker registration in {path} (is it a controller's metadata.log.dir?)"]
    warnings += [f"{t}: read up to the last complete batch (a write in progress?)" for t in info["tail"]]
    if info["snapshot"] is None and not info["segments"]:
        warnings.append(f"{path}: no snapshot and no log segment")
    return Result(data=rows, warnings=warnings,
                  errors=[Problem("damaged_metadata_log", d) for d in damage],
                  exit_code=ExitCode.PARTIAL if damage else ExitCode.OK)


def parse_saved_registrations(text: str, name: str) -> dict[int, Saved]:
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


def load_saved_registrations(path: Path, flag: str = "--since") -> dict[int, Saved]:
    text = read_saved(path, flag)
    parse_saved_epochs(text, str(path))  # the same checks and messages
    return parse_saved_registrations(text, str(path))


def diff_registrations(before: Mapping[int, Saved], after: Mapping[int, Saved], exit_code_on_change: bool = False,
                       errors: list[Problem] | None = None) -> Result[BrokersDiff]:
    """`brokers diff` between two KRaft listings: bounced = a new incarnation id or a larger epoch."""
    from kadmin.domain.kraft_registrations import classify

    d = classify(before, after)
    data = payloads.BrokersDiff(
        new=d.new,
        dead=d.dead,
        bounced=tuple(payloads.Reincarnated(b.id, b.old_epoch, b.new_epoch, b.old_incarnation_id, b.new_incarnation_id)
                      for b in d.bounced + d.went_backwards),
        unchanged=d.unchanged,
        old_epochs={i: before[i].epoch for i in sorted(before)},
        new_epochs={i: after[i].epoch for i in sorted(after)},
    )
    warnings = [f"broker {b.id}: epoch went backwards ({b.old_epoch} → {b.new_epoch}) with the same incarnation: "
                "another cluster's metadata log?" for b in d.went_backwards]
    nb = len(d.bounced) + len(d.went_backwards)
    parts = [f"{len(d.new)} new", f"{len(d.dead)} dead", f"{nb} bounced", f"{len(d.unchanged)} unchanged"]
    code = ExitCode.CONDITION_NOT_MET if (exit_code_on_change and d.changed) else ExitCode.OK
    return Result(data=data, errors=errors or [], warnings=warnings, exit_code=code,
                  message=", ".join(parts))


def diff_saved(since: Path, to: Path, exit_code_on_change: bool = False) -> Result[BrokersDiff]:
    """`brokers diff --since FILE --to FILE`: two saved KRaft listings (`brokers list --metadata-dir -o json`)."""
    before = load_saved_registrations(since)
    return diff_registrations(before, load_saved_registrations(to, "--to"), exit_code_on_change=exit_code_on_change)


def diff_metadata_dir(since: Path, metadata_dir: Path, exit_code_on_change: bool = False) -> Result[BrokersDiff]:
    """`brokers diff --since FILE --metadata-dir DIR`: a saved listing against a controller's metadata log now."""
    from kadmin.domain.kraft_registrations import Saved

    before = load_saved_registrations(since)
    regs, damage, _ = read_registrations(metadata_dir)
    after = {i: Saved(r.epoch, r.incarnation_id) for i, r in regs.items()}
    return diff_registrations(before, after, exit_code_on_change=exit_code_on_change,
                              errors=[Problem("damaged_metadata_log", d) for d in damage])
