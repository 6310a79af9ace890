"""No secret is ever printed (issue 22 §3): not on stderr, not with -v, not in a JSON error.

Every secret-bearing setting kadmin reads (sasl.jaas.config and its options, the *.password keys,
ssl.keystore.key, sasl.oauthbearer.* secrets, --zk-auth's credentials) is given, malformed in every way we
can make it, with the sentinel SENTINEL in its value, to the real CLI against an address that refuses
(127.0.0.1:1): with and without -v, as text and as -o json. The sentinel never shows; the error is one line
naming the setting (and, for a malformed value, the position); the exit code is the documented one: 3 for a
--command-config that cannot be used, 2 for a --zk-auth that is not SCHEME:CREDENTIALS, 4 when the value is
well formed and the cluster is what fails.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.integration

SENTINEL = "S3cretPW-XYZZY"
PLAIN = "org.apache.kafka.common.security.plain.PlainLoginModule"
SASL = "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
NOWHERE_KAFKA = ["brokers", "list", "-b", "127.0.0.1:1", "--connect-timeout", "0.5"]
NOWHERE_ZK = ["brokers", "list", "-z", "127.0.0.1:1", "--connect-timeout", "0.5"]
MODES = [pytest.param([], id="text"), pytest.param(["-v"], id="text-v"), pytest.param(["-o", "json"], id="json"),
         pytest.param(["-v", "-o", "json"], id="json-v")]


def jaas(body: str) -> bytes:
    return (SASL + "sasl.jaas.config=" + body + "\n").encode("latin-1")


# (properties file bytes, exit code, fragments the error line holds)
JAAS_CASES: dict[str, tuple[bytes, int, tuple[str, ...]]] = {
    "unterminated quote": (jaas(f'{PLAIN} required username="u" password="{SENTINEL};'), 3,
                           ("sasl.jaas.config: unterminated quote at character 88", "(value hidden)")),
    "missing semicolon": (jaas(f'{PLAIN} required username="u" password="{SENTINEL}"'), 3,
                          ("sasl.jaas.config: a ';' is missing at character 104", "(value hidden)")),
    "bad properties escape": (jaas(f'{PLAIN} required username="u" password="{SENTINEL}\\u12G4";'), 3,
                              ("line 3: sasl.jaas.config: malformed \\uxxxx escape at character 103 of its value",
                               "(value hidden")),
    "escaped closing quote": (jaas(f'{PLAIN} required username="u" password="{SENTINEL}\\\\";'), 3,
                              ("sasl.jaas.config: unterminated quote at character 88",)),
    "trailing backslash at the end of the file": (
        (SASL + f'sasl.jaas.config={PLAIN} required username="u" password="{SENTINEL}\\').encode(), 3,
        ("sasl.jaas.config: unterminated quote at character 88",)),
    "unknown login module": (jaas(f'com.example.NoSuchLoginModule required username="u" password="{SENTINEL}";'), 4,
                             ("127.0.0.1:1",)),
    "no control flag": (jaas(f'{PLAIN} username="u" password="{SENTINEL}";'), 3,
                        ("sasl.jaas.config: no control flag", "at character 57")),
    "empty value": (jaas(""), 3, ("sasl.jaas.config is missing",)),
    "blank value": (jaas("   \\t "), 3, ("sasl.jaas.config is missing",)),
    "non-ASCII (ISO-8859-1 bytes)": (jaas(f'{PLAIN} required username="u" password="{SENTINEL}-\xe9\xe8";'), 4,
                                     ("127.0.0.1:1",)),
    "a line break through a \\n escape, unterminated": (
        jaas(f'{PLAIN} required username="u" password="{SENTINEL}\\nnext line;'), 3,
        ("sasl.jaas.config: unterminated quote at character 88",)),
    "continued on the next line, unterminated": (
        (SASL + f'sasl.jaas.config={PLAIN} required username="u" \\\n    password="S3cretPW-\\\n  XYZZY;\n').encode(),
        3, ("sasl.jaas.config: unterminated quote",)),
    "continued on the next line, well formed": (
        (SASL + f'sasl.jaas.config={PLAIN} required \\\n  username="u" password="S3cretPW-\\\n  XYZZY";\n').encode(),
        4, ("127.0.0.1:1",)),
    "wrong option name": (jaas(f'{PLAIN} required user="u" pass="{SENTINEL}";'), 3,
                          ('must carry username="..." and password="..."',)),
    "not key=value": (jaas(f'{PLAIN} required username="u" password "{SENTINEL}";'), 3,
                      ("sasl.jaas.config: not a key=value option at character 79", "(value hidden)")),
    "two login modules": (jaas(f'{PLAIN} required username="u" password="{SENTINEL}"; {PLAIN} required;'), 3,
                          ("more than one login module", "at character 104")),
    "the secret where the class goes": (jaas(f'"{SENTINEL}" required;'), 3,
                                        ("sasl.jaas.config: no login module class at character 1",)),
    "a lone surrogate": (jaas(f'{PLAIN} required username="u" password="{SENTINEL}\\uD800";'), 3,
                         ("sasl.jaas.config: its password is not text at character 15", "(a lone UTF-16 surrogate")),
}


def ssl(extra: str) -> bytes:
    return ("security.protocol=SSL\n" + extra).encode("latin-1")


PASSWORD_CASES: dict[str, tuple[bytes, int, tuple[str, ...]]] = {
    "ssl.key.password: bad escape": (ssl(f"ssl.key.password={SENTINEL}\\u12G4\n"), 3,
                                     ("line 2: ssl.key.password: malformed \\uxxxx escape at character 15 of its "
                                      "value (value hidden",)),
    "ssl.truststore.password: bad escape in the key": (ssl(f"ssl.truststore.password\\uZZ=x\n{SENTINEL}=1\n"), 3,
                                                       ("line 2: malformed \\uxxxx escape at character 24 of the "
                                                        "key",)),
    "ssl.keystore.password: a store that is not PKCS12": (
        ssl(f"ssl.keystore.type=PKCS12\nssl.keystore.location=@GARBAGE\nssl.keystore.password={SENTINEL}\n"), 3,
        ("ssl.keystore.location", "cannot open it as PKCS12")),
    "ssl.keystore.password: a lone surrogate": (
        ssl(f"ssl.keystore.type=PKCS12\nssl.keystore.location=@GARBAGE\nssl.keystore.password={SENTINEL}\\uDC00\n"),
        3, ("ssl.keystore.password is not text at character 15 (a lone UTF-16 surrogate; value hidden)",)),
    "ssl.truststore.password: a truncated JKS, trailing backslash": (
        ssl(f"ssl.truststore.location=@JKS\nssl.truststore.password={SENTINEL}\\"), 3,
        ("ssl.truststore.location", "cannot read it as JKS: truncated")),
    "ssl.key.password: non-ASCII, key with no certificate": (
        ssl(f"ssl.keystore.type=PEM\nssl.keystore.key=-----BEGIN PRIVATE KEY-----\nssl.key.password={SENTINEL}\xe9\n"),
        3, ("ssl.keystore.key: needs one PEM private key",)),
    "ssl.keystore.key: not base64": (
        ssl(f"ssl.keystore.type=PEM\nssl.keystore.key=-----BEGIN PRIVATE KEY-----{SENTINEL}-----END PRIVATE KEY-----\n"
            "ssl.keystore.certificate.chain=\n"), 3,
        ("ssl.keystore.key: the PEM PRIVATE KEY block at character 1 is not valid base64", "value hidden")),
    "sasl.oauthbearer.token.endpoint.url with credentials": (
        (f"security.protocol=SASL_PLAINTEXT\nsasl.mechanism=OAUTHBEARER\n"
         f"sasl.oauthbearer.token.endpoint.url=https://u:{SENTINEL}@idp.invalid/token\n"
         "sasl.jaas.config=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required "
         f'clientId="a" clientSecret="{SENTINEL}";\n').encode(), 3, ("does not fetch OAuth tokens",)),
    "an OAuth client secret kadmin does not use": (
        f"security.protocol=PLAINTEXT\nsasl.oauthbearer.client.credentials.client.secret={SENTINEL}\n".encode(), 4,
        ("127.0.0.1:1",)),
}


def assert_nothing_secret(r: Any, mode: list[str], code: int, fragments: tuple[str, ...]) -> str:
    """The run's exit code is `code`, the sentinel is nowhere, and stderr's error is one line holding
    `fragments` (under -o json the envelope's one error too). The error line."""
    assert SENTINEL not in r.stdout and SENTINEL not in r.stderr, r.stdout + r.stderr
    assert "XYZZY" not in r.stdout + r.stderr  # nor a piece of it
    assert r.exit_code == code, r.stderr
    lines = [line for line in r.stderr.splitlines() if line.strip()]
    assert all(line.startswith("kadmin: ") for line in lines), r.stderr  # every message is one line
    errors = [line for line in lines if line.startswith("kadmin: error: ")]
    assert len(errors) == 1, r.stderr
    for fragment in fragments:
        assert fragment in errors[0], errors[0]
    if "json" in mode:
        doc = json.loads(r.stdout)
        assert doc["exit_code"] == code and len(doc["errors"]) == 1
        assert "\n" not in doc["errors"][0]["message"]
        assert all(fragment in doc["errors"][0]["message"] for fragment in fragments)
    return errors[0]


def command_config(tmp_path: Path, content: bytes) -> str:
    garbage, jks = tmp_path / "garbage.p12", tmp_path / "trunc.jks"
    garbage.write_bytes(b"not a keystore at all")
    jks.write_bytes(b"\xfe\xed\xfe\xed\x00\x00\x00\x02\x00\x00\x00\x01")  # JKS's magic, version, one entry: cut off
    f = tmp_path / "client.properties"
    f.write_bytes(content.replace(b"@GARBAGE", str(garbage).encode()).replace(b"@JKS", str(jks).encode()))
    return str(f)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", list(JAAS_CASES))
def test_a_malformed_jaas_config_never_prints_its_password(run_nozk, tmp_path, case, mode):
    content, code, fragments = JAAS_CASES[case]
    r = run_nozk(*NOWHERE_KAFKA, "--command-config", command_config(tmp_path, content), *mode)
    assert_nothing_secret(r, mode, code, fragments)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", list(PASSWORD_CASES))
def test_a_malformed_password_setting_never_prints_it(run_nozk, tmp_path, case, mode):
    content, code, fragments = PASSWORD_CASES[case]
    r = run_nozk(*NOWHERE_KAFKA, "--command-config", command_config(tmp_path, content), *mode)
    assert_nothing_secret(r, mode, code, fragments)


def test_an_unknown_login_module_is_said_by_its_name_only(run_nozk, tmp_path):
    content, _, _ = JAAS_CASES["unknown login module"]
    r = run_nozk(*NOWHERE_KAFKA, "--command-config", command_config(tmp_path, content))
    warnings = [line for line in r.stderr.splitlines() if line.startswith("kadmin: warning: ")]
    assert warnings == ["kadmin: warning: sasl.jaas.config: the login module com.example.NoSuchLoginModule is not one "
                        "of Kafka's (PlainLoginModule, ScramLoginModule, OAuthBearerLoginModule, Krb5LoginModule): "
                        "kadmin cannot run a Java class, and reads its options as sasl.mechanism PLAIN's"], r.stderr


# (how the value is given, the value, exit code, fragments)
ZK_AUTH_CASES: dict[str, tuple[str, str, int, tuple[str, ...]]] = {
    "no scheme separator": ("flag", SENTINEL, 2, ("--zk-auth: no ':' after the scheme (value hidden)",)),
    "empty scheme": ("flag", f":{SENTINEL}", 2, ("--zk-auth: no scheme before the ':' at character 1",)),
    "digest without a user": ("env", f"digest:{SENTINEL}", 2,
                              ("--zk-auth: digest credentials are USER:PASSWORD", "(value hidden)")),
    "empty credentials": ("flag", "digest:", 2, ("--zk-auth: no credentials after the ':' at character 7",)),
    "a second line in the file": ("file", f"digest:kafka:{SENTINEL}\nsomething else\n", 2,
                                  ("--zk-auth @", "a control character (a line break?) at character 28",
                                   "(value hidden)")),
    "a tab in the value": ("env", f"digest:kafka:{SENTINEL}\there", 2, ("at character 28",)),
    "an empty file": ("file", "\n", 2, ("--zk-auth @", ": empty")),
    "not UTF-8": ("file", f"digest:kafka:{SENTINEL}\udcff", 3, ("not UTF-8 text", "value hidden")),
    "well formed, literal on the command line": ("flag", f"digest:kafka:{SENTINEL}", 4, ("127.0.0.1:1",)),
    "well formed, non-ASCII": ("env", f"digest:kafka:{SENTINEL}-\u00e9", 4, ("127.0.0.1:1",)),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", list(ZK_AUTH_CASES))
def test_a_zk_auth_value_is_never_printed(run_nozk, tmp_path, case, mode):
    how, value, code, fragments = ZK_AUTH_CASES[case]
    env: dict[str, str] = {}
    args: list[str] = []
    if how == "flag":
        args = ["--zk-auth", value]
    elif how == "env":
        env = {"KADMIN_ZK_AUTH": value}
    else:
        f = tmp_path / "zk-auth"
        f.write_bytes(value.encode("utf-8", "surrogateescape"))
        args = ["--zk-auth", f"@{f}"]
    r = run_nozk(*NOWHERE_ZK, *args, *mode, env=env)
    assert_nothing_secret(r, mode, code, fragments)


def test_a_zk_auth_from_a_context_is_never_printed(run_nozk, tmp_path):
    config = tmp_path / "config" / "kadmin" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text(f'[contexts.c]\nzookeeper = "127.0.0.1:1"\nzk-auth = "{SENTINEL}"\nconnect-timeout = 0.5\n')
    for mode in ([], ["-v"], ["-o", "json"]):
        r = run_nozk("brokers", "list", "--context", "c", *mode)
        assert_nothing_secret(r, mode, 2, ("--zk-auth: no ':' after the scheme",))


# ------------------------------------------------------------------------------------ the last resort
@pytest.mark.parametrize("verbose", [[], ["-v"]])
@pytest.mark.parametrize("raised", ["internal", "kadmin"])
def test_a_message_that_quotes_a_secret_is_scrubbed_where_errors_leave_the_process(run_nozk, tmp_path, monkeypatch,
                                                                                 raised, verbose):
    """Should a library (or a future message) quote a secret kadmin read, the error line, its JSON and the -v
    traceback show *** instead: kadmin.config remembers the secrets of the settings, run_guarded scrubs."""
    from kadmin.cluster import kafka_security
    from kadmin.errors import ConfigError

    def leaky(props: Any) -> Any:
        said = "the library said: bad password " + props["ssl.key.password"]
        raise (RuntimeError(said) if raised == "internal" else ConfigError(said))

    monkeypatch.setattr(kafka_security, "ssl_context", leaky)
    path = command_config(tmp_path, ssl(f"ssl.key.password={SENTINEL}\n"))
    for mode in (verbose, [*verbose, "-o", "json"]):
        r = run_nozk(*NOWHERE_KAFKA, "--command-config", path, *mode)
        assert SENTINEL not in r.stdout + r.stderr, r.stdout + r.stderr
        assert r.exit_code == (70 if raised == "internal" else 3), r.stderr
        assert "bad password ***" in r.stderr
    # and nothing is remembered past the command
    from kadmin import config

    assert config.scrub(SENTINEL) == SENTINEL
