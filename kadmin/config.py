"""Connection settings from flags, environment variables and the contexts file; each value knows its source.

Precedence: command-line flag > environment variable > context (`--context`, `KADMIN_CONTEXT`, or the
file's `current-context`) > built-in default. The cluster's address (zookeeper, bootstrap-server,
bootstrap-controller) is taken whole from the first of those sources that gives any of it: a
`--bootstrap-server` flag is not mixed with a KADMIN_ZOOKEEPER or a context's zookeeper (which would
choose ZooKeeper mode), nor a `-z` flag with a KADMIN_BOOTSTRAP_SERVER. `-v` says what was left out.

The contexts file is `$XDG_CONFIG_HOME/kadmin/config.toml` (default `~/.config/kadmin/config.toml`):

    current-context = "prod"

    [contexts.prod]
    zookeeper = "zk1:2181,zk2:2181,zk3:2181/kafka"
    zk-auth = "@/etc/kadmin/zk-digest"      # SCHEME:CREDENTIALS, or @FILE holding it
    zk-tls = true                           # with zk-tls-ca, zk-tls-cert, zk-tls-key (PEM files)
    zk-tls-no-hostname-check = false        # true: accept a certificate that does not name the host
    bootstrap-server = "kafka1:9092"
    command-config = "/etc/kadmin/client.properties"
    connect-timeout = 10                    # seconds; `timeout` is its deprecated old name
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kadmin.errors import ConfigError, UsageError
from kadmin.inputs import InputRefused, read_input

DEFAULT_TIMEOUT = 10.0
MAX_TIMEOUT = 365 * 24 * 3600.0  # a year
CONTEXT_KEYS = {
    "zookeeper",
    "zk-auth",
    "zk-tls",
    "zk-tls-ca",
    "zk-tls-cert",
    "zk-tls-key",
    "zk-tls-no-hostname-check",
    "bootstrap-server",
    "bootstrap-controller",
    "command-config",
    "connect-timeout",
    "timeout",  # the deprecated name of connect-timeout (until 1.0)
}
# The keys that name the cluster and so choose the mode (kadmin/cluster/connect.py open_backend).
ADDRESS_KEYS = ("zookeeper", "bootstrap-server", "bootstrap-controller")


@dataclass(frozen=True)
class Sourced:
    value: Any
    source: str  # "flag", "env KADMIN_...", "context NAME", "default"


def rank(source: str) -> int:
    """The precedence of a source: 0 flag, 1 environment variable, 2 context, 3 default."""
    for i, prefix in enumerate(("flag", "env", "context")):
        if source.startswith(prefix):
            return i
    return 3


@dataclass(frozen=True)
class ConnectionSettings:
    values: Mapping[str, Sourced] = field(default_factory=dict)
    # what resolve() left out and why, said with -v; and deprecations, always said on stderr
    notes: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()

    def get(self, key: str, default: Any = None) -> Any:
        v = self.values.get(key)
        return default if v is None else v.value

    def source(self, key: str) -> str | None:
        v = self.values.get(key)
        return None if v is None else v.source

    @property
    def connect_timeout(self) -> float:
        """--connect-timeout: finite and positive, whichever source it came from (a TOML context may say
        `nan` or `inf`). A command's own --timeout (a wait's deadline) is another thing: it can only
        shorten this one."""
        value = self.get("connect-timeout", DEFAULT_TIMEOUT)
        try:
            t = float(value)
        except (TypeError, ValueError):
            t = math.nan
        if isinstance(value, bool) or not math.isfinite(t) or not 0 < t <= MAX_TIMEOUT:
            raise ConfigError(f"connect-timeout {value!r} (from {self.source('connect-timeout')}) is not a number "
                              f"of seconds in (0, {MAX_TIMEOUT:g}]")
        return t

    def flag(self, key: str) -> bool:
        """An on/off setting: a TOML boolean (or true/false/1/0/yes/no from a flag's environment variable)."""
        value = self.get(key, False)
        if isinstance(value, bool):
            return value
        text = str(value).strip().lower()
        if text in ("true", "1", "yes", "on"):
            return True
        if text in ("false", "0", "no", "off", ""):
            return False
        raise ConfigError(f"{key} {value!r} (from {self.source(key)}) is not true or false")

    def describe(self) -> list[str]:
        return [f"{k} = {v.value!r} (from {v.source})" for k, v in sorted(self.values.items()) if "auth" not in k] + [
            f"{k} = *** (from {v.source})" for k, v in sorted(self.values.items()) if "auth" in k
        ]


def config_path(env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    base = env.get("XDG_CONFIG_HOME") or str(Path(env.get("HOME", "~")).expanduser() / ".config")
    return Path(base) / "kadmin" / "config.toml"


def load_contexts(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    import tomllib  # only with a contexts file: most runs have none (issue 13 §2)

    try:  # checked as a named file is (a FIFO there would hang every command; a device, read forever)
        doc = tomllib.loads(read_input(path, "").decode())
    except InputRefused as e:
        raise ConfigError(f"{path}: {e.reason}") from e
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise ConfigError(f"{path}: not valid TOML: {e}") from e
    except OSError as e:
        raise ConfigError(f"{path}: cannot read: {e.strerror}") from e
    return doc


def resolve(
    given: Mapping[str, Sourced | None],
    context: str | None,
    env: Mapping[str, str] | None = None,
) -> ConnectionSettings:
    """Merge explicit values (flags/env, already tagged with their source) with a context."""
    env = os.environ if env is None else env
    values: dict[str, Sourced] = {k: v for k, v in given.items() if v is not None and v.value is not None}
    warnings: list[str] = []
    path = config_path(env)
    doc = load_contexts(path)
    name = context or env.get("KADMIN_CONTEXT") or doc.get("current-context")
    if name:
        contexts = doc.get("contexts", {})
        if not isinstance(contexts, dict) or name not in contexts:
            known = ", ".join(sorted(contexts)) if isinstance(contexts, dict) and contexts else "none"
            raise ConfigError(f"unknown context {name!r} in {path} (known: {known})")
        ctx = contexts[name]
        unknown = set(ctx) - CONTEXT_KEYS
        if unknown:
            raise ConfigError(f"context {name!r} in {path}: unknown keys {', '.join(sorted(unknown))}")
        if "timeout" in ctx:
            if "connect-timeout" in ctx:
                raise ConfigError(f"context {name!r} in {path}: give connect-timeout only (timeout is its "
                                  "deprecated old name)")
            warnings.append(f"context {name!r} in {path}: the key timeout is deprecated, rename it "
                            "connect-timeout")
        for key, value in ctx.items():
            key = "connect-timeout" if key == "timeout" else key
            if key not in values:
                values[key] = Sourced(value, f"context {name}")
    if "connect-timeout" not in values:
        values["connect-timeout"] = Sourced(DEFAULT_TIMEOUT, "default")
    return ConnectionSettings(*_one_address(values), warnings=tuple(warnings))


def _one_address(values: dict[str, Sourced]) -> tuple[dict[str, Sourced], tuple[str, ...]]:
    """Keep the cluster's address from its highest-precedence source only, and say what went.

    A flag-given --bootstrap-server with KADMIN_ZOOKEEPER set is a Kafka-protocol connection, not
    ZooKeeper mode; -z given as a flag drops a KADMIN_BOOTSTRAP_SERVER or a context's bootstrap-server.
    Values from one source are kept together (-z and --bootstrap-server both as flags: ZooKeeper mode,
    min.insync.replicas from the brokers). Credentials and TLS settings are not addresses: they stay.
    """
    given = [k for k in ADDRESS_KEYS if k in values]
    if not given:
        return values, ()
    best = min(rank(values[k].source) for k in given)
    dropped = [k for k in given if rank(values[k].source) > best]
    if not dropped:
        return values, ()
    winner = next(k for k in given if rank(values[k].source) == best)
    src = values[winner].source
    notes = tuple(f"ignored {k} = {values[k].value!r} from {values[k].source}: {winner} came from "
                  f"{'a flag' if src == 'flag' else src}, which takes precedence" for k in dropped)
    return {k: v for k, v in values.items() if k not in dropped}, notes


# ------------------------------------------------------------------------------------------- secrets
# Words that make a setting secret: Kafka's *.password keys (ssl.keystore.password, ssl.key.password, ...),
# OAuth client secrets and tokens, passphrases; sasl.jaas.config and ssl.keystore.key are secret as a whole.
SECRET_WORDS = ("password", "passphrase", "secret", "token", "credential")
SECRET_KEYS = frozenset({"sasl.jaas.config", "ssl.keystore.key", "zk-auth"})
HIDDEN = "value hidden"

_remembered: set[str] = set()


def is_secret(key: str) -> bool:
    """Whether a setting's value (a --command-config property, a JAAS option, zk-auth) may hold a secret: a
    message about it names the key and a position, never the value."""
    k = key.lower()
    return k in SECRET_KEYS or any(word in k for word in SECRET_WORDS)


def remember_secret(value: str) -> None:
    """A secret read from the settings, for `scrub`: the last resort should a message ever quote it."""
    if len(value.strip()) >= 8:  # a shorter one ("kafka", "admin") is a word of ordinary messages too
        _remembered.add(value.strip())


def scrub(text: str) -> str:
    """`text` with every remembered secret replaced by ***. Messages are built not to quote a secret in the
    first place (each names the setting and a position instead); this catches one a library might quote."""
    for secret in sorted(_remembered, key=len, reverse=True):
        text = text.replace(secret, "***")
    return text


def forget_secrets() -> None:
    _remembered.clear()


# an option of a JAAS line, `name=value` or `name="value"` (compiled by `re` when a sasl.jaas.config is first read)
_JAAS_VALUE = r'([\w.-]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"?|([^\s;"]+))'


def _remember_property(key: str, value: str) -> None:
    if not is_secret(key):
        return
    remember_secret(value)
    if key.lower() == "sasl.jaas.config":  # its secret options, found leniently: the value may be malformed
        for m in re.finditer(_JAAS_VALUE, value, re.S):
            if is_secret(m.group(1)):
                remember_secret(m.group(2) if m.group(2) is not None else m.group(3))


def read_secret(value: str) -> str:
    """`@FILE` reads the value from FILE (so no secret sits on a command line); otherwise the value."""
    if not value.startswith("@"):
        return value
    p = Path(value[1:]).expanduser()
    try:
        data = read_input(p, "--zk-auth")
    except InputRefused as e:
        raise UsageError(f"--zk-auth @{p}: {e.reason}") from None
    except OSError as e:
        raise ConfigError(f"cannot read credentials file {p}: {e.strerror}") from e
    try:
        return data.decode("utf-8").strip()
    except UnicodeDecodeError as e:
        raise ConfigError(f"credentials file {p}: not UTF-8 text ({e.reason} at byte {e.start}; {HIDDEN})") from e


def parse_auth(value: str) -> tuple[str, str]:
    """`SCHEME:CREDENTIALS` (for example `digest:user:password`). A malformed value is a usage error that
    names the fault and its position (character N of the value, or of the @FILE's text), never the value."""
    secret = read_secret(value)
    what = f"--zk-auth {value}" if value.startswith("@") else "--zk-auth"
    remember_secret(secret)
    scheme, sep, cred = secret.partition(":")
    remember_secret(cred)
    usage = "give SCHEME:CREDENTIALS, for example digest:user:password (or @FILE)"
    bad = next((i for i, c in enumerate(secret) if ord(c) < 32 or ord(c) == 127), None)
    if not secret:
        raise UsageError(f"{what}: empty: {usage}")
    if bad is not None:
        raise UsageError(f"{what}: a control character (a line break?) at character {bad + 1} ({HIDDEN}): {usage}")
    if not sep:
        raise UsageError(f"{what}: no ':' after the scheme ({HIDDEN}): {usage}")
    if not scheme:
        raise UsageError(f"{what}: no scheme before the ':' at character 1 ({HIDDEN}): {usage}")
    if not cred:
        raise UsageError(f"{what}: no credentials after the ':' at character {len(scheme) + 1} ({HIDDEN}): {usage}")
    if scheme == "digest" and ":" not in cred:
        raise UsageError(f"{what}: digest credentials are USER:PASSWORD, and there is no ':' after the user "
                         f"({HIDDEN})")
    return scheme, cred


def read_properties(path: str) -> dict[str, str]:
    """A Java properties file (Kafka's --command-config), read as Kafka's tools read it.

    Kafka loads the file with `java.util.Properties.load(InputStream)` (Utils.loadProps): the bytes
    are ISO-8859-1, and the syntax is Properties' own; `parse_properties` follows it rule by rule.
    """
    p = Path(path).expanduser()
    try:
        data = read_input(p, "--command-config")
    except OSError as e:
        raise ConfigError(f"--command-config {p}: cannot read: {e.strerror}") from e
    try:
        props = parse_properties(data.decode("iso-8859-1"))
    except ValueError as e:
        raise ConfigError(f"--command-config {p}: {e}") from e
    for key, value in props.items():
        _remember_property(key, value)
    return props


_PROP_BLANK = " \t\f"


def _logical_lines(text: str) -> list[tuple[int, str]]:
    """java.util.Properties.LineReader: the logical lines, comments and blank lines dropped, each with the
    offset in `text` of its first character (for the line number of an error).

    Natural lines end at \\n, \\r or \\r\\n. Leading blanks (space, tab, form feed) go. A line whose
    first character is # or ! is a comment (also when a continuation left the logical line empty so
    far). An odd number of backslashes at the end continues the line on the next one, whose leading
    blanks go; the continuing backslash goes too, also at the end of the file.
    """
    lines: list[tuple[int, str]] = []
    buf: list[str] = []
    start = 0  # the offset of the logical line's first character
    skip_blank = True  # at the start of a natural line
    appended = False  # that natural line continues a logical one
    backslash = False  # the previous character is an unescaped backslash
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        i += 1
        if skip_blank:
            if c in _PROP_BLANK:
                continue
            if not appended and c in "\r\n":
                continue
            skip_blank = False
            appended = False
        if not buf and c in "#!":
            while i < n and text[i] not in "\r\n":
                i += 1
            skip_blank = True
            continue
        if c not in "\r\n":
            if not buf:
                start = i - 1
            buf.append(c)
            backslash = (not backslash) if c == "\\" else False
            continue
        if not buf:
            skip_blank = True
            continue
        if i >= n:  # the last character of the file ends the line
            break
        if backslash:
            buf.pop()
            skip_blank, appended, backslash = True, True, False
            if c == "\r" and text[i] == "\n":
                i += 1
            continue
        lines.append((start, "".join(buf)))
        buf = []
        skip_blank = True
    if buf:
        if backslash:
            buf.pop()
        lines.append((start, "".join(buf)))
    return lines


class _BadEscape(ValueError):
    """A malformed \\uXXXX: where it starts in the text unescaped (0-based) and the characters after \\u."""

    def __init__(self, offset: int, digits: str) -> None:
        super().__init__("malformed \\uxxxx escape")
        self.offset, self.digits = offset, digits


def _unescape(s: str) -> str:
    """Properties.loadConvert: \\t \\n \\r \\f, \\uXXXX (UTF-16 code units), any other escaped char is itself."""
    out: list[str] = []
    i, n = 0, len(s)
    while i < n:
        c = s[i]
        i += 1
        if c != "\\" or i >= n:
            out.append(c)
            continue
        c = s[i]
        i += 1
        if c == "u":
            digits = s[i:i + 4]
            if len(digits) < 4 or any(d not in "0123456789abcdefABCDEF" for d in digits):
                raise _BadEscape(i - 2, digits)
            out.append(chr(int(digits, 16)))
            i += 4
        else:
            out.append({"t": "\t", "n": "\n", "r": "\r", "f": "\f"}.get(c, c))
    joined = "".join(out)
    # \\uD83D\\uDE00 is one character, as in Java's UTF-16 strings; a lone surrogate stays as it is
    return joined.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass") if any(
        "\ud800" <= ch <= "\udfff" for ch in joined) else joined


def parse_properties(text: str) -> dict[str, str]:
    """The key/value pairs of a properties text, as java.util.Properties.load gives them.

    The key ends at the first unescaped `=`, `:` or blank; blanks, then at most one `=`/`:` (if the
    key did not end at one), then blanks separate it from the value. Escapes are then decoded in both.
    A later key replaces an earlier one. Raises ValueError for a malformed \\uXXXX, naming its line, its key and
    its position; the escape itself only when the key's value is not a secret (`is_secret`).
    """
    props: dict[str, str] = {}
    for start, line in _logical_lines(text):
        n = len(line)
        key_end, value_start, has_sep, backslash = 0, n, False, False
        while key_end < n:
            c = line[key_end]
            if c in "=:" and not backslash:
                value_start, has_sep = key_end + 1, True
                break
            if c in _PROP_BLANK and not backslash:
                value_start = key_end + 1
                break
            backslash = (not backslash) if c == "\\" else False
            key_end += 1
        while value_start < n:
            c = line[value_start]
            if c not in _PROP_BLANK:
                if not has_sep and c in "=:":
                    has_sep = True
                else:
                    break
            value_start += 1
        try:
            key = _unescape(line[:key_end])
        except _BadEscape as e:  # a key is no secret, but a misplaced secret could read as one: no digits
            raise ValueError(f"line {_line_number(text, start)}: malformed \\uxxxx escape at character "
                             f"{e.offset + 1} of the key (java.util.Properties refuses it too)") from None
        try:
            props[key] = _unescape(line[value_start:])
        except _BadEscape as e:
            secret = is_secret(key)
            escape = "" if secret else f"\\u{e.digits} "
            raise ValueError(f"line {_line_number(text, start)}: {key}: malformed \\uxxxx escape {escape}at "
                             f"character {e.offset + 1} of its value ({HIDDEN + '; ' if secret else ''}"
                             "java.util.Properties refuses it too)") from None
    return props


def _line_number(text: str, offset: int) -> int:
    """The natural line (1-based) `offset` is on: \\n, \\r and \\r\\n each end one."""
    return len(re.findall(r"\r\n|\r|\n", text[:offset])) + 1
