"""Strategies by family and name: one generic registry over the families' strategy tables.

A family's package holds its table, ``STRATEGIES = {"name": "module:Class", ...}``; a package
outside this repository adds strategies through the Python entry point group
``skewbench.strategies`` with entries named ``<family>.<strategy>``::

    [project.entry-points."skewbench.strategies"]
    "grouping.my-pkg" = "my_package.partitioners:MyPKG"

Tables are read lazily and a class is imported only when it is first asked for.  A strategy
class has a ``name`` (its table key), a one-line ``description``, ``defaults`` (every parameter
with its default value) and ``param_docs`` (every parameter with a one-sentence description).

Whatever else a tool needs to know per strategy is a class attribute of the strategy too (for
example ``exercise``, the parameter sets the conformance test runs besides the defaults, and
``bench_target``, the benchmark's target ratio): a tool reads it for every strategy of a family
with :func:`per_strategy`, so no list outside the strategy's module names it.
"""

from __future__ import annotations

import importlib
import inspect
import math
import numbers
from functools import lru_cache
from typing import Any, ClassVar

from skewbench import families as _families
from skewbench.errors import SkewbenchError, shown

ENTRY_POINT_GROUP = "skewbench.strategies"


@lru_cache(maxsize=None)
def _outside() -> dict[str, dict[str, str]]:
    out: dict[str, dict[str, str]] = {}
    for ep in _families.entry_points(ENTRY_POINT_GROUP):
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


def per_strategy(family: str, attribute: str, default: Any = None) -> dict[str, Any]:
    """name -> the class attribute ``attribute`` of every strategy of ``family`` (``default`` for a
    class without it), in :func:`names`' order; loads every strategy class of the family.  The
    lists of strategies that tools keep (the conformance test's parameter sets, the benchmark's
    rows, the ahead-of-time build's replays) are derived from it."""
    return {name: getattr(get(family, name), attribute, default) for name in names(family)}


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
    #: parameter sets the conformance test (tests/integration/test_conformance.py) runs besides
    #: the defaults in its split check, each one that reaches state the defaults do not on the
    #: test's small dataset (the test requires each to behave differently from the defaults)
    exercise: ClassVar[list[dict[str, Any]]] = []
    #: the kernel benchmark's target for the strategy's simulator (benchmarks/bench_grouping.py:
    #: its time at most this many times the baseline's); None: none is checked
    bench_target: ClassVar[float | None] = None

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
        """Parameter ``key`` is a number in range (infinities allowed): :func:`check_number`."""
        check_number(f"{self.name}: parameter {key}", self.params[key], lo, hi, integer=integer, low_open=open_lo,
                     finite=False)

    def _choice(self, key: str, choices: tuple[Any, ...]) -> None:
        if self.params[key] not in choices:
            raise SkewbenchError(f"{self.name}: parameter {key} must be one of {list(choices)}, "
                                 f"got {shown(self.params[key])}")


def check_number(name: str, value: Any, low: float | None = None, high: float | None = None,
                 integer: bool = False, low_open: bool = False, finite: bool = True) -> None:
    """Raise a clear :class:`SkewbenchError` (``NAME must be a number in [LOW, HIGH], got
    VALUE``) unless ``value`` is a real number (a bool is not; numpy's numbers are), not NaN,
    finite unless ``finite=False``, integral if ``integer``, and at least ``low`` (above it if
    ``low_open``) and at most ``high`` (``None``: no bound)."""
    ok = isinstance(value, numbers.Real) and not isinstance(value, bool)
    if ok:
        v = float(value)
        ok = (math.isfinite(v) if finite else not math.isnan(v)) and (not integer or v.is_integer())
    if ok and low is not None:
        ok = value > low if low_open else value >= low
    if ok and high is not None:
        ok = value <= high
    if not ok:
        rng = f"{'(' if low_open else '['}{low if low is not None else '-inf'}, {high if high is not None else 'inf'}]"
        raise SkewbenchError(f"{name} must be {'an integer' if integer else 'a number'} in {rng}, got {shown(value)}")
