"""`kadmin ids ...`: broker-id assignment, run, explained, made durable and repaired."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from kadmin.cluster.base import BrokerIds, Contention, IdState
from kadmin.domain import ids as rules
from kadmin.domain.text import plural
from kadmin.errors import ConditionNotMet, ConfigError, InvalidData, KadminError, NotFound, Unsafe, UsageError
from kadmin.exit_codes import ExitCode
from kadmin.formats.meta_properties import MetaPropertiesError, parse
from kadmin.inputs import read_input
from kadmin.payloads import (
    HostMapping,
    IdClaim,
    IdDecision,
    Mapped,
    MissingId,
    StaleMapping,
    TopicPartition,
    Unmapped,
)
from kadmin.results import Progress, Result

MAX_ATTEMPTS = 50


def meta_id(path: Path | None) -> int | None:
    if path is None:
        return None
    try:
        return parse(read_input(path, "--meta-properties").decode("utf-8")).node_id
    except OSError as e:
        raise ConfigError(f"--meta-properties {path}: cannot read: {e.strerror}") from e
    except (MetaPropertiesError, UnicodeDecodeError) as e:
        raise ConfigError(f"--meta-properties {path}: {e}") from e


def _check_host(host: str) -> None:
    if not rules.valid_host(host):
        raise UsageError(f"{host!r} cannot be a znode name under /brokers/hosts")


def _refuse_invalid(st: IdState, host: str) -> None:
    """A garbage /brokers/hosts/<host> is reported at once (exit 5): never read as "no mapping" (a claim
    would then try to create it, fail on every attempt and blame contention)."""
    if host in st.invalid_mappings:
        why, _ = st.invalid_mappings[host]
        raise InvalidData(f"/brokers/hosts/{host} holds an invalid mapping ({why}): repair it with "
                          f"`kadmin ids map {host} ID --force` or `kadmin ids unmap {host}`")


def _inputs(st: IdState, host: str, config_id: int | None, meta: int | None, reserved_max: int) -> rules.IdInputs:
    return rules.IdInputs(
        host=host, registered=st.registered, mappings={h: m[0] for h, m in st.mappings.items()},
        assigned={b: len(ps) for b, ps in st.assigned.items()}, seqid_version=st.seqid_version,
        config_id=config_id, meta_id=meta, reserved_max=reserved_max,
    )


def decision(d: rules.Decision, host: str) -> IdDecision:
    return IdDecision(d.broker_id, d.rule, host, tuple(d.missing_ids), d.detail)


def _decide(inputs: rules.IdInputs) -> rules.Decision:
    try:
        return rules.resolve(inputs)
    except rules.IdConflict as e:
        raise ConditionNotMet(str(e), code="id_conflict") from e


def claimed(d: rules.Decision, host: str, writes: list[str], attempts: int, dry_run: bool | None = None) -> IdClaim:
    """`ids claim`'s data: `dry_run` (a key only when nothing was written) is None once the multi was sent."""
    return IdClaim(d.broker_id, d.rule, host, tuple(d.missing_ids), d.detail, writes=tuple(writes), attempts=attempts,
                   dry_run=dry_run)


def resolve(cluster: BrokerIds, host: str, config_id: int | None, meta: Path | None, reserved_max: int,
            progress: Progress | None = None) -> Result[IdDecision]:
    _check_host(host)
    mid = meta_id(meta)
    need_scan = config_id is None and mid is None
    st = cluster.id_state(with_assignments=need_scan, progress=progress)
    if need_scan:  # the host's own mapping decides otherwise: an unreadable one leaves the answer unknown
        _refuse_invalid(st, host)
    d = _decide(_inputs(st, host, config_id, mid, reserved_max))
    return Result(data=decision(d, host), errors=st.problems,
                  message=f"broker id {d.broker_id} for {host} ({d.rule}): {d.detail}")


