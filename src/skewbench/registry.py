"""Strategies by family and name: one generic registry over the families' strategy tables.

A family's package holds its table, ``STRATEGIES = {"name": "module:Class", ...}``; a package
outside this repository adds strategies through the Python entry point group
``skewbench.strategies`` with entries named ``<family>.<strategy>``::

    [project.entry-points."skewbench.strategies"]
    "grouping.my-pkg" = "my_package.partitioners:MyPKG"

Tables are read lazily and a class is imported only when it is first asked for.  A strategy
class has a ``name`` (its table key), a one-line ``description``, ``defaults`` (every parameter
with its default value) and ``param_docs`` (every parameter with a one-sentence description).
"""

from __future__ import annotations

import importlib
import inspect
from functools import lru_cache
from typing import Any

from skewbench import families as _families
from skewbench.errors import SkewbenchError

ENTRY_POINT_GROUP = "skewbench.strategies"


@lru_cache(maxsize=None)
def _outside() -> dict[str, dict[str, str]]:
    out: dict[str, dict[str, str]] = {}
    for ep in _families._entry_points(ENTRY_POINT_GROUP):
        family, dot, name = ep.name.partition(".")
        if not dot or not name:
            continue  # not <family>.<strategy>: ignored
        out.setdefault(family, {})[name] = ep.value.strip()
    return out


@lru_cache(maxsize=None)
def _table(family: str) -> dict[str, str]:
    fam = _families.get(family)
    table = fam.builtin_strategies
    for name, target in _outside().get(family, {}).items():
        table.setdefault(name, target)  # a built-in name cannot be taken over
    return table


def table(family: str) -> dict[str, str]:
    """name -> ``"module:Class"`` for every strategy of ``family`` (built-in, then outside)."""
    return dict(_table(family))


def names(family: str) -> list[str]:
    return list(_table(family))


@lru_cache(maxsize=None)
def _load(target: str) -> type:
    mod, _, cls = target.partition(":")
    try:
        obj = importlib.import_module(mod)
        for part in cls.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError) as e:
        raise SkewbenchError(f"cannot load strategy {target}: {e}") from None
    if not inspect.isclass(obj):
        raise SkewbenchError(f"strategy {target} is not a class")
    return obj


def get(family: str, name: str) -> type:
    """The strategy class registered as ``name`` in ``family``."""
    t = _table(family)
    if name not in t:
        raise SkewbenchError(f"unknown {family} strategy '{name}' (known: {', '.join(t)})")
    cls = _load(t[name])
    if getattr(cls, "name", name) != name:
        raise SkewbenchError(f"strategy {t[name]} is registered as '{name}' but names itself '{cls.name}'")
    return cls


def describe(family: str, name: str) -> dict[str, Any]:
    """A strategy's description and parameters: ``{name, description, target, params: [{name,
    default, doc}]}``."""
    cls = get(family, name)
    docs = getattr(cls, "param_docs", {}) or {}
    return {"family": family, "name": name, "description": getattr(cls, "description", ""),
            "target": _table(family)[name],
            "params": [{"name": k, "default": v, "doc": docs.get(k, "")}
                       for k, v in (getattr(cls, "defaults", {}) or {}).items()]}


def refresh() -> None:
    """Forget cached entry points and tables (after installing a plugin in this process)."""
    _families.refresh()
    _outside.cache_clear()
    _table.cache_clear()
    _load.cache_clear()
