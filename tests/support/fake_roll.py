"""A fake cluster for the roll engine's tests (tests/unit/test_roll_engine.py): kadmin/services/roll_cluster.py's
`RollCluster` port over an in-memory cluster whose nodes real shell hooks stop and start.

- The hooks are real `/bin/sh` commands run by kadmin's hook runner; they append an operation to the cluster's
  ops file (`ops_hook("stop")` -> `printf 'stop %s\\n' {id} >> OPS`), and the cluster applies new lines at each
  call (`sync`). Operations: `stop N` (the node goes down), `start N` (it comes back: a new epoch; a KRaft-like
  broker registers fenced and is unfenced a few looks later), `restart N` (both, seen in between), `bounce N` (down
  and back at once: a restart no look can see), `wipe N` (down, and back with a new metadata log directory: a
  KRaft controller then fetches as an observer, not as its voter, until the test replaces the voter: `voter_dirs`),
  `noop N`. Each down -> up is counted in `restarts[N]`: the
  promise "no node restarted twice" is asserted on it directly.
- Partitions: replicas in preference order, an ISR, a leader. A node going down leaves every ISR (its leaderships
  move); back and unfenced, it rejoins. `drain` writes the drain files (the original order, as the real drain
  does, refusing an existing file) and reorders; `undrain` restores a file's order: the original order at the end
  of a roll proves the first file was the one restored.
- `kill_after(pred)` makes a `Journal` that raises `Killed` (a BaseException: nothing in kadmin catches it, as
  nothing survives a SIGKILL) right after the first event matching `pred` is written and fsynced.
- `inject[name] = [exc or callable, ...]`: the next calls of method `name` raise (or run) those, in order.
"""

from __future__ import annotations

import json
import shlex
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kadmin.cluster.base import QuorumSetting
from kadmin.domain import partitions as prules
from kadmin.domain import roll as dom
from kadmin.domain import roll_events as ev
from kadmin.services.roll_cluster import StopGate
from kadmin.services.roll_journal import Journal


class Killed(BaseException):
    """kadmin dies here (a SIGKILL): nothing catches it, no roll_failed is journaled."""


@dataclass
class Node:
    id: int
    role: dom.Role
    rack: str | None = None
    up: bool = True
    epoch: int = 0
    fenced: bool = False
    unfence_in: int = 0  # looks left before a started KRaft broker is unfenced
    directory: str = ""  # its metadata log directory id (KIP-853)

    @property
    def host(self) -> str:
        return f"host-{self.id}"


@dataclass
class Part:
    topic: str
    partition: int
    replicas: list[int]
    isr: set[int]
    leader: int | None
    min_isr: int = 1


