"""--command-config: Java properties → kafka-python settings; choosing the controller's endpoint."""

from __future__ import annotations

import pytest

from kadmin.cluster.kafka import _jaas_value, client_config
from kadmin.cluster.kafka_security import parse_jaas, unsecured_jws
from kadmin.config import parse_properties, read_properties
from kadmin.errors import ConfigError
from kadmin.services.shutdown import pick_endpoint
from tests.support.kafka import unavailable

# ---------------------------------------------------------------------------------------------------
# java.util.Properties.load, rule by rule (and Java itself as the referee below)


def props_of(text: str) -> dict[str, str]:
    return parse_properties(text)


@pytest.mark.parametrize("text, expected", [
    # separators: =, : or white space; blanks around the separator go; only the first separator counts
    ("a=b", {"a": "b"}),
    ("a : b", {"a": "b"}),
    ("a b", {"a": "b"}),
    ("a \t\f = b", {"a": "b"}),
    ("a = = b", {"a": "= b"}),
    ("a b = c", {"a": "b = c"}),
    ("a:b=c:d", {"a": "b=c:d"}),
    ("a=", {"a": ""}),
    ("a", {"a": ""}),
    ("=b", {"": "b"}),
    # trailing white space of the value is kept; leading white space of a line goes
    ("   a=b  ", {"a": "b  "}),
    # escaped separators belong to the key
    (r"a\=b=c", {"a=b": "c"}),
    (r"a\:b:c", {"a:b": "c"}),
    (r"a\ b c", {"a b": "c"}),
    (r"key\\=v", {"key\\": "v"}),
    # escapes: \t \n \r \f, \uXXXX, any other escaped char is the char itself
    (r"a=x\ty\nz\rw\fv", {"a": "x\ty\nz\rw\fv"}),
    (r"a=\u00e9\u20AC", {"a": "é€"}),
    (r"a=\uD83D\uDE00", {"a": "\U0001F600"}),
    (r"a=\q\#\!\"\'", {"a": "q#!\"'"}),
    (r"a=\ leading", {"a": " leading"}),
    (r"a=c:\\path\\x", {"a": "c:\\path\\x"}),
    # comments: # or ! first on a line (after blanks), never inside a value
    ("# c\n! c\n  # c\na=b#c!d", {"a": "b#c!d"}),
    ("a=b\n#x=y\\\nc=d", {"a": "b", "c": "d"}),  # a comment does not continue
    # continuation lines: an odd number of trailing backslashes; the next line's leading blanks go
    ("a=one \\\n    two", {"a": "one two"}),
    ("a=x\\\\\nb=y", {"a": "x\\", "b": "y"}),  # even: an escaped backslash, no continuation
    ("a=x\\\\\\\n  y", {"a": "x\\y"}),  # three: one escaped backslash, then a continuation
    ("a=x\\\n\n b=c", {"a": "x", "b": "c"}),  # a continuation onto an empty line ends there
    ("a=x\\\n  # not a comment", {"a": "x# not a comment"}),
    ("a\\\n  b=c", {"ab": "c"}),  # a key continues too
    ("a=last\\", {"a": "last"}),  # a continuing backslash at the end of the file goes
    # line ends: \n, \r, \r\n; blank lines
    ("a=1\r\nb=2\rc=3\n\n\t\n", {"a": "1", "b": "2", "c": "3"}),
    ("a=1\\\r\n  2", {"a": "12"}),
    # a later key wins
    ("a=1\na=2", {"a": "2"}),
    # only space, tab and form feed are blanks (a vertical tab is a character)
    ("a\x0bb=c", {"a\x0bb": "c"}),
])
def test_java_properties_rules(text, expected):
    assert props_of(text) == expected


def test_malformed_unicode_escape_is_a_one_line_configuration_error(tmp_path):
    f = tmp_path / "bad.properties"
    f.write_text("a=\\u12G4\n")
    with pytest.raises(ConfigError, match=r"malformed \\uxxxx"):
        read_properties(str(f))


