"""The cluster client layer: the backends behind the seam (base.py), opened by connect.py. Besides the
sandbox's emulated brokers (kadmin/sandbox/zkwire.py), the only package that imports kazoo or a Kafka client.

kafka-python's package is registered without its eager `__init__` (kafka_package.py) before any module of this
layer imports from it: a command imports only the kafka-python modules it uses."""

from kadmin.cluster import kafka_package as _kafka_package

_kafka_package.install()
