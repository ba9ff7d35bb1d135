"""Compiled kernels without paying numba's start-up in every process.

Every kernel of the library is declared with :func:`njit` from this module instead of numba's.
A kernel is then compiled in one of two ways, with the same source and the same results:

* **ahead of time**: ``python -m skewbench.aot`` (run by ``make install``) replays small
  workloads, records the argument types every kernel is called with from Python, and compiles
  those signatures into extension modules, ``skewbench._kernels_<module>`` (one per source
  module of kernels; kernels declared without numba's runtime, ``_nrt=False``, are compiled
  without it there too).  A process whose calls all
  match a compiled signature never imports numba: numba's import and first-call initialisation
  (loading its type registries, and scipy through them) cost about 1.1 s per process even with
  every kernel in its on-disk cache, which dominated a short CLI replay.
* **just in time** (numba, ``cache=True``), as before, for any call whose argument types were not
  compiled ahead of time, when the build is missing or out of date (built from other
  kernel sources, another numba or numpy), or everywhere when ``SKEWBENCH_KERNELS=jit``.

A call reaches the ahead-of-time code only when every argument's type key (:func:`arg_key`:
dtype, dimensions, layout, writeability and alignment of arrays; the numba type of scalars)
equals the recorded one: the compiled wrappers do not check array types themselves.

Kernels that call each other do so inside numba as usual: numba is taught to type a
:class:`Kernel` as its dispatcher, and sees its options (``inline="always"`` inlines it).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import threading
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np

AOT_PREFIX = "_kernels"  # skewbench/_kernels_<module>*.so: the kernels of one source module each
TABLE_FILE = Path(__file__).with_name("_kernels.json")
MODE = os.environ.get("SKEWBENCH_KERNELS", "auto")  # auto | jit

_LOCK = threading.RLock()
KERNELS: dict[str, "Kernel"] = {}  # every kernel declared, by key (module.qualname); read-only outside
_RECORD: dict[str, dict[tuple[str, ...], tuple[Any, ...]]] | None = None  # build time: numba types
_AOT: dict[str, dict[tuple[str, ...], Callable]] | None = None
_FALLBACKS: dict[str, set[tuple[str | None, ...]]] = {}
_AOT_ERROR = ""  # why the build on disk is not used
_I64 = 1 << 63


def arg_key(v: Any) -> str | None:
    """The numba type of a Python value as a string key (None: a type never compiled ahead)."""
    t = type(v)
    if t is np.ndarray:
        f = v.flags
        layout = "C" if f.c_contiguous else ("F" if f.f_contiguous else "A")
        return f"{v.dtype.str}/{v.ndim}/{layout}/{'w' if f.writeable else 'r'}/{'a' if f.aligned else 'u'}"
    if t is bool or t is np.bool_:
        return "b1"
    if t is int:
        return "i8" if -_I64 <= v < _I64 else ("u8" if 0 <= v < 2 * _I64 else None)
    if t is float:
        return "f8"
    if isinstance(v, np.generic) and v.dtype.kind in "iuf":
        return f"{v.dtype.kind}{v.dtype.itemsize}"  # np.int64(1) and 1 are both numba's int64
    if isinstance(v, tuple) and hasattr(t, "_fields"):  # a NamedTuple of the above
        keys = [arg_key(x) for x in v]
        if None in keys:
            return None
        return f"{t.__module__}.{t.__qualname__}({','.join(keys)})"  # type: ignore[arg-type]
    return None


def sources_digest(modules: list[str]) -> str:
    """A digest of the source files of ``modules`` (what the compiled kernels were built from)."""
    h = hashlib.sha256()
    from importlib.util import find_spec

    for m in sorted(modules):
        spec = find_spec(m)
        if spec is None or spec.origin is None:
            raise ImportError(m)
        h.update(m.encode())
        h.update(Path(spec.origin).read_bytes())
    return h.hexdigest()


def cpu_id() -> str:
    """What the ahead-of-time code was compiled for (it uses this CPU's instructions): the
    processor's model and feature flags."""
    import platform

    text = platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith(("model name", "flags", "Features", "CPU part")):
                    text += line
                if line.strip() == "":
                    break  # the first processor describes them all
    except OSError:
        text += platform.processor()
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def aot_module(source_module: str) -> str:
    """The extension module holding the ahead-of-time kernels of ``source_module``."""
    return f"skewbench.{AOT_PREFIX}_" + source_module.removeprefix("skewbench.").replace(".", "_")


def versions() -> dict[str, str]:
    """numba's and numpy's versions; numba's from its ``dist-info`` directory's name when there
    is one (``importlib.metadata`` costs a CLI process about 12 ms of imports)."""
    from importlib.util import find_spec

    spec = find_spec("numba")
    site = Path(spec.origin).parent.parent if spec is not None and spec.origin else None
    dists = sorted(site.glob("numba-*.dist-info")) if site is not None else []
    if len(dists) == 1:
        numba = dists[0].name.removeprefix("numba-").removesuffix(".dist-info")
    else:
        from importlib.metadata import version

        numba = version("numba")
    return {"numba": numba, "numpy": np.__version__}


@contextlib.contextmanager
def recording() -> Iterator[dict[str, dict[tuple[str, ...], tuple[Any, ...]]]]:
    """While it lasts, record the numba types of every kernel call made from Python (what
    ``python -m skewbench.aot`` compiles): kernel key -> {argument keys: numba types}.  The
    ahead-of-time table is set aside while recording, so every call goes through numba."""
    global _RECORD, _AOT
    saved = _AOT  # a table this process loaded before would answer the calls unrecorded
    _RECORD, _AOT = {}, {}
    try:
        yield _RECORD
    finally:
        _RECORD, _AOT = None, saved


def _load_aot() -> dict[str, dict[tuple[str, ...], Callable]]:
    """The ahead-of-time table, or {} when it is missing, disabled or stale."""
    global _AOT, _AOT_ERROR
    if _AOT is not None:
        return _AOT
    with _LOCK:
        if _AOT is not None:
            return _AOT
        table: dict[str, dict[tuple[str, ...], Callable]] = {}
        if MODE != "jit" and _RECORD is None and TABLE_FILE.exists():
            try:
                meta = json.loads(TABLE_FILE.read_text())
                import importlib

                if (meta["versions"] == versions() and meta["cpu"] == cpu_id()
                        and meta["digest"] == sources_digest(meta["modules"])):
                    for key, entries in meta["kernels"].items():
                        mod = importlib.import_module(aot_module(key.rpartition(".")[0]))
                        table[key] = {tuple(e["args"]): getattr(mod, e["name"]) for e in entries}
                else:
                    _AOT_ERROR = "it does not match the kernels' sources, numba, numpy or this CPU"
            except (ImportError, OSError, ValueError, KeyError, AttributeError) as e:
                _AOT_ERROR = f"it cannot be loaded: {type(e).__name__}: {' '.join(str(e).split())}"
                table = {}
        _AOT = table
        return table


def aot_status() -> str:
    """One line saying whether the ahead-of-time kernels are in use, and if not why."""
    if MODE == "jit":
        return "kernels: numba just in time (SKEWBENCH_KERNELS=jit)"
    if not TABLE_FILE.exists():
        return "kernels: numba just in time (no ahead-of-time build; run `python -m skewbench.aot`)"
    if not _load_aot():
        return (f"kernels: numba just in time (the ahead-of-time build is not used: {_AOT_ERROR}; "
                "run `python -m skewbench.aot`)")
    return f"kernels: ahead of time ({sum(len(v) for v in _AOT.values())} signatures of {len(_AOT)} kernels)"


def fallbacks() -> dict[str, set[tuple[str | None, ...]]]:
    """Calls in this process that found no ahead-of-time signature: kernel -> argument keys."""
    return {k: set(v) for k, v in _FALLBACKS.items()}


class Kernel:
    """A kernel: ahead-of-time code for the argument types compiled at install, numba otherwise.
    ``py_func`` is the plain Python function (what tests step through)."""

    def __init__(self, fn: Callable, opts: dict[str, Any]):
        self.py_func = fn
        # numba's options; numba's inlining pass (``inline="always"``) reads them under this name
        # from a callee: under another, a kernel calling another was compiled with a call where
        # the source asks for inlining (the head-aware router ran 1.5x slower)
        self.targetoptions = opts
        self.key = f"{fn.__module__}.{fn.__qualname__}"
        self.__name__ = fn.__name__
        self.__qualname__ = fn.__qualname__
        self.__module__ = fn.__module__
        self.__doc__ = fn.__doc__
        self.__wrapped__ = fn
        self._dispatcher: Any = None
        KERNELS[self.key] = self

    @property
    def dispatcher(self) -> Any:
        """The numba dispatcher (compiled or loaded from numba's cache on first call)."""
        if self._dispatcher is None:
            with _LOCK:
                if self._dispatcher is None:
                    from numba import njit as numba_njit

                    teach_numba()
                    self._dispatcher = numba_njit(**self.targetoptions)(self.py_func)
        return self._dispatcher

    def __call__(self, *args: Any) -> Any:
        aot = _AOT if _AOT is not None else _load_aot()
        keys = tuple(arg_key(a) for a in args)
        entry = aot.get(self.key)
        if entry is not None:
            fn = entry.get(keys)  # type: ignore[arg-type]
            if fn is not None:
                return fn(*args)
        if _RECORD is not None:
            if None not in keys and keys not in _RECORD.get(self.key, {}):
                from numba import typeof

                _RECORD.setdefault(self.key, {})[keys] = tuple(typeof(a) for a in args)  # type: ignore[index]
        elif aot:
            _FALLBACKS.setdefault(self.key, set()).add(keys)
        return self.dispatcher(*args)

    def __repr__(self) -> str:
        return f"<skewbench kernel {self.key}>"

    def __reduce__(self) -> tuple:
        return _kernel, (self.py_func.__module__, self.py_func.__qualname__)


def _kernel(module: str, qualname: str) -> Kernel:
    """A kernel by name (what a pickled :class:`Kernel` becomes in another process)."""
    import importlib

    return getattr(importlib.import_module(module), qualname)  # type: ignore[no-any-return]


_TAUGHT = False


def teach_numba() -> None:
    """Let numba type a :class:`Kernel` met as a global of the function it compiles as that
    kernel's dispatcher, so kernels call each other inside numba (and inline each other)."""
    global _TAUGHT
    if _TAUGHT:
        return
    from numba.core import types
    from numba.core.typing.typeof import typeof_impl

    @typeof_impl.register(Kernel)
    def _typeof_kernel(val: Kernel, c: Any) -> Any:
        return types.Dispatcher(val.dispatcher)

    _TAUGHT = True


def njit(*args: Any, **opts: Any) -> Any:
    """Declare a kernel (the options are numba's ``njit`` options, ``cache=True`` as a rule)."""
    if args and callable(args[0]) and len(args) == 1 and not opts:
        return Kernel(args[0], {})
    if args:
        raise TypeError("skewbench.jit.njit takes numba options as keywords only")

    def deco(fn: Callable) -> Kernel:
        return Kernel(fn, opts)

    return deco
