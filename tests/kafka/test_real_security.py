"""`--command-config` as Kafka's Java clients read it, against a real Apache Kafka 3.9.1 broker (ZK mode).

One broker runs for the module, with three listeners: PLAINTEXT (inter-broker), SSL with client
authentication required, and SASL_SSL with SCRAM-SHA-512 only. Its certificates are made by the
JDK's keytool (PKCS12, as Java 17 writes them: AES-256 under PBKDF2; JKS copies for the client);
the SCRAM credentials are
written to ZooKeeper by Kafka's own ConfigCommand before the broker starts. An AclAuthorizer lets
only the super users (the SSL client's certificate, the SCRAM user `admin`, the inter-broker
listener) perform CLUSTER_ACTION, which ControlledShutdown needs.

What is compared is what the broker recorded: its JSON request log names the listener, the security
protocol and the authenticated principal of every request kadmin sent.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient

from kadmin.sandbox.ports import free_port
from kadmin.sandbox.zkserver import Ensemble
from tests.conftest import Run
from tests.support.kafka import (
    KAFKA_3_9,
    TOPIC_COMMAND,
    ZkModeBroker,
    kafka_home,
    tool,
    unavailable,
    wait_count,
    wait_for,
)

pytestmark = [pytest.mark.kafka, pytest.mark.integration, pytest.mark.slow]

CONTROLLED_SHUTDOWN = 7
SCRAM_PASSWORD = "adm!n s3cret=ok"  # a blank and a separator (ASCII: ConfigCommand's argv must not depend on a locale)
STORE_PASS, TRUST_PASS, CLIENT_PASS, JKS_KEY_PASS = "broker-pass", "trust-pass", "client-pass", "jks-key-pass"
WAIT = 240.0


def keytool(d: Path, *args: str) -> None:
    exe = shutil.which("keytool")
    if exe is None:
        unavailable("no keytool (a JDK) on PATH")
    subprocess.run([exe, "-J-Xmx64m", "-J-XX:+UseSerialGC", *args], cwd=d, check=True, capture_output=True,
                   timeout=120, stdin=subprocess.DEVNULL)


def make_pki(d: Path) -> None:
    """With keytool: a CA; the broker's key pair for IP 127.0.0.1 and the client's (CN=kadmin-client),
    each signed by the CA, in PKCS12 keystores; a PKCS12 truststore holding the CA."""
    ec = ["-keyalg", "EC", "-groupname", "secp256r1", "-validity", "2", "-storetype", "PKCS12"]
    keytool(d, "-genkeypair", "-alias", "ca", "-dname", "CN=kadmin-test-ca", "-ext", "bc:c", *ec,
            "-keystore", "ca.p12", "-storepass", "ca-pass")
    keytool(d, "-exportcert", "-rfc", "-alias", "ca", "-file", "ca.pem", "-keystore", "ca.p12", "-storepass", "ca-pass")
    keytool(d, "-importcert", "-noprompt", "-alias", "ca", "-file", "ca.pem", "-storetype", "PKCS12",
            "-keystore", "trust.p12", "-storepass", TRUST_PASS)
    for name, dname, password, ext in (("broker", "CN=127.0.0.1", STORE_PASS, ["-ext", "SAN=IP:127.0.0.1"]),
                                       ("client", "CN=kadmin-client", CLIENT_PASS, [])):
        keytool(d, "-genkeypair", "-alias", name, "-dname", dname, *ext, *ec, "-keystore", f"{name}.p12",
                "-storepass", password)
        keytool(d, "-certreq", "-alias", name, "-file", f"{name}.csr", "-keystore", f"{name}.p12",
                "-storepass", password)
        keytool(d, "-gencert", "-alias", "ca", "-infile", f"{name}.csr", "-outfile", f"{name}.crt", "-rfc",
                "-validity", "2", *ext, "-keystore", "ca.p12", "-storepass", "ca-pass")
        keytool(d, "-importcert", "-noprompt", "-alias", "ca", "-file", "ca.pem", "-keystore", f"{name}.p12",
                "-storepass", password)
        keytool(d, "-importcert", "-alias", name, "-file", f"{name}.crt", "-keystore", f"{name}.p12",
                "-storepass", password)
    # JKS (Kafka's default store type) copies of the client's stores; the key under its own password
    keytool(d, "-importkeystore", "-noprompt", "-srckeystore", "client.p12", "-srcstoretype", "PKCS12",
            "-srcstorepass", CLIENT_PASS, "-srcalias", "client", "-destkeystore", "client.jks",
            "-deststoretype", "JKS", "-deststorepass", CLIENT_PASS, "-destkeypass", JKS_KEY_PASS)
    keytool(d, "-importcert", "-noprompt", "-alias", "ca", "-file", "ca.pem", "-storetype", "JKS",
            "-keystore", "trust.jks", "-storepass", TRUST_PASS)


class Secured:
    def __init__(self, broker: ZkModeBroker, zk: str, pki: Path, ports: dict[str, int]) -> None:
        self.broker, self.zk, self.pki, self.ports = broker, zk, pki, ports
        self.run = Run(zk)

    def address(self, listener: str) -> str:
        return f"127.0.0.1:{self.ports[listener]}"

    def shutdowns(self, listener: str, at_least: int = 0) -> list[dict[str, Any]]:
        """The ControlledShutdown requests kadmin sent on `listener`, as the broker logged them; with
        `at_least`, once that many are logged (a line is written after its response was sent)."""
        def read() -> list[dict[str, Any]]:
            return [r for r in self.broker.requests(api_key=CONTROLLED_SHUTDOWN, client_id="kadmin")
                    if r.get("listener") == listener]

        return wait_count(read, at_least, WAIT, f"{at_least} ControlledShutdown lines on {listener}")


@pytest.fixture(scope="module")
def secured(zk_server: Ensemble, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Secured]:
    home = kafka_home(KAFKA_3_9)
    base = tmp_path_factory.mktemp("kafka39-security")
    pki = base / "pki"
    pki.mkdir()
    make_pki(pki)
    chroot = f"/ksec-{uuid.uuid4().hex[:10]}"
    zk = zk_server.connect_string + chroot
    root = KazooClient(hosts=zk_server.connect_string)
    root.start(timeout=30)
    try:
        root.ensure_path(chroot)
    finally:
        root.stop()
        root.close()
    # 3.9's ConfigCommand still writes SCRAM credentials straight to ZooKeeper (before any broker runs)
    tool(home, "kafka.admin.ConfigCommand", "--zookeeper", zk, "--alter", "--add-config",
         f"SCRAM-SHA-512=[password={SCRAM_PASSWORD}]", "--entity-type", "users", "--entity-name", "admin")
    ports = {"PLAINTEXT": free_port(), "SSL": free_port(), "SCRAM": free_port()}
    listeners = ",".join(f"{name}://127.0.0.1:{port}" for name, port in ports.items())
    extra = {
        "listeners": listeners,
        "advertised.listeners": listeners,
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SSL:SSL,SCRAM:SASL_SSL",
        "inter.broker.listener.name": "PLAINTEXT",
        "ssl.keystore.type": "PKCS12",
        "ssl.keystore.location": str(pki / "broker.p12"),
        "ssl.keystore.password": STORE_PASS,
        "ssl.key.password": STORE_PASS,
        "ssl.truststore.type": "PKCS12",
        "ssl.truststore.location": str(pki / "trust.p12"),
        "ssl.truststore.password": TRUST_PASS,
        "listener.name.ssl.ssl.client.auth": "required",
        "sasl.enabled.mechanisms": "SCRAM-SHA-512",
        "listener.name.scram.sasl.enabled.mechanisms": "SCRAM-SHA-512",
        "listener.name.scram.scram-sha-512.sasl.jaas.config":
            "org.apache.kafka.common.security.scram.ScramLoginModule required;",
        "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
        "super.users": "User:ANONYMOUS;User:admin;User:CN=kadmin-client",
    }
    broker = ZkModeBroker(home, 1, zk, base, port=ports["PLAINTEXT"], extra=extra, request_log=True)
    kz = KazooClient(hosts=zk)
    kz.start(timeout=30)
    try:
        broker.start()
        broker.wait_registered(kz, timeout=WAIT)
        wait_for(lambda: kz.exists("/controller"), WAIT, "the broker to become the controller")
        yield Secured(broker, zk, pki, ports)
    finally:
        broker.kill()
        kz.stop()
        kz.close()


def write(path: Path, text: str) -> str:
    path.write_text(text, encoding="latin-1")
    return str(path)


def shutdown(s: Secured, listener: str, config: str) -> tuple[int, dict[str, Any], str]:
    return s.run.json("brokers", "shutdown", "1", "--listener", listener, "--command-config", config,
                      "--timeout", "60")


def test_shutdown_over_ssl_with_java_pkcs12_keystore_and_truststore(secured: Secured, tmp_path: Path) -> None:
    """Kafka's Java keys, keytool's PKCS12 files, Kafka's defaults (store type JKS, which opens PKCS12
    as Java does; host name checked against the broker certificate's IP SAN)."""
    config = write(tmp_path / "ssl.properties", f"""\
security.protocol=SSL
ssl.truststore.location={secured.pki / 'trust.p12'}
ssl.truststore.password={TRUST_PASS}
ssl.keystore.location={secured.pki / 'client.p12'}
ssl.keystore.password={CLIENT_PASS}
ssl.key.password={CLIENT_PASS}
""")
    before = len(secured.shutdowns("SSL"))
    code, doc, err = shutdown(secured, "SSL", config)
    assert code == 0, err
    assert doc["data"]["error"] is None and doc["data"]["controller_id"] == 1
    sent = secured.shutdowns("SSL", at_least=before + 1)[before:]
    assert len(sent) == 1, sent
    assert sent[0]["securityProtocol"] == "SSL"
    assert sent[0]["principal"] == "User:CN=kadmin-client"  # the client certificate from the keystore
    assert sent[0]["response"]["errorCode"] == 0


