"""Strategy families: one light entry each, pointing at the family's package.

A family is a package with fixed module names (see ``docs/extending.md``)::

    <package>/__init__.py   STRATEGIES (name -> "module:Class"), DEFAULT_STRATEGIES; light
    <package>/params.py     the nightly Params section: PARAMS, check(section), job_args(section); light
    <package>/schema.py     COORDINATES, the results tables (SUMMARY, SERIES) and METRICS
    <package>/expectations.py   the family's Great Expectations (derived columns, expectations)
    <package>/report.py     its report figures
    <package>/cli.py        its ``skewbench replay <family>`` command (``command``)
    <package>/engine.py     its replay engine (called by its command)

The pipeline, the command line, validation, tracking, reports and the Airflow link plugin
iterate over :func:`families` and ask each family's modules, never naming one.  Built-in families
are the entries of :data:`BUILTIN`; a package outside this repository adds one through the Python
entry point group ``skewbench.families`` (``name = "package"``).

This module imports nothing heavy: the Airflow DAGs read it at parse time.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from functools import lru_cache
from types import ModuleType
from typing import Any

from skewbench.errors import SkewbenchError

ENTRY_POINT_GROUP = "skewbench.families"
#: the fixed module names of a family package
MODULES = ("params", "schema", "expectations", "report", "cli", "engine")


@dataclass(frozen=True)
class Family:
    """A family's entry: its name and package (dotted), read lazily."""

    name: str
    package: str

    def module(self, role: str = "") -> ModuleType:
        """The family's package (``role=""``) or one of its :data:`MODULES`."""
        if role and role not in MODULES:
            raise ValueError(f"unknown family module {role!r}; one of {MODULES}")
        dotted = f"{self.package}.{role}" if role else self.package
        try:
            return importlib.import_module(dotted)
        except ModuleNotFoundError as e:
            if e.name in (dotted, self.package):
                raise SkewbenchError(f"family '{self.name}': module {dotted} not found") from None
            raise

    def attr(self, role: str, name: str, default: Any = ...) -> Any:
        mod = self.module(role)
        if default is ...:
            try:
                return getattr(mod, name)
            except AttributeError:
                raise SkewbenchError(f"family '{self.name}': {mod.__name__} defines no {name}") from None
        return getattr(mod, name, default)

    @property
    def description(self) -> str:
        doc = (self.module().__doc__ or "").strip()
        return doc.splitlines()[0] if doc else self.name

    @property
    def builtin_strategies(self) -> dict[str, str]:
        """The package's own strategy table (name -> ``"module:Class"``)."""
        return dict(self.attr("", "STRATEGIES"))

    @property
    def default_strategies(self) -> tuple[str, ...]:
        return tuple(self.attr("", "DEFAULT_STRATEGIES", tuple(self.builtin_strategies)))


#: the built-in families
BUILTIN: dict[str, Family] = {
    "grouping": Family("grouping", "skewbench.grouping"),
    "shedding": Family("shedding", "skewbench.shedding"),
    "allocation": Family("allocation", "skewbench.allocation"),
}


def entry_points(group: str) -> list[Any]:
    """The installed packages' entry points of ``group``, by name (read anew on every call)."""
    from importlib.metadata import entry_points as installed

    return sorted(installed(group=group), key=lambda e: e.name)


@lru_cache(maxsize=None)
def _families() -> dict[str, Family]:
    out = dict(BUILTIN)
    for ep in entry_points(ENTRY_POINT_GROUP):
        if ep.name in out:
            continue  # a built-in name cannot be taken over
        out[ep.name] = Family(ep.name, ep.value.strip())
    return out


def families() -> dict[str, Family]:
    """Every family: built-ins first, then entry points, by name."""
    return dict(_families())


def get(name: str) -> Family:
    if name in BUILTIN:  # without reading the entry points: no outside entry can take it over
        return BUILTIN[name]
    try:
        return _families()[name]
    except KeyError:
        raise SkewbenchError(f"unknown family '{name}' (known: {', '.join(_families())})") from None


def refresh() -> None:
    """Forget the cached entry points (after installing a plugin in this process)."""
    _families.cache_clear()
