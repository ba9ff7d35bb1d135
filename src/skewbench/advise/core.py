"""The table of ``skewbench advise``, as a Python function: :func:`advise`."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Sequence

from skewbench.advise.keys import Keys
from skewbench.advise.limits import (
    MAX_COUNT, MAX_FILE_BYTES, MAX_FLINK_MAX_PARALLELISM, MAX_KEY_BYTES, MAX_PARALLELISMS, MAX_ROWS, MAX_SOURCES,
    MAX_WORKERS,
)
from skewbench.errors import SkewbenchError

LIMITS = {"max_file_bytes": MAX_FILE_BYTES, "max_rows": MAX_ROWS, "max_key_bytes": MAX_KEY_BYTES,
          "max_count": MAX_COUNT, "max_workers": MAX_WORKERS, "max_parallelisms": MAX_PARALLELISMS,
          "max_flink_max_parallelism": MAX_FLINK_MAX_PARALLELISM, "max_sources": MAX_SOURCES}


@dataclass
class Advice:
    """The answer: ``keys`` (what was read), ``workers`` (the parallelisms), ``rows`` (one per
    partitioner and parallelism: the engines' defaults, the alternatives, the whole-key floor),
    ``advice`` (what to change), ``seconds`` (time per phase)."""

    keys: dict[str, Any]
    workers: list[int]
    rows: list[dict[str, Any]]
    advice: list[dict[str, Any]]
    seconds: dict[str, float] = field(default_factory=dict)
    #: with a rate and a cost: the workers each partitioner needs (:mod:`skewbench.advise.sizing`)
    sizing: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        out = {"keys": self.keys, "workers": self.workers, "rows": self.rows, "advice": self.advice,
               "limits": LIMITS, "seconds": self.seconds}
        if self.sizing is not None:
            out["sizing"] = self.sizing
        return out

    def row(self, partitioner: str, workers: int, setting: str = "default") -> dict[str, Any]:
        """The row of ``partitioner`` at ``workers`` (Flink: ``setting`` "default" or "yours")."""
        for r in self.rows:
            if r["partitioner"] == partitioner and r["workers"] == workers and r.get("setting", "default") == setting:
                return r
        raise KeyError((partitioner, workers, setting))


def parse_workers(workers: str | Sequence[int]) -> list[int]:
    """The parallelisms, checked (integers in [1, MAX_WORKERS], at most MAX_PARALLELISMS), sorted."""
    if isinstance(workers, str):
        try:
            values = [int(v) for v in workers.split(",") if v.strip()]
        except ValueError:
            raise SkewbenchError(f"--workers takes comma-separated parallelisms, e.g. 8,32,100; got {workers!r}") from None
    else:
        values = list(workers)
    if not values:
        raise SkewbenchError("--workers needs at least one parallelism")
    for v in values:
        if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= MAX_WORKERS:
            raise SkewbenchError(f"--workers: a parallelism is an integer in [1, {MAX_WORKERS:,}], got {v!r}")
    values = sorted(set(values))
    if len(values) > MAX_PARALLELISMS:
        raise SkewbenchError(f"--workers: at most {MAX_PARALLELISMS} parallelisms at a time, got {len(values)}")
    return values


def _check(ps: list[int], flink_max_parallelism: int | None, sources: int, seed: int, alternatives: Sequence[str]
           ) -> None:
    from skewbench.advise.alternatives import ALTERNATIVES

    top = MAX_FLINK_MAX_PARALLELISM
    if flink_max_parallelism is not None:
        P = flink_max_parallelism
        if isinstance(P, bool) or not isinstance(P, int) or not 1 <= P <= top:
            raise SkewbenchError(f"--flink-max-parallelism is an integer in [1, {top:,}], got {P!r}")
        if max(ps) > P:
            raise SkewbenchError(f"--flink-max-parallelism {P} is below parallelism {max(ps)}: Flink refuses a "
                                 f"parallelism above the max parallelism")
    if isinstance(sources, bool) or not isinstance(sources, int) or not 1 <= sources <= MAX_SOURCES:
        raise SkewbenchError(f"--sources is an integer in [1, {MAX_SOURCES:,}], got {sources!r}")
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**63:
        raise SkewbenchError(f"--seed is an integer in [0, 2^63), got {seed!r}")
    unknown = [a for a in alternatives if a not in ALTERNATIVES]
    if unknown:
        raise SkewbenchError(f"--alternatives: unknown {', '.join(unknown)}; choose from {', '.join(ALTERNATIVES)}")


def keys_summary(keys: Keys, key_format: str, stream_note: str | None) -> dict[str, Any]:
    import numpy as np

    top = int(np.argmax(keys.counts))
    return {"source": keys.source, "format": keys.fmt, "tuples": keys.tuples, "distinct": keys.distinct,
            "key_format": key_format, "integer_keys": keys.values is not None,
            "hottest": {"key": keys.name(top), "tuples": int(keys.counts[top]),
                        "share": int(keys.counts[top]) / keys.tuples},
            "alternatives_stream": stream_note}


def advise(keys: Any, workers: str | Sequence[int] = (8, 32, 100), *, fmt: str = "auto",
           key_column: str | None = None, count_column: str | None = None, key_format: str = "auto",
           flink_max_parallelism: int | None = None, alternatives: Sequence[str] | None = None,
           sources: int = 5, seed: int = 0, rate: float | None = None, cost_ms: float | None = None,
           current: int | None = None) -> Advice:
    """What each engine's default partitioner does with ``keys`` at each parallelism of
    ``workers``, what the alternatives would do, the whole-key floor, and what to change.

    ``keys``: a path (a key file, CSV or Parquet table, key,count pairs, a dataset directory) or
    a catalog dataset's name (:mod:`skewbench.advise.inputs`), a mapping ``key -> count``, or a
    sequence of keys.  ``alternatives``: strategy names (default
    :data:`~skewbench.advise.alternatives.ALTERNATIVES`; empty: none), replayed with ``sources``
    upstream instances and hash seed ``seed``.  With ``rate`` (tuples/s) and ``cost_ms`` (per tuple):
    the workers each partitioner needs, its skew ceiling and where Flink's autoscaler settles from
    ``current`` workers (default: the smallest of ``workers``; :mod:`skewbench.advise.sizing`).
    Raises :class:`SkewbenchError` on bad input."""
    from skewbench.advise import alternatives as alt
    from skewbench.advise.advice import build_advice
    from skewbench.advise.defaults import engine_rows, key_hashes, resolve_key_format
    from skewbench.advise.floor import floor_row
    from skewbench.advise.inputs import read_keys

    from skewbench.advise import sizing as sz

    ps = parse_workers(workers)
    names = list(alt.ALTERNATIVES if alternatives is None else alternatives)
    _check(ps, flink_max_parallelism, sources, seed, names)
    sz.check(rate, cost_ms, current)
    if current is not None:
        parse_workers([current])
    t = {"start": time.perf_counter()}
    k = read_keys(keys, fmt, key_column, count_column)
    kf = resolve_key_format(k, key_format)
    t["read"] = time.perf_counter()
    hashes = key_hashes(k, kf)
    rows: list[dict[str, Any]] = []
    for p in ps:
        rows += engine_rows(k, hashes, p, kf, flink_max_parallelism)
    t["engines"] = time.perf_counter()
    note = None
    if names:
        stream, note = alt.replay_stream(k, seed)
        ranked = alt.by_frequency(stream)
        for p in ps:
            rows += [alt.alternative_row(name, stream, ranked, p, sources, seed, k.tuples) for name in names]
    t["alternatives"] = time.perf_counter()
    rows += [floor_row(k.counts, p) for p in ps]
    t["floor"] = time.perf_counter()
    advice = build_advice(k, hashes, rows, ps, kf, flink_max_parallelism)
    t["advice"] = time.perf_counter()
    sized = None
    if rate is not None and cost_ms is not None:
        loads = {name: (lambda p, name=name: alt.loads_at(name, stream, p, sources, seed, k.tuples)) for name in names}
        sized = sz.sizing(k, hashes, ps, float(rate), float(cost_ms), current, flink_max_parallelism, loads)
        t["sizing"] = time.perf_counter()
    phases = list(t)
    seconds = {b: t[b] - t[a] for a, b in zip(phases, phases[1:])}
    return Advice(keys_summary(k, kf, note), ps, rows, advice, seconds, sized)