@dataclass
class FakeCluster:
    ops: Path
    kind: str = "zookeeper"  # zookeeper | kraft
    nodes: dict[int, Node] = field(default_factory=dict)
    parts: list[Part] = field(default_factory=list)
    leader: int | None = None  # the active controller (ZooKeeper: a broker; KRaft: the quorum leader)
    zxid: int = 100
    applied: int = 0
    restarts: Counter[int] = field(default_factory=Counter)
    log: list[tuple[str, int]] = field(default_factory=list)
    inject: dict[str, list[Any]] = field(default_factory=dict)
    calls: Counter[str] = field(default_factory=Counter)
    fetch_ms: int = 1500
    unfence_looks: int = 2
    cluster: str = "fake-cluster"
    voter_dirs: dict[int, str] = field(default_factory=dict)  # KRaft: the voter set, id -> directory id

    # ---------------------------------------------------------------- building
    @classmethod
    def zookeeper(cls, ops: Path, brokers: Iterable[int] = (1, 2, 3), racks: Mapping[int, str] | None = None,
                  controller: int | None = None) -> FakeCluster:
        c = cls(ops, "zookeeper")
        for i in brokers:
            c.nodes[i] = Node(i, "broker", (racks or {}).get(i), epoch=c.next_zxid())
        c.leader = controller if controller is not None else max(c.nodes)
        return c

    @classmethod
    def kraft(cls, ops: Path, brokers: Iterable[int] = (1, 2, 3), controllers: Iterable[int] = (3001, 3002, 3003),
              combined: Iterable[int] = ()) -> FakeCluster:
        c = cls(ops, "kraft")
        for i in brokers:
            c.nodes[i] = Node(i, "broker", epoch=c.next_zxid())
        for i in controllers:
            c.nodes[i] = Node(i, "controller", epoch=c.next_zxid())
        for i in combined:
            c.nodes[i] = Node(i, "combined", epoch=c.next_zxid())
        voters = [n.id for n in c.nodes.values() if n.role != "broker"]
        for i in voters:
            c.nodes[i].directory = c.voter_dirs[i] = f"dir-{i}-a"
        c.leader = max(voters) if voters else None
        return c

    def topic(self, name: str, *assignments: Sequence[int], min_isr: int = 1) -> FakeCluster:
        for p, replicas in enumerate(assignments):
            self.parts.append(Part(name, p, list(replicas), set(replicas), replicas[0], min_isr))
        return self

    def next_zxid(self) -> int:
        self.zxid += 1
        return self.zxid

    # ---------------------------------------------------------------- hooks
    def ops_hook(self, op: str) -> str:
        """A hook template: append `OP ID` to the ops file (the node's id from the {id} placeholder)."""
        return f"printf '%s %s\\n' {shlex.quote(op)} {{id}} >> {shlex.quote(str(self.ops))}"

    def sync(self) -> None:
        """Apply the operations the hooks appended since the last call."""
        if not self.ops.exists():
            return
        lines = self.ops.read_text().splitlines()
        for line in lines[self.applied:]:
            op, _, nid = line.partition(" ")
            self.apply(op, int(nid))
        self.applied = len(lines)

    def apply(self, op: str, nid: int) -> None:
        self.log.append((op, nid))
        if op in ("stop", "restart", "bounce", "wipe"):
            self.down(nid)
        if op == "wipe":
            self.nodes[nid].directory = f"dir-{nid}-{self.next_zxid()}"
        if op in ("start", "restart", "bounce", "wipe"):
            self.up(nid, seen_fenced=op != "bounce")

    def down(self, nid: int) -> None:
        n = self.nodes[nid]
        if not n.up:
            return
        n.up, n.fenced = False, True
        for p in self.parts:
            p.isr.discard(nid)
            if p.leader == nid:
                p.leader = next((r for r in p.replicas if r in p.isr), None)
        if self.leader == nid:
            live = [m.id for m in self.nodes.values() if m.up and (m.role != "broker" or self.kind == "zookeeper")]
            self.leader = min(live) if live else None

    def up(self, nid: int, seen_fenced: bool = True) -> None:
        n = self.nodes[nid]
        if n.up:
            return
        n.up, n.epoch = True, self.next_zxid()
        self.restarts[nid] += 1
        n.fenced = self.kind == "kraft" and n.role != "controller" and seen_fenced
        # a started KRaft node is fenced (a broker), or not fetching yet (a controller), for a few looks
        n.unfence_in = self.unfence_looks if self.kind == "kraft" and seen_fenced else 0
        if not n.fenced:
            self.rejoin(nid)
        if self.leader is None:
            self.leader = nid

    def rejoin(self, nid: int) -> None:
        for p in self.parts:
            if nid in p.replicas:
                p.isr.add(nid)
                if p.leader is None:
                    p.leader = nid

    def tick(self) -> None:
        """One look passes: a started KRaft broker gets closer to unfenced."""
        self.sync()
        for n in self.nodes.values():
            if n.up and n.unfence_in > 0:
                n.unfence_in -= 1
                if n.unfence_in <= 0 and n.fenced:
                    n.fenced = False
                    self.rejoin(n.id)

    def called(self, name: str) -> None:
        self.calls[name] += 1
        self.tick()
        queue = self.inject.get(name)
        if queue:
            x = queue.pop(0)
            if isinstance(x, BaseException):
                raise x
            if callable(x):
                x()

    # ---------------------------------------------------------------- the port
    def traits(self) -> dom.Traits:
        self.called("traits")
        return dom.Traits("epoch" if self.kind == "zookeeper" else "unfenced", self.kind == "zookeeper",
                          self.kind == "kraft")

    def cluster_id(self) -> str | None:
        self.called("cluster_id")
        return self.cluster

    def topology(self, known: Iterable[dom.RollNode] = ()) -> dom.Topology:
        self.called("topology")
        found = {n.id: dom.RollNode(n.id, n.role, n.host, 9000 + n.id, n.rack) for n in self.nodes.values()
                 if n.up or self.kind == "kraft"}
        for k in known:
            found.setdefault(k.id, k)
        return dom.Topology("zookeeper" if self.kind == "zookeeper" else "kraft",
                            tuple(sorted(found.values(), key=lambda x: x.id)), self.leader)

    def observe(self, nodes: Sequence[dom.RollNode]) -> dict[int, dom.NodeSeen]:
        self.called("observe")
        out = {}
        for rn in nodes:
            n = self.nodes[rn.id]
            broker = n.role != "controller"
            reg = (n.up if self.kind == "zookeeper" else True) if broker else None
            voter = self.kind == "kraft" and n.role != "broker"
            observer = voter and n.up and n.directory != self.voter_dirs.get(n.id)  # a new directory: no voter
            fetching = n.up and n.unfence_in <= 0 and not observer
            age = (0 if fetching else 60_000) if voter else None
            out[rn.id] = dom.NodeSeen(rn.id, reg, n.epoch if (broker and n.up) else None,
                                      (n.fenced or not n.up) if broker and self.kind == "kraft" else None, voter,
                                      voter and self.leader == n.id, age, age, self.leader if voter else None,
                                      directory_id=(n.directory if observer else self.voter_dirs.get(n.id)) or None,
                                      observer=observer)
        return out

    def fetch_timeout(self) -> QuorumSetting:
        self.called("fetch_timeout")
        return QuorumSetting("controller.quorum.fetch.timeout.ms", self.fetch_ms, "controller 3001 (fake)")

    def active_controller(self) -> int | None:
        self.called("active_controller")
        return self.leader

    def broker_epoch(self, node: int) -> int | None:
        self.called("broker_epoch")
        n = self.nodes[node]
        return n.epoch if n.up else None

    def _urp(self, besides: set[int] = frozenset()) -> list[str]:  # type: ignore[assignment]
        out = []
        for p in self.parts:
            missing = set(p.replicas) - p.isr - besides
            if p.leader is None or missing:
                out.append(f"{p.topic}-{p.partition}")
        return out

    def unhealthy(self, fetch_timeout_ms: int) -> list[str]:
        self.called("unhealthy")
        why = [f"under-replicated {k}" for k in self._urp()]
        why += [f"node {n.id} is down" for n in self.nodes.values() if not n.up or n.fenced]
        return why

    def quorum_check(self, node: int, fetch_timeout_ms: int) -> str | None:
        self.called("quorum_check")
        voters = [n for n in self.nodes.values() if n.role != "broker"]
        others_up = sum(1 for n in voters if n.up and n.id != node)
        return None if others_up * 2 > len(voters) else "no majority without it"

    def _blockers(self, ids: set[int], allow: prules.TopicFilter | None) -> tuple[list[str], list[str]]:
        block, let = [], []
        for p in self.parts:
            if ids.isdisjoint(p.replicas):
                continue
            after = {r for r in p.isr - ids if self.nodes[r].up}
            if not after or len(after) < min(p.min_isr, len(p.replicas)):
                what = f"{p.topic}-{p.partition}: would go offline or under min ISR"
                (let if allow is not None and allow(p.topic) else block).append(what)
        return block, let

    def can_stop(self, node: int, allow: prules.TopicFilter | None) -> StopGate:
        self.called("can_stop")
        block, let = self._blockers({node}, allow)
        if not block:
            return StopGate(None, tuple(let))
        held = [p for p in self.parts if f"{p.topic}-{p.partition}: would go offline or under min ISR" in block]
        down = sorted({r for p in held for r in p.replicas if r != node and not self.nodes[r].up})
        return StopGate("; ".join(block), tuple(let),
                        tuple(dom.Blocker("would go offline or under min ISR", p.topic, p.partition) for p in held),
                        f"broker {','.join(map(str, down))} is down (fake)" if down else None)

    def _together(self, ids: Sequence[int], rule: dom.BatchRule, allow: prules.TopicFilter | None) -> list[str]:
        block, _ = self._blockers(set(ids), allow)
        if rule == "distinct":
            block += [f"{p.topic}-{p.partition}: shared" for p in self.parts if len(set(ids) & set(p.replicas)) > 1]
        return block

    def together(self, ids: Sequence[int], rule: dom.BatchRule, allow: prules.TopicFilter | None) -> str | None:
        self.called("together")
        return "; ".join(self._together(ids, rule, allow)) or None

    def safe_together(self, rule: dom.BatchRule, allow: prules.TopicFilter | None
                      ) -> Callable[[Sequence[int]], bool]:
        self.called("safe_together")
        return lambda ids: not self._together(ids, rule, allow)

    def others_healthy(self, batch: Sequence[int], roll_nodes: Sequence[dom.RollNode],
                       fetch_timeout_ms: int) -> str | None:
        self.called("others_healthy")
        mine = set(batch)
        why = [f"node {n.id} is down" for n in self.nodes.values() if n.id not in mine and (not n.up or n.fenced)]
        why += [f"under-replicated {k}" for k in self._urp(mine)]
        return "; ".join(why) or None

    def drain(self, files: Mapping[int, Path], timeout: float) -> str | None:
        self.called("drain")
        for i, path in files.items():
            if path.exists():
                return f"{path} exists"
            order = {f"{p.topic}-{p.partition}": list(p.replicas) for p in self.parts if i in p.replicas}
            path.write_text(json.dumps({"broker": i, "order": order}))
        self.called("drain_sent")  # a point to inject a death between the files and done
        ids = set(files)
        for p in self.parts:
            p.replicas = [r for r in p.replicas if r not in ids] + [r for r in p.replicas if r in ids]
            p.leader = next((r for r in p.replicas if r in p.isr), p.leader)
        return None

    def undrain(self, files: Mapping[int, Path], timeout: float) -> str | None:
        self.called("undrain")
        for path in files.values():
            order = json.loads(path.read_text())["order"]
            for p in self.parts:
                key = f"{p.topic}-{p.partition}"
                if key in order:
                    p.replicas = list(order[key])
                    p.leader = next((r for r in p.replicas if r in p.isr), p.leader)
        return None

    def controlled_shutdown(self, node: int, epoch: int, timeout: float) -> str | None:
        self.called("controlled_shutdown")
        n = self.nodes[node]
        if not n.up or n.epoch != epoch:
            return f"STALE_BROKER_EPOCH ({epoch})"
        for p in self.parts:
            if p.leader == node:
                p.leader = next((r for r in p.replicas if r in p.isr and r != node), node)
        return None

    def in_sync(self, node: int, timeout: float, on_status: Callable[[str], None] | None = None) -> str | None:
        self.called("in_sync")
        out = [f"{p.topic}-{p.partition}" for p in self.parts if node in p.replicas and node not in p.isr]
        if out and on_status is not None:
            on_status(f"broker {node} not yet in the ISR of {', '.join(out)}")
        return f"not in the ISR of {', '.join(out)}" if out else None

    def healthy(self) -> str | None:
        self.called("healthy")
        return "; ".join(self._urp()) or None

    def reopen(self) -> None:
        self.calls["reopen"] += 1

    def close(self) -> None:
        self.calls["close"] += 1

    # ---------------------------------------------------------------- for the asserts
    def preferred(self) -> dict[str, list[int]]:
        return {f"{p.topic}-{p.partition}": list(p.replicas) for p in self.parts}


class KillingJournal(Journal):
    """A Journal that raises Killed right after writing (and fsyncing) the first event matching `pred`."""

    def __init__(self, directory: Path, pred: Callable[[dict[str, Any]], bool] | None = None) -> None:
        super().__init__(directory)
        self.pred = pred
        self.hit: dict[str, Any] | None = None

    def append(self, event: ev.Event) -> None:
        super().append(event)
        obj = ev.to_json(event)
        if self.pred is not None and self.hit is None and self.pred(obj):
            self.hit = obj
            raise Killed(obj)


def on(node: int, step: str, status: str) -> Callable[[dict[str, Any]], bool]:
    return lambda e: e.get("event") == "step" and e.get("node") == node and e.get("step") == step and \
        e.get("status") == status


def journal(directory: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (directory / "journal.ndjson").read_text().splitlines() if line.strip()]
