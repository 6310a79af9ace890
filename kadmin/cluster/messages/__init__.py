"""Kafka API messages kafka-python does not ship, declared through its JSON schema mechanism.

Each class loads `<ClassName>.json` from this package (Kafka's own message schema format).
"""

# kafka-python internal: ApiMessage's `load_json` class keyword (its own way of declaring messages
# from Kafka's JSON schemas), because kafka-python does not ship these APIs.
# Tested with kafka-python 3.0.12; the range is pinned in pyproject.toml.
from kafka.protocol.api_message import ApiMessage


class ControlledShutdownRequest(ApiMessage, load_json=__name__):  # type: ignore[call-arg,misc]
    pass


class ControlledShutdownResponse(ApiMessage, load_json=__name__):  # type: ignore[call-arg,misc]
    pass


class UnregisterBrokerRequest(ApiMessage, load_json=__name__):  # type: ignore[call-arg,misc]
    pass


class UnregisterBrokerResponse(ApiMessage, load_json=__name__):  # type: ignore[call-arg,misc]
    pass


class UpdateMetadataRequest(ApiMessage, load_json=__name__):  # type: ignore[call-arg,misc]
    pass
