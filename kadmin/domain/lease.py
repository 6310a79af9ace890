"""One leadership move at a time per cluster (docs/brokers.md, One drain at a time).

Every `brokers drain` and `undrain` (and `roll run`'s drains) takes the cluster's leadership lease before it reads
the partitions and gives it back when it ends, so two of kadmin's own moves never interleave: the second waits
for the first, then plans from what the first left. A lease held past its expiry (a kadmin that was killed and
left it) is anyone's; one held by the same `token` (a `roll run` resumed after a kill) is the holder's own.

- ZooKeeper mode (--zookeeper only): the ephemeral znode LEASE_ZNODE under the chroot, holding a Holder's JSON.
  It goes with the session of the kadmin that made it (a killed kadmin's within ZooKeeper's session timeout).
- The Kafka protocol (KRaft, or --bootstrap-server): the topic LEASE_TOPIC, made with CreateTopics (the
  controller makes one topic of a name: the second CreateTopics is TOPIC_ALREADY_EXISTS), one partition, its
  expiry in `retention.ms` and its token in `retention.bytes` (an empty topic no one writes: both are inert),
  deleted by topic id (DeleteTopics v6), so a lease taken again meanwhile is never deleted by another.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Literal

LEASE_TOPIC = "__kadmin_leadership_lease"
LEASE_ZNODE = "/kadmin/leases/leadership"
MARGIN = 30.0  # s past the command's deadline that a lease a killed kadmin left stays its own
POLL = 0.25  # s between two tries while another kadmin holds the lease
TOKEN_MAX = 2**62  # a token fits retention.bytes (a Java long) with room to spare


@dataclass(frozen=True)
class Holder:
    """Who takes the lease: `token` (1..TOKEN_MAX; a resumed `roll run` keeps its roll's), until `expires_ms`
    (wall clock, ms since the epoch), `who` (host, pid and command: said to whoever waits for it)."""

    token: int
    expires_ms: int
    who: str = ""

    def znode(self) -> bytes:
        return json.dumps({"version": 1, "token": self.token, "expires_ms": self.expires_ms, "who": self.who},
                          separators=(",", ":")).encode()


def holder_from_znode(data: bytes | None) -> Holder | None:
    """The Holder a lease znode holds; None when it is not one (kadmin never wrote it: it is not taken as free)."""
    try:
        doc = json.loads(data or b"")
        token, expires = doc["token"], doc["expires_ms"]
        if not isinstance(token, int) or not isinstance(expires, int) or isinstance(token, bool):
            return None
        return Holder(token, expires, str(doc.get("who", "")))
    except (ValueError, TypeError, KeyError, AttributeError):
        return None


def token_of(name: str) -> int:
    """A lease token that is the same for every run named `name` (a roll's journal directory)."""
    return int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "big") % TOKEN_MAX + 1


def mine_or_stale(other: Holder, me: Holder, now_ms: int) -> bool:
    """Whether a lease `other` holds may be taken by `me`: the same token (a resumed roll's), or past its expiry."""
    return other.token == me.token or other.expires_ms < now_ms


@dataclass(frozen=True)
class LeaseTry:
    """One try to take the lease: `taken`; `held` by another kadmin (`text` says who and until when); `denied`:
    kadmin may not take it (`text` names the permission), and the move goes on without it, saying so."""

    state: Literal["taken", "held", "denied"]
    text: str = ""
