"""The grouping family's one interface: a stateful router, its registry and shared pieces.

A *strategy* routes the tuples of one edge of a stream application from ``sources`` upstream
instances to ``workers`` downstream instances.  Tuple ``seq`` belongs to source ``seq % sources``
(the papers' round-robin shuffle into sources), and every source decides with its own local
state only.  A strategy object holds that state for all sources and keeps it across calls to
:meth:`Strategy.route`, so a stream can be fed in batches of any size, and a Spark task that
owns one source can feed only that source's tuples: the assignments are the same either way.

Times are milliseconds inside the grouping family (arrival times ``ts`` and execution times
``cost``); the engine converts the dataset's seconds.

Adding a strategy: write a module with a :class:`Strategy` subclass and add one row to the
family's table, :data:`skewbench.grouping.STRATEGIES` (``docs/extending.md``).  What the project's
tools need of a strategy (the conformance test's parameter sets, the benchmark's target, the
engine test's case, the ahead-of-time build's settings) are attributes of the subclass, with
defaults in :class:`Strategy`: no list elsewhere names it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from skewbench.jit import njit

from skewbench.errors import SkewbenchError
from skewbench.hashing import mix64
from skewbench.registry import check_number  # the strategies' parameter checks (one message for every family)
from skewbench.simulation import WorkerModel

__all__ = ["Batch", "Strategy", "WorkerModel", "batch_arrays", "check_number", "hash_choice", "hash_choice_py",
           "hash_seeds"]


@dataclass
class Batch:
    """A slice of the stream in stream order (all tuples, or only some sources' tuples)."""

    seq: np.ndarray  # int64, global stream positions, strictly increasing
    key: np.ndarray  # int64, dense key ids
    ts: np.ndarray  # float64, arrival times in ms, non-decreasing
    cost: np.ndarray  # float64, execution times in ms (> 0); 1.0 when the dataset has none

    def __len__(self) -> int:
        return len(self.seq)

    def take(self, mask_or_index: np.ndarray) -> "Batch":
        return Batch(self.seq[mask_or_index], self.key[mask_or_index], self.ts[mask_or_index],
                     self.cost[mask_or_index])


class Strategy:
    """Base class of all grouping strategies (see the module docstring).

    Subclasses set :attr:`name`, :attr:`description`, :attr:`defaults` (every parameter with its
    default value), :attr:`param_docs` (every parameter described) and implement :meth:`_setup`
    and :meth:`route`; they set the tools' settings (:attr:`exercise` to :attr:`aot_params`) where
    the defaults do not fit.
    """

    name: ClassVar[str] = ""
    description: ClassVar[str] = ""
    #: every parameter the strategy takes, with its default
    defaults: ClassVar[dict[str, Any]] = {}
    #: every parameter with a one-sentence description (listed by ``skewbench strategies``)
    param_docs: ClassVar[dict[str, str]] = {}
    #: True when one scheduler sees the whole stream (OSG); the engine then uses sources = 1
    single_source: ClassVar[bool] = False
    #: True when decisions depend on costs/arrival times (the engine must pass real ones)
    uses_costs: ClassVar[bool] = False
    #: True when the result depends on the hash seed (False: one replay is enough for all seeds)
    seeded: ClassVar[bool] = True
    #: routing time per tuple relative to the rest of a cell's replay (queue simulation and
    #: accounting, about 13 M tuples/s on one core; measured: KG 0.1, SG 0.05, PKG 0.15, D-C,
    #: W-C and RR 1.05, OSG 1.3 at n = 5); only used to deal the replay's cells evenly over
    #: parallel tasks
    route_cost: ClassVar[float] = 1.0
    #: True when the strategy hashes a key's *value* as a real engine would see it (a trace's
    #: numeric ids: :meth:`skewbench.datasets.contract.Dataset.key_values`) rather than the dense
    #: key id; the engine then calls :meth:`bind_key_values` before the first :meth:`route`
    uses_key_values: ClassVar[bool] = False
    #: the offline best-balance relaxation that contains the strategy's routing
    #: (:mod:`skewbench.grouping.optimum`): ``"whole"`` (every key on one worker), ``"two"`` (each
    #: key split over its two hash choices F_1, F_2 under the cell's seed), ``"any"`` (anywhere)
    relaxation: ClassVar[str] = "any"

    # what tools derive from the registry (:func:`skewbench.registry.per_strategy`) instead of
    # keeping lists of strategies; a subclass inherits them like any class attribute
    #: parameter sets the conformance test (tests/integration/test_conformance.py) runs besides
    #: the defaults in its batch and per-source checks: each must route its 6,000-tuple stream
    #: differently from the defaults somewhere (a short learning phase, another mode)
    exercise: ClassVar[list[dict[str, Any]]] = []
    #: the kernel benchmark's target (benchmarks/bench_grouping.py): routing 10^7 Zipf tuples on
    #: one core takes at most this many times a vectorised numpy hash pass; None: no row
    bench_target: ClassVar[float | None] = None
    #: further rows of the kernel benchmark, reported without a target: label -> parameters (the
    #: row is labelled ``"<name> (<label>)"``)
    bench_variants: ClassVar[dict[str, dict[str, Any]]] = {}
    #: (workers, sources, parameters) of the engine's comparison with its plain-Python reference
    #: (tests/integration/test_engine.py); a single-scheduler strategy runs it with one source
    engine_case: ClassVar[tuple[int, int, dict[str, Any]]] = (5, 2, {})
    #: parameter settings (``"param=value"``, a list of values allowed) the ahead-of-time build
    #: (``python -m skewbench.aot``) gives the strategy in its replays of each dataset (dataset ->
    #: settings, :data:`skewbench.grouping.cli.AOT_REPLAYS`), when its defaults leave some of its
    #: kernels' argument types uncalled on those small datasets
    aot_params: ClassVar[dict[str, tuple[str, ...]]] = {}

    def __init__(self, workers: int, sources: int = 1, seed: int = 0,
                 worker_model: WorkerModel | None = None, **params: Any):
        if not isinstance(workers, (int, np.integer)) or workers < 1:
            raise SkewbenchError(f"{self.name}: workers must be an integer >= 1, got {workers}")
        if not isinstance(sources, (int, np.integer)) or sources < 1:
            raise SkewbenchError(f"{self.name}: sources must be an integer >= 1, got {sources}")
        if self.single_source and sources != 1:
            raise SkewbenchError(f"{self.name} has a single scheduler: sources must be 1")
        unknown = set(params) - set(self.defaults)
        if unknown:
            raise SkewbenchError(f"{self.name}: unknown parameter(s) {sorted(unknown)}; "
                                 f"it takes {sorted(self.defaults) or 'none'}")
        self.workers = int(workers)
        self.sources = int(sources)
        self.seed = int(seed)
        self.worker_model = worker_model or WorkerModel.uniform(self.workers)
        self.params: dict[str, Any] = {**self.defaults, **params}
        #: the keys' values (int64, indexed by dense key id) when bound, else None: the ids
        self.key_values: np.ndarray | None = None
        self._setup()

    def bind_key_values(self, values: np.ndarray | None) -> None:
        """Route as if tuple key ``k`` were the value ``values[k]`` (int64, one entry per dense
        key id; ``None``: the ids themselves).  Only strategies with :attr:`uses_key_values`
        read it; call it before the first :meth:`route`."""
        if values is not None:
            values = np.ascontiguousarray(values, dtype=np.int64)
            if values.ndim != 1:
                raise SkewbenchError(f"{self.name}: key values must be a 1-d array, got shape {values.shape}")
        self.key_values = values

    def _setup(self) -> None:
        """Validate ``self.params`` (raise SkewbenchError) and allocate the state."""

    def route(self, batch: Batch) -> np.ndarray:
        """Assign each tuple of ``batch`` to a worker (int64 array); keeps state across calls."""
        raise NotImplementedError

    def summary(self) -> dict[str, float]:
        """Strategy-specific final statistics (e.g. D-C's mean d, OSG's RUN index), numbers only."""
        return {}

    def window_stats(self) -> dict[str, float]:
        """Strategy-specific statistics sampled at the end of every metrics window."""
        return {}

    def describe_params(self) -> dict[str, Any]:
        """Every parameter as used (defaults filled in and derived values resolved)."""
        return dict(self.params)


# --------------------------------------------------------------------------------------------
# the seeded hash family F_1..F_d shared by every source (dchoices.spec.md 2.0)

def hash_seeds(seed: int, count: int) -> np.ndarray:
    """``seed_i`` for ``F_1..F_count``: fixed per ``(seed, i)``, identical at every source."""
    out = np.empty(count, dtype=np.uint64)
    base = int(mix64(np.uint64(seed & 0xFFFFFFFFFFFFFFFF)))
    for i in range(count):
        out[i] = mix64(np.uint64((base + 0x632BE59BD9B4E019 * (i + 1)) & 0xFFFFFFFFFFFFFFFF))
    return out


@njit(inline="always", cache=True)
def hash_choice(key, seed_i, n):
    """``F_i(key) = fastrange(mix64(key XOR seed_i), n)``: a worker in ``[0, n)``."""
    h = mix64(np.uint64(key) ^ seed_i)
    return np.int64(((h >> np.uint64(32)) * np.uint64(n)) >> np.uint64(32))


def batch_arrays(batch: Batch) -> tuple[np.ndarray, np.ndarray]:
    """A batch's ``seq`` and ``key`` as contiguous int64 arrays, checked (one clear error)."""
    seq = np.ascontiguousarray(batch.seq, dtype=np.int64)
    key = np.ascontiguousarray(batch.key, dtype=np.int64)
    if seq.ndim != 1 or key.shape != seq.shape:
        raise SkewbenchError("batch.seq and batch.key must be 1-d arrays of the same length")
    if seq.size and seq.min() < 0:
        raise SkewbenchError("batch.seq must hold stream positions >= 0")
    return seq, key


def hash_choice_py(key: int, seed_i: int, n: int) -> int:
    """Plain-Python reference of :func:`hash_choice`, for tests."""
    from skewbench.hashing import mix64_py

    h = mix64_py((key & 0xFFFFFFFFFFFFFFFF) ^ seed_i)
    return ((h >> 32) * n) >> 32