def test_the_file_is_iso_8859_1_as_kafka_reads_it(tmp_path):
    """Kafka's Utils.loadProps hands Properties.load an InputStream: bytes are ISO-8859-1, so a
    UTF-8 "é" reads as two characters there, and here; \\u00e9 is the portable spelling."""
    f = tmp_path / "c.properties"
    f.write_bytes("u=é\nv=\\u00e9\n".encode() + b"x=\xe9\n")
    assert read_properties(str(f)) == {"u": "Ã©", "v": "é", "x": "é"}


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
    assert props["sasl.jaas.config"] == ('org.apache.kafka.common.security.scram.ScramLoginModule required '
                                         'username="admin" password="p@ss=word";')


JAVA_REFEREE = r"""
import java.io.*;
import java.util.*;

public class PropsReferee {
    static String hex(String s) {
        StringBuilder b = new StringBuilder();
        for (char c : s.toCharArray()) b.append(String.format("%04x", (int) c));
        return b.toString();
    }
    public static void main(String[] args) throws Exception {
        for (String name : args) {
            Properties p = new Properties();
            try (InputStream in = new FileInputStream(name)) {
                p.load(in);  // what Kafka's Utils.loadProps does
                System.out.println("FILE " + name);
                TreeMap<String, String> sorted = new TreeMap<>();
                for (String k : p.stringPropertyNames()) sorted.put(k, p.getProperty(k));
                for (Map.Entry<String, String> e : sorted.entrySet())
                    System.out.println(hex(e.getKey()) + " " + hex(e.getValue()));
            } catch (IllegalArgumentException e) {
                System.out.println("FILE " + name);
                System.out.println("MALFORMED");
            }
        }
    }
}
"""

REFEREE_ALPHABET = " \t\f\r\n=:\\#!abu0E9"


def _referee_cases() -> list[bytes]:
    """The table above, a realistic client file, and seeded random texts over the tricky characters."""
    import random

    rnd = random.Random(20260101)
    cases = [text.encode("latin-1") for text, _ in test_java_properties_rules.pytestmark[0].args[1]]
    cases.append(
        b"security.protocol=SASL_SSL\r\n  sasl.mechanism:SCRAM-SHA-512\n"
        b"sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \\\n"
        b"   username=\"adm\\u0069n\" \\\r\n\tpassword=\"p\\\\w\\=d\";\n"
        b"ssl.truststore.location /tmp/ts.p12\nssl.key.password=caf\xe9\n! end \\\n")
    for _ in range(400):
        n = rnd.randint(0, 40)
        cases.append("".join(rnd.choice(REFEREE_ALPHABET) for _ in range(n)).encode("latin-1"))
    return cases


def _utf16_hex(s: str) -> str:
    return s.encode("utf-16-be", "surrogatepass").hex()


def test_java_itself_agrees(tmp_path):
    """Java 17's own java.util.Properties.load is the referee: every case, byte for byte."""
    import shutil
    import subprocess

    java = shutil.which("java")
    if java is None:
        unavailable("no java on PATH")
    src = tmp_path / "PropsReferee.java"
    src.write_text(JAVA_REFEREE)
    files = []
    for i, data in enumerate(_referee_cases()):
        f = tmp_path / f"case{i:04d}.properties"
        f.write_bytes(data)
        files.append(f)
    out = subprocess.run([java, "-Xmx64m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", str(src),
                          *map(str, files)], capture_output=True, text=True, timeout=300, check=True).stdout
    java_says: dict[str, object] = {}
    current = None
    for line in out.splitlines():
        if line.startswith("FILE "):
            current = line[5:]
            java_says[current] = {}
        elif line == "MALFORMED":
            java_says[current] = "MALFORMED"
        else:
            k, _, v = line.partition(" ")
            java_says[current][k] = v  # type: ignore[index]
    assert len(java_says) == len(files)
    for f in files:
        try:
            ours: object = {_utf16_hex(k): _utf16_hex(v) for k, v in read_properties(str(f)).items()}
        except ConfigError:
            ours = "MALFORMED"
        assert ours == java_says[str(f)], f"{f.name}: {f.read_bytes()!r}"


