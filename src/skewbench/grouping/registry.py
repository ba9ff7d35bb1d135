"""Strategy lookup by name.  A new strategy is one module plus one entry in :data:`MODULES`."""

from __future__ import annotations

import importlib

from skewbench.errors import SkewbenchError
from skewbench.grouping.base import REGISTRY, Strategy

#: modules whose import registers strategies
MODULES = (
    "skewbench.grouping.dchoices",
    "skewbench.grouping.osg",
)

_loaded = False


def _load() -> None:
    global _loaded
    if not _loaded:
        for m in MODULES:
            importlib.import_module(m)
        _loaded = True


def names() -> list[str]:
    _load()
    return list(REGISTRY)


def get(name: str) -> type[Strategy]:
    _load()
    try:
        return REGISTRY[name]
    except KeyError:
        raise SkewbenchError(f"unknown strategy '{name}' (known: {', '.join(REGISTRY)})") from None