def claim(cluster: BrokerIds, host: str, config_id: int | None, meta: Path | None, reserved_max: int, dry_run: bool,
          progress: Progress | None = None, sleep: Callable[[float], None] = time.sleep) -> Result[IdClaim]:
    """Resolve and make it durable: one multi that version-checks /brokers/hosts (so claims serialize),
    consumes a /brokers/seqid version for a new id, and writes the host mapping. A lost race reads
    everything again; two claims for one host therefore agree, and no id goes to two hosts."""
    _check_host(host)
    mid = meta_id(meta)
    for attempt in range(1, MAX_ATTEMPTS + 1):
        st = cluster.id_state(with_assignments=config_id is None and mid is None, progress=progress)
        _refuse_invalid(st, host)
        d = _decide(_inputs(st, host, config_id, mid, reserved_max))
        current = st.mappings.get(host)
        writes: list[str] = []
        if d.consumes_seqid:
            writes.append(f"setData /brokers/seqid (version {st.seqid_version} -> "
                          f"{st.seqid_version + d.seqid_steps})")
        if current is None or current[0] != d.broker_id:
            verb = "create" if current is None else f"setData (version {current[1]})"
            writes.append(f"{verb} /brokers/hosts/{host} = {rules.encode_mapping(d.broker_id).decode()}")
        if writes:
            writes.insert(0, f"setData /brokers/hosts (version {st.hosts_version}), the claims' guard")
        if dry_run or not writes:  # nothing written: no attempt
            msg = (f"would claim {d.broker_id} for {host} ({d.rule}) with one multi: " + "; ".join(writes)
                   if writes else f"{host} already holds {d.broker_id} ({d.rule}): nothing to write")
            return Result(data=claimed(d, host, writes, 0, dry_run=dry_run), errors=st.problems, message=msg)
        try:
            cluster.write_mapping(host, d.broker_id, hosts_version=st.hosts_version,
                                  mapping_version=current[1] if current else None,
                                  seqid_version=st.seqid_version if d.consumes_seqid else None,
                                  seqid_steps=d.seqid_steps)
        except Contention:
            sleep(min(0.01 * attempt, 0.2))
            continue
        return Result(data=claimed(d, host, writes, attempt), errors=st.problems,
                      message=f"claimed broker id {d.broker_id} for {host} ({d.rule})")
    raise KadminError(f"gave up after {MAX_ATTEMPTS} attempts: other claims kept winning the race", code="contention")


def missing(cluster: BrokerIds, progress: Progress | None = None) -> Result[list[MissingId]]:
    st = cluster.id_state(with_assignments=True, progress=progress)
    ids = rules.missing_ids({b: len(p) for b, p in st.assigned.items()}, st.registered)
    owners = {b: h for h, (b, _) in st.mappings.items()}
    data = [MissingId(b, len(st.assigned[b]), owners.get(b),
                      tuple(TopicPartition(t, p) for t, p in sorted(st.assigned[b]))) for b in ids]
    return Result(data=data, errors=st.problems,
                  message=plural(len(ids), "missing id") + (f": {', '.join(map(str, ids))}" if ids else ""))


def hosts(cluster: BrokerIds) -> Result[list[HostMapping]]:
    st = cluster.id_state(with_assignments=False)
    rows = [HostMapping(h, b, b in st.registered, st.registered.get(b)) for h, (b, _) in sorted(st.mappings.items())]
    return Result(data=rows, errors=st.problems)


