"""The real-Kafka clusters a pytest-xdist worker shares between modules (tests/support/clusters.py says which
modules start their own, and why).

`shared_zk_kafka`: three Kafka 3.9.1 brokers in ZooKeeper mode under a chroot of the worker's `zk_server`,
started the first time a module on this worker asks and stopped when the worker ends. A module using it creates
its own topics, and `zk_kafka` (the fixture its tests take) makes sure every broker is up and registered before
each test and after it: a test that stops a broker has it restarted before the next module sees the cluster.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from kadmin.sandbox.zkserver import Ensemble
from tests.support.kafka import RealCluster, zk_mode_cluster


@pytest.fixture(scope="session")
def shared_zk_kafka(zk_server: Ensemble, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealCluster]:
    with zk_mode_cluster(zk_server, tmp_path_factory.mktemp("shared-kafka39"), (1, 2, 3),
                         chroot_prefix="shared") as cluster:
        yield cluster


@pytest.fixture
def zk_kafka(shared_zk_kafka: RealCluster) -> Iterator[RealCluster]:
    shared_zk_kafka.ready()
    yield shared_zk_kafka
    shared_zk_kafka.ready()
