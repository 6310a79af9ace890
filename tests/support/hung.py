"""A TCP server that accepts connections and never answers: what a hung ZooKeeper or broker looks like."""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator

import pytest


class Hung:
    """Accepts TCP connections and never sends a byte; `accepted` is set at the first connection."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.address = f"127.0.0.1:{self.port}"
        self.accepted = threading.Event()
        self.conns: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        with contextlib.suppress(OSError):
            while True:
                self.conns.append(self.sock.accept()[0])
                self.accepted.set()

    def __enter__(self) -> Hung:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.sock.close()
        for c in self.conns:
            c.close()


@pytest.fixture
def hung() -> Iterator[Hung]:
    h = Hung()
    yield h
    h.close()
