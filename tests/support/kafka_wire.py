"""Kafka protocol requests and responses as raw bytes, for the tests that talk to the test servers.

One copy of the framing helpers the wire tests share (tests/integration/test_kafka_server.py,
tests/integration/test_kraft_server.py). Written with `struct` straight from Kafka's protocol guide,
independently of every codec under test (kafka-python, kio, the emulated broker's), so a mistake in
one of them is not cancelled out by the same mistake here.
"""

from __future__ import annotations

import socket
import ssl
import struct

__all__ = ["closes_connection", "exchange", "recv_exact", "request"]


def request(api_key: int, version: int, body: bytes, *, header_version: int, corr: int = 7,
            client_id: str = "kadmin-test") -> bytes:
    """A length-prefixed request: header v0 (key, version, correlation id), v1 (+ client_id as a
    legacy int16 string), v2 (+ an empty tagged-field section)."""
    head = struct.pack(">hhi", api_key, version, corr)
    if header_version >= 1:
        head += struct.pack(">h", len(client_id)) + client_id.encode()
    if header_version >= 2:
        head += b"\x00"
    return struct.pack(">i", len(head) + len(body)) + head + body


def recv_exact(sock: socket.socket, n: int) -> bytes:
    """Exactly `n` bytes; ConnectionError when the peer closes first."""
    buf = b""
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError(f"closed after {len(buf)} of {n} bytes")
        buf += chunk
    return buf


def exchange(port: int, data: bytes, ssl_ctx: ssl.SSLContext | None = None, timeout: float = 10) -> bytes:
    """Send one request on a new connection to 127.0.0.1:`port`; return the response frame (header + body)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as raw:
        sock = ssl_ctx.wrap_socket(raw, server_hostname="127.0.0.1") if ssl_ctx else raw
        sock.sendall(data)
        (size,) = struct.unpack(">i", recv_exact(sock, 4))
        return recv_exact(sock, size)


def closes_connection(port: int, data: bytes, timeout: float = 10) -> bool:
    """True when the server closes the connection instead of answering `data`."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(data)
        return sock.recv(4) == b""
