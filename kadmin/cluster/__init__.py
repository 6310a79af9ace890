"""The common cluster client layer: the only package that imports kazoo or a Kafka client."""
