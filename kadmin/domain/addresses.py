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