def test_shutdown_over_scram_with_a_file_only_java_reads_right(secured: Secured, tmp_path: Path) -> None:
    """SASL_SSL: SCRAM inside TLS, trusting keytool's PEM export of the CA (ssl.truststore.type=PEM).
    The password is spread over continuation lines with escapes (\\! \\= \\u0065 and an escaped
    blank): read as java.util.Properties reads it, or SCRAM fails. Kafka's own TopicCommand takes
    the same file on the same listener, so Java and kadmin read the same credentials from it."""
    config = write(tmp_path / "scram.properties", """\
# Kafka client properties, the way an operator might write them
security.protocol = SASL_SSL
ssl.truststore.type = PEM
ssl.truststore.location = @CA
sasl.mechanism:SCRAM-SHA-512
sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \\
      username="admin" \\
      password="adm\\!n\\ s3c\\
          r\\u0065t\\=ok";
""".replace("@CA", str(secured.pki / "ca.pem")))
    tool(secured.broker.home, TOPIC_COMMAND, "--bootstrap-server", secured.address("SCRAM"), "--command-config",
         config, "--list")
    before = len(secured.shutdowns("SCRAM"))
    code, doc, err = shutdown(secured, "SCRAM", config)
    assert code == 0, err
    assert doc["data"]["error"] is None
    sent = secured.shutdowns("SCRAM", at_least=before + 1)[before:]
    assert len(sent) == 1, sent
    assert sent[0]["securityProtocol"] == "SASL_SSL" and sent[0]["principal"] == "User:admin"


