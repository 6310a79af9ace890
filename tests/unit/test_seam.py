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


def loose_alternatives(annotation: str) -> bool:
    """Is the annotation (a string: `from __future__ import annotations`) Any or object at its top level, alone or
    in a union (`Any | None`, `Optional[Any]`, `Union[int, Any]`)? Inside a container (`dict[str, Any]`: JSON data)
    it is data, not a backend."""
    text = annotation.strip()
    for wrapper in ("Optional[", "typing.Optional[", "Union[", "typing.Union["):
        if text.startswith(wrapper) and text.endswith("]"):
            text = text[len(wrapper):-1].replace(",", "|")
    depth, parts, cur = 0, [], ""
    for ch in text:
        depth += ch == "["
        depth -= ch == "]"
        if ch == "|" and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    return any(part.strip() in ("Any", "typing.Any", "object") for part in parts)


def service_functions() -> list[tuple[str, object]]:
    """Every function and method defined in kadmin.services (classes' own methods included)."""
    out = []
    for m in pkgutil.iter_modules(kadmin.services.__path__):
        mod = import_module(f"kadmin.services.{m.name}")
        for name, fn in inspect.getmembers(mod, inspect.isfunction):
            if fn.__module__ == mod.__name__:
                out.append((f"{mod.__name__}.{name}", fn))
        for cname, cls in inspect.getmembers(mod, inspect.isclass):
            if cls.__module__ != mod.__name__:
                continue
            for name, fn in vars(cls).items():
                fn = getattr(fn, "__func__", fn)
                # its own code (not what dataclasses and Protocol generate: __eq__, __setattr__, __subclasshook__)
                if inspect.isfunction(fn) and fn.__code__.co_filename == mod.__file__:
                    out.append((f"{mod.__name__}.{cname}.{name}", fn))
    return out


def test_no_service_parameter_or_result_is_untyped_or_any() -> None:
    """What a service needs from a backend is in its signatures: no parameter (of a function or a method) without a
    type, none typed Any or object, alone or in a union (`Any | None`), and no result so typed (issue 34 §6)."""
    loose = []
    for where, fn in service_functions():
        sig = inspect.signature(fn)  # type: ignore[arg-type]
        for p in sig.parameters.values():
            if p.name in ("self", "cls") or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                continue
            if p.annotation is inspect.Parameter.empty or loose_alternatives(str(p.annotation)):
                loose.append(f"{where}({p.name}: {p.annotation})")
        if sig.return_annotation is not inspect.Signature.empty and loose_alternatives(str(sig.return_annotation)):
            loose.append(f"{where} -> {sig.return_annotation}")
    assert loose == []


def test_the_guard_reads_unions_and_leaves_containers() -> None:
    assert all(loose_alternatives(a) for a in ("Any", "Any | None", "None | Any", "Optional[Any]", "object",
                                               "Union[int, Any]", "int | object"))
    assert not any(loose_alternatives(a) for a in ("dict[str, Any]", "Mapping[str, Any] | None", "list[Any]",
                                                   "Callable[[Any], None]", "int", "Backend | None"))
