"""The seam between services and clusters, as a newcomer reads it (issue 21): typed, and enforced."""

from __future__ import annotations

import inspect
import pkgutil
import tomllib
from importlib import import_module
from pathlib import Path

import kadmin.cluster
import kadmin.services

ROOT = Path(__file__).resolve().parents[2]


def contracts() -> dict[str, dict[str, object]]:
    doc = tomllib.loads((ROOT / "pyproject.toml").read_text())
    return {c["name"]: c for c in doc["tool"]["importlinter"]["contracts"]}


def cluster_modules() -> set[str]:
    return {f"kadmin.cluster.{m.name}" for m in pkgutil.iter_modules(kadmin.cluster.__path__)}


def forbidden(prefix: str) -> set[str]:
    [c] = [c for name, c in contracts().items() if name.startswith(prefix)]
    return set(c["forbidden_modules"])  # type: ignore[call-overload]


def test_the_cli_may_import_only_the_opener_of_the_cluster_layer() -> None:
    """Every cluster module but connect.py is forbidden to the CLI, new ones included (lint-imports enforces it)."""
    assert forbidden("the CLI reaches the cluster layer") == cluster_modules() - {"kadmin.cluster.connect"}


def test_services_may_import_only_the_seam() -> None:
    assert forbidden("services see a cluster") == cluster_modules() - {"kadmin.cluster.base",
                                                                      "kadmin.cluster.metadata_records"}


def test_no_service_parameter_is_untyped_or_any() -> None:
    """What a service needs from a backend is in its signature: no parameter without a type or typed Any."""
    loose = []
    for m in pkgutil.iter_modules(kadmin.services.__path__):
        mod = import_module(f"kadmin.services.{m.name}")
        for name, fn in inspect.getmembers(mod, inspect.isfunction):
            if fn.__module__ != mod.__name__:
                continue
            for p in inspect.signature(fn).parameters.values():
                if p.annotation is inspect.Parameter.empty or p.annotation in ("Any", "object"):
                    loose.append(f"{mod.__name__}.{name}({p.name})")
    assert loose == []
