"""The Kafka wire protocol through kafka-python 3.x. Loaded only by the commands that need it.

kafka-python's admin client does the connection work (bootstrap, ApiVersions negotiation, TLS,
SASL); APIs it does not ship are declared in `kadmin.cluster.messages` from Kafka's JSON schemas.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kadmin.errors import AuthFailed, ClusterUnreachable, ConfigError, KadminError

_log = logging.getLogger("kafka")
_log.addHandler(logging.NullHandler())
_log.propagate = False

ERROR_NAMES = {
    -1: "UNKNOWN_SERVER_ERROR",
    0: "NONE",
    8: "BROKER_NOT_AVAILABLE",
    11: "STALE_CONTROLLER_EPOCH",
    31: "CLUSTER_AUTHORIZATION_FAILED",
    35: "UNSUPPORTED_VERSION",
    3: "UNKNOWN_TOPIC_OR_PARTITION",
    6: "NOT_LEADER_OR_FOLLOWER",
    29: "TOPIC_AUTHORIZATION_FAILED",
    41: "NOT_CONTROLLER",
    42: "INVALID_REQUEST",
    58: "SASL_AUTHENTICATION_FAILED",
    77: "STALE_BROKER_EPOCH",
    102: "BROKER_ID_NOT_REGISTERED",
    114: "MISMATCHED_ENDPOINT_TYPE",
    115: "UNSUPPORTED_ENDPOINT_TYPE",
}


def error_name(code: int) -> str:
    return ERROR_NAMES.get(code, f"ERROR_{code}")


def client_config(props: Mapping[str, str]) -> dict[str, Any]:
    """Kafka client properties (a --command-config file) → kafka-python settings.

    Supported: security.protocol; ssl.truststore.location/ssl.keystore.location as PEM files
    (ssl.truststore.type / ssl.keystore.type PEM), ssl.key.password,
    ssl.endpoint.identification.algorithm (empty: no host name check); sasl.mechanism PLAIN,
    SCRAM-SHA-256 or SCRAM-SHA-512 with sasl.jaas.config's username and password.
    """
    cfg: dict[str, Any] = {}
    proto = props.get("security.protocol", "PLAINTEXT").upper()
    if proto not in ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"):
        raise ConfigError(f"security.protocol {proto!r} is not one of PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL")
    cfg["security_protocol"] = proto
    for kind, key in (("truststore", "ssl_cafile"), ("keystore", "ssl_certfile")):
        loc = props.get(f"ssl.{kind}.location")
        if loc:
            typ = props.get(f"ssl.{kind}.type", "PEM" if loc.endswith((".pem", ".crt")) else "JKS").upper()
            if typ != "PEM":
                raise ConfigError(f"ssl.{kind}.type {typ}: kadmin reads PEM files only (convert with keytool/openssl)")
            cfg[key] = loc
            if kind == "keystore":
                cfg["ssl_keyfile"] = props.get("ssl.key.location", loc)
    if props.get("ssl.key.password"):
        cfg["ssl_password"] = props["ssl.key.password"]
    if props.get("ssl.endpoint.identification.algorithm", "https") == "":
        cfg["ssl_check_hostname"] = False
    if proto.startswith("SASL"):
        mech = props.get("sasl.mechanism", "GSSAPI").upper()
        if mech not in ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"):
            raise ConfigError(f"sasl.mechanism {mech} is not supported by kadmin (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512)")
        jaas = props.get("sasl.jaas.config", "")
        user, password = _jaas_value(jaas, "username"), _jaas_value(jaas, "password")
        if user is None or password is None:
            raise ConfigError("sasl.jaas.config must carry username=\"...\" and password=\"...\"")
        cfg.update(sasl_mechanism=mech, sasl_plain_username=user, sasl_plain_password=password)
    return cfg


def _jaas_value(jaas: str, key: str) -> str | None:
    import re

    m = re.search(rf'\b{key}\s*=\s*"((?:[^"\\]|\\.)*)"', jaas)
    return m.group(1) if m else None


@dataclass(frozen=True)
class ShutdownReply:
    version: int
    error_code: int
    remaining: list[tuple[str, int]]


class ControllerConnection:
    """A connection to one broker (the active controller), for ZooKeeper-mode controller APIs."""

    def __init__(self, bootstrap: str, node_id: int, config: Mapping[str, Any], timeout: float) -> None:
        from kafka import KafkaAdminClient
        from kafka.errors import KafkaError

        self.node_id = node_id
        self.bootstrap = bootstrap
        self.timeout_ms = int(timeout * 1000)
        try:
            self.admin = KafkaAdminClient(
                bootstrap_servers=bootstrap,
                client_id="kadmin",
                request_timeout_ms=self.timeout_ms,
                bootstrap_timeout_ms=self.timeout_ms,
                **config,
            )
        except KafkaError as e:
            raise _translate(e, bootstrap) from e
        except OSError as e:
            raise ClusterUnreachable(f"cannot reach the controller at {bootstrap}: {e}") from e

    def controlled_shutdown(self, broker_id: int, broker_epoch: int) -> ShutdownReply:
        """Send ControlledShutdown at the highest version both sides speak (v1-v3; v2+ carry the epoch)."""
        from kafka.errors import KafkaError

        from kadmin.cluster.messages import ControlledShutdownRequest

        req = ControlledShutdownRequest(broker_id=broker_id, broker_epoch=broker_epoch)
        m = self.admin._manager
        try:
            resp = m.run(m.send, req, self.node_id)
        except KafkaError as e:
            raise _translate(e, self.bootstrap) from e
        except OSError as e:
            raise ClusterUnreachable(f"lost the controller at {self.bootstrap}: {e}") from e
        remaining = [(p.topic_name, p.partition_index) for p in resp.remaining_partitions]
        return ShutdownReply(int(req.API_VERSION or resp.API_VERSION or 0), int(resp.error_code), remaining)

    def close(self) -> None:
        with contextlib.suppress(Exception):  # closing must never mask the result
            self.admin.close()


def _translate(e: Exception, where: str) -> KadminError:
    from kafka import errors as ke

    if isinstance(e, (ke.KafkaConnectionError, ke.NodeNotReadyError, ke.KafkaTimeoutError, ke.RequestTimedOutError)):
        return ClusterUnreachable(f"cannot reach the controller at {where}: {type(e).__name__}")
    if isinstance(e, (ke.SaslAuthenticationFailedError, ke.ClusterAuthorizationFailedError)):
        return AuthFailed(f"the controller at {where} refused us: {e}")
    if isinstance(e, ke.IncompatibleBrokerVersion):
        return KadminError(f"the broker at {where} does not support ControlledShutdown (Kafka 4.0 removed it; "
                           "KRaft clusters shut down through BrokerHeartbeat)", code="unsupported_version")
    return KadminError(f"the controller at {where} failed: {type(e).__name__}: {e}")
