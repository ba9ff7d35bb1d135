"""Synthetic stream generators: finite Zipf, drifting phases, arrivals and execution-time models.

A stream is described by a :class:`StreamSpec` (a plain, JSON-able description; the catalog and
the command line build one).  Generation is *blocked*: the stream is cut into fixed blocks of
``block_size`` tuples, and block ``b`` draws its random numbers from generators seeded by
``(seed, stream, b)`` through :class:`numpy.random.SeedSequence`.  Which process or Spark
partition generates a block therefore does not matter: the output is bit-identical for any
number of partitions, and no process ever needs the whole stream.

Keys
    Finite Zipf over ``n`` keys: rank ``k = 1..n`` has probability ``p_k = k^-alpha / H(n, alpha)``
    (``alpha = 0`` is uniform).  Ranks are drawn i.i.d. by inverse CDF (``searchsorted`` on the
    cumulative pmf; numpy's own ``zipf`` has unbounded support and is not this distribution), then
    mapped to key ids through a seeded permutation, so key id order carries no rank information.

Arrivals
    ``constant``: tuple ``i`` of a phase arrives ``1/rate`` after the previous one.  ``poisson``:
    exponential gaps of mean ``1/rate``.  For Poisson arrivals each (block, phase) segment draws
    its total duration from ``Gamma(len, 1/rate)`` and splits it by normalised exponential
    spacings, which is exactly a Poisson process and needs no sequential pass over earlier blocks.
    The first tuple arrives at ``0`` (constant) or after one gap (Poisson).

Execution times (``cost``, milliseconds)
    A per-key cost table, seeded, then optional per-tuple noise:

    * ``constant``: every key costs ``value``;
    * ``uniform``: each key's cost is uniform in ``[low, high]``;
    * ``levels``: ``levels`` values evenly spaced in ``[low, high]``; a random permutation of the
      keys is cut into ``levels`` equal groups, group ``j`` gets value ``j`` (the OSG and LAS papers'
      model: LAS's 64 levels in 0.1..6.4 ms; OSG's text states 1..64 ms, but its figures imply
      0.1..6.4 ms for the simulations and 1..64 ms only for the time series, osg.spec.md A1);
    * ``values``: an explicit list of values, assigned to equal random groups the same way;
    * ``noise`` (any model): per-tuple factor ``1 + noise * Z`` with ``Z`` standard normal,
      floored at ``1e-3`` so a cost stays ``> 0``.

Drift
    A stream is a list of phases, each with its own length, ``alpha``, key permutation, arrival
    rate factor and cost factor (as in OSG's Fig. 11 and LAS's Fig. 6 experiments).  Permutation
    changes, applied at the start of a phase to the previous phase's rank-to-key map:
    ``keep`` (default), ``new`` (a fresh random map), ``{"swap": [[r1, r2], ...]}`` (swap the keys
    at 1-based ranks), ``{"reshuffle_top": r}`` (shuffle the keys among the top ``r`` ranks) and
    ``swap_hot_costliest`` (LAS E3 phase D: the rank-1 key trades places with a random key of
    maximal cost).  ``repeat: k`` repeats a phase ``k`` times, each with fresh randomness.
"""

from __future__ import annotations

import math
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np

from skewbench.datasets.contract import (
    PartInfo,
    check_target,
    finalize,
    release_staging,
    staging_dir,
    write_part,
)
from skewbench.errors import SkewbenchError

