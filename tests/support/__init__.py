"""Test-only helpers that are not fixtures: real Apache Kafka processes (kafka.py)."""
