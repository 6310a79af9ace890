"""kafka-python's package registered without its eager __init__ (kadmin/cluster/kafka_package.py): a command
imports only the kafka-python modules it uses, and whatever asks for the package's own names still gets them."""

from __future__ import annotations

import subprocess
import sys

# What a KRaft partitions check imports from kafka-python, then the package's own names
SCRIPT = """
import sys
import kadmin.cluster.kraft_cluster, kadmin.cluster.kraft, kadmin.cluster.min_isr, kadmin.cluster.messages
from kafka import errors
from kafka.net.manager import KafkaConnectionManager
from kafka.net.selector import NetworkSelector
from kafka.protocol.admin.cluster import DescribeClusterRequest, DescribeLogDirsRequest
from kafka.protocol.admin.configs import DescribeConfigsRequest
from kafka.protocol.admin.topics import DescribeTopicPartitionsRequest
import kafka
from kadmin.cluster import kafka_package
heavy = sorted(m for m in sys.modules if m.split(".")[:2] in (["kafka", "admin"], ["kafka", "consumer"],
                                                                ["kafka", "producer"], ["kafka", "coordinator"]))
print(kafka_package.full(kafka), heavy, errors.KafkaError.__name__)
print(kafka.__version__, kafka.KafkaAdminClient.__name__, kafka_package.full(kafka))
from kafka import KafkaProducer, TopicPartition
print(KafkaProducer.__name__, TopicPartition.__name__, "kafka.producer" in sys.modules)
"""


def run(script: str) -> list[str]:
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    return out.stdout.splitlines()


def test_a_command_imports_no_client_it_does_not_use_and_the_package_names_still_resolve() -> None:
    import kafka.version

    first, names, later = run(SCRIPT)
    assert first == "False [] KafkaError"  # no admin client, consumer, producer or coordinator imported
    assert names == f"{kafka.version.__version__} KafkaAdminClient True"  # the real __init__, run on first use
    assert later == "KafkaProducer TopicPartition True"


def test_nothing_is_done_when_kafka_python_is_already_imported() -> None:
    (line,) = run("import kafka, sys\nfrom kadmin.cluster import kafka_package\n"
                  "print(kafka_package.install(), kafka_package.full(sys.modules['kafka']))")
    assert line == "False True"


def test_an_unknown_name_is_an_attribute_error_not_the_whole_client() -> None:
    (line,) = run("import kadmin.cluster.kafka, kafka, sys\n"
                  "print(hasattr(kafka, 'no_such_name'), 'kafka.admin' in sys.modules)")
    assert line == "False False"
