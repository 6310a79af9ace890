"""The bodies of the gate commands scripts call in loops: `brokers max-epoch`, `brokers wait`, `brokers can-stop`,
`partitions check`.

Typer parses them in kadmin/cli/brokers.py and kadmin/cli/partitions.py (their options and help live there) and
so does the fast path (kadmin/cli/fastpath.py) without importing Typer: both call these functions, so the two
cannot differ in what a command does, only in how its words were read. Nothing here imports typer or click.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from kadmin.cli.invocation import Invocation, lazy_module, topic_filter, views
from kadmin.errors import UsageError

if TYPE_CHECKING:
    from kadmin.services import brokers as svc
else:
    svc = lazy_module("kadmin.services.brokers")  # built when a command runs, not for --help


def max_epoch(inv: Invocation) -> int:
    return inv.emit(svc.max_epoch(inv.backend().epochs), views.max_epoch)


def left(deadline: float | None) -> float | None:
    """What is left of a command's --timeout after connecting (never zero: one look is always taken)."""
    return None if deadline is None else max(deadline - time.monotonic(), 0.001)


def wait(inv: Invocation, broker_id: int, registered: bool = False, gone: bool = False, fenced: bool = False,
         unfenced: bool = False, epoch_gt: int | None = None, in_sync: bool = False, timeout: float = 300.0) -> int:
    chosen = [n for n, on in (("--registered", registered), ("--gone", gone), ("--epoch-gt", epoch_gt is not None),
                              ("--in-sync", in_sync), ("--fenced", fenced), ("--unfenced", unfenced)) if on]
    if len(chosen) != 1:
        raise UsageError("give exactly one of --registered, --gone, --fenced, --unfenced, --epoch-gt EPOCH, "
                         "--in-sync")
    deadline = time.monotonic() + timeout  # the whole wait, connecting included
    backend = inv.backend(deadline)
    if in_sync:
        from kadmin.render.progress import ScanProgress
        from kadmin.services.partitions import wait_in_sync

        with ScanProgress() as progress:
            result = wait_in_sync(backend.partitions, broker_id, left(deadline) or timeout,
                                  on_status=inv.renderer.note, progress=progress, asked=timeout)
        return inv.emit(result, views.brokers_wait_in_sync)
    if epoch_gt is not None:
        backend.require("epochs")  # KRaft: exit 3 before anything is asked
    if fenced or unfenced:
        backend.require("fencing")  # ZooKeeper mode: the same
    kind = ("registered" if registered else "gone" if gone else "fenced" if fenced else "unfenced" if unfenced
            else "epoch_gt")
    cond = svc.WaitCondition(kind, broker_id, epoch_gt)  # type: ignore[arg-type]
    return inv.emit(svc.wait(backend.registrations, cond, left(deadline) or timeout, on_note=inv.renderer.note,
                             asked=timeout), views.brokers_wait)


def can_stop(inv: Invocation, broker_id: int, topics: list[str] | None = None,
             min_isr_default: int | None = None) -> int:
    from kadmin.render.progress import ScanProgress
    from kadmin.services.partitions import can_stop as check

    with ScanProgress() as progress:
        result = check(inv.backend().partitions, broker_id, progress=progress, min_isr_default=min_isr_default,
                       wanted=topic_filter(topics))
    return inv.emit(result, views.can_stop)


def partitions_check(inv: Invocation, topics: list[str] | None = None, min_isr_default: int | None = None) -> int:
    from kadmin.render.progress import ScanProgress
    from kadmin.services.partitions import check

    with ScanProgress() as progress:
        result = check(inv.backend().partitions, progress=progress, min_isr_default=min_isr_default,
                       wanted=topic_filter(topics))
    return inv.emit(result, views.partitions_check)
