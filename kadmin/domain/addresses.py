"""`host:port` as Kafka, ZooKeeper and their clients write it: an IPv6 literal is bracketed."""

from __future__ import annotations


def host_port(host: str, port: int | str) -> str:
    """`host:port`; an IPv6 literal becomes `[::1]:9093` (a host already in brackets is kept as is).

    A host with a colon can only be an IPv6 literal (names and IPv4 addresses have none); without the
    brackets `::1:9093` would read as the address `::1:9093` with no port.
    """
    if ":" in host and not host.startswith("["):
        return f"[{host}]:{port}"
    return f"{host}:{port}"


def split_bootstrap(value: str, flag: str = "--bootstrap-server") -> list[str]:
    """`h1:9092,[::1]:9093` → ["h1:9092", "[::1]:9093"], as Kafka's clients take bootstrap.servers: every entry
    HOST:PORT with a port in 1-65535 (Kafka has no default port), an IPv6 literal in brackets. ValueError
    with one line naming the entry otherwise."""
    entries = [e.strip() for e in value.split(",")]
    if not value.strip():
        raise ValueError(f"{flag} is empty")
    out = []
    for e in entries:
        if e.startswith("["):
            host, close, rest = e[1:].partition("]")
            port = rest[1:] if rest.startswith(":") else None
            ok = bool(close and host and ":" in host and port is not None)
        else:
            host, sep, port = e.rpartition(":")
            ok = bool(sep and host and ":" not in host)
        if not ok or port is None or not port.isdigit():
            hint = " (an IPv6 address goes in brackets: [::1]:9092)" if e.count(":") > 1 and "[" not in e else ""
            raise ValueError(f"{flag}: {e!r} is not HOST:PORT{hint} (in {value!r})")
        if not 1 <= int(port) <= 65535:
            raise ValueError(f"{flag}: port {port} of {e!r} is not in 1-65535 (in {value!r})")
        out.append(e)
    return out
