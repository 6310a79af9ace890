"""The `partitions list` table: ELR columns (KIP-966) appear only when some partition has an ELR."""

from __future__ import annotations

from kadmin.payloads import PartitionRow
from kadmin.render.views import partitions_list


def row(topic: str, elr: tuple[int, ...] | None, last_known: tuple[int, ...] | None) -> PartitionRow:
    return PartitionRow(topic=topic, partition=0, leader=1, leader_epoch=3, partition_epoch=None, replicas=(1, 2, 3),
                        isr=(1,), adding_replicas=(), removing_replicas=(), min_isr=2, topic_id=None,
                        min_isr_source="topic", effective_min_isr=2, deleting=False, elr=elr, last_known_elr=last_known)


def test_no_elr_anywhere_keeps_the_columns_scripts_cut() -> None:
    v = partitions_list([row("a", None, None), row("b", (), ())])
    assert v.headers[-1] == "DELETING" and all(len(r) == len(v.headers) for r in v.rows)


def test_an_elr_adds_elr_and_last_known_elr_last() -> None:
    v = partitions_list([row("a", (2,), ()), row("b", None, None)])
    assert v.headers[-2:] == ["ELR", "LAST_KNOWN_ELR"]
    assert [r[-2:] for r in v.rows] == [[(2,), ()], [(), ()]]