def map_host(cluster: BrokerIds, host: str, broker_id: int, force: bool, dry_run: bool = False) -> Result[Mapped]:
    _check_host(host)
    if broker_id < 0:
        raise UsageError("a broker id is not negative")
    for _ in range(MAX_ATTEMPTS):
        st = cluster.id_state(with_assignments=False)
        owner = st.registered.get(broker_id)
        if broker_id in st.registered and owner != host and not force:
            raise Unsafe(f"broker {broker_id} is registered from {owner or 'an unknown host'}, not {host}: "
                         "mapping would hand its id to a second host (--force to do it anyway)")
        others = [h for h, (b, _) in st.mappings.items() if b == broker_id and h != host]
        if others and not force:
            raise Unsafe(f"{', '.join(others)} already mapped to {broker_id}; unmap first or use --force")
        current = st.mappings.get(host)
        invalid = st.invalid_mappings.get(host)
        if invalid is not None and not force:
            raise InvalidData(f"/brokers/hosts/{host} holds an invalid mapping ({invalid[0]}): "
                              f"--force replaces it with {broker_id}")
        if current is not None and current[0] == broker_id:
            return Result(data=Mapped(host, broker_id, changed=False), message=f"{host} already maps to {broker_id}")
        replaced = " (replacing an invalid mapping)" if invalid is not None else ""
        if dry_run:
            return Result(data=Mapped(host, broker_id, changed=False, dry_run=True),
                          message=f"would map {host} -> {broker_id}{replaced}")
        try:
            version = current[1] if current else invalid[1] if invalid else None
            cluster.write_mapping(host, broker_id, hosts_version=st.hosts_version, mapping_version=version)
        except Contention:
            continue
        return Result(data=Mapped(host, broker_id, changed=True, previous=current[0] if current else None),
                      message=f"mapped {host} -> {broker_id}{replaced}")
    raise KadminError("gave up: the mappings kept changing", code="contention")


def unmap_host(cluster: BrokerIds, host: str, dry_run: bool = False) -> Result[Unmapped]:
    _check_host(host)
    for _ in range(MAX_ATTEMPTS):
        st = cluster.id_state(with_assignments=False)
        current = st.mappings.get(host)
        invalid = st.invalid_mappings.get(host)
        if current is None and invalid is not None:
            # deleting the garbage is what unmap is for: say what it was, never "has no mapping"
            what = f"/brokers/hosts/{host}, an invalid mapping ({invalid[0]})"
            data = Unmapped(host, None, invalid=invalid[0])
            if dry_run:
                return Result(data=replace(data, dry_run=True), message=f"would delete {what}")
            try:
                cluster.write_mapping(host, None, hosts_version=st.hosts_version, mapping_version=invalid[1])
            except Contention:
                continue
            return Result(data=data, message=f"deleted {what}")
        if current is None:
            raise NotFound(f"{host} has no mapping")
        if dry_run:
            return Result(data=Unmapped(host, current[0], dry_run=True),
                          message=f"would delete /brokers/hosts/{host} (-> {current[0]})")
        try:
            cluster.write_mapping(host, None, hosts_version=st.hosts_version, mapping_version=current[1])
        except Contention:
            continue
        return Result(data=Unmapped(host, current[0]), message=f"deleted /brokers/hosts/{host} (-> {current[0]})")
    raise KadminError("gave up: the mappings kept changing", code="contention")


def gc(cluster: BrokerIds, apply: bool) -> Result[list[StaleMapping]]:
    st = cluster.id_state(with_assignments=False)
    found = rules.garbage({h: b for h, (b, _) in st.mappings.items()}, st.registered)
    deleted: list[str] = []
    for g in found if apply else []:
        for _ in range(MAX_ATTEMPTS):
            cur = cluster.id_state(with_assignments=False)
            m = cur.mappings.get(g.host)
            if m is None or m[0] != g.broker_id or cur.registered.get(g.broker_id) in (None, g.host):
                break  # changed meanwhile: no longer garbage by the rule
            try:
                cluster.write_mapping(g.host, None, hosts_version=cur.hosts_version, mapping_version=m[1])
            except Contention:
                continue
            deleted.append(g.host)
            break
    rows = [StaleMapping(g.host, g.broker_id, g.registered_from, g.host in deleted) for g in found]
    msg = (f"deleted {len(deleted)} of {len(found)} stale mappings" if apply
           else f"{len(found)} stale mappings (a dry run: nothing deleted)")
    return Result(data=rows, errors=st.problems, message=msg,
                  exit_code=ExitCode.OK)
