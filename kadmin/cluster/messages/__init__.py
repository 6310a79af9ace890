"""Kafka API messages kafka-python does not ship, declared through its JSON schema mechanism.

Each class loads `<ClassName>.json` from this package (Kafka's own message schema format).
"""

from kafka.protocol.api_message import ApiMessage


class ControlledShutdownRequest(ApiMessage, load_json=__name__):  # type: ignore[call-arg,misc]
    pass


class ControlledShutdownResponse(ApiMessage, load_json=__name__):  # type: ignore[call-arg,misc]
    pass


class UnregisterBrokerRequest(ApiMessage, load_json=__name__):  # type: ignore[call-arg,misc]
    pass


class UnregisterBrokerResponse(ApiMessage, load_json=__name__):  # type: ignore[call-arg,misc]
    pass
