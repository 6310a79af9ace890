"""The Kafka wire protocol through kafka-python 3.x. Loaded only by the commands that need it.

What every Kafka-protocol client of kadmin shares: Kafka's error names, --command-config → kafka-python
settings, and THE translation of a failure into kadmin's errors. The one client is `KraftClient`
(kraft.py): kafka-python's connection manager does the connection work (ApiVersions negotiation, TLS,
SASL); APIs kafka-python does not ship are declared in `kadmin.cluster.messages` from Kafka's JSON schemas.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from kadmin.cluster import kafka_package
from kadmin.errors import AuthFailed, ClusterUnreachable, KadminError, Rejected, in_words

# Before any module of this layer imports from kafka-python (they import this module first): its package
# without its eager __init__, so a command imports only the kafka-python modules it uses.
kafka_package.install()

_log = logging.getLogger("kafka")
_log.addHandler(logging.NullHandler())
_log.propagate = False

# Kafka error codes are named from kafka-python's error table (`kafka.errors.kafka_errors`, public:
# code -> exception class with `errno` and `message`). Where kafka-python spells a code differently
# from Kafka's own `org.apache.kafka.common.protocol.Errors` (the name operators find in broker logs
# and Kafka's tools), Kafka's spelling wins; checked against kafka-clients 4.3.1 and kafka-python 3.0.12.
_KAFKA_SPELLING = {
    -1: "UNKNOWN_SERVER_ERROR",  # kafka-python: UNKNOWN
    0: "NONE",  # NO_ERROR
    6: "NOT_LEADER_OR_FOLLOWER",  # NOT_LEADER_FOR_PARTITION (Kafka's name before 2.7)
    10: "MESSAGE_TOO_LARGE",  # MESSAGE_SIZE_TOO_LARGE
    17: "INVALID_TOPIC_EXCEPTION",  # INVALID_TOPIC
    39: "INVALID_REPLICA_ASSIGNMENT",  # INVALID_REPLICATION_ASSIGNMENT
}


class _ErrorNames(Mapping[int, str]):
    """code -> Kafka's error name, read from kafka-python on first use: importing kafka costs
    ~0.2 s, which the commands that never speak the Kafka protocol (and `--help`) do not pay."""

    @functools.cached_property
    def _names(self) -> dict[int, str]:
        from kafka.errors import kafka_errors

        names = {code: str(cls.message) for code, cls in kafka_errors.items() if isinstance(code, int)}
        return names | _KAFKA_SPELLING

    def __getitem__(self, code: int) -> str:
        return self._names[code]

    def __iter__(self) -> Iterator[int]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)


ERROR_NAMES: Mapping[int, str] = _ErrorNames()


def error_name(code: int) -> str:
    """Kafka's name for an error code (`STALE_BROKER_EPOCH`); `ERROR_<code>` for one kafka-python does not know."""
    return ERROR_NAMES.get(code, f"ERROR_{code}")


def client_config(props: Mapping[str, str], warn: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Kafka's Java client properties (a --command-config file) → kafka-python settings.

    security.protocol, the ssl.* keys of Kafka's Java clients (PKCS12 and PEM stores, in-line PEM,
    ssl.endpoint.identification.algorithm) as one `ssl_context`, and sasl.mechanism PLAIN,
    SCRAM-SHA-256/512, GSSAPI or OAUTHBEARER (unsecured login): see kadmin/cluster/kafka_security.py.
    `warn` hears about settings kadmin does not apply (default: stderr).
    """
    if not props:  # no --command-config: PLAINTEXT, nothing to warn about (kafka_security's TLS and SASL unused)
        return {"security_protocol": "PLAINTEXT"}
    from kadmin.cluster.kafka_security import client_settings

    return client_settings(props, warn)


def _jaas_value(jaas: str, key: str) -> str | None:
    """One option of a sasl.jaas.config value (quoted or bare), as Kafka's JaasConfig reads it."""
    from kadmin.cluster.kafka_security import parse_jaas

    return parse_jaas(jaas)[1].get(key)


def _host(where: str) -> str:
    """The host of `host:port` (`[v6]:port`), for "the name ... does not resolve"."""
    host = where.rpartition(":")[0] or where
    return host[1:-1] if host.startswith("[") and host.endswith("]") else host


# kafka-python's connection failures are KafkaConnectionError("<errno> <ECODE>") or a fixed text: kadmin's words
_ERRNO_WORDS = {
    "ECONNREFUSED": "it refused the connection (nothing listens there)",
    "ECONNRESET": "it reset the connection",
    "ECONNABORTED": "the connection was aborted",
    "ETIMEDOUT": "the connection timed out",
    "EHOSTUNREACH": "no route to the host",
    "ENETUNREACH": "the network is unreachable",
    "EADDRNOTAVAIL": "the address is not available",
}
_TEXT_WORDS = {
    "connection timed out": "the connection timed out",
    "socket disconnected": "it closed the connection",
    "connection closed during connect": "it closed the connection while connecting",
    "connection closed during send": "it closed the connection while kadmin was sending",
    "closed": "the connection was closed",
    "node not connected": "the connection is not up",
    "event loop stopped": "the connection was stopped",
}


