"""Words for messages: counted nouns."""

from __future__ import annotations


def plural(n: int, noun: str, many: str | None = None) -> str:
    """`n` and the noun agreeing with it: "1 partition", "2 partitions", "0 partitions".

    `many` is the plural when it is not the noun + "s" (`plural(n, "process", "processes")`); a noun of
    several words is given whole ("ZooKeeper server"): its last word takes the "s".
    """
    return f"{n} {noun if n == 1 else (many if many is not None else noun + 's')}"