DEFAULT_BLOCK = 1 << 20
#: the largest key space the generators take (memory: about 24 bytes per key)
MAX_KEYS = 100_000_000
#: the longest stream the generators write (the catalog's longest has 10^8 tuples)
MAX_TUPLES = 10_000_000_000
#: a block's tuples at most (a block is held in memory, about 40 bytes per tuple), and the most
#: blocks (part files) of a stream
MAX_BLOCK = 1 << 24
MAX_BLOCKS = 100_000
#: the most phases of a drifting stream (repeats counted)
MAX_PHASES = 10_000
#: key-sized arrays the plan keeps (a key permutation per phase that changes it, a CDF per
#: distinct alpha, the cost table) x keys, at most: MAX_KEYS keys with one of each
MAX_KEY_ENTRIES = 3 * MAX_KEYS
#: cost levels at most (the levels are listed in memory)
MAX_LEVELS = 1_000_000
#: Parquet bytes per tuple, about (BENCHMARKS.md: 5.9 for seq, ts, key at constant arrivals;
#: measured here at 2 x 10^6 tuples: +3.8 for Poisson times, +0.8 for a cost column of levels,
#: +8.2 when the cost is noisy), for the free-disk check
BYTES_PER_TUPLE, BYTES_POISSON, BYTES_COST, BYTES_NOISY_COST = 6.0, 4.0, 1.0, 9.0
TOP_EXPECTED = 10

# SeedSequence spawn-key tags: one independent stream per purpose.
_KEYS, _NOISE, _ARRIVALS, _PERM, _COSTS = 1, 2, 3, 4, 5

COST_MODELS = ("constant", "uniform", "levels", "values")
PERMUTATIONS = ("keep", "new", "swap_hot_costliest")


# --------------------------------------------------------------------------------------------
# distributions

def zipf_pmf(n: int, alpha: float) -> np.ndarray:
    """Exact finite-Zipf probabilities ``p_k = k^-alpha / sum_{x=1..n} x^-alpha``, ``k = 1..n``."""
    if n < 1:
        raise SkewbenchError(f"number of keys must be >= 1, got {n}")
    if not (alpha >= 0) or not math.isfinite(alpha):
        raise SkewbenchError(f"zipf exponent alpha must be a finite number >= 0, got {alpha}")
    w = np.arange(1, n + 1, dtype=np.float64) ** (-float(alpha))
    # math.fsum is exactly rounded, so the normalisation does not depend on summation order.
    return w / math.fsum(w)


def zipf_cdf(pmf: np.ndarray) -> np.ndarray:
    c = np.cumsum(pmf)
    c /= c[-1]
    c[-1] = 1.0
    return c


def _rng(seed: int, *tags: int) -> np.random.Generator:
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence(seed, spawn_key=tags)))


# --------------------------------------------------------------------------------------------
# specification

@dataclass
class Phase:
    tuples: int
    alpha: float = 1.0
    permutation: Any = "keep"
    rate_factor: float = 1.0
    cost_factor: float = 1.0


