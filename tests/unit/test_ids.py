"""Seed 002's procedure as a pure function, against a small independent model (hypothesis)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kadmin.domain.ids import IdConflict, IdInputs, decode_mapping, encode_mapping, garbage, missing_ids, resolve


def inputs(**kw):
    base = dict(host="h1", registered={1: "a", 2: "b"}, mappings={}, assigned={1: 10, 2: 10}, seqid_version=0)
    base.update(kw)
    return IdInputs(**base)


def test_rule_order():
    assert resolve(inputs(config_id=5)).rule == "config"
    assert resolve(inputs(config_id=5, meta_id=5)).broker_id == 5
    with pytest.raises(IdConflict, match="disagrees"):
        resolve(inputs(config_id=5, meta_id=6))
    d = resolve(inputs(meta_id=7, mappings={"h1": 3}))
    assert (d.broker_id, d.rule) == (7, "meta.properties")
    assert resolve(inputs(mappings={"h1": 3})).rule == "host-mapping"
    # the mapped id is registered from another host: skipped, then the missing id
    d = resolve(inputs(mappings={"h1": 1}, assigned={1: 1, 2: 1, 9: 4}))
    assert (d.broker_id, d.rule) == (9, "missing-id") and "skipped" in d.detail
    # mapped and registered from this very host: still its id
    assert resolve(inputs(registered={1: "h1"}, mappings={"h1": 1})).broker_id == 1
    with pytest.raises(IdConflict, match="human intervention") as e:
        resolve(inputs(assigned={1: 1, 2: 1, 8: 1, 9: 1}))
    assert e.value.missing_ids == (8, 9)
    # an id mapped to another host is spoken for
    assert resolve(inputs(assigned={1: 1, 9: 1, 8: 1}, mappings={"other": 8})).broker_id == 9
    d = resolve(inputs(seqid_version=4))
    assert (d.broker_id, d.rule, d.consumes_seqid) == (1005, "new-id", True)
    assert resolve(inputs(seqid_version=0, reserved_max=100)).broker_id == 101
    d = resolve(inputs(seqid_version=0, registered={1001: "z", 1: "a", 2: "b"}, mappings={"y": 1002}))
    assert (d.broker_id, d.seqid_steps) == (1003, 3)  # 1001 registered, 1002 mapped: skipped


def test_missing_and_garbage():
    assert missing_ids({1: 3, 4: 2, 5: 1}, {1: "a", 2: "b"}) == [4, 5]
    g = garbage({"old": 1, "a": 1, "x": 9}, {1: "a"})
    assert [(x.host, x.broker_id, x.registered_from) for x in g] == [("old", 1, "a")]


def test_mapping_format():
    assert encode_mapping(10) == b'{"version":0,"broker.id":10}'
    assert decode_mapping(b'{"version":0,"broker.id":10}') == 10
    for bad in (b"{", b'{"version":1,"broker.id":1}', b'{"version":0,"broker.id":"1"}', b'{"version":0}'):
        with pytest.raises(ValueError):
            decode_mapping(bad)


ids = st.one_of(st.integers(0, 12), st.integers(1000, 1006))
hosts = st.sampled_from(["h0", "h1", "h2", "h3"])


@given(st.dictionaries(ids, hosts, max_size=5), st.dictionaries(hosts, ids, max_size=4),
       st.dictionaries(ids, st.integers(1, 5), max_size=8), st.integers(-1, 5), hosts,
       st.one_of(st.none(), ids), st.one_of(st.none(), ids))
def test_procedure_matches_a_model(registered, mappings, assigned, seq, host, config_id, meta_id):
    i = IdInputs(host, registered, mappings, assigned, seq, config_id, meta_id)

    def model():  # the seed's text, written again as plainly as possible
        if config_id is not None:
            if meta_id is not None and meta_id != config_id:
                return "conflict"
            return config_id
        if meta_id is not None:
            return meta_id
        if host in mappings and (mappings[host] not in registered or registered[mappings[host]] == host):
            return mappings[host]
        gone = sorted(b for b in assigned if b not in registered and b not in
                      {v for k, v in mappings.items() if k != host})
        if len(gone) == 1:
            return gone[0]
        if len(gone) > 1:
            return "conflict"
        n = seq + 1
        while n + 1000 in registered or n + 1000 in {v for k, v in mappings.items() if k != host}:
            n += 1
        return n + 1000

    expected = model()
    if expected == "conflict":
        with pytest.raises(IdConflict):
            resolve(i)
        return
    d = resolve(i)
    assert d.broker_id == expected
    # what a claim relies on: an automatic choice never takes an id registered from another host
    if d.rule in ("host-mapping", "missing-id", "new-id"):
        assert d.broker_id not in registered or registered[d.broker_id] == host
