"""ZooKeeper ensemble status through the four-letter words (`srvr`, `conf`, `mntr`). Stdlib only.

Each word is sent on its own TCP (or TLS) connection and the answer is read until the server closes
it: kazoo's `command()` does a single `recv(8192)`, which cuts `mntr` (16-18 KB in 3.8) mid-line.

A word left out of `4lw.commands.whitelist` (3.8's default allows only `srvr`) gets a normal answer,
`"<cmd> is not executed because it is not in the whitelist.\\n"`: it is recorded in
`MemberProbe.not_whitelisted` and the probe carries on with what is available. A quorum member that
is up but has no quorum answers every word with "This ZooKeeper instance is not currently serving
requests": reachable, no mode.

Every member is probed in its own thread with one time budget (`timeout`) for all of its words, so
a dead or hung member costs one timeout, whatever the number of members.
"""

from __future__ import annotations

import socket
import ssl
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from kadmin.domain.quorum import zxid_counter, zxid_epoch  # re-exported: one definition, in the domain
from kadmin.errors import in_words

__all__ = [
    "FOUR_LETTER_WORDS",
    "MemberProbe",
    "is_not_serving",
    "is_not_whitelisted",
    "parse_conf",
    "parse_mntr",
    "parse_srvr",
    "probe_ensemble",
    "probe_member",
    "read_four_letter_word",
    "whitelist_message",
    "zxid_counter",
    "zxid_epoch",
]

FOUR_LETTER_WORDS: tuple[str, ...] = ("srvr", "conf", "mntr")
"""The words kadmin reads, in the order it reads them."""

NOT_SERVING = "This ZooKeeper instance is not currently serving requests"
_NOT_WHITELISTED = "is not executed because it is not in the whitelist"


@dataclass(frozen=True)
class MemberProbe:
    """What one ensemble member said about itself. Fields a member did not give are None/empty."""

    address: str  # "host:port" as given ("[v6]:port" for an IPv6 literal)
    reachable: bool
    error: str | None = None  # one line: "connection refused", "timed out", "not currently serving requests", ...
    mode: str | None = None  # "leader" | "follower" | "observer" | "standalone" | "read-only" | None
    server_id: int | None = None  # conf serverId (standalone: 0)
    zxid: int | None = None  # srvr "Zxid: 0x..."
    latency_min_ms: float | None = None
    latency_avg_ms: float | None = None
    latency_max_ms: float | None = None
    outstanding: int | None = None
    node_count: int | None = None
    version: str | None = None  # "3.8.0-<commit>", without ", built on ..."
    mntr: Mapping[str, str] = field(default_factory=dict)  # the whole mntr (empty when not whitelisted)
    conf: Mapping[str, str] = field(default_factory=dict)  # conf key=value, membership lines included
    members: Mapping[int, str] = field(default_factory=dict)  # server id -> "participant" | "observer"
    # server id -> where a client reaches it, from the membership lines: "host:port" where the line gives a client
    # port, else the bare host (its quorum address's; member_addresses)
    member_addresses: Mapping[int, tuple[str, ...]] = field(default_factory=dict)
    not_whitelisted: tuple[str, ...] = ()  # the words answered "... is not in the whitelist"

    @property
    def serving(self) -> bool:
        """Answering with a mode (standalone or part of a working quorum)."""
        return self.reachable and self.mode is not None


# ---------------------------------------------------------------------------- pure helpers
def whitelist_message(address: str, blocked: Iterable[str], needed: Sequence[str] = FOUR_LETTER_WORDS) -> str | None:
    """The one-line message for a member whose whitelist blocks words kadmin needs, or None when
    `blocked` is empty. For ("127.0.0.1:2181", ["mntr", "conf"]):
    "127.0.0.1:2181 does not allow the four-letter words conf, mntr: add them to 4lw.commands.whitelist
    in zoo.cfg (e.g. 4lw.commands.whitelist=srvr,conf,mntr)" (one line)."""
    blocked_set = set(blocked)
    words = [w for w in needed if w in blocked_set] + sorted(blocked_set - set(needed))
    if not words:
        return None
    allow = ",".join(dict.fromkeys([*needed, *words]))
    if len(words) == 1:
        what, them = f"the four-letter word {words[0]}", "it"
    else:
        what, them = f"the four-letter words {', '.join(words)}", "them"
    return (
        f"{address} does not allow {what}: add {them} to 4lw.commands.whitelist in zoo.cfg "
        f"(e.g. 4lw.commands.whitelist={allow})"
    )


def is_not_whitelisted(answer: str) -> bool:
    return _NOT_WHITELISTED in answer and len(answer) < 200


def is_not_serving(answer: str) -> bool:
    return answer.strip() == NOT_SERVING


def _int(text: str, base: int = 10) -> int | None:
    try:
        return int(text.strip(), base)
    except ValueError:
        return None


