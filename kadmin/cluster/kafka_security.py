"""Kafka's Java client security settings (a --command-config file) → kafka-python settings.

The keys are those of Kafka's Java clients (org.apache.kafka.common.config.SslConfigs, SaslConfigs),
read with Kafka's defaults: `security.protocol` PLAINTEXT, `ssl.truststore.type`/`ssl.keystore.type`
JKS (which, as in Java 9+, also opens a PKCS12 file), `ssl.endpoint.identification.algorithm` https
(check the broker's host name; empty: do not), `sasl.mechanism` GSSAPI.

TLS is one `ssl.SSLContext` built here: trust from a PKCS12 or PEM truststore (or in-line PEM
`ssl.truststore.certificates`; without one, the system's CAs, like Java's cacerts), the client's key
and certificates from a PKCS12 or PEM keystore (or in-line `ssl.keystore.key` and
`ssl.keystore.certificate.chain`). Python's ssl module loads a private key from a file only: the key
is written re-encrypted under a random one-time password, mode 0600, in a private temporary directory
that is removed as soon as the context holds the key. JKS files (Kafka's default type) are read here
(JCEKS is refused). PKCS12 and the re-encryption use the `cryptography` package.

SASL: PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512 (sasl.jaas.config's username and password), GSSAPI
(needs the `gssapi` package and a Kerberos ticket, or the JAAS keyTab), OAUTHBEARER with Kafka's
unsecured login (`unsecuredLoginStringClaim_sub`; the token endpoint of KIP-768 is not supported).
Settings that would change security but that kadmin cannot apply are warned about, or refused when
ignoring them would connect with less security than the file asks for.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import re
import secrets
import shutil
import ssl
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from kadmin.config import HIDDEN, is_secret, remember_secret
from kadmin.errors import ConfigError
from kadmin.inputs import read_input

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "GSSAPI", "OAUTHBEARER")
STORE_TYPES = ("JKS", "PKCS12", "PEM")
JKS_MAGIC = b"\xfe\xed\xfe\xed"
TLS_VERSIONS = {"TLSv1": "TLSv1", "TLSv1.1": "TLSv1_1", "TLSv1.2": "TLSv1_2", "TLSv1.3": "TLSv1_3"}

# Keys kadmin cannot apply whose custom classes change how the client authenticates or trusts: refused.
REFUSED = {
    "ssl.engine.factory.class": "a custom SSL engine factory (a Java class)",
    "sasl.client.callback.handler.class": "a custom SASL client callback handler (a Java class)",
    "sasl.login.callback.handler.class": "a custom SASL login callback handler (a Java class)",
    "sasl.login.class": "a custom SASL login class (a Java class)",
    "security.providers": "custom Java security providers",
}
# Keys kadmin does not apply, said on stderr (OpenSSL's defaults are used instead).
NOT_APPLIED = {
    "ssl.cipher.suites": "Java cipher suite names; OpenSSL's default ciphers are used",
    "ssl.provider": "a Java security provider",
    "ssl.keymanager.algorithm": "a Java key manager algorithm",
    "ssl.trustmanager.algorithm": "a Java trust manager algorithm (PKIX-style verification is used)",
    "ssl.secure.random.implementation": "a Java SecureRandom implementation",
}

Warn = Callable[[str], None]


def _stderr_warn(message: str) -> None:
    print(f"kadmin: warning: {message}", file=sys.stderr, flush=True)


def client_settings(props: Mapping[str, str], warn: Warn | None = None) -> dict[str, Any]:
    """kafka-python settings (security_protocol, ssl_context, sasl_*) for Kafka client properties."""
    warn = warn or _stderr_warn
    cfg: dict[str, Any] = {}
    proto = props.get("security.protocol", "PLAINTEXT").strip().upper()
    if proto not in PROTOCOLS:
        raise ConfigError(f"security.protocol {proto!r} is not one of {', '.join(PROTOCOLS)}")
    cfg["security_protocol"] = proto
    for key, what in REFUSED.items():
        if props.get(key, "").strip():
            raise ConfigError(f"{key}: {what} cannot be used by kadmin (a Python client); remove it")
    uses_ssl, uses_sasl = proto in ("SSL", "SASL_SSL"), proto.startswith("SASL")
    unused = sorted(k for k in props if (k.startswith("ssl.") and not uses_ssl) or
                    (k.startswith("sasl.") and not uses_sasl))
    if unused:
        warn(f"security.protocol is {proto}: {', '.join(unused)} "
             f"{'is' if len(unused) == 1 else 'are'} not used (as with Kafka's own clients)")
    if uses_ssl:
        for key, what in NOT_APPLIED.items():
            if props.get(key, "").strip():
                warn(f"{key} is not applied by kadmin ({what})")
        cfg["ssl_context"] = ssl_context(props)
    if uses_sasl:
        cfg.update(sasl_settings(props, warn))
    return cfg


# ---------------------------------------------------------------------------------------------- TLS
def ssl_context(props: Mapping[str, str]) -> ssl.SSLContext:
    """The TLS client context the ssl.* properties describe (see the module's docstring)."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    _protocols(ctx, props)
    algorithm = props.get("ssl.endpoint.identification.algorithm", "https").strip()
    if algorithm.lower() not in ("https", "ldaps", ""):
        raise ConfigError(f"ssl.endpoint.identification.algorithm {algorithm!r}: Kafka knows https (check "
                          "the broker's host name, the default) or an empty value (no check)")
    ctx.check_hostname = bool(algorithm)
    ctx.verify_mode = ssl.CERT_REQUIRED
    trusted = _truststore(props)
    if trusted is None:
        ctx.load_default_certs(ssl.Purpose.SERVER_AUTH)
    else:
        try:
            ctx.load_verify_locations(cadata=trusted)
        except ssl.SSLError as e:
            raise ConfigError(f"the truststore's certificates are not usable: {e.reason or e}") from e
    keystore = _keystore(props)
    if keystore is not None:
        _load_key(ctx, *keystore)
    return ctx


def _protocols(ctx: ssl.SSLContext, props: Mapping[str, str]) -> None:
    """ssl.enabled.protocols (Kafka's default TLSv1.2,TLSv1.3) bound the versions offered."""
    enabled = [p.strip() for p in props.get("ssl.enabled.protocols", "TLSv1.2,TLSv1.3").split(",") if p.strip()]
    unknown = [p for p in enabled if p not in TLS_VERSIONS]
    if unknown or not enabled:
        raise ConfigError(f"ssl.enabled.protocols {props.get('ssl.enabled.protocols')!r}: kadmin knows "
                          f"{', '.join(TLS_VERSIONS)}")
    versions = [getattr(ssl.TLSVersion, TLS_VERSIONS[p]) for p in enabled]
    ctx.minimum_version, ctx.maximum_version = min(versions), max(versions)


def _store_type(props: Mapping[str, str], kind: str) -> str:
    typ = props.get(f"ssl.{kind}.type", "JKS").strip().upper()
    if typ not in STORE_TYPES:
        raise ConfigError(f"ssl.{kind}.type {typ}: kadmin reads {', '.join(STORE_TYPES)}")
    return typ


def _read(props: Mapping[str, str], key: str) -> bytes:
    path = Path(props[key]).expanduser()
    try:
        return read_input(path, key)
    except OSError as e:
        raise ConfigError(f"{key} {path}: cannot read: {e.strerror}") from e


def _password(props: Mapping[str, str], key: str) -> bytes | None:
    value = props.get(key)
    return _utf8(value, key) if value else None


def _utf8(value: str, what: str) -> bytes:
    """A secret as UTF-8; one that is not text (a lone UTF-16 surrogate from a \\uD800 escape) is a
    configuration error naming where, not the value."""
    try:
        return value.encode()
    except UnicodeEncodeError as e:
        raise ConfigError(f"{what} is not text at character {e.start + 1} (a lone UTF-16 surrogate; {HIDDEN})") \
            from None


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 0

    def take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise ValueError("truncated")
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def u(self, n: int) -> int:
        return int.from_bytes(self.take(n), "big")


JKS_KEY_PROTECTOR = "1.3.6.1.4.1.42.2.17.1.1"  # Sun's JKS key protection (SHA-1 keystream)


def read_jks(data: bytes, password: bytes | None, what: str, location: str
             ) -> tuple[list[tuple[bytes, list[bytes]]], list[bytes]]:
    """A Java KeyStore (JKS) file: ([(protected private key, certificate chain DERs)], [trusted
    certificate DERs]). With a password, its integrity digest is checked as keytool does."""
    try:
        r = _Reader(data)
        if r.take(4) != JKS_MAGIC or (version := r.u(4)) not in (1, 2):
            raise ValueError("not a JKS keystore")
        keys: list[tuple[bytes, list[bytes]]] = []
        trusted: list[bytes] = []

        def certificate() -> bytes:
            if version == 2:
                r.take(r.u(2))  # the certificate type, "X.509"
            return r.take(r.u(4))

        for _ in range(r.u(4)):
            tag = r.u(4)
            r.take(r.u(2))  # alias
            r.take(8)  # creation time
            if tag == 1:
                protected = r.take(r.u(4))
                keys.append((protected, [certificate() for _ in range(r.u(4))]))
            elif tag == 2:
                trusted.append(certificate())
            else:
                raise ValueError(f"entry type {tag} (a secret key?) is not one JKS holds")
        body_end = r.pos
        digest = r.take(20)
    except ValueError as e:
        raise ConfigError(f"{what}.location {location}: cannot read it as JKS: {e}") from e
    if password is not None:
        import hashlib

        check = hashlib.sha1(_utf16(password) + b"Mighty Aphrodite" + data[:body_end]).digest()
        if check != digest:
            raise ConfigError(f"{what}.location {location}: wrong {what}.password (or the file was altered)")
    return keys, trusted


def _utf16(password: bytes) -> bytes:
    return password.decode().encode("utf-16-be")


def _der(data: bytes, pos: int) -> tuple[int, int, int]:
    """(tag, start of the value, end of the value) of the DER element at `pos`."""
    tag, length, pos = data[pos], data[pos + 1], pos + 2
    if length & 0x80:
        n = length & 0x7F
        length, pos = int.from_bytes(data[pos:pos + n], "big"), pos + n
    if pos + length > len(data):
        raise ValueError("truncated DER")
    return tag, pos, pos + length


def jks_private_key(protected: bytes, password: bytes) -> bytes:
    """The PKCS#8 DER of a JKS-protected key (sun.security.provider.KeyProtector): salt, key XOR a
    SHA-1 keystream over the password (UTF-16BE), then SHA-1(password + key) to check it."""
    import hashlib

    try:
        tag, start, end = _der(protected, 0)  # EncryptedPrivateKeyInfo
        tag_alg, alg_start, alg_end = _der(protected, start)
        tag_oid, oid_start, oid_end = _der(protected, alg_start)
        tag_enc, enc_start, enc_end = _der(protected, alg_end)
    except (ValueError, IndexError) as e:
        raise ValueError(f"not a JKS-protected key ({e})") from None
    if (tag, tag_alg, tag_oid, tag_enc) != (0x30, 0x30, 0x06, 0x04) or \
            _oid(protected[oid_start:oid_end]) != JKS_KEY_PROTECTOR:
        raise ValueError("the key is not protected with JKS's own scheme (a JCEKS keystore?)")
    blob = protected[enc_start:enc_end]
    salt, encrypted, check = blob[:20], blob[20:-20], blob[-20:]
    pw = _utf16(password)
    stream, digest = bytearray(), salt
    while len(stream) < len(encrypted):
        digest = hashlib.sha1(pw + digest).digest()
        stream += digest
    key = bytes(a ^ b for a, b in zip(encrypted, stream, strict=False))
    if hashlib.sha1(pw + key).digest() != check:
        raise ValueError("wrong ssl.key.password (or ssl.keystore.password)")
    return key


def _oid(der: bytes) -> str:
    parts = [der[0] // 40, der[0] % 40]
    value = 0
    for b in der[1:]:
        value = (value << 7) | (b & 0x7F)
        if not b & 0x80:
            parts.append(value)
            value = 0
    return ".".join(map(str, parts))


def _truststore(props: Mapping[str, str]) -> str | None:
    """The trusted certificates as PEM text, or None for the system's CAs."""
    typ = _store_type(props, "truststore")
    inline = props.get("ssl.truststore.certificates", "").strip()
    location = props.get("ssl.truststore.location", "").strip()
    if inline and location:
        raise ConfigError("give ssl.truststore.location or ssl.truststore.certificates, not both")
    if inline:
        if typ != "PEM":
            raise ConfigError("ssl.truststore.certificates needs ssl.truststore.type=PEM")
        return _certificates_pem(inline, "ssl.truststore.certificates")
    if not location:
        return None
    data = _read(props, "ssl.truststore.location")
    typ = _sniffed(props, "truststore", typ, data)
    if typ == "PEM":
        return _certificates_pem(data.decode("latin-1"), f"ssl.truststore.location {location}")
    if data.startswith(JKS_MAGIC):
        _keys, trusted = read_jks(data, _password(props, "ssl.truststore.password"), "ssl.truststore", location)
        if not trusted:
            raise ConfigError(f"ssl.truststore.location {location}: holds no trusted certificate")
        return "".join(_pem("CERTIFICATE", der) for der in trusted)
    from cryptography.hazmat.primitives.serialization import Encoding

    p12 = _pkcs12(data, [_password(props, "ssl.truststore.password")], "ssl.truststore", location)
    certs = [c.certificate for c in p12.additional_certs] + ([p12.cert.certificate] if p12.cert else [])
    if not certs:
        raise ConfigError(f"ssl.truststore.location {location}: holds no certificate")
    return "".join(c.public_bytes(Encoding.PEM).decode() for c in certs)


def _sniffed(props: Mapping[str, str], kind: str, typ: str, data: bytes) -> str:
    """A PEM file under the default type (JKS) is read as PEM, as kadmin always did (Kafka's Java
    clients would refuse it); under an explicit JKS or PKCS12 it is a configuration error."""
    if typ == "PEM" or not data.lstrip().startswith(b"-----BEGIN"):
        return typ
    if f"ssl.{kind}.type" in props:
        raise ConfigError(f"ssl.{kind}.location {props[f'ssl.{kind}.location']} is a PEM file, not {typ}: set "
                          f"ssl.{kind}.type=PEM")
    return "PEM"


def _pkcs12(data: bytes, passwords: list[bytes | None], what: str, location: str) -> Any:
    from cryptography.hazmat.primitives.serialization import pkcs12

    error: Exception | None = None
    for password in dict.fromkeys(passwords):  # distinct, in order
        try:
            return pkcs12.load_pkcs12(data, password)
        except (ValueError, TypeError) as e:
            error = e
    hint = f"wrong or missing {what}.password" if "password" in str(error).lower() or "mac" in str(error).lower() \
        else f"not a PKCS12 file ({error})"
    raise ConfigError(f"{what}.location {location}: cannot open it as PKCS12: {hint}")


PEM_BLOCK = re.compile(r"-----BEGIN ([A-Z0-9 ]+)-----(.*?)-----END \1-----", re.S)


def _pem_blocks(text: str, what: str) -> list[tuple[str, bytes]]:
    """(label, DER) of every PEM block in `text`, white space inside the base64 ignored, as Kafka's
    PEM reader does (a properties value often puts a whole PEM block on one line). `what` names the
    setting or file in an error, which gives the block's position, never its text (a key is secret)."""
    out = []
    for m in PEM_BLOCK.finditer(text):
        try:
            out.append((m.group(1), base64.b64decode("".join(m.group(2).split()), validate=True)))
        except ValueError as e:
            raise ConfigError(f"{what}: the PEM {m.group(1)} block at character {m.start() + 1} is not valid "
                              f"base64 ({e}; {HIDDEN})") from None
    return out


def _pem(label: str, der: bytes) -> str:
    b64 = base64.b64encode(der).decode()
    return f"-----BEGIN {label}-----\n" + "".join(b64[i:i + 64] + "\n" for i in range(0, len(b64), 64)) + \
        f"-----END {label}-----\n"


def _certificates_pem(text: str, what: str) -> str:
    certs = [der for label, der in _pem_blocks(text, what) if label == "CERTIFICATE"]
    if not certs:
        raise ConfigError(f"{what}: holds no PEM certificate")
    return "".join(_pem("CERTIFICATE", der) for der in certs)


def _keystore(props: Mapping[str, str]) -> tuple[Any, list[Any]] | None:
    """The client's (private key, certificate chain) as `cryptography` objects, or None."""
    from cryptography import x509
    from cryptography.hazmat.primitives.serialization import load_der_private_key

    typ = _store_type(props, "keystore")
    key_pem, chain_pem = props.get("ssl.keystore.key", "").strip(), props.get("ssl.keystore.certificate.chain", "")
    location = props.get("ssl.keystore.location", "").strip()
    key_password = _password(props, "ssl.key.password")
    if key_pem or chain_pem.strip():
        if location:
            raise ConfigError("give ssl.keystore.location or ssl.keystore.key/certificate.chain, not both")
        if typ != "PEM":
            raise ConfigError("ssl.keystore.key and ssl.keystore.certificate.chain need ssl.keystore.type=PEM")
        blocks = _pem_blocks(key_pem, "ssl.keystore.key") + _pem_blocks(chain_pem, "ssl.keystore.certificate.chain")
        what = "ssl.keystore.key"
    elif location:
        data = _read(props, "ssl.keystore.location")
        typ = _sniffed(props, "keystore", typ, data)
        if typ != "PEM":
            if data.startswith(JKS_MAGIC):
                store_password = _password(props, "ssl.keystore.password")
                jks_keys, _trusted = read_jks(data, store_password, "ssl.keystore", location)
                if len(jks_keys) != 1:
                    raise ConfigError(f"ssl.keystore.location {location}: holds {len(jks_keys)} private keys; "
                                      "kadmin needs exactly one")
                protected, chain_der = jks_keys[0]
                try:
                    key = load_der_private_key(jks_private_key(protected, key_password or store_password or b""),
                                               None)
                except ValueError as e:
                    raise ConfigError(f"ssl.keystore.location {location}: cannot read the private key: {e}") from e
                return key, [x509.load_der_x509_certificate(der) for der in chain_der]
            p12 = _pkcs12(data, [_password(props, "ssl.keystore.password"), key_password], "ssl.keystore",
                          location)
            if p12.key is None or p12.cert is None:
                raise ConfigError(f"ssl.keystore.location {location}: holds no private key with its certificate")
            return p12.key, [p12.cert.certificate] + [c.certificate for c in p12.additional_certs]
        what = f"ssl.keystore.location {location}"
        blocks = _pem_blocks(data.decode("latin-1"), what)
    else:
        return None
    keys = [(label, der) for label, der in blocks if label.endswith("PRIVATE KEY")]
    chain = [x509.load_der_x509_certificate(der) for label, der in blocks if label == "CERTIFICATE"]
    if len(keys) != 1 or not chain:
        raise ConfigError(f"{what}: needs one PEM private key and its certificate chain "
                          f"(found {len(keys)} key(s), {len(chain)} certificate(s))")
    label, der = keys[0]
    try:
        if label == "ENCRYPTED PRIVATE KEY":
            from cryptography.hazmat.primitives.serialization import load_pem_private_key

            key = load_pem_private_key(_pem(label, der).encode(), key_password)
        elif label == "PRIVATE KEY":
            key = load_der_private_key(der, None)
        else:  # "RSA PRIVATE KEY", "EC PRIVATE KEY" (Java wants PKCS#8; OpenSSL's older forms are read too)
            from cryptography.hazmat.primitives.serialization import load_pem_private_key

            key = load_pem_private_key(_pem(label, der).encode(), None)
    except (ValueError, TypeError) as e:
        reason = "wrong or missing ssl.key.password" if label == "ENCRYPTED PRIVATE KEY" else str(e)
        raise ConfigError(f"{what}: cannot read the private key: {reason}") from e
    return key, chain


def _load_key(ctx: ssl.SSLContext, key: Any, chain: list[Any]) -> None:
    """Give the context the client's key and chain through a file Python's ssl can read: the key
    encrypted under a fresh random password, mode 0600 in a mode 0700 directory, removed at once."""
    from cryptography.hazmat.primitives.serialization import BestAvailableEncryption, Encoding, PrivateFormat

    one_time = secrets.token_urlsafe(32).encode()
    pem = key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, BestAvailableEncryption(one_time)) + b"".join(
        c.public_bytes(Encoding.PEM) for c in chain)
    tmp = tempfile.mkdtemp(prefix="kadmin-tls-")  # mode 0700
    try:
        path = os.path.join(tmp, "client.pem")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(pem)
        try:
            ctx.load_cert_chain(path, password=lambda: one_time)
        except ssl.SSLError as e:
            raise ConfigError(f"the client key and certificate do not go together: {e.reason or e}") from e
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


# --------------------------------------------------------------------------------------------- SASL
JAAS_FLAGS = ("required", "requisite", "sufficient", "optional")
_JAAS_TOKEN = re.compile(r'\s*(?:"((?:[^"\\]|\\.)*)"|([^\s=;"]+)|(=)|(;))', re.S)
_JAAS_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f"}


# The login modules Kafka ships (a shaded copy, kafkashaded.org.apache..., is the same class): another is a
# custom Java class kadmin cannot run, whose options are then read as the mechanism's own.
KAFKA_LOGIN_MODULES = ("PlainLoginModule", "ScramLoginModule", "OAuthBearerLoginModule", "Krb5LoginModule")
JAAS_FORM = 'LoginModuleClass required key="value" ...;'


def _jaas_error(fault: str, at: int | None = None) -> ConfigError:
    """One line naming what is wrong with sasl.jaas.config and where (character `at`, 0-based), never its text:
    the value holds the password."""
    where = "" if at is None else f" at character {at + 1}"
    return ConfigError(f"sasl.jaas.config: {fault}{where} ({HIDDEN}); Kafka's form is `{JAAS_FORM}`")


def parse_jaas(jaas: str) -> tuple[str, dict[str, str]]:
    """`sasl.jaas.config` → (login module class, options), as Kafka's JaasConfig reads it: one
    `Class flag key=value ...;` entry, values quoted ("..." with backslash escapes) or bare words.

    A malformed value is a ConfigError naming the fault and its position (character N of the value),
    never the value's text: it holds the password."""
    tokens: list[tuple[str, str, int]] = []  # (kind, text, offset in `jaas`)
    pos = len(jaas) - len(jaas.lstrip())
    end = len(jaas.rstrip())
    while pos < end:
        m = _JAAS_TOKEN.match(jaas, pos, end)
        if m is None:  # only a quote that never closes matches no token
            raise _jaas_error("unterminated quote", pos + len(jaas[pos:end]) - len(jaas[pos:end].lstrip()))
        at = m.end() - len(m.group(0).lstrip())
        pos = m.end()
        if m.group(1) is not None:
            tokens.append(("str", re.sub(r"\\(.)", lambda e: _JAAS_ESCAPES.get(e.group(1), e.group(1)),
                                         m.group(1), flags=re.S), at))
        elif m.group(2) is not None:
            tokens.append(("word", m.group(2), at))
        else:
            tokens.append(("=", "=", at) if m.group(3) else (";", ";", at))
    if not tokens:
        raise _jaas_error("empty")
    if tokens[0][0] != "word":
        raise _jaas_error("no login module class", tokens[0][2])
    if len(tokens) < 2 or tokens[1][1].lower() not in JAAS_FLAGS:
        raise _jaas_error("no control flag (required, requisite, sufficient or optional) after the login module "
                          "class", tokens[1][2] if len(tokens) > 1 else end)
    if tokens[-1][0] != ";":
        raise _jaas_error("a ';' is missing", end)
    extra = next((at for t, _, at in tokens[:-1] if t == ";"), None)
    if extra is not None:
        raise _jaas_error("more than one login module (Kafka allows exactly one): a ';'", extra)
    options: dict[str, str] = {}
    body = tokens[2:-1]
    for i in range(0, len(body), 3):
        triple = body[i:i + 3]
        if len(triple) < 3 or triple[0][0] != "word" or triple[1][0] != "=" or triple[2][0] not in ("word", "str"):
            raise _jaas_error("not a key=value option", triple[0][2])
        options[triple[0][1]] = triple[2][1]
    return tokens[0][1], options


def sasl_settings(props: Mapping[str, str], warn: Warn = _stderr_warn) -> dict[str, Any]:
    mech = props.get("sasl.mechanism", "GSSAPI").strip().upper()
    if mech not in MECHANISMS:
        raise ConfigError(f"sasl.mechanism {mech} is not supported by kadmin ({', '.join(MECHANISMS)})")
    jaas = props.get("sasl.jaas.config", "").strip()
    if not jaas:
        if mech == "GSSAPI":
            return _gssapi(props, {})
        raise ConfigError("sasl.jaas.config is missing: kadmin reads the credentials from it (not from a JAAS "
                          "file named by java.security.auth.login.config)")
    module, options = parse_jaas(jaas)
    for key, value in options.items():
        if is_secret(key):
            remember_secret(value)
    if module.rsplit(".", 1)[-1] not in KAFKA_LOGIN_MODULES:
        warn(f"sasl.jaas.config: the login module {module} is not one of Kafka's "
             f"({', '.join(KAFKA_LOGIN_MODULES)}): kadmin cannot run a Java class, and reads its options as "
             f"sasl.mechanism {mech}'s")
    if mech in ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"):
        user, password = options.get("username"), options.get("password")
        if user is None or password is None:
            raise ConfigError('sasl.jaas.config must carry username="..." and password="..."')
        _utf8(user, "sasl.jaas.config: its username")
        _utf8(password, "sasl.jaas.config: its password")
        return {"sasl_mechanism": mech, "sasl_plain_username": user, "sasl_plain_password": password}
    if mech == "GSSAPI":
        return _gssapi(props, options)
    return _oauthbearer(props, options)


def _gssapi(props: Mapping[str, str], options: Mapping[str, str]) -> dict[str, Any]:
    import importlib.util

    service = props.get("sasl.kerberos.service.name", "").strip() or options.get("serviceName", "")
    if not service:
        raise ConfigError("sasl.mechanism GSSAPI needs sasl.kerberos.service.name (the brokers' Kerberos service, "
                          "e.g. kafka)")
    try:
        found = importlib.util.find_spec("gssapi") is not None
    except (ImportError, ValueError):
        found = False
    if not found:
        raise ConfigError("sasl.mechanism GSSAPI needs the Python gssapi package (pip install gssapi) and "
                          "Kerberos libraries")
    if options.get("useKeyTab", "").lower() == "true" and options.get("keyTab"):
        # MIT Kerberos takes initiator credentials from the client keytab this names (the ticket cache first)
        os.environ.setdefault("KRB5_CLIENT_KTNAME", options["keyTab"])
    return {"sasl_mechanism": "GSSAPI", "sasl_kerberos_service_name": service}


def _oauthbearer(props: Mapping[str, str], options: Mapping[str, str]) -> dict[str, Any]:
    if props.get("sasl.oauthbearer.token.endpoint.url", "").strip():
        raise ConfigError("sasl.oauthbearer.token.endpoint.url: kadmin does not fetch OAuth tokens; it supports "
                          "OAUTHBEARER with Kafka's unsecured login (unsecuredLoginStringClaim_sub) only")
    principal_claim = options.get("unsecuredLoginPrincipalClaimName", "") or "sub"
    if not options.get(f"unsecuredLoginStringClaim_{principal_claim}"):
        raise ConfigError("sasl.mechanism OAUTHBEARER: kadmin supports Kafka's unsecured login only: "
                          f"sasl.jaas.config needs unsecuredLoginStringClaim_{principal_claim}=\"PRINCIPAL\"")
    unsecured_jws(options, 0)  # its options are checked now, not at connection time
    # kafka-python's token-provider base class for sasl_oauth_token_provider, imported from kafka.net (its
    # 3.x networking package). Tested with kafka-python 3.0.12; the range is pinned in pyproject.toml.
    from kafka.net.sasl.oauth import AbstractTokenProvider

    class UnsecuredTokens(AbstractTokenProvider):  # type: ignore[misc]
        def token(self) -> str:
            return unsecured_jws(options, clock())

        def extensions(self) -> dict[str, str]:
            return token_extensions(options)

    return {"sasl_mechanism": "OAUTHBEARER", "sasl_oauth_token_provider": UnsecuredTokens()}


def unsecured_jws(options: Mapping[str, str], now: float) -> str:
    """The unsigned JWS Kafka's OAuthBearerUnsecuredLoginCallbackHandler makes from the JAAS options."""
    try:
        lifetime = int(options.get("unsecuredLoginLifetimeSeconds", "3600"))
    except ValueError:
        raise ConfigError("unsecuredLoginLifetimeSeconds must be a number of seconds") from None
    claims: dict[str, Any] = {"iat": int(now), "exp": int(now) + lifetime}
    for key, value in options.items():
        if key.startswith("unsecuredLoginStringClaim_"):
            claims[key.removeprefix("unsecuredLoginStringClaim_")] = value
        elif key.startswith("unsecuredLoginNumberClaim_"):
            with contextlib.suppress(ValueError):
                claims[key.removeprefix("unsecuredLoginNumberClaim_")] = float(value) if "." in value else int(value)
        elif key.startswith("unsecuredLoginListClaim_") and value:
            sep, rest = value[0], value[1:]
            claims[key.removeprefix("unsecuredLoginListClaim_")] = [v for v in rest.split(sep) if v]

    def b64(doc: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(doc, separators=(",", ":")).encode()).rstrip(b"=").decode()

    return f"{b64({'alg': 'none'})}.{b64(claims)}."


def token_extensions(options: Mapping[str, str]) -> dict[str, str]:
    return {k.removeprefix("unsecuredLoginExtension_"): v for k, v in options.items()
            if k.startswith("unsecuredLoginExtension_")}


def clock() -> float:
    return time.time()