def words(e: BaseException, where: str) -> str:
    """What a failed Kafka connection or request says, in words and without kafka-python's class names:
    `it refused the connection`, `the name broker1 does not resolve`, `the connection timed out`,
    `UNKNOWN_TOPIC_OR_PARTITION (error 3): ...`. `where` is the address (`host:port`)."""
    import errno
    import re
    import socket
    import ssl

    from kafka import errors as ke

    if isinstance(e, ConnectionRefusedError):
        return _ERRNO_WORDS["ECONNREFUSED"]
    if isinstance(e, socket.gaierror):
        return f"the name {_host(where)} does not resolve ({in_words(e)})"
    if isinstance(e, ssl.SSLError):
        return f"TLS failed: {getattr(e, 'verify_message', None) or getattr(e, 'reason', None) or in_words(e)}"
    if isinstance(e, (socket.timeout, ke.KafkaTimeoutError, ke.RequestTimedOutError)):
        return "it did not answer in time"
    if isinstance(e, ke.BrokerResponseError) and isinstance(getattr(e, "errno", None), int):
        text = in_words(e) if e.args else ""
        return f"{error_name(e.errno)} (error {e.errno})" + (f": {text}" if text else "")
    if isinstance(e, ke.NodeNotReadyError):
        return "the connection is not ready"
    text = in_words(e)
    m = re.fullmatch(r"(\d+) (E[A-Z]+)", text)
    if m:
        return _ERRNO_WORDS.get(m[2]) or _strerror(int(m[1])) or text
    if text.startswith("DNS Resolution failure") or text.startswith("DNS lookup failed"):
        return f"the name {_host(where)} does not resolve"
    if text.lower() in _TEXT_WORDS:
        return _TEXT_WORDS[text.lower()]
    m = re.match(r"unable to connect: \[Errno (\d+)\]", text)
    if m and errno.errorcode.get(int(m[1])) in _ERRNO_WORDS:
        return _ERRNO_WORDS[errno.errorcode[int(m[1])]]
    return text


def _strerror(code: int) -> str:
    import os

    text = os.strerror(code)
    return text[:1].lower() + text[1:] if text and not text.startswith("Unknown error") else ""


def bootstrap_reason(failures: list[BaseException], sasl: bool) -> Callable[[str], KadminError] | None:
    """What failed connections say, most telling first: a TLS verification failure, an authentication
    failure, or (with SASL) a broker that closed every connection while authenticating, which is how Kafka
    answers refused credentials. None when they say nothing more than a timeout or a refusal."""
    import ssl

    from kafka import errors as ke

    for e in reversed(failures):
        cause: BaseException | None = e
        while cause is not None:
            if isinstance(cause, ssl.SSLError):
                reason = getattr(cause, "verify_message", None) or getattr(cause, "reason", None) or in_words(cause)
                return lambda where, r=reason: ClusterUnreachable(  # type: ignore[misc]
                    f"TLS with {where} failed: {r} (check ssl.truststore.* and the broker's certificate)")
            cause = cause.__cause__ or cause.__context__
        text = in_words(e)
        if "CERTIFICATE_VERIFY_FAILED" in text or "certificate verify failed" in text:
            return lambda where, t=text: ClusterUnreachable(f"TLS with {where} failed: {t}")  # type: ignore[misc]
    for e in reversed(failures):
        if isinstance(e, ke.SaslAuthenticationFailedError):
            return lambda where, x=in_words(e): AuthFailed(  # type: ignore[misc]
                f"{where} refused the credentials" + (f": {x}" if x else ""))
    if sasl and failures and all("disconnect" in str(x).lower() or "sasl" in str(x).lower() for x in failures):
        return lambda where: AuthFailed(
            f"{where} closed every connection during SASL authentication, which is how Kafka answers "
            "refused credentials: check sasl.mechanism and sasl.jaas.config")
    return None


def translate(e: BaseException, where: str, api: str | None = None, peer: str = "",
              lacks: type[KadminError] = Rejected) -> KadminError:
    """THE translation of a kafka-python (or socket) exception into kadmin's errors, for every Kafka-protocol
    client of kadmin: KRaft reads and min ISR (kraft.py), drain (drain.py) and controlled shutdown (here).
    `where` is the address, `api` the request (for "does not support"), `peer` who is there ("the
    controller"), for the message. Unreachable, timed out or lost: ClusterUnreachable (exit 4); refused
    authentication or authorization: AuthFailed (exit 4); an API the node lacks: `lacks` (Rejected, exit 6,
    for reads that may fall back; Unsupported, exit 8, for an operation) with code `unsupported_version`;
    anything else: KadminError. The message says why in words (`words`), never kafka-python's class names."""
    from kafka import errors as ke

    at = f"{peer} at {where}" if peer else where
    if isinstance(e, (OSError, ke.KafkaConnectionError, ke.NodeNotReadyError, ke.KafkaTimeoutError,
                      ke.RequestTimedOutError)):
        return ClusterUnreachable(f"cannot reach {at}: {words(e, where)}")
    if isinstance(e, (ke.SaslAuthenticationFailedError, ke.ClusterAuthorizationFailedError)):
        return AuthFailed(f"{at} refused us: {words(e, where)}")
    if isinstance(e, ke.IncompatibleBrokerVersion):
        return lacks(f"{at} does not support {api or 'this request'}", code="unsupported_version")
    return KadminError(f"{at}: {words(e, where)}")
