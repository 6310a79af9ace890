"""Broker-id state (registrations, /brokers/hosts mappings, /brokers/seqid, assignments) and the mapping writes."""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING

from kadmin import interrupts
from kadmin.cluster.base import Contention
from kadmin.cluster.zookeeper.reads import TOPICS, ZkReads
from kadmin.domain import znodes
from kadmin.errors import KadminError
from kadmin.results import Problem, Progress

if TYPE_CHECKING:
    from kadmin.cluster.values import IdState

HOSTS = "/brokers/hosts"
SEQID = "/brokers/seqid"


class ZkIds(ZkReads):
    def id_state(self, with_assignments: bool = True, progress: Progress | None = None) -> IdState:
        from kadmin.cluster.values import IdState  # here: a gate, which reads no id state, does not build it
        from kadmin.domain.ids import decode_mapping

        listing = self.list_brokers()
        registered: dict[int, str | None] = {}
        for b in listing.brokers:
            r = b.registration
            host = r.host if r is not None else None
            if host is None and r is not None and r.endpoints:
                host = znodes.parse_endpoint(r.endpoints[0])[1]
            registered[b.id] = host
        problems = list(listing.problems)
        mappings: dict[str, tuple[int, int]] = {}
        invalid: dict[str, tuple[str, int]] = {}
        # The version of /brokers/hosts and the mappings are read through ONE session (kazoo's), so
        # ZooKeeper's per-session ordering makes the mappings at least as new as the version: a claim
        # that wrote meanwhile makes our version-checked multi fail, and we read again. (The bulk
        # reader's session may sit on another, lagging ensemble member.)
        hosts_node = self.get(HOSTS)
        if hosts_node is not None:
            children = self._children(HOSTS)
            for path, node in self._get_batch([f"{HOSTS}/{h}" for h in sorted(children)], None):
                if node is None:
                    continue
                host = path.rsplit("/", 1)[1]
                try:
                    mappings[host] = (decode_mapping(node.data), node.stat.version)
                except ValueError as e:
                    problems.append(Problem("invalid_znode", f"{path}: {e}"))
                    invalid[host] = (str(e), node.stat.version)
        seqid = self.get(SEQID)
        assigned: dict[int, list[tuple[str, int]]] = {}
        if with_assignments:
            names = sorted(self._children(TOPICS))
            if progress:
                progress("topics", len(names), 0)
            for path, node in self.get_many(f"{TOPICS}/{t}" for t in names):
                if progress:
                    progress("topics", len(names), 1)
                if node is None:
                    continue
                topic = path.rsplit("/", 1)[1]
                try:
                    a = znodes.decode_topic(node.data)
                except znodes.ZnodeFormatError as e:
                    problems.append(Problem("invalid_znode", f"{path}: {e}"))
                    continue
                adding = a["adding"]
                for p, replicas in a["partitions"].items():
                    # the registered ids' partitions decide nothing: keeping them would hold every assignment
                    # (millions of entries) in memory; the usual partition, all of its replicas registered and
                    # none being added, is passed over in one look
                    for rid in replicas:
                        if rid not in registered:
                            break
                    else:
                        if p not in adding:
                            continue
                    for rid in set(replicas) | set(adding.get(p, ())):
                        if rid not in registered:
                            assigned.setdefault(rid, []).append((topic, p))
        return IdState(registered, mappings, seqid.stat.version if seqid else -1,
                       hosts_node.stat.version if hosts_node else -1, assigned, problems, invalid)

    def _create_empty(self, path: str) -> None:
        """Create `path` (and its parents) empty; bounded, sent again on a lost connection (NodeExists then)."""
        self._call(path, lambda: self.zk.create_async(path, b"", makepath=True), "creating")

    def write_mapping(
        self, host: str, broker_id: int | None, *, hosts_version: int, mapping_version: int | None,
        seqid_version: int | None = None, seqid_steps: int = 1,
    ) -> None:
        """One ZooKeeper multi: bump /brokers/hosts (version-checked, so concurrent writers serialize),
        optionally consume a /brokers/seqid version (version-checked), then create, update or (with
        broker_id None) delete /brokers/hosts/<host>. Raises Contention when any check fails."""
        from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError

        from kadmin.domain.ids import encode_mapping

        # A version of -1 would make ZooKeeper skip the check: when the caller saw either znode
        # missing, create it and make the caller read again (with real versions this time).
        if hosts_version < 0 or (seqid_version is not None and seqid_version < 0):
            for path in (HOSTS, SEQID):
                with contextlib.suppress(NodeExistsError):
                    self._create_empty(path)
            raise Contention("created /brokers/hosts or /brokers/seqid")
        t = self.zk.transaction()
        t.set_data(HOSTS, b"", version=hosts_version)
        if seqid_version is not None:
            for step in range(seqid_steps):  # each setData bumps the version the next one checks
                t.set_data(SEQID, b"", version=seqid_version + step)
        path = f"{HOSTS}/{host}"
        if broker_id is None:
            t.delete(path, version=mapping_version if mapping_version is not None else -1)
        elif mapping_version is None:
            t.create(path, encode_mapping(broker_id))
        else:
            t.set_data(path, encode_mapping(broker_id), version=mapping_version)
        interrupts.arm()  # from here a Ctrl-C waits until the outcome is reported (kadmin/interrupts.py)
        try:
            # bounded (no answer: ClusterUnreachable, the outcome unknown), never sent twice: a version-checked
            # multi applied with its reply lost would fail the second time, and the caller reads again anyway
            results = self._blocking(HOSTS, "writing", t.commit)
        except KadminError:
            interrupts.disarm()
            raise
        except Exception as e:  # noqa: BLE001
            interrupts.disarm()
            raise self._translate(HOSTS, e) from e
        errors = [r for r in results if isinstance(r, Exception)]
        if errors:
            interrupts.disarm()  # the multi failed as a whole: nothing was written
        if any(isinstance(r, (BadVersionError, NodeExistsError, NoNodeError)) for r in errors):
            raise Contention(", ".join(type(r).__name__ for r in errors))
        if errors:
            raise self._translate(HOSTS, next(e for e in errors if type(e).__name__ != "RolledBackError"))