def test_shutdown_over_ssl_with_java_jks_stores(secured: Secured, tmp_path: Path) -> None:
    """JKS, Kafka's default type, as keytool writes it: the key under its own ssl.key.password."""
    config = write(tmp_path / "jks.properties", f"""\
security.protocol=SSL
ssl.truststore.location={secured.pki / 'trust.jks'}
ssl.truststore.password={TRUST_PASS}
ssl.keystore.type=JKS
ssl.keystore.location={secured.pki / 'client.jks'}
ssl.keystore.password={CLIENT_PASS}
ssl.key.password={JKS_KEY_PASS}
""")
    before = len(secured.shutdowns("SSL"))
    code, doc, err = shutdown(secured, "SSL", config)
    assert code == 0, err
    sent = secured.shutdowns("SSL", at_least=before + 1)[before:]
    assert len(sent) == 1 and sent[0]["principal"] == "User:CN=kadmin-client", sent


def test_a_wrong_scram_password_is_exit_4_in_one_line(secured: Secured, tmp_path: Path) -> None:
    config = write(tmp_path / "wrong.properties", f"""\
security.protocol=SASL_SSL
ssl.truststore.location={secured.pki / 'trust.p12'}
ssl.truststore.password={TRUST_PASS}
sasl.mechanism=SCRAM-SHA-512
sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="admin" password="nope";
""")
    refusal = "Failed authentication with /127.0.0.1 (channelId="

    def refusals() -> int:
        return secured.broker.server_log.read_text(errors="replace").count(refusal)

    before, refused_before = len(secured.shutdowns("SCRAM")), refusals()
    r = secured.run("brokers", "shutdown", "1", "--listener", "SCRAM", "--command-config", config, "--timeout", "60")
    assert r.exit_code == 4, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in r.stderr, r.stderr
    # Kafka 3.9 mostly just closes the connection on a refused password (the client seldom gets the
    # authentication error itself): kadmin says what that means rather than "timed out"
    assert "refused the credentials" in r.stderr or "during SASL authentication" in r.stderr, r.stderr
    assert len(secured.shutdowns("SCRAM")) == before  # nothing got through
    # the broker refused the password (its log), which is why kadmin got nowhere
    wait_for(lambda: refusals() > refused_before, WAIT, "the broker to log the refused SCRAM password")