def _float(text: str) -> float | None:
    try:
        return float(text.strip())
    except ValueError:
        return None


def parse_srvr(text: str) -> dict[str, str]:
    """`srvr` (or `stat`) "Key: value" lines into a dict; `stat`'s client list is skipped."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        if line.startswith((" ", "\t")) or ": " not in line:
            continue
        key, _, value = line.partition(": ")
        out[key.strip()] = value.strip()
    return out


def parse_conf(text: str) -> tuple[dict[str, str], dict[int, str]]:
    """`conf` into (key=value dict, members). Membership lines (`server.N=host:q:e:role[;client]`) are
    kept in the dict too; members maps N to its role, "participant" or "observer"."""
    conf: dict[str, str] = {}
    members: dict[int, str] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("membership:"):
            continue
        key, sep, value = line.partition("=")
        if not sep:
            continue
        key, value = key.strip(), value.strip()
        conf[key] = value
        if key.startswith("server."):
            sid = _int(key.removeprefix("server."))
            if sid is not None:
                # host:quorumPort:electionPort[|host:q:e...]:role[;clientHost:clientPort]
                role = value.split(";", 1)[0].rsplit(":", 1)[-1].strip().lower()
                members[sid] = role if role in ("participant", "observer") else "participant"
    return conf, members


_WILDCARDS = frozenset({"", "0.0.0.0", "::", "[::]", "[0:0:0:0:0:0:0:0]"})


def member_addresses(conf: Mapping[str, str]) -> dict[int, tuple[str, ...]]:
    """Each member's client addresses from `conf`'s membership lines (`server.N=host:q:e[|host:q:e...][:role]
    [;[clientHost:]clientPort]`), lower-cased: `host:clientPort` for each of its quorum hosts and for a client host
    that is not a wildcard; only the bare hosts where the line gives no client port (ZooKeeper's classic
    `server.N=host:q:e`, every member on the zoo.cfg's one clientPort)."""
    out: dict[int, tuple[str, ...]] = {}
    for key, value in conf.items():
        sid = _int(key.removeprefix("server.")) if key.startswith("server.") else None
        if sid is None:
            continue
        quorum, _, client = value.lower().partition(";")
        hosts = [part[:part.find("]") + 1] if part.startswith("[") else part.split(":", 1)[0]
                 for part in quorum.split("|")]
        client_host, _, client_port = client.strip().rpartition(":")
        if _int(client_port) is None:
            out[sid] = tuple(dict.fromkeys(hosts))
            continue
        if client_host not in _WILDCARDS:
            hosts.append(client_host)
        out[sid] = tuple(dict.fromkeys(f"{h}:{client_port.strip()}" for h in hosts))
    return out


def parse_mntr(text: str) -> dict[str, str]:
    """`mntr`'s tab-separated `key\\tvalue` lines into a dict."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition("\t")
        if sep and key:
            out[key.strip()] = value.strip()
    return out


# ---------------------------------------------------------------------------- I/O
def read_four_letter_word(
    host: str, port: int, word: str, timeout: float = 2.0, tls: ssl.SSLContext | None = None
) -> str:
    """Send `word` on a new connection and read the answer until the server closes it.

    `timeout` bounds the whole exchange (connect, TLS handshake, every read). Raises OSError
    (TimeoutError when the time is up, ConnectionRefusedError, ssl.SSLError, ...)."""
    deadline = time.monotonic() + timeout

    def remaining() -> float:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("timed out")
        return left

    sock: socket.socket = socket.create_connection((host, port), timeout=remaining())
    try:
        if tls is not None:
            sock.settimeout(remaining())
            sock = tls.wrap_socket(sock, server_hostname=host)
        sock.settimeout(remaining())
        sock.sendall(word.encode("ascii"))
        chunks: list[bytes] = []
        while True:
            sock.settimeout(remaining())
            try:
                data = sock.recv(65536)
            except (ssl.SSLZeroReturnError, ssl.SSLEOFError):
                break
            if not data:
                break
            chunks.append(data)
    finally:
        sock.close()
    return b"".join(chunks).decode("utf-8", "replace")


def _describe(exc: BaseException) -> str:
    """A one-line reason for a failed exchange."""
    if isinstance(exc, (TimeoutError, socket.timeout)):
        return "timed out"
    if isinstance(exc, ConnectionRefusedError):
        return "connection refused"
    if isinstance(exc, ConnectionResetError):
        return "connection reset"
    if isinstance(exc, socket.gaierror):
        return f"cannot resolve host: {exc.strerror or exc}"
    if isinstance(exc, ssl.SSLCertVerificationError) and exc.verify_message:
        return f"TLS: certificate refused: {exc.verify_message}"  # e.g. "IP address mismatch, ..."
    if isinstance(exc, ssl.SSLError):
        return f"TLS: {exc.reason or exc}"
    return in_words(exc)


def _address(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host and not host.startswith("[") else f"{host}:{port}"


def probe_member(host: str, port: int, timeout: float = 2.0, tls: ssl.SSLContext | None = None) -> MemberProbe:
    """Read `srvr`, `conf` and `mntr` from one member within `timeout` seconds in all. Never raises
    for network trouble: an unreachable member is `reachable=False` with `error` saying why.

    When `srvr` fails the member is unreachable and nothing else is tried. When `srvr` answered but
    `conf` or `mntr` then failed, the probe keeps what it has and `error` names the word that failed."""
    address = _address(host, port)
    deadline = time.monotonic() + timeout

    def ask(word: str) -> str:
        return read_four_letter_word(host, port, word, max(deadline - time.monotonic(), 0.001), tls)

    try:
        srvr_text = ask("srvr")
    except OSError as e:
        return MemberProbe(address=address, reachable=False, error=_describe(e))
    if is_not_serving(srvr_text):
        return MemberProbe(address=address, reachable=True, error="not currently serving requests")
    if not srvr_text.strip():
        return MemberProbe(address=address, reachable=True, error="empty answer to srvr")

    answers, blocked, error = _ask_the_rest(srvr_text, ask)
    if error == "not currently serving requests":
        return MemberProbe(address=address, reachable=True, error=error, not_whitelisted=tuple(blocked))
    return _member(address, answers, blocked, error)


def _ask_the_rest(srvr_text: str, ask: Callable[[str], str]) -> tuple[dict[str, str], list[str], str | None]:
    """`conf` and `mntr` after `srvr` answered: the answers by word, the words not whitelisted, and what
    stopped the probe (a word that failed, or the member stopped serving between two words)."""
    blocked: list[str] = []
    answers: dict[str, str] = {}
    error: str | None = None
    if is_not_whitelisted(srvr_text):
        blocked.append("srvr")
    else:
        answers["srvr"] = srvr_text
    for word in ("conf", "mntr"):
        try:
            text = ask(word)
        except OSError as e:
            error = f"{word}: {_describe(e)}"
            break
        if is_not_serving(text):  # lost its quorum between two words
            error = "not currently serving requests"
            break
        if is_not_whitelisted(text):
            blocked.append(word)
        else:
            answers[word] = text
    return answers, blocked, error


def _member(address: str, answers: dict[str, str], blocked: list[str], error: str | None) -> MemberProbe:
    """A reachable member's probe from the words it answered (srvr's numbers, else mntr's)."""
    srvr = parse_srvr(answers.get("srvr", ""))
    conf, members = parse_conf(answers.get("conf", ""))
    mntr = parse_mntr(answers.get("mntr", ""))

    latency: list[float | None] = [None, None, None]
    if "Latency min/avg/max" in srvr:
        parts = srvr["Latency min/avg/max"].split("/")
        if len(parts) == 3:
            latency = [_float(p) for p in parts]
    else:  # srvr not whitelisted: mntr has the same numbers
        latency = [_float(mntr.get(k, "")) for k in ("zk_min_latency", "zk_avg_latency", "zk_max_latency")]

    def pick_int(srvr_key: str, mntr_key: str) -> int | None:
        if srvr_key in srvr:
            return _int(srvr[srvr_key])
        return _int(mntr[mntr_key]) if mntr_key in mntr else None

    version = srvr.get("Zookeeper version") or mntr.get("zk_version")
    zxid = _int(srvr["Zxid"], 0) if "Zxid" in srvr else None  # "0x100000006"
    mode = srvr.get("Mode") or mntr.get("zk_server_state") or None
    if mode is None and error is None:
        error = ("four-letter words not allowed: " + ", ".join(blocked)) if blocked else "no mode in srvr"
    return MemberProbe(
        address=address,
        reachable=True,
        error=error,
        mode=mode,
        server_id=_int(conf["serverId"]) if "serverId" in conf else None,
        zxid=zxid,
        latency_min_ms=latency[0],
        latency_avg_ms=latency[1],
        latency_max_ms=latency[2],
        outstanding=pick_int("Outstanding", "zk_outstanding_requests"),
        node_count=pick_int("Node count", "zk_znode_count"),
        version=version.split(", built on", 1)[0].strip() if version else None,
        mntr=mntr,
        conf=conf,
        members=members,
        member_addresses=member_addresses(conf),
        not_whitelisted=tuple(blocked),
    )


def probe_ensemble(
    hosts: Sequence[tuple[str, int]], timeout: float = 2.0, tls: ssl.SSLContext | None = None
) -> list[MemberProbe]:
    """Probe every member of a connection string in parallel, in the order given."""
    if not hosts:
        return []
    with ThreadPoolExecutor(max_workers=len(hosts), thread_name_prefix="kadmin-4lw") as pool:
        futures = [pool.submit(probe_member, host, port, timeout, tls) for host, port in hosts]
        return [f.result() for f in futures]