@dataclass
class StreamSpec:
    """Everything that determines a synthetic stream; JSON-able via :meth:`to_dict`."""

    generator: str  # "zipf" or "drifting"
    n_keys: int
    seed: int
    phases: list[Phase]
    arrivals: dict[str, Any] = field(default_factory=lambda: {"process": "constant", "rate": 1000.0})
    cost: dict[str, Any] | None = None
    block_size: int = DEFAULT_BLOCK

    @property
    def tuples(self) -> int:
        return sum(p.tuples for p in self.phases)

    @property
    def columns(self) -> list[str]:
        return ["seq", "ts", "key"] + (["cost"] if self.cost is not None else [])

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["tuples"] = self.tuples
        return d

    @staticmethod
    def zipf(alpha: float, n_keys: int, tuples: int, seed: int, rate: float = 1000.0,
             arrivals: str = "constant", cost: Mapping[str, Any] | None = None,
             block_size: int = DEFAULT_BLOCK) -> "StreamSpec":
        spec = StreamSpec("zipf", int(n_keys), int(seed), [Phase(int(tuples), float(alpha))],
                          {"process": arrivals, "rate": float(rate)},
                          dict(cost) if cost is not None else None, int(block_size))
        spec.check()
        return spec

    @staticmethod
    def from_dict(d: Mapping[str, Any]) -> "StreamSpec":
        phases = []
        for p in d["phases"]:
            p = dict(p)
            repeat = int(p.pop("repeat", 1))
            if repeat < 1:
                raise SkewbenchError(f"phase repeat must be >= 1, got {repeat}")
            if len(phases) + repeat > MAX_PHASES:
                raise SkewbenchError(f"phase repeat {repeat:,} makes more than {MAX_PHASES:,} phases; at most "
                                     f"{MAX_PHASES:,}")
            try:
                ph = Phase(tuples=int(p.pop("tuples")), alpha=float(p.pop("alpha", 1.0)),
                           permutation=p.pop("permutation", "keep"),
                           rate_factor=float(p.pop("rate_factor", 1.0)),
                           cost_factor=float(p.pop("cost_factor", 1.0)))
            except KeyError:
                raise SkewbenchError("every phase needs 'tuples'") from None
            if p:
                raise SkewbenchError(f"unknown phase field(s) {sorted(p)}")
            phases.extend(Phase(**asdict(ph)) for _ in range(repeat))
        spec = StreamSpec(d["generator"], int(d["n_keys"]), int(d["seed"]), phases,
                          dict(d.get("arrivals") or {"process": "constant", "rate": 1000.0}),
                          dict(d["cost"]) if d.get("cost") is not None else None,
                          int(d.get("block_size", DEFAULT_BLOCK)))
        spec.check()
        return spec

    def check(self) -> None:
        """Raise :class:`SkewbenchError` naming the first bad parameter."""
        if self.generator not in ("zipf", "drifting"):
            raise SkewbenchError(f"unknown generator '{self.generator}' (zipf, drifting)")
        if self.n_keys < 1:
            raise SkewbenchError(f"keys must be >= 1, got {self.n_keys}")
        if self.n_keys > MAX_KEYS:
            raise SkewbenchError(f"keys must be at most {MAX_KEYS:,} (the generator keeps the key space's "
                                 f"probabilities and permutation in memory, about 24 bytes per key), got {self.n_keys:,}")
        if not 0 <= self.seed < 2**63:
            raise SkewbenchError(f"seed must be in [0, 2^63), got {self.seed}")
        if not self.phases:
            raise SkewbenchError("a stream needs at least one phase")
        if not 1 <= self.block_size <= MAX_BLOCK:
            raise SkewbenchError(f"block size must be in [1, {MAX_BLOCK:,}] (a block is held in memory), got "
                                 f"{self.block_size:,}")
        if len(self.phases) > MAX_PHASES:
            raise SkewbenchError(f"{len(self.phases):,} phases; at most {MAX_PHASES:,}")
        for i, p in enumerate(self.phases):
            where = f"phase {i + 1}: " if len(self.phases) > 1 else ""
            if p.tuples < 1:
                raise SkewbenchError(f"{where}tuples must be >= 1, got {p.tuples}")
            if not (p.alpha >= 0) or not math.isfinite(p.alpha):
                raise SkewbenchError(f"{where}alpha must be a finite number >= 0, got {p.alpha}")
            for nm in ("rate_factor", "cost_factor"):
                v = getattr(p, nm)
                if not (v > 0) or not math.isfinite(v):
                    raise SkewbenchError(f"{where}{nm} must be > 0, got {v}")
            _check_permutation(p.permutation, self.n_keys, where)
            if p.permutation == "swap_hot_costliest" and self.cost is None:
                raise SkewbenchError(f"{where}swap_hot_costliest needs a cost model")
        m = self.tuples
        if m > MAX_TUPLES:
            raise SkewbenchError(f"tuples must be at most {MAX_TUPLES:,} (about {MAX_TUPLES * BYTES_PER_TUPLE / 1e9:,.0f} "
                                 f"GB), got {m:,}")
        if -(-m // self.block_size) > MAX_BLOCKS:
            raise SkewbenchError(f"{m:,} tuples in blocks of {self.block_size:,} make {-(-m // self.block_size):,} "
                                 f"part files; at most {MAX_BLOCKS:,} (use a larger block size)")
        arrays = 1 + len({p.alpha for p in self.phases}) + (self.cost is not None) + sum(
            p.permutation != "keep" and not (i == 0 and p.permutation == "new") for i, p in enumerate(self.phases))
        if arrays * self.n_keys > MAX_KEY_ENTRIES:
            raise SkewbenchError(f"{len(self.phases):,} phases over {self.n_keys:,} keys keep {arrays:,} arrays of a "
                                 f"value per key (permutations, one per distinct alpha, costs); at most "
                                 f"{MAX_KEY_ENTRIES:,} values")
        arr = self.arrivals
        unknown = set(arr) - {"process", "rate"}
        if unknown:
            raise SkewbenchError(f"unknown arrival option(s) {sorted(unknown)} (process, rate)")
        if arr.get("process", "constant") not in ("constant", "poisson"):
            raise SkewbenchError(f"arrival process must be constant or poisson, got {arr.get('process')}")
        rate = arr.get("rate", 1000.0)
        if not isinstance(rate, (int, float)) or not rate > 0 or not math.isfinite(rate):
            raise SkewbenchError(f"arrival rate must be > 0 tuples/s, got {rate}")
        if not math.isfinite(self.tuples / rate):  # the timestamps would overflow to inf
            raise SkewbenchError(f"arrival rate {rate:g} tuples/s makes {self.tuples:,} tuples last longer than any "
                                 "time a float holds; use a larger rate")
        if self.cost is not None:
            check_cost_model(self.cost)


def _check_permutation(perm: Any, n: int, where: str) -> None:
    if isinstance(perm, str):
        if perm not in PERMUTATIONS:
            raise SkewbenchError(f"{where}unknown permutation '{perm}' "
                                 f"({', '.join(PERMUTATIONS)}, {{swap: [[r1, r2]]}}, {{reshuffle_top: r}})")
        return
    if isinstance(perm, Mapping) and set(perm) == {"swap"}:
        for pair in perm["swap"]:
            if len(pair) != 2 or not all(isinstance(r, int) and 1 <= r <= n for r in pair):
                raise SkewbenchError(f"{where}swap needs pairs of ranks in [1, {n}], got {pair}")
        return
    if isinstance(perm, Mapping) and set(perm) == {"reshuffle_top"}:
        r = perm["reshuffle_top"]
        if not isinstance(r, int) or not 1 <= r <= n:
            raise SkewbenchError(f"{where}reshuffle_top must be an int in [1, {n}], got {r}")
        return
    raise SkewbenchError(f"{where}bad permutation {perm!r}")


def check_cost_model(cost: Mapping[str, Any]) -> None:
    model = cost.get("model")
    allowed = {"constant": {"value"}, "uniform": {"low", "high"}, "levels": {"levels", "low", "high"},
               "values": {"values"}}
    if model not in allowed:
        raise SkewbenchError(f"unknown cost model '{model}' ({', '.join(COST_MODELS)})")
    keys = set(cost) - {"model", "noise"}
    if keys != allowed[model]:
        raise SkewbenchError(f"cost model {model} takes {sorted(allowed[model])} (and noise), got {sorted(keys)}")
    nums = [cost[k] for k in keys if k != "values"] + list(cost.get("values", []))
    if model == "values" and not cost["values"]:
        raise SkewbenchError("cost model values needs at least one value")
    for v in nums:
        if not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
            raise SkewbenchError(f"cost values must be numbers > 0 ms, got {v}")
    if model in ("uniform", "levels") and cost["low"] > cost["high"]:
        raise SkewbenchError(f"cost low {cost['low']} > high {cost['high']}")
    if model == "levels" and (not isinstance(cost["levels"], int) or cost["levels"] < 1):
        raise SkewbenchError(f"cost levels must be an int >= 1, got {cost['levels']}")
    if model == "levels" and cost["levels"] > MAX_LEVELS:
        raise SkewbenchError(f"cost levels must be at most {MAX_LEVELS:,} (they are listed in memory), got "
                             f"{cost['levels']:,}")
    noise = cost.get("noise", 0.0)
    if not isinstance(noise, (int, float)) or not 0 <= noise < 10:
        raise SkewbenchError(f"cost noise must be in [0, 10), got {noise}")


def parse_cost(text: str | None, noise: float = 0.0) -> dict[str, Any] | None:
    """Parse the command line's ``--cost``: ``constant:V``, ``uniform:LO:HI``,
    ``levels:N:LO:HI`` or ``values:V1,V2,...`` (milliseconds)."""
    if text is None or text == "none":
        return None
    name, _, rest = text.partition(":")
    args = rest.split(":") if rest else []
    try:
        if name == "constant" and len(args) == 1:
            cost: dict[str, Any] = {"model": "constant", "value": float(args[0])}
        elif name == "uniform" and len(args) == 2:
            cost = {"model": "uniform", "low": float(args[0]), "high": float(args[1])}
        elif name == "levels" and len(args) == 3:
            cost = {"model": "levels", "levels": int(args[0]), "low": float(args[1]), "high": float(args[2])}
        elif name == "values" and len(args) == 1:
            cost = {"model": "values", "values": [float(v) for v in args[0].split(",")]}
        else:
            raise ValueError
    except ValueError:
        raise SkewbenchError(f"bad cost model '{text}': use constant:V, uniform:LO:HI, "
                             "levels:N:LO:HI or values:V1,V2,... (milliseconds)") from None
    if noise:
        cost["noise"] = float(noise)
    check_cost_model(cost)
    return cost


# --------------------------------------------------------------------------------------------
# the plan: everything a block needs, derived deterministically from the spec

@dataclass
class _PhasePlan:
    start: int
    end: int
    alpha: float
    cdf: np.ndarray
    perm: np.ndarray  # perm[rank0] = key id
    rate: float
    cost_factor: float
    t_start: float  # constant arrivals: arrival time of the phase's first tuple


class Plan:
    """Deterministic per-stream state (cdfs, permutations, cost table, arrival segments)."""

    def __init__(self, spec: StreamSpec):
        spec.check()
        self.spec = spec
        n = spec.n_keys
        self.cost_table = _cost_table(spec.cost, n, spec.seed) if spec.cost is not None else None
        cdfs: dict[float, np.ndarray] = {}
        perm = _rng(spec.seed, _PERM, 0).permutation(n).astype(np.int64)
        base_rate = float(spec.arrivals.get("rate", 1000.0))
        self.poisson = spec.arrivals.get("process", "constant") == "poisson"
        self.phases: list[_PhasePlan] = []
        start, t = 0, 0.0
        for i, ph in enumerate(spec.phases):
            perm = _apply_permutation(perm, ph.permutation, spec.seed, i, self.cost_table)
            if ph.alpha not in cdfs:
                cdfs[ph.alpha] = zipf_cdf(zipf_pmf(n, ph.alpha))
            rate = base_rate * ph.rate_factor
            self.phases.append(_PhasePlan(start, start + ph.tuples, ph.alpha, cdfs[ph.alpha], perm,
                                          rate, ph.cost_factor, t))
            start += ph.tuples
            t += ph.tuples / rate
        self.tuples = start
        self.block_size = spec.block_size
        self.n_blocks = -(-self.tuples // self.block_size)
        if self.poisson:
            self._segment_starts = self._poisson_segments()

    def _segments(self) -> Iterable[tuple[int, int, int, int]]:
        """(block, phase index, lo, hi) for each block/phase intersection, in stream order."""
        for b in range(self.n_blocks):
            lo, hi = b * self.block_size, min((b + 1) * self.block_size, self.tuples)
            for j, ph in enumerate(self.phases):
                s, e = max(lo, ph.start), min(hi, ph.end)
                if s < e:
                    yield b, j, s, e

    def _poisson_segments(self) -> dict[tuple[int, int], tuple[float, float]]:
        out: dict[tuple[int, int], tuple[float, float]] = {}
        t = 0.0
        for b, j, s, e in self._segments():
            total = float(_rng(self.spec.seed, _ARRIVALS, b, j, 0).gamma(e - s, 1.0 / self.phases[j].rate))
            out[(b, j)] = (t, total)
            t += total
        return out

    def block(self, b: int) -> dict[str, np.ndarray]:
        """Generate the columns of block ``b`` (seq range ``[b*B, min((b+1)*B, m))``)."""
        lo, hi = b * self.block_size, min((b + 1) * self.block_size, self.tuples)
        if not 0 <= lo < hi:
            raise IndexError(f"block {b} out of range")
        seq = np.arange(lo, hi, dtype=np.int64)
        key = np.empty(hi - lo, dtype=np.int64)
        ts = np.empty(hi - lo, dtype=np.float64)
        factor = np.empty(hi - lo, dtype=np.float64) if self.cost_table is not None else None
        krng = _rng(self.spec.seed, _KEYS, b)
        for j, ph in enumerate(self.phases):
            s, e = max(lo, ph.start), min(hi, ph.end)
            if s >= e:
                continue
            sl = slice(s - lo, e - lo)
            ranks = np.searchsorted(ph.cdf, krng.random(e - s), side="right")
            key[sl] = ph.perm[ranks]
            if self.poisson:
                t0, total = self._segment_starts[(b, j)]
                gaps = _rng(self.spec.seed, _ARRIVALS, b, j, 1).standard_exponential(e - s)
                cum = np.cumsum(gaps)
                ts[sl] = t0 + total * (cum / cum[-1])
            else:
                ts[sl] = ph.t_start + (seq[sl] - ph.start) / ph.rate
            if factor is not None:
                factor[sl] = ph.cost_factor
        cols = {"seq": seq, "ts": ts, "key": key}
        if self.cost_table is not None:
            cost = self.cost_table[key] * factor
            noise = float(self.spec.cost.get("noise", 0.0))
            if noise > 0:
                z = _rng(self.spec.seed, _NOISE, b).standard_normal(hi - lo)
                cost *= np.maximum(1.0 + noise * z, 1e-3)
            cols["cost"] = cost
        return cols

    def metadata(self, name: str | None = None) -> dict[str, Any]:
        """Metadata for the dataset contract (without the fields :func:`finalize` adds)."""
        spec = self.spec
        phases = []
        for ph in self.phases:
            top = _top_expected(ph)
            phases.append({"start": ph.start, "end": ph.end, "alpha": ph.alpha, "rate": ph.rate,
                           "cost_factor": ph.cost_factor, "top_keys": [t["key"] for t in top]})
        meta: dict[str, Any] = {
            "name": name,
            "kind": "synthetic",
            "generator": spec.generator,
            "params": spec.to_dict(),
            "seed": spec.seed,
            "n_keys": spec.n_keys,
        }
        if spec.generator == "zipf" and len(self.phases) == 1:
            meta["expected_top"] = _top_expected(self.phases[0])
            meta["expected_p1"] = meta["expected_top"][0]["p"]
        else:
            meta["phases"] = phases
        if self.cost_table is not None:
            meta["mean_key_cost"] = float(self.cost_table.mean())
        return meta


def _top_expected(ph: _PhasePlan) -> list[dict[str, Any]]:
    n = len(ph.perm)
    k = min(TOP_EXPECTED, n)
    pmf = np.diff(np.concatenate([[0.0], ph.cdf[:k]]))
    return [{"rank": r + 1, "key": int(ph.perm[r]), "p": float(pmf[r])} for r in range(k)]


def _apply_permutation(perm: np.ndarray, change: Any, seed: int, phase: int,
                       cost_table: np.ndarray | None) -> np.ndarray:
    if change == "keep" or (phase == 0 and change == "new"):
        return perm
    rng = _rng(seed, _PERM, phase + 1)
    perm = perm.copy()
    if change == "new":
        return rng.permutation(len(perm)).astype(np.int64)
    if change == "swap_hot_costliest":
        assert cost_table is not None
        top = perm[0]
        cmax = cost_table.max()
        cand = np.flatnonzero(cost_table == cmax)
        cand = cand[cand != top]
        if len(cand) == 0:
            return perm
        other = int(rng.choice(cand))
        pos = int(np.flatnonzero(perm == other)[0])
        perm[0], perm[pos] = perm[pos], perm[0]
        return perm
    if "swap" in change:
        for r1, r2 in change["swap"]:
            perm[r1 - 1], perm[r2 - 1] = perm[r2 - 1], perm[r1 - 1]
        return perm
    r = int(change["reshuffle_top"])
    perm[:r] = perm[:r][rng.permutation(r)]
    return perm


def _cost_table(cost: Mapping[str, Any], n: int, seed: int) -> np.ndarray:
    model = cost["model"]
    rng = _rng(seed, _COSTS)
    if model == "constant":
        return np.full(n, float(cost["value"]))
    if model == "uniform":
        return rng.uniform(float(cost["low"]), float(cost["high"]), n)
    if model == "levels":
        L = int(cost["levels"])
        lo, hi = float(cost["low"]), float(cost["high"])
        values = np.array([lo + j * (hi - lo) / (L - 1) for j in range(L)]) if L > 1 else np.array([lo])
    else:
        values = np.asarray(cost["values"], dtype=np.float64)
    # a random permutation of the keys cut into len(values) (near-)equal groups
    order = rng.permutation(n)
    group = (np.arange(n, dtype=np.int64) * len(values)) // n
    table = np.empty(n, dtype=np.float64)
    table[order] = values[group]
    return table


# --------------------------------------------------------------------------------------------
# writing, in process and (through skewbench.spark) on Spark

def write_blocks(spec_dict: Mapping[str, Any], directory: str | os.PathLike,
                 blocks: Sequence[int], plan: Plan | None = None) -> list[PartInfo]:
    """Generate the given blocks and write each as ``part-{block}.parquet``; a Spark task's body."""
    plan = plan or Plan(StreamSpec.from_dict(spec_dict))
    cols = plan.spec.columns
    return [write_part(directory, b, plan.block(b), cols) for b in blocks]


def estimated_bytes(spec: StreamSpec) -> float:
    """About how many bytes the stream takes on disk (:data:`BYTES_PER_TUPLE` ...)."""
    cost = spec.cost or {}
    per = (BYTES_PER_TUPLE + (BYTES_POISSON if spec.arrivals.get("process") == "poisson" else 0.0)
           + (0.0 if not cost else BYTES_NOISY_COST if cost.get("noise") else BYTES_COST))
    return spec.tuples * per


def check_room(spec: StreamSpec, out_dir: str | os.PathLike) -> None:
    """Refuse a stream larger than the free disk of the file system ``out_dir`` would be on."""
    import shutil

    where = Path(out_dir).absolute().parent
    while not where.exists() and where != where.parent:
        where = where.parent
    free = shutil.disk_usage(where).free
    need = estimated_bytes(spec)
    if need > free:
        raise SkewbenchError(f"{spec.tuples:,} tuples take about {need / 1e9:,.3g} GB on disk; {free / 1e9:,.3g} GB "
                             f"are free on {where}")


def generate(spec: StreamSpec, out_dir: str | os.PathLike, name: str | None = None,
             overwrite: bool = False, progress: Callable[[int], None] | None = None) -> dict[str, Any]:
    """Generate a dataset in this process (no Spark) and return its metadata."""
    plan = Plan(spec)
    check_target(out_dir, overwrite)
    check_room(spec, out_dir)
    tmp = staging_dir(out_dir)
    try:
        parts = []
        for b in range(plan.n_blocks):
            parts.extend(write_blocks(spec.to_dict(), tmp, [b], plan))
            if progress:
                progress(parts[-1].rows)
        return finalize(tmp, out_dir, parts, {**plan.metadata(name), "columns": spec.columns}, overwrite)
    except BaseException:
        import shutil

        release_staging(tmp)
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def exact_p1(n_keys: int, alpha: float) -> float:
    return float(zipf_pmf(n_keys, alpha)[0])


__all__ = ["StreamSpec", "Phase", "Plan", "zipf_pmf", "zipf_cdf", "generate", "write_blocks", "check_room",
           "parse_cost", "check_cost_model", "exact_p1"]