def test_a_client_without_the_ca_refuses_the_broker_in_one_line(secured: Secured, tmp_path: Path) -> None:
    """No truststore: the system's CAs (Java's cacerts) do not know the test CA; exit 4, one line."""
    config = write(tmp_path / "untrusted.properties", f"""\
security.protocol=SSL
ssl.keystore.location={secured.pki / 'client.p12'}
ssl.keystore.password={CLIENT_PASS}
""")
    r = secured.run("brokers", "shutdown", "1", "--listener", "SSL", "--command-config", config, "--timeout", "20")
    assert r.exit_code == 4, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr, r.stderr
    assert "TLS with" in r.stderr and "certificate" in r.stderr, r.stderr  # why, not just a timeout


def test_the_file_settings_are_checked_before_anything_is_sent(secured: Secured, tmp_path: Path) -> None:
    config = write(tmp_path / "badpass.properties", f"""\
security.protocol=SSL
ssl.keystore.location={secured.pki / 'client.p12'}
ssl.keystore.password=not-the-password
""")
    before = len(secured.shutdowns("SSL"))
    r = secured.run("brokers", "shutdown", "1", "--listener", "SSL", "--command-config", config)
    assert r.exit_code == 3, r.stderr
    assert "wrong or missing ssl.keystore.password" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert len(secured.shutdowns("SSL")) == before
    doc = json.loads(secured.run("brokers", "shutdown", "1", "--listener", "SSL", "--command-config", config,
                                 "-o", "json").stdout)
    assert doc["status"] == "error" and doc["exit_code"] == 3
