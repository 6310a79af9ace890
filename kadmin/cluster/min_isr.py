"""min.insync.replicas with its source, as the brokers report it (DescribeConfigs with synonyms).

One implementation for both modes: KraftCluster (--bootstrap-server) and ZkCluster when a ZooKeeper-mode
cluster is also reachable over --bootstrap-server. The topics are described once (their own value), each
live broker on its own connection, all of them at once (its dynamic value, the dynamic cluster default, and its
static server.properties value, which ZooKeeper cannot show): brokers that do not answer cost one wait together.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kadmin.cluster.base import MIN_ISR_FALLBACK
from kadmin.cluster.kafka import error_name
from kadmin.domain.addresses import host_port
from kadmin.domain.models import MinIsrConfig
from kadmin.errors import KadminError
from kadmin.results import Problem

MIN_ISR = "min.insync.replicas"
CONFIG_PARTS = 4  # the topics' DescribeConfigs: at most this many parts at once, each to its own bootstrap broker
RESOURCE_TOPIC, RESOURCE_BROKER = 2, 4
# DescribeConfigs' ConfigSource values
TOPIC_CONFIG, DYNAMIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG, STATIC_BROKER_CONFIG, DEFAULT_CONFIG = 1, 2, 3, 4, 5
STATIC_SOURCE = "static"  # the brokers' static value, as they report it: no --min-isr-default needed
# a Problem code that is a warning, not a read error: no broker answered DescribeConfigs, so min ISR
# came from ZooKeeper and --min-isr-default (ZooKeeper mode with --bootstrap-server)
FALLBACK = MIN_ISR_FALLBACK


def source_name(source: int, broker_id: int | None) -> str | None:
    """kadmin's min_isr_source for a DescribeConfigs ConfigSource (None: not one min ISR can come from)."""
    return {TOPIC_CONFIG: "topic", DYNAMIC_BROKER_CONFIG: f"broker:{broker_id}",
            DYNAMIC_DEFAULT_BROKER_CONFIG: "cluster-default", STATIC_BROKER_CONFIG: STATIC_SOURCE,
            DEFAULT_CONFIG: STATIC_SOURCE}.get(source)


def min_isr_levels(entries: Sequence[tuple[int, str | None]]) -> dict[int, int | None]:
    """The (ConfigSource, value) synonyms of one DescribeConfigs entry as {source: int value or None}."""
    out: dict[int, int | None] = {}
    for source, value in entries:
        if source in out:
            continue
        try:
            out[source] = int(value) if value is not None else None
        except ValueError:
            out[source] = None
    return out


def levels(result: Any) -> dict[int, int | None]:
    """One DescribeConfigs result's min.insync.replicas levels (its synonyms, else its own source)."""
    entries: list[tuple[int, str | None]] = []
    for c in result.configs:
        if c.name != MIN_ISR:
            continue
        syn = list(getattr(c, "synonyms", None) or [])
        entries += [(int(s.source), s.value) for s in syn] or [(int(c.config_source), c.value)]
    return min_isr_levels(entries)


def describe_configs_request(resources: list[tuple[int, str]], keys: Sequence[str] = (MIN_ISR,)) -> Any:
    """DescribeConfigs of `keys` (min.insync.replicas) with synonyms for `resources` ((resource type, name), ...)."""
    from kafka.protocol.admin.configs import DescribeConfigsRequest as Req

    return Req(resources=[Req.DescribeConfigsResource(resource_type=rt, resource_name=name,
                                                      configuration_keys=list(keys))
                          for rt, name in resources], include_synonyms=True)


def describe_configs(client: Any, address: str | None, resources: list[tuple[int, str]],
                     prefer: str | None = None) -> list[Any]:
    """DescribeConfigs of min.insync.replicas with synonyms: at `address`, or any bootstrap broker (None; `prefer`
    first)."""
    def make() -> Any:
        return describe_configs_request(resources)

    if address is None:
        _, resp = client.send_any(make, prefer)
    else:
        resp = client.send_to(address, make())
    return list(resp.results)


