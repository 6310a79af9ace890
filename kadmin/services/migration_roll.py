"""`kadmin migration roll --phase P`: one phase of a ZooKeeper -> KRaft migration as a `roll run` (docs/migration.md).

The roll engine, journal, hooks and live view are `roll run`'s (kadmin/services/roll.py); what differs is seen
through `PhaseCluster`, a RollCluster whose gates and mutations are a base cluster's and whose receipt is the
phase's: each node proves its restart by answering in the phase's mode (ApiVersions: a broker's zk_migrating or
kraft, a controller's migration flag gone), which only a restart with the phase's configuration gives. Around the
roll: an entry gate (the state the phase begins in, else exit 7 and nothing touched, naming the phase that fits)
and an exit gate (the state the phase ends at: MIGRATION once the controller copied the metadata, POST_MIGRATION
once a finalized controller leads).

The base cluster per phase (the mode is still decided by open_backend alone, from the settings it is given):
brokers-migrating sees the cluster through ZooKeeper (every broker is a ZooKeeper-mode one, the partition states
are ZooKeeper's); brokers-kraft and controllers-finalize through the Kafka protocol (-b, --bootstrap-controller):
a KRaft broker has no /brokers/ids znode, so ZooKeeper would show it dead. The epoch-fenced ControlledShutdown is
not sent mid-migration (a KRaft controller may be the active one): the drain moves the leaderships first, and the
broker's own shutdown does the rest.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from kadmin.domain import migration as mig
from kadmin.domain import roll as dom
from kadmin.domain import roll_events as ev
from kadmin.errors import KadminError, UsageError
from kadmin.exit_codes import ExitCode
from kadmin.payloads_ops import RollReport
from kadmin.results import Result
from kadmin.services.roll_cluster import BackendRollCluster
from kadmin.services.roll_engine import Emit, Options, Watcher
from kadmin.services.roll_journal import Journal

if TYPE_CHECKING:
    from kadmin.cluster.base import Backend

Opener = Callable[[], "Backend"]
PHASE_FILE = "migration-phase.json"
POINT_OF_NO_RETURN = ("this is the point of no return: once a finalized controller leads the quorum, the migration "
                      "is finalized (POST_MIGRATION) and the cluster cannot go back to ZooKeeper mode")


class PhaseCluster(BackendRollCluster):
    """The base cluster's gates and mutations; each node's mode (one migration observation per look) as its
    receipt."""

    def __init__(self, open_base: Opener, open_full: Opener, phase: mig.Phase, open_quorum: Opener | None = None,
                 open_admin: Opener | None = None) -> None:
        super().__init__(open_base)
        self.open_full, self.open_quorum, self.open_admin = open_full, open_quorum, open_admin
        self.phase = phase
        self._opened: dict[str, Backend] = {}  # "full", "quorum", "admin": each opened on first use

    def _once(self, name: str, opener: Opener) -> Backend:
        if name not in self._opened:
            self._opened[name] = opener()
        return self._opened[name]

    @property
    def lead(self) -> Backend:
        """ZooKeeper's reassignments move leaderships while a ZooKeeper-mode controller is active (PRE_MIGRATION:
        a migrating broker forwards admin requests to the KRaft controller, not active yet); once the KRaft
        controller is (MIGRATION, which the last broker of brokers-migrating starts), the admin API through the
        brokers: the KRaft controller does not act on /admin/reassign_partitions."""
        if self.open_admin is None or self.status().state == "PRE_MIGRATION":
            return self.b
        return self._once("admin", self.open_admin)

    @property
    def q(self) -> Backend:
        """The controllers, where the base's brokers cannot all be asked for the quorum (a ZooKeeper-mode broker
        serves no DescribeQuorum)."""
        return self.b if self.open_quorum is None else self._once("quorum", self.open_quorum)

    def status(self) -> mig.Status:
        return mig.decide(self._once("full", self.open_full).migration.observe())

    def reopen(self) -> None:
        super().reopen()
        for b in self._opened.values():
            b.close()
        self._opened.clear()

    close = reopen

    def traits(self) -> dom.Traits:
        base = super().traits()
        return replace(base, receipt="mode", controlled_shutdown=False, target_mode=self.phase.target)

    def observe(self, nodes: Sequence[dom.RollNode]) -> dict[int, dom.NodeSeen]:
        s = self.status()
        brokers = {b.id: b.mode for b in s.brokers}
        controllers = {n.id: mig.controller_mode(n.migration_enabled) for n in s.controllers.nodes}
        base = super().observe(nodes)
        out = {}
        for n in nodes:
            seen = base.get(n.id, dom.NodeSeen(n.id))
            if n.is_broker:
                mode = brokers.get(n.id)
                out[n.id] = replace(seen, registered=mode is not None, mode=mode)
            else:
                out[n.id] = replace(seen, mode=controllers.get(n.id))
        return out

    def broker_epoch(self, node: int) -> int | None:
        return None  # the receipt is the mode, not an epoch

    def controlled_shutdown(self, node: int, epoch: int, timeout: float) -> str | None:
        return None  # never asked (traits: controlled_shutdown False)



# ------------------------------------------------------------------------------------------------ the phase's run
def _phase_file(directory: Path) -> Path:
    return directory / PHASE_FILE


def _recorded_phase(directory: Path) -> str | None:
    try:
        data = json.loads(_phase_file(directory).read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as e:
        raise UsageError(f"--state {directory}: {PHASE_FILE} cannot be read ({e}): not a migration roll's state "
                         "directory") from None
    phase = data.get("phase") if isinstance(data, dict) else None
    if phase not in mig.PHASES:
        raise UsageError(f"--state {directory}: {PHASE_FILE} names no phase kadmin knows ({phase!r})")
    return str(phase)


def _record_phase(directory: Path, phase: str) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    tmp = directory / f".{PHASE_FILE}.tmp"
    tmp.write_text(json.dumps({"phase": phase}) + "\n")
    os.replace(tmp, _phase_file(directory))


def unfinished_nodes(directory: Path) -> tuple[int, ...] | None:
    """The nodes the unfinished roll in `directory` asked for (None: no unfinished roll there)."""
    j = Journal(directory)
    if not j.exists():
        return None
    st = ev.replay(j.read())
    if st.head is None or st.finished is not None:
        return None
    return tuple(n.id for n in st.head.nodes)


def no_roll(directory: Path, status: str) -> RollReport:
    """The report of a phase that ran no roll: `refused`, or `done` (nothing left to restart)."""
    return RollReport(str(directory), None, None, status, (), None, None, None, None)


def refused(message: str, directory: Path, code: ExitCode = ExitCode.UNSAFE) -> Result[RollReport]:
    return Result(data=no_roll(directory, "refused"), exit_code=code, message=message)


def run(phase_name: str, open_base: Opener, open_full: Opener, directory: Path, opts: Options, emit: Emit,
        say: Callable[[str], None], watcher: Watcher | None = None, open_quorum: Opener | None = None,
        open_admin: Opener | None = None, roll: Callable[..., Result[RollReport]] | None = None
        ) -> Result[RollReport]:
    """Run (or continue) `phase_name` with the state in `directory`: the entry gate, the roll, the exit gate.
    `open_quorum`: the controllers, when the base cannot be asked for the quorum; `open_admin`: the brokers, to
    move leaderships once the KRaft controller is active (PhaseCluster.lead)."""
    from kadmin.services import roll as roll_svc

    phase = mig.PHASES[phase_name]
    had = _recorded_phase(directory)
    resuming = unfinished_nodes(directory)
    if had is not None and had != phase_name and resuming is not None:
        raise UsageError(f"--state {directory} holds an unfinished --phase {had} roll: finish it with the same "
                         f"command, or give another --state for --phase {phase_name}")
    cluster = PhaseCluster(open_base, open_full, phase, open_quorum, open_admin)
    try:
        status = cluster.status()
        why = mig.refusal(phase, status, resumed=resuming is not None or had == phase_name)
        if why is not None:  # the state unread: 4, as for a cluster that cannot be reached; else 7
            code = ExitCode.UNREACHABLE if status.state is None else ExitCode.UNSAFE
            return refused(f"--phase {phase_name} refused, nothing touched: {why}", directory, code)
        nodes = resuming if resuming is not None else _chosen(phase, status, opts.request.nodes)
        if resuming is not None and opts.request.nodes is not None and not set(resuming) <= set(opts.request.nodes):
            raise UsageError(f"--nodes: --state {directory} holds an unfinished roll of nodes "
                             f"{', '.join(map(str, resuming))}: give them all (or no --nodes) to finish it")
    finally:
        cluster.close()
    if not nodes:
        left = mig.finished(phase, status)
        if left is None:
            return Result(data=no_roll(directory, "done"),
                          message=f"--phase {phase_name}: every {phase.role} is {phase.target} already and the "
                                  f"cluster is in {phase.done}: nothing to restart")
        nodes = ()
    _record_phase(directory, phase_name)
    if nodes:
        say(f"--phase {phase_name}: {phase.role}s {', '.join(map(str, nodes))} to restart into {phase.target} "
            f"(their hooks install {phase.wants})")
        if phase.role == "controller":
            say(POINT_OF_NO_RETURN)
        asked = replace(opts, request=replace(opts.request, nodes=tuple(sorted(nodes)),
                                              controllers="first" if phase.role == "controller" else "skip"))
        phased = PhaseCluster(open_base, open_full, phase, open_quorum, open_admin)
        result = (roll or roll_svc.run)(phased, directory, asked, emit, say, watcher=watcher)
        if int(result.exit_code) != 0:
            return result
    else:
        result = Result(data=no_roll(directory, "done"))
    if opts.request.nodes is not None or opts.hooks.only_if is not None:
        try:  # a part of the phase asked (--nodes) or let skip (--only-if): its end state is not awaited
            later = mig.todo(phase, cluster.status())
        finally:
            cluster.close()
        if later:
            return replace(result, message=f"--phase {phase.name}: the nodes asked are done; {phase.role}s "
                                           f"{', '.join(map(str, later))} are not {phase.target} yet (the phase ends "
                                           f"at {phase.done} once they are: run it again for them)")
    return _exit_gate(phase, cluster, result, opts.step_timeout, say)


def _chosen(phase: mig.Phase, status: mig.Status, asked: tuple[int, ...] | None) -> tuple[int, ...]:
    """The phase's nodes not yet in its mode, only those `asked` (--nodes) when given; an id that is no node of the
    phase's role is refused."""
    todo = mig.todo(phase, status)
    if asked is None:
        return todo
    members = {b.id for b in status.brokers} if phase.role == "broker" else {n.id for n in status.controllers.nodes}
    unknown = [i for i in asked if i not in members]
    if unknown:
        raise UsageError(f"--nodes: {', '.join(map(str, unknown))}: no {phase.role} of the cluster has that id "
                         f"(its {phase.role}s: {', '.join(map(str, sorted(members)))})")
    return tuple(i for i in todo if i in asked)


def _exit_gate(phase: mig.Phase, cluster: PhaseCluster, result: Result[RollReport], timeout: float,
               say: Callable[[str], None]) -> Result[RollReport]:
    """Every node is back in the phase's mode: wait (up to --step-timeout) for the state the phase ends at."""
    import time

    deadline = time.monotonic() + timeout
    said = False
    last = "not read yet"
    try:
        while True:
            try:
                left = mig.finished(phase, cluster.status())
                last = left or ""
            except KadminError as e:  # asked again until the deadline; said if it stays so
                cluster.reopen()
                left = last = f"the migration's state could not be read: {e}"
            if left is None:
                return replace(result, message=f"--phase {phase.name} done: every {phase.role} is {phase.target}; "
                                               f"the cluster is in {phase.done}")
            if time.monotonic() >= deadline:
                return replace(result, exit_code=ExitCode.CONDITION_NOT_MET,
                               message=f"--phase {phase.name}: every node was restarted, but {last} after "
                                       f"{timeout:g} s (run the same command again to wait again)")
            if not said:
                say(f"--phase {phase.name}: waiting for {phase.done}: {left}")
                said = True
            time.sleep(1.0)
    finally:
        cluster.close()

