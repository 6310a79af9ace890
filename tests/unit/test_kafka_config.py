"""--command-config: Java properties → kafka-python settings; choosing the controller's endpoint."""

from __future__ import annotations

import pytest

from kadmin.cluster.kafka import client_config
from kadmin.config import read_properties
from kadmin.errors import ConfigError
from kadmin.services.shutdown import pick_endpoint


def test_properties_file_syntax(tmp_path):
    f = tmp_path / "client.properties"
    f.write_text(
        "# comment\n! also a comment\n\n"
        "security.protocol=SASL_SSL\n"
        "sasl.mechanism : SCRAM-SHA-512\n"
        "ssl.truststore.location   /etc/kafka/ca.pem\n"
        'sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \\\n'
        '    username="admin" \\\n'
        '    password="p@ss=word";\n'
    )
    props = read_properties(str(f))
    assert props["security.protocol"] == "SASL_SSL"
    assert props["sasl.mechanism"] == "SCRAM-SHA-512"
    assert props["ssl.truststore.location"] == "/etc/kafka/ca.pem"
    cfg = client_config(props)
    assert cfg == {"security_protocol": "SASL_SSL", "ssl_cafile": "/etc/kafka/ca.pem",
                   "sasl_mechanism": "SCRAM-SHA-512", "sasl_plain_username": "admin",
                   "sasl_plain_password": "p@ss=word"}


def test_ssl_client_certificate_and_no_hostname_check():
    cfg = client_config({"security.protocol": "SSL", "ssl.truststore.location": "ca.pem",
                         "ssl.keystore.location": "me.pem", "ssl.keystore.type": "PEM", "ssl.key.password": "k",
                         "ssl.endpoint.identification.algorithm": ""})
    assert cfg == {"security_protocol": "SSL", "ssl_cafile": "ca.pem", "ssl_certfile": "me.pem",
                   "ssl_keyfile": "me.pem", "ssl_password": "k", "ssl_check_hostname": False}


@pytest.mark.parametrize("props, fragment", [
    ({"security.protocol": "TLS"}, "security.protocol"),
    ({"security.protocol": "SSL", "ssl.truststore.location": "ts.jks"}, "PEM files only"),
    ({"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "GSSAPI"}, "GSSAPI is not supported"),
    ({"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN", "sasl.jaas.config": "x"}, "username"),
])
def test_unsupported_settings_are_configuration_errors(props, fragment):
    with pytest.raises(ConfigError, match=fragment):
        client_config(props)


def test_missing_command_config_is_a_configuration_error(tmp_path):
    with pytest.raises(ConfigError, match="cannot read"):
        read_properties(str(tmp_path / "nope"))


def test_pick_endpoint_by_protocol_or_listener():
    eps = ("INTERNAL://10.0.0.1:9091", "CLIENT://b1:9092", "SECURE://b1:9093")
    spm = {"INTERNAL": "PLAINTEXT", "CLIENT": "PLAINTEXT", "SECURE": "SSL"}
    assert pick_endpoint(eps, spm, "PLAINTEXT", None) == "10.0.0.1:9091"
    assert pick_endpoint(eps, spm, "SSL", None) == "b1:9093"
    assert pick_endpoint(eps, spm, "PLAINTEXT", "CLIENT") == "b1:9092"
    with pytest.raises(ConfigError, match="registers no SASL_SSL listener"):
        pick_endpoint(eps, spm, "SASL_SSL", None)
