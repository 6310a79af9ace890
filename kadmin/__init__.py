"""kadmin: an operator's toolkit for Apache Kafka clusters (ZooKeeper and KRaft mode)."""

__version__ = "0.1.0"
