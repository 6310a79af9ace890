"""The cluster client layer: the backends behind the seam (base.py), opened by connect.py. Besides the
sandbox's emulated brokers (kadmin/sandbox/zkwire.py), the only package that imports kazoo or a Kafka client."""
