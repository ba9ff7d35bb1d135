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
import math
from functools import lru_cache
from typing import Any, ClassVar

from skewbench import families as _families
from skewbench.errors import SkewbenchError, shown

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


@lru_cache(maxsize=None)
def _builtin(family: str) -> dict[str, str]:
    return _families.get(family).builtin_strategies


def get(family: str, name: str) -> type:
    """The strategy class registered as ``name`` in ``family`` (a built-in name is found without
    reading the installed packages' entry points: no outside entry can take it over)."""
    t = _builtin(family)
    if name not in t:
        t = _table(family)
    if name not in t:
        raise SkewbenchError(f"unknown {family} strategy {shown(name)} (known: {', '.join(t)})")
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
    _builtin.cache_clear()
    _load.cache_clear()


class ParamStrategy:
    """A base for strategy classes constructed from their parameters alone (``Cls(**params)``):
    unknown names raise :class:`SkewbenchError`, defaults are filled in, and ``_check`` validates
    values with :meth:`_number` and :meth:`_choice` (one clear message each).  Families whose
    strategies take their parameters this way (shedding, allocation) subclass it."""

    name: ClassVar[str] = ""
    description: ClassVar[str] = ""
    extension: ClassVar[bool] = False
    defaults: ClassVar[dict[str, Any]] = {}
    param_docs: ClassVar[dict[str, str]] = {}

    def __init__(self, **params: Any):
        unknown = set(params) - set(self.defaults)
        if unknown:
            raise SkewbenchError(f"{self.name}: unknown parameter(s) [{', '.join(shown(u) for u in sorted(unknown))}]; it takes "
                                 f"{sorted(self.defaults) or 'none'}")
        self.params = {**self.defaults, **params}
        self._check()

    def _check(self) -> None:
        pass

    def _number(self, key: str, lo: float | None = None, hi: float | None = None, integer: bool = False,
                open_lo: bool = False) -> None:
        v = self.params[key]
        ok = isinstance(v, (int, float)) and not isinstance(v, bool) and not (isinstance(v, float) and math.isnan(v))
        if ok and integer:
            ok = float(v).is_integer()
        if ok and lo is not None:
            ok = v > lo if open_lo else v >= lo
        if ok and hi is not None:
            ok = v <= hi
        if not ok:
            rng = f"{'(' if open_lo else '['}{lo if lo is not None else '-inf'}, {hi if hi is not None else 'inf'}]"
            raise SkewbenchError(f"{self.name}: parameter {key} must be {'an integer' if integer else 'a number'} "
                                 f"in {rng}, got {shown(v)}")

    def _choice(self, key: str, choices: tuple[Any, ...]) -> None:
        if self.params[key] not in choices:
            raise SkewbenchError(f"{self.name}: parameter {key} must be one of {list(choices)}, "
                                 f"got {shown(self.params[key])}")
