"""Connection settings from flags, environment variables and the contexts file; each value knows its source.

Precedence: command-line flag > environment variable > context (`--context`, `KADMIN_CONTEXT`, or the
file's `current-context`) > built-in default.

The contexts file is `$XDG_CONFIG_HOME/kadmin/config.toml` (default `~/.config/kadmin/config.toml`):

    current-context = "prod"

    [contexts.prod]
    zookeeper = "zk1:2181,zk2:2181,zk3:2181/kafka"
    zk-auth = "@/etc/kadmin/zk-digest"      # SCHEME:CREDENTIALS, or @FILE holding it
    bootstrap-server = "kafka1:9092"
    command-config = "/etc/kadmin/client.properties"
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import tomllib

from kadmin.errors import ConfigError, UsageError

DEFAULT_TIMEOUT = 10.0
MAX_TIMEOUT = 365 * 24 * 3600.0  # a year
CONTEXT_KEYS = {
    "zookeeper",
    "zk-auth",
    "zk-tls",
    "zk-tls-ca",
    "zk-tls-cert",
    "zk-tls-key",
    "bootstrap-server",
    "bootstrap-controller",
    "command-config",
    "timeout",
}


@dataclass(frozen=True)
class Sourced:
    value: Any
    source: str  # "flag", "env KADMIN_...", "context NAME", "default"


@dataclass(frozen=True)
class ConnectionSettings:
    values: Mapping[str, Sourced] = field(default_factory=dict)

    def get(self, key: str, default: Any = None) -> Any:
        v = self.values.get(key)
        return default if v is None else v.value

    def source(self, key: str) -> str | None:
        v = self.values.get(key)
        return None if v is None else v.source

    @property
    def timeout(self) -> float:
        """Finite and positive, whichever source it came from (a TOML context may say `nan` or `inf`)."""
        value = self.get("timeout", DEFAULT_TIMEOUT)
        try:
            t = float(value)
        except (TypeError, ValueError):
            t = math.nan
        if isinstance(value, bool) or not math.isfinite(t) or not 0 < t <= MAX_TIMEOUT:
            raise ConfigError(f"timeout {value!r} (from {self.source('timeout')}) is not a number of seconds "
                              f"in (0, {MAX_TIMEOUT:g}]")
        return t

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
    try:
        doc = tomllib.loads(path.read_text())
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
        for key, value in ctx.items():
            if key not in values:
                values[key] = Sourced(value, f"context {name}")
    if "timeout" not in values:
        values["timeout"] = Sourced(DEFAULT_TIMEOUT, "default")
    return ConnectionSettings(values)


def read_secret(value: str) -> str:
    """`@FILE` reads the value from FILE (so no secret sits on a command line); otherwise the value."""
    if not value.startswith("@"):
        return value
    p = Path(value[1:]).expanduser()
    try:
        return p.read_text().strip()
    except OSError as e:
        raise ConfigError(f"cannot read credentials file {p}: {e.strerror}") from e


def parse_auth(value: str) -> tuple[str, str]:
    """`SCHEME:CREDENTIALS` (for example `digest:user:password`)."""
    secret = read_secret(value)
    scheme, sep, cred = secret.partition(":")
    if not sep or not scheme or not cred:
        raise UsageError("--zk-auth takes SCHEME:CREDENTIALS, for example digest:user:password (or @FILE)")
    return scheme, cred


def read_properties(path: str) -> dict[str, str]:
    """A Java properties file (Kafka's --command-config): `key=value` or `key: value`, # and ! comments,
    backslash line continuations."""
    p = Path(path).expanduser()
    try:
        text = p.read_text()
    except OSError as e:
        raise ConfigError(f"--command-config {p}: cannot read: {e.strerror}") from e
    props: dict[str, str] = {}
    logical = ""
    for raw in text.splitlines():
        line = raw.strip() if not logical else raw.lstrip()
        if not logical and (not line or line[0] in "#!"):
            continue
        if line.endswith("\\") and not line.endswith("\\\\"):
            logical += line[:-1]
            continue
        logical += line
        key, value = _split_property(logical)
        props[key] = value
        logical = ""
    if logical:
        key, value = _split_property(logical)
        props[key] = value
    return props


def _split_property(line: str) -> tuple[str, str]:
    """The key ends at the first `=`, `:` or white space; one separator and the blanks around it go."""
    m = re.match(r"([^=:\s]*)\s*[=:]?\s*(.*)$", line, re.S)
    assert m is not None  # the pattern matches any string
    return m.group(1), m.group(2)