# ---------------------------------------------------------------------------------------------------
# Kafka's Java client keys → kafka-python


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    """A CA; a server certificate for IP 127.0.0.1; a client key and certificate (CN=kadmin-client);
    the client's PKCS12 keystore (password ks-pass), a PKCS12 truststore (ts-pass), PEM files."""
    import datetime
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.hazmat.primitives.serialization import pkcs12
    from cryptography.x509.oid import NameOID

    d = tmp_path_factory.mktemp("pki")
    now = datetime.datetime.now(datetime.UTC)

    def cert(cn, key, issuer_cert, issuer_key, ca=False, san=None):
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])
        b = (x509.CertificateBuilder().subject_name(name).issuer_name(issuer_cert.subject if issuer_cert else name)
             .public_key(key.public_key()).serial_number(x509.random_serial_number())
             .not_valid_before(now - datetime.timedelta(hours=1)).not_valid_after(now + datetime.timedelta(days=2))
             .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
        if san:
            b = b.add_extension(x509.SubjectAlternativeName(san), critical=False)
        return b.sign(issuer_key, hashes.SHA256())

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = cert("kadmin-test-ca", ca_key, None, ca_key, ca=True)
    srv_key = ec.generate_private_key(ec.SECP256R1())
    srv = cert("127.0.0.1", srv_key, ca, ca_key, san=[x509.IPAddress(ipaddress.ip_address("127.0.0.1"))])
    cli_key = ec.generate_private_key(ec.SECP256R1())
    cli = cert("kadmin-client", cli_key, ca, ca_key)
    pem = serialization.Encoding.PEM
    (d / "ca.pem").write_bytes(ca.public_bytes(pem))
    (d / "server.pem").write_bytes(srv_key.private_bytes(pem, serialization.PrivateFormat.PKCS8,
                                                         serialization.NoEncryption()) + srv.public_bytes(pem))
    (d / "client.p12").write_bytes(pkcs12.serialize_key_and_certificates(
        b"client", cli_key, cli, [ca], serialization.BestAvailableEncryption(b"ks-pass")))
    (d / "trust.p12").write_bytes(pkcs12.serialize_key_and_certificates(
        b"ca", None, None, [ca], serialization.BestAvailableEncryption(b"ts-pass")))
    enc_key = cli_key.private_bytes(pem, serialization.PrivateFormat.PKCS8,
                                    serialization.BestAvailableEncryption(b"key-pass")).decode()
    (d / "client-keystore.pem").write_text(enc_key + cli.public_bytes(pem).decode())
    return {"dir": d, "ca_pem": ca.public_bytes(pem).decode(), "client_key_pem": enc_key,
            "client_cert_pem": cli.public_bytes(pem).decode()}


def handshake(ctx, pki, server_hostname="127.0.0.1", client_certificate=True):
    """A real TLS handshake with a loopback server that requires a client certificate from the test CA
    (unless not `client_certificate`); the subject CN the server saw."""
    import socket
    import ssl
    import threading

    server_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_ctx.load_cert_chain(str(pki["dir"] / "server.pem"))
    server_ctx.load_verify_locations(str(pki["dir"] / "ca.pem"))
    server_ctx.verify_mode = ssl.CERT_REQUIRED if client_certificate else ssl.CERT_NONE
    seen: dict[str, object] = {}
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        listener.settimeout(30)

        def serve():
            try:
                conn, _ = listener.accept()
                with server_ctx.wrap_socket(conn, server_side=True) as tls:
                    peer = tls.getpeercert() or {"subject": ()}
                    seen["cn"] = dict(x[0] for x in peer["subject"]).get("commonName")
                    tls.sendall(b"ok")
            except Exception as e:  # noqa: BLE001 - reported to the test
                seen["error"] = e

        t = threading.Thread(target=serve, daemon=True)
        t.start()
        with socket.create_connection(listener.getsockname(), timeout=30) as raw, \
                ctx.wrap_socket(raw, server_hostname=server_hostname) as tls:
            assert tls.recv(2) == b"ok"
        t.join(30)
    assert "error" not in seen, seen
    return seen["cn"]


def test_pkcs12_keystore_and_truststore_make_a_working_mutual_tls_context(pki):
    d = pki["dir"]
    cfg = client_config({"security.protocol": "SSL", "ssl.truststore.location": str(d / "trust.p12"),
                         "ssl.truststore.password": "ts-pass", "ssl.truststore.type": "PKCS12",
                         "ssl.keystore.location": str(d / "client.p12"), "ssl.keystore.password": "ks-pass",
                         "ssl.keystore.type": "PKCS12", "ssl.key.password": "ks-pass"})
    assert set(cfg) == {"security_protocol", "ssl_context"} and cfg["security_protocol"] == "SSL"
    assert cfg["ssl_context"].check_hostname  # Kafka's default: https
    assert handshake(cfg["ssl_context"], pki) == "kadmin-client"


def test_kafkas_default_store_type_jks_opens_a_pkcs12_file_as_java_does(pki):
    d = pki["dir"]
    cfg = client_config({"security.protocol": "SSL", "ssl.truststore.location": str(d / "trust.p12"),
                         "ssl.truststore.password": "ts-pass", "ssl.keystore.location": str(d / "client.p12"),
                         "ssl.keystore.password": "ks-pass"})
    assert handshake(cfg["ssl_context"], pki) == "kadmin-client"


def test_pem_files_and_in_line_pem_values(pki):
    d = pki["dir"]
    files = client_config({"security.protocol": "SSL", "ssl.truststore.type": "PEM",
                           "ssl.truststore.location": str(d / "ca.pem"), "ssl.keystore.type": "PEM",
                           "ssl.keystore.location": str(d / "client-keystore.pem"), "ssl.key.password": "key-pass"})
    assert handshake(files["ssl_context"], pki) == "kadmin-client"
    # in a properties file a PEM value is often one line: Kafka ignores the white space in the base64
    one_line = " ".join
    inline = client_config({"security.protocol": "SSL", "ssl.truststore.type": "PEM",
                            "ssl.truststore.certificates": one_line(pki["ca_pem"].split("\n")),
                            "ssl.keystore.type": "PEM", "ssl.key.password": "key-pass",
                            "ssl.keystore.key": one_line(pki["client_key_pem"].split("\n")),
                            "ssl.keystore.certificate.chain": pki["client_cert_pem"]})
    assert handshake(inline["ssl_context"], pki) == "kadmin-client"


def test_a_pem_file_under_the_default_type_is_read_as_pem(pki):
    """Kafka's default type is JKS, which would refuse a PEM file; kadmin always read one (compatible)."""
    d = pki["dir"]
    cfg = client_config({"security.protocol": "SSL", "ssl.truststore.location": str(d / "ca.pem"),
                         "ssl.keystore.location": str(d / "client-keystore.pem"), "ssl.key.password": "key-pass"})
    assert handshake(cfg["ssl_context"], pki) == "kadmin-client"
    with pytest.raises(ConfigError, match="is a PEM file, not PKCS12: set ssl.truststore.type=PEM"):
        client_config({"security.protocol": "SSL", "ssl.truststore.location": str(d / "ca.pem"),
                       "ssl.truststore.type": "PKCS12"})


def test_host_name_check_follows_ssl_endpoint_identification_algorithm(pki):
    import ssl

    base = {"security.protocol": "SSL", "ssl.truststore.type": "PEM",
            "ssl.truststore.location": str(pki["dir"] / "ca.pem"), "ssl.keystore.type": "PEM",
            "ssl.keystore.location": str(pki["dir"] / "client-keystore.pem"), "ssl.key.password": "key-pass"}
    checked = client_config(base)["ssl_context"]
    with pytest.raises(ssl.SSLCertVerificationError, match="match|mismatch"):
        handshake(checked, pki, server_hostname="otherhost")
    unchecked = client_config({**base, "ssl.endpoint.identification.algorithm": ""})["ssl_context"]
    assert not unchecked.check_hostname and unchecked.verify_mode == ssl.CERT_REQUIRED
    assert handshake(unchecked, pki, server_hostname="otherhost") == "kadmin-client"


def test_no_truststore_means_the_system_cas(pki):
    import ssl

    ctx = client_config({"security.protocol": "SSL"})["ssl_context"]
    assert ctx.verify_mode == ssl.CERT_REQUIRED and ctx.check_hostname
    with pytest.raises(ssl.SSLCertVerificationError):
        handshake(ctx, pki)


def test_private_keys_never_stay_on_disk(pki, tmp_path, monkeypatch):
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    d = pki["dir"]
    client_config({"security.protocol": "SSL", "ssl.keystore.location": str(d / "client.p12"),
                   "ssl.keystore.password": "ks-pass", "ssl.keystore.type": "PKCS12"})
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("props, fragment", [
    ({"security.protocol": "TLS"}, "security.protocol"),
    ({"security.protocol": "SSL", "ssl.truststore.location": "@JKS"}, "cannot read it as JKS: truncated"),
    ({"security.protocol": "SSL", "ssl.keystore.location": "@JKS", "ssl.keystore.password": "x"},
     "cannot read it as JKS"),
    ({"security.protocol": "SSL", "ssl.truststore.location": "@P12", "ssl.truststore.password": "nope"},
     "wrong or missing ssl.truststore.password"),
    ({"security.protocol": "SSL", "ssl.keystore.location": "@P12K", "ssl.keystore.password": "nope"},
     "wrong or missing ssl.keystore.password"),
    ({"security.protocol": "SSL", "ssl.keystore.type": "PEM", "ssl.keystore.location": "@PEMK"},
     "wrong or missing ssl.key.password"),
    ({"security.protocol": "SSL", "ssl.truststore.location": "/nonexistent/ts.p12"}, "cannot read"),
    ({"security.protocol": "SSL", "ssl.truststore.type": "BKS"}, "ssl.truststore.type BKS"),
    ({"security.protocol": "SSL", "ssl.endpoint.identification.algorithm": "dns"}, "identification"),
    ({"security.protocol": "SSL", "ssl.enabled.protocols": "SSLv3"}, "ssl.enabled.protocols"),
    ({"security.protocol": "SSL", "ssl.engine.factory.class": "com.example.Factory"}, "Java class"),
    ({"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512",
      "sasl.login.callback.handler.class": "x.Y"}, "Java class"),
    ({"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "AWS_MSK_IAM"}, "not supported"),
    ({"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN"}, "sasl.jaas.config is missing"),
    ({"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN", "sasl.jaas.config": "x"}, "sasl.jaas"),
    ({"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
      "sasl.jaas.config": "a.B required username=\"u\";"}, "password"),
    ({"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
      "sasl.jaas.config": "a.B required username=\"u\" password=\"p\"; c.D required;"}, "exactly one"),
    ({"security.protocol": "SASL_PLAINTEXT"}, "sasl.kerberos.service.name"),  # GSSAPI, Kafka's default
    ({"security.protocol": "SASL_PLAINTEXT", "sasl.kerberos.service.name": "kafka"}, "gssapi package"),
    ({"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "OAUTHBEARER",
      "sasl.jaas.config": "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;"},
     "unsecuredLoginStringClaim_sub"),
    ({"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "OAUTHBEARER",
      "sasl.oauthbearer.token.endpoint.url": "https://idp/token",
      "sasl.jaas.config": "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required "
                          "clientId=\"a\" clientSecret=\"b\";"}, "does not fetch OAuth tokens"),
])
def test_unsupported_or_wrong_settings_are_one_line_configuration_errors(props, fragment, pki, tmp_path):
    jks = tmp_path / "store.jks"
    jks.write_bytes(b"\xfe\xed\xfe\xed\x00\x00\x00\x02\x00\x00\x00\x00")  # JKS's magic and version
    stand_in = {"@JKS": str(jks), "@P12": str(pki["dir"] / "trust.p12"), "@P12K": str(pki["dir"] / "client.p12"),
                "@PEMK": str(pki["dir"] / "client-keystore.pem")}
    props = {k: stand_in.get(v, v) for k, v in props.items()}
    with pytest.raises(ConfigError, match=fragment) as e:
        client_config(props, warn=lambda m: None)
    assert "\n" not in e.value.message


@pytest.fixture(scope="module")
def jks(pki):
    """keytool's JKS files: the CA as a truststore (password jts-pass), and the client's key pair
    (store password jks-pass, a different key password key-pass)."""
    import shutil
    import subprocess

    exe = shutil.which("keytool")
    if exe is None:
        unavailable("no keytool (a JDK) on PATH")
    d = pki["dir"]

    def keytool(*args):
        subprocess.run([exe, "-J-Xmx64m", "-J-XX:+UseSerialGC", *args], cwd=d, check=True, capture_output=True,
                       timeout=120, stdin=subprocess.DEVNULL)

    keytool("-importcert", "-noprompt", "-alias", "ca", "-file", "ca.pem", "-storetype", "JKS",
            "-keystore", "trust.jks", "-storepass", "jts-pass")
    keytool("-importkeystore", "-noprompt", "-srckeystore", "client.p12", "-srcstoretype", "PKCS12",
            "-srcstorepass", "ks-pass", "-srcalias", "client", "-destkeystore", "client.jks", "-deststoretype", "JKS",
            "-deststorepass", "jks-pass", "-destkeypass", "key-pass")
    return d


def test_jks_stores_as_keytool_writes_them(pki, jks):
    """JKS, Kafka's default store type, read without Java: the trusted CA, and a key whose password
    (ssl.key.password) differs from the store's."""
    said: list[str] = []
    cfg = client_config({"security.protocol": "SSL", "ssl.truststore.location": str(jks / "trust.jks"),
                         "ssl.truststore.password": "jts-pass", "ssl.keystore.location": str(jks / "client.jks"),
                         "ssl.keystore.password": "jks-pass", "ssl.key.password": "key-pass"}, warn=said.append)
    assert handshake(cfg["ssl_context"], pki) == "kadmin-client" and said == []
    # a truststore without its password is read as Java reads it: no integrity check
    no_password = client_config({"security.protocol": "SSL", "ssl.truststore.location": str(jks / "trust.jks")})
    assert handshake(no_password["ssl_context"], pki, client_certificate=False) is None


@pytest.mark.parametrize("props, fragment", [
    ({"ssl.truststore.location": "trust.jks", "ssl.truststore.password": "nope"}, "wrong ssl.truststore.password"),
    ({"ssl.keystore.location": "client.jks", "ssl.keystore.password": "nope"}, "wrong ssl.keystore.password"),
    ({"ssl.keystore.location": "client.jks", "ssl.keystore.password": "jks-pass"}, "wrong ssl.key.password"),
    ({"ssl.keystore.location": "client.jks", "ssl.keystore.password": "jks-pass", "ssl.key.password": "x"},
     "wrong ssl.key.password"),
])
def test_jks_wrong_passwords(jks, props, fragment):
    props = {k: str(jks / v) if k.endswith(".location") else v for k, v in props.items()}
    with pytest.raises(ConfigError, match=fragment) as e:
        client_config({"security.protocol": "SSL", **props})
    assert "\n" not in e.value.message


@pytest.mark.parametrize("mech", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_username_and_password_mechanisms(mech):
    jaas = ('org.apache.kafka.common.security.scram.ScramLoginModule required username=admin '
            'password="p\\"w\\\\d;=x" ;')
    cfg = client_config({"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": mech.lower(),
                         "sasl.jaas.config": jaas})
    assert cfg == {"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": mech, "sasl_plain_username": "admin",
                   "sasl_plain_password": 'p"w\\d;=x'}


def test_jaas_config_parsing():
    assert parse_jaas('a.b.C  Required  k1="v 1"\n k2=bare\tk3 = "x\\ty";') == (
        "a.b.C", {"k1": "v 1", "k2": "bare", "k3": "x\ty"})
    assert _jaas_value('m.M required username="u" password="p";', "password") == "p"
    assert _jaas_value('m.M required username="u";', "password") is None


def test_oauthbearer_unsecured_login_token():
    import base64
    import json

    jaas = ('org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required '
            'unsecuredLoginStringClaim_sub="alice" unsecuredLoginLifetimeSeconds="60" '
            'unsecuredLoginListClaim_scope=",a,b" unsecuredLoginExtension_traceId="123";')
    cfg = client_config({"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "OAUTHBEARER",
                         "sasl.jaas.config": jaas})
    provider = cfg["sasl_oauth_token_provider"]
    header, payload, signature = provider.token().split(".")
    decode = lambda part: json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))  # noqa: E731
    assert decode(header) == {"alg": "none"} and signature == ""
    claims = decode(payload)
    assert claims["sub"] == "alice" and claims["scope"] == ["a", "b"] and claims["exp"] - claims["iat"] == 60
    assert provider.extensions() == {"traceId": "123"}
    assert unsecured_jws(parse_jaas(jaas)[1], 1000.0).split(".")[1] == base64.urlsafe_b64encode(
        b'{"iat":1000,"exp":1060,"sub":"alice","scope":["a","b"]}').rstrip(b"=").decode()


def test_settings_kadmin_does_not_apply_are_said():
    said: list[str] = []
    cfg = client_config({"security.protocol": "SSL", "ssl.cipher.suites": "TLS_AES_256_GCM_SHA384",
                         "ssl.enabled.protocols": "TLSv1.3"}, warn=said.append)
    assert any("ssl.cipher.suites" in m for m in said)
    import ssl

    assert cfg["ssl_context"].minimum_version == ssl.TLSVersion.TLSv1_3
    said.clear()
    plain = client_config({"ssl.truststore.location": "/x", "sasl.mechanism": "PLAIN"}, warn=said.append)
    assert plain == {"security_protocol": "PLAINTEXT"}
    assert said == ["security.protocol is PLAINTEXT: sasl.mechanism, ssl.truststore.location are not used "
                    "(as with Kafka's own clients)"]

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


# ---------------------------------------------------------------------------------------------------
# ZooKeeper TLS: the host name is checked unless told not to


def test_zk_tls_checks_the_host_name_unless_opted_out():
    from kadmin.cluster.connect import zk_connection
    from kadmin.config import ConnectionSettings, Sourced

    def conn(**values):
        return zk_connection(ConnectionSettings({"zookeeper": Sourced("127.0.0.1:2181", "flag"),
                                                 **{k: Sourced(v, "context c") for k, v in values.items()}}))

    assert conn(**{"zk-tls": True}).tls_check_hostname is True
    assert conn(**{"zk-tls": True, "zk-tls-no-hostname-check": True}).tls_check_hostname is False
    assert conn(**{"zk-tls": "false"}).use_tls is False  # a quoted TOML "false" is false, not a true string
    with pytest.raises(ConfigError, match="zk-tls-no-hostname-check 'maybe' .from context c. is not true or false"):
        conn(**{"zk-tls": True, "zk-tls-no-hostname-check": "maybe"})


def test_no_command_config_is_what_the_security_settings_make_of_no_properties() -> None:
    """client_config({}) answers PLAINTEXT without importing kafka_security: the same as client_settings({})."""
    from kadmin.cluster.kafka_security import client_settings

    assert client_config({}) == client_settings({}, None)
