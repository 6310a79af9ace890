"""meta.properties v0 and v1 as Kafka writes them (kafka-formats.md §1.6)."""

from __future__ import annotations

import pytest

from kadmin.formats.meta_properties import MetaPropertiesError, parse

V0 = "#\n#Wed Nov 22 03:00:00 UTC 2026\nbroker.id=3\nversion=0\ncluster.id=MkU3OEVBNTcwNTJENDM2Qk\n"
V1 = ("#\n#Wed Nov 22 03:00:00 UTC 2026\nnode.id=1\ndirectory.id=f0Rk8YxFQyO6VBchG9GSpg\nversion=1\n"
      "cluster.id=MkU3OEVBNTcwNTJENDM2Qk\n")


def test_v0_and_v1():
    m0 = parse(V0)
    assert (m0.version, m0.node_id, m0.cluster_id, m0.directory_id) == (0, 3, "MkU3OEVBNTcwNTJENDM2Qk", None)
    m1 = parse(V1)
    assert (m1.version, m1.node_id, m1.directory_id) == (1, 1, "f0Rk8YxFQyO6VBchG9GSpg")


def test_missing_version_is_0_and_ids_are_optional_in_v0():
    m = parse("broker.id=7\n")
    assert (m.version, m.node_id, m.cluster_id) == (0, 7, None)


@pytest.mark.parametrize("text, fragment", [
    ("version=2\n", "Unknown meta.properties version number 2"),
    ("version=1\ncluster.id=x\n", "requires node.id"),
    ("version=1\nnode.id=1\n", "requires cluster.id"),
    ("version=x\n", "not a number"),
    ("version=0\nbroker.id=abc\n", "broker.id"),
])
def test_invalid(text, fragment):
    with pytest.raises(MetaPropertiesError, match=fragment):
        parse(text)