def topic_configs(client: Any, topics: Sequence[str]) -> list[Any]:
    """The topics' DescribeConfigs results, in the topics' order (one request's): in as many parts as there are
    bootstrap brokers (at most CONFIG_PARTS), each part asked of its own broker first, all at once. A broker
    resolves the topics' configs one after another (1,000 topics: 0.1-0.2 s on a busy 2-core machine)."""
    from kadmin.cluster.kraft import all_at_once

    first = list(getattr(client, "addresses", ()))[:CONFIG_PARTS] or [None]
    n = min(len(first), len(topics))
    parts = [[(RESOURCE_TOPIC, t) for t in topics[len(topics) * i // n:len(topics) * (i + 1) // n]] for i in range(n)]
    return [r for got in all_at_once([functools.partial(describe_configs, client, None, part, at)
                                      for part, at in zip(parts, first, strict=False)]) for r in got]


NEEDS = "needs DescribeConfigs on the Cluster resource"


@dataclass(frozen=True)
class BrokerMinIsr:
    """What DescribeConfigs said: each topic's own value (None: not set) and the broker levels;
    `answered`: how many live brokers answered (0: `config.static` is the caller's default).
    `config.unknown` names the live brokers that did not answer, with why."""

    topics: dict[str, int | None]
    config: MinIsrConfig
    answered: int


def unanswered(bid: int, where: str, why: str) -> str:
    """Why a broker's own min.insync.replicas levels are unknown, and what would let kadmin read them."""
    return (f"broker {bid}'s own min.insync.replicas could not be read (DescribeConfigs at {where}: {why}); "
            f"{NEEDS if 'AUTHORIZATION' in why else 'kadmin must reach its advertised address'}, "
            "or state the value with --min-isr-default")


BrokerAnswers = dict[tuple[int, str], Any]  # {(broker, its address): its DescribeConfigs answer, or the error}


def ask_brokers(client: Any, live: Sequence[int], addresses: Mapping[int, tuple[str, int]]) -> BrokerAnswers:
    """Each live broker's own min.insync.replicas levels, asked at its address, all at once: {(broker, address):
    the answer, or the KadminError it failed with}. A broker without an address is not asked."""
    asked = {b: host_port(*addresses[b]) for b in live if b in addresses}
    got = client.send_each({at: describe_configs_request([(RESOURCE_BROKER, str(b))]) for b, at in asked.items()})
    return {(b, at): got[at] for b, at in asked.items()}


def read_min_isr(client: Any, topics: Sequence[str], live: Sequence[int], addresses: Mapping[int, tuple[str, int]],
                 default: int | None, problems: list[Problem], topic_results: list[Any] | None = None,
                 broker_answers: BrokerAnswers | None = None) -> BrokerMinIsr:
    """Each topic's own min.insync.replicas and, per live broker (asked at its address), its dynamic
    value, the dynamic cluster default and the static value (the largest the live brokers report: a
    leader may be any of them; `default` when none answered, 1 when no default was stated either). What a
    broker refuses is a Problem, and the broker is in `config.unknown`: its own levels are unknown.

    `topic_results`: the topics' DescribeConfigs results when already read (a KRaft scan asks them beside the
    pages); `broker_answers`: ask_brokers() answers already read: only those of live brokers at their address
    now count, and a live broker without one is asked now."""
    from kadmin.cluster.kraft import all_at_once

    earlier = broker_answers or {}
    missing = [b for b in live if b in addresses and (b, host_port(*addresses[b])) not in earlier]
    # the topics (at any bootstrap broker) and every live broker (at its own address) asked at once: brokers that
    # do not answer cost one --connect-timeout together
    def the_topics() -> Any:
        return topic_results if topic_results is not None else topic_configs(client, topics) if topics else []

    def the_brokers() -> Any:
        return ask_brokers(client, missing, addresses) if missing else {}

    read_topics, fresh = all_at_once([the_topics, the_brokers])
    answers: BrokerAnswers = {**earlier, **fresh}
    topic_values: dict[str, int | None] = {}
    if topics:
        for r in read_topics:
            if r.error_code:
                problems.append(Problem(error_name(r.error_code).lower(), f"DescribeConfigs topic "
                                        f"{r.resource_name}: {error_name(r.error_code)}"
                                        + (f" (needs DescribeConfigs on Topic:{r.resource_name})"
                                           if "AUTHORIZATION" in error_name(r.error_code) else ""),
                                        topic=r.resource_name))
                continue
            topic_values[r.resource_name] = levels(r).get(TOPIC_CONFIG)
    per_broker: list[tuple[int, int]] = []
    cluster_default: int | None = None
    statics: list[int] = []
    answered = 0
    unknown: dict[int, str] = {}
    for bid in sorted(live):
        where = addresses.get(bid)
        if where is None:
            unknown[bid] = f"broker {bid}'s own min.insync.replicas could not be read: it has no address"
            continue
        try:
            got = answers[(bid, host_port(*where))]
            if isinstance(got, KadminError):
                raise got
            results = list(got.results)
        except KadminError as e:
            # no read error of the scan (that would make a check CRITICAL): the partitions whose leader this is
            # carry it (min_isr_unread: OK with every replica in sync, else UNKNOWN), and it is said as a warning
            problems.append(Problem(FALLBACK, f"broker {bid}'s min.insync.replicas: {e.message}"))
            unknown[bid] = unanswered(bid, host_port(*where), e.message)
            continue
        for r in results:
            if r.error_code:
                problems.append(Problem(error_name(r.error_code).lower(), f"DescribeConfigs broker {bid}: "
                                        f"{error_name(r.error_code)}"))
                unknown[bid] = unanswered(bid, host_port(*where), error_name(r.error_code))
                continue
            answered += 1
            lv = levels(r)
            if lv.get(DYNAMIC_BROKER_CONFIG) is not None:
                per_broker.append((bid, int(lv[DYNAMIC_BROKER_CONFIG] or 0)))
            if lv.get(DYNAMIC_DEFAULT_BROKER_CONFIG) is not None:
                cluster_default = lv[DYNAMIC_DEFAULT_BROKER_CONFIG]
            static = lv.get(STATIC_BROKER_CONFIG) or lv.get(DEFAULT_CONFIG)
            if static is not None:
                statics.append(static)
    cfg = MinIsrConfig(brokers=tuple(per_broker), cluster_default=cluster_default,
                       static=max(statics) if statics else (default or 1),
                       unknown=tuple(sorted(unknown.items())), default=default)
    return BrokerMinIsr(topic_values, cfg, answered)
