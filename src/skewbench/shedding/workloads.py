"""The shedding family's workloads: generators the catalog calls by name (``workload:`` entries).

Each function has the signature::

    fn(out_dir, *, params, seed, inputs, name=None, overwrite=False, progress=None, extra_meta=None) -> dict

checks ``params`` (an unknown key or a bad value raises :class:`~skewbench.errors.SkewbenchError`
naming the key, before anything is written), writes one dataset with
:class:`~skewbench.datasets.contract.DatasetWriter` in parts of at most ``CHUNK`` rows (calling
``progress(rows)`` per part) and returns the committed metadata.  The output is a function of
``(params, seed, input contents)`` only: each purpose draws from its own
``PCG64(SeedSequence(seed, spawn_key=(tag,)))``.  ``extra_meta`` (the catalog's own entries)
is merged into the metadata.  Metadata always holds ``generator = "workload:<function>"``,
``params`` (every effective parameter, defaults included), ``seed``, ``n_keys`` and ``name``;
surrogates add ``surrogate_of`` (which real sample they were shaped on; they are *not* the
papers' traces) and ``source_stats`` (what was measured on that sample).

* :func:`las_tweets`: LAS E4's tweets (las.spec.md A24): entity mentions with class costs.
* :func:`syn_zipf`, :func:`syn_burst`, :func:`syn_debs_like`: ShedPart's synthetic streams
  (shedpart.spec.md 4.2).
* :func:`gcm_surrogate`: scheduling class -> CPU request of the Google cluster trace sample,
  resampled per class, with one class surging in windows 50-65.
* :func:`debs_surrogate`: DEBS 2015 rides whose routes follow the sample's route frequencies
  plus a Zipf(0.8) tail of synthetic routes, and whose fares follow the sample's
  fare-per-distance relation with its spread.

**Window convention** (ShedPart streams): sliding windows of range ``r`` and slide ``s = r/2``
aligned at ``ts = 0``; window ``k`` covers ``[k s, k s + r)``, i.e. slides ``k`` and ``k + 1``.
A stream of ``W`` windows spans ``W + 1`` slides, ``[0, (W + 1) s)``.  Each ShedPart dataset
records its query window as ``shedpart_window = {"range_s", "slide_s"}`` (the replay engine
reads it).  A rate change "in windows ``a..b``" applies to slides ``a..b+1``, so every window
``a..b`` is wholly affected and windows ``a-1`` and ``b+1`` half.
"""

from __future__ import annotations

import csv
import math
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

import numpy as np

from skewbench.datasets.contract import DatasetWriter
from skewbench.errors import SkewbenchError

CHUNK = 1 << 20
INT64_MAX = 2**63 - 1

# seed tags: one independent stream per purpose
_T_CLASSES, _T_MENTIONS, _T_MU, _T_KEYS, _T_TIMES, _T_VALUES, _T_ROUTES = 1, 2, 3, 4, 5, 6, 7


def _rng(seed: int, tag: int) -> np.random.Generator:
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence(seed, spawn_key=(tag,))))


# --------------------------------------------------------------------------------------------
# parameter checking

def _num(lo=None, hi=None, *, integer=False, lo_open=False, optional=False):
    def check(v):
        if v is None and optional:
            return None
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            return "must be a number" + (" or null" if optional else "")
        if integer and v != int(v):
            return "must be an integer"
        if lo is not None and (v <= lo if lo_open else v < lo):
            return f"must be {'>' if lo_open else '>='} {lo}"
        if hi is not None and v > hi:
            return f"must be <= {hi}"
        return None
    return check


def _pair(lo=0):
    def check(v):
        if not isinstance(v, (list, tuple)) or len(v) != 2 or \
                any(isinstance(x, bool) or not isinstance(x, int) or x < lo for x in v) or v[0] > v[1]:
            return f"must be a pair [first, last] of integers >= {lo} with first <= last"
        return None
    return check


def _params(fn: str, params: Mapping[str, Any] | None, spec: Mapping[str, tuple[Any, Callable]]) -> dict[str, Any]:
    params = dict(params or {})
    unknown = sorted(set(params) - set(spec))
    if unknown:
        raise SkewbenchError(f"workload {fn}: unknown parameter {unknown[0]!r}"
                             f"{' (and ' + ', '.join(map(repr, unknown[1:])) + ')' if unknown[1:] else ''}; "
                             f"it takes {sorted(spec)}")
    out = {}
    for k, (default, check) in spec.items():
        v = params.get(k, default)
        err = check(v)
        if err:
            raise SkewbenchError(f"workload {fn}: parameter {k!r} {err}, got {v!r}")
        out[k] = list(v) if isinstance(v, tuple) else v
    return out


def _inputs(fn: str, inputs: Iterable[Any], what: str) -> list[Path]:
    paths = [Path(x) for x in (inputs or [])]
    if not paths:
        raise SkewbenchError(f"workload {fn}: needs {what} as inputs")
    for p in paths:
        if not p.is_file():
            raise SkewbenchError(f"workload {fn}: input {p} does not exist")
    return paths


# --------------------------------------------------------------------------------------------
# writing

def _write(out_dir, columns, chunks: Iterable[Mapping[str, np.ndarray]], meta, overwrite, progress,
           extra_meta, key_names=None) -> dict:
    """Write the chunks (in stream order) in parts of at most ``CHUNK`` rows and commit."""
    with DatasetWriter(out_dir, columns, overwrite=overwrite) as w:
        buf: list[Mapping[str, np.ndarray]] = []
        held = 0

        def flush(force: bool):
            nonlocal buf, held
            while held >= CHUNK or (force and held):
                cat = {c: np.concatenate([b[c] for b in buf]) for c in buf[0]}
                n = min(CHUNK, held)
                w.append({c: v[:n] for c, v in cat.items()})
                if progress:
                    progress(n)
                rest = {c: v[n:] for c, v in cat.items()}
                held -= n
                buf = [rest] if held else []

        for ch in chunks:
            if len(ch["key"]):
                buf.append(ch)
                held += len(ch["key"])
                flush(False)
        flush(True)
        if key_names is not None:
            w.write_keys(key_names)
        meta = {**meta, **(extra_meta or {})}
        return w.commit(meta)


def _base_meta(fn, p, seed, n_keys, name):
    return {"kind": "synthetic", "generator": f"workload:{fn}", "params": p, "seed": int(seed),
            "n_keys": int(n_keys), "name": name}


def _window_meta(r: float) -> dict:
    return {"shedpart_window": {"range_s": float(r), "slide_s": float(r) / 2}}


def _slide_times(rng, n: int, k: int, slide: float) -> np.ndarray:
    """``n`` sorted uniform times in slide ``k``: ``[k s, (k + 1) s)``."""
    t = np.sort(rng.uniform(k * slide, (k + 1) * slide, n))
    return np.minimum(t, np.nextafter((k + 1) * slide, 0))


def _zipf_cdf(n: int, alpha: float) -> np.ndarray:
    pmf = np.arange(1, n + 1, dtype=np.float64) ** (-float(alpha))
    cdf = np.cumsum(pmf)
    return cdf / cdf[-1]


def _draw(rng, cdf: np.ndarray, n: int) -> np.ndarray:
    return np.minimum(np.searchsorted(cdf, rng.random(n), side="right"), len(cdf) - 1).astype(np.int64)


# --------------------------------------------------------------------------------------------
# LAS E4 tweets

# E[min(Geometric(0.5), 8)] = sum_{j=1..8} 0.5^(j-1) = 1.9921875 mentions per tweet; the mean cost
# is E[k] * (other + 5 politician + 25 media) with other = 1 - politician - media, so
# W = 9.7 ms needs media = (9.7 / 1.9921875 - 1 - 4 * 0.14) / 24 = 0.13788 (checked empirically:
# 9.68-9.70 ms over seeds 1-5 at 500,000 tuples; P(w = 1) 0.361, 102-108 distinct costs, max 136-176).
LAS_MEDIA_SHARE = 0.1379


def _classes_by_weight(rng, pmf: np.ndarray, shares) -> np.ndarray:
    """Classes for entities (``pmf`` in decreasing order) with mention-weighted shares: from the
    most popular down, each entity joins a class drawn with probability proportional to the
    class's remaining share (its target minus the weight it holds, if positive).  The heavy
    entities land in classes about as often as the shares say; the many light ones at the end
    fill the shares up to a tiny error (the top entity alone is 6.6% of the mentions, so a plain
    cumulative cut would miss the shares by up to that)."""
    target = np.asarray(shares, dtype=np.float64)
    held = np.zeros(len(target))
    u = rng.random(len(pmf))
    cls = np.empty(len(pmf), dtype=np.int64)
    for i, w in enumerate(pmf.tolist()):
        d = np.maximum(target - held, 0.0)
        tot = d.sum()
        c = int(np.searchsorted(np.cumsum(d) / tot, u[i], side="right")) if tot > 0 else int(np.argmax(target - held))
        c = min(c, len(target) - 1)
        cls[i] = c
        held[c] += w
    return cls


def las_tweets(out_dir: Path, *, params: dict, seed: int, inputs: list[Path], name: str | None = None,
               overwrite: bool = False, progress: Callable[[int], None] | None = None,
               extra_meta: dict | None = None) -> dict:
    """Tweets mentioning ``min(Geometric(0.5), 8)`` of ``entities`` Zipf(``alpha``) entities.

    Entity classes have mention-weighted shares (:func:`_classes_by_weight`): *other* (1 ms),
    *politician* (5 ms, ``politician_share``) and *media* (25 ms, ``media_share``); ``media_share``
    defaults to the calibrated 0.1379 (mean cost 9.7 ms).
    A tweet's cost is the sum of its mentions' class costs; its key is the sorted tuple of its
    mentioned entities (a repeat mention kept, so a key always has the same cost), numbered densely
    in order of first appearance; tweet ``i`` arrives at ``i / rate`` s (default rate 1000/9.7
    per s: utilisation 100% at 9.7 ms).
    """
    fn = "las_tweets"
    p = _params(fn, params, {
        "tuples": (500_000, _num(1, integer=True)),
        "entities": (35_000, _num(1, integer=True)),
        "alpha": (0.94, _num(0, lo_open=True)),
        "politician_share": (0.14, _num(0, 1)),
        "media_share": (LAS_MEDIA_SHARE, _num(0, 1)),
        "max_mentions": (8, _num(1, integer=True)),
        "rate": (1000 / 9.7, _num(0, lo_open=True)),
    })
    if p["politician_share"] + p["media_share"] > 1:
        raise SkewbenchError(f"workload {fn}: parameter 'media_share' + 'politician_share' must be <= 1, got "
                             f"{p['media_share']} + {p['politician_share']}")
    m, n, kmax = int(p["tuples"]), int(p["entities"]), int(p["max_mentions"])
    pmf = np.arange(1, n + 1, dtype=np.float64) ** (-float(p["alpha"]))
    pmf /= pmf.sum()
    cdf = np.cumsum(pmf)
    cdf /= cdf[-1]
    cls = _classes_by_weight(_rng(seed, _T_CLASSES), pmf,
                             [1.0 - p["media_share"] - p["politician_share"], p["politician_share"], p["media_share"]])
    cost_of = np.array([1.0, 5.0, 25.0])[cls]

    rng = _rng(seed, _T_MENTIONS)
    k = np.minimum(rng.geometric(0.5, m), kmax)
    ents = _draw(rng, cdf, int(k.sum()))
    owner = np.repeat(np.arange(m), k)
    cost = np.bincount(owner, weights=cost_of[ents], minlength=m)
    # key: the sorted tuple of mentioned entities (repeats kept, so a key fixes its cost), exactly
    # as a padded row, numbered densely in order of first appearance
    order = np.lexsort((ents, owner))
    e_sorted, o_sorted = ents[order], owner[order]
    starts = np.searchsorted(o_sorted, np.arange(m))
    pos = np.arange(len(o_sorted)) - starts[o_sorted]
    mat = np.full((m, kmax), -1, dtype=np.int64 if n >= 2**31 else np.int32)
    mat[o_sorted, pos] = e_sorted
    _, first, inv = np.unique(mat, axis=0, return_index=True, return_inverse=True)
    inv = inv.reshape(-1)
    rank = np.empty(len(first), dtype=np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(len(first))
    keys = rank[inv]
    ts = np.arange(m, dtype=np.float64) / float(p["rate"])

    realised_shares = [float(pmf[cls == c].sum()) for c in range(3)]
    stats = {"mean_cost": float(cost.mean()), "p_cost_1": float((cost == 1).mean()),
             "max_cost": float(cost.max()), "distinct_costs": int(len(np.unique(cost))),
             "distinct_keys": int(len(first)), "mean_mentions": float(k.mean()),
             "class_mention_shares": dict(zip(("other", "politician", "media"), realised_shares)),
             "targets": {"mean_cost": 9.7, "p_cost_1": 0.36, "max_cost": 152, "distinct_costs": 110},
             "cost_unit": "ms"}
    meta = {**_base_meta(fn, p, seed, len(first), name),
            "surrogate_of": "the 2014 European elections tweets of the LAS paper (not public): a generator per "
                            "las.spec.md A24 calibrated on the paper's reported cost statistics; a surrogate, "
                            "not the paper's data",
            "source_stats": stats}

    def chunks():
        for lo in range(0, m, CHUNK):
            yield {"ts": ts[lo:lo + CHUNK], "key": keys[lo:lo + CHUNK], "cost": cost[lo:lo + CHUNK]}

    return _write(out_dir, ["seq", "ts", "key", "cost"], chunks(), meta, overwrite, progress, extra_meta)


# --------------------------------------------------------------------------------------------
# ShedPart synthetics

def _slide_stream(rng_keys, rng_times, rng_vals, counts_per_slide, slide, draw_keys, values_for):
    """Chunks (one per slide) of sorted uniform times; ``counts_per_slide[k]`` is either a
    total (keys drawn by ``draw_keys``) or a per-key count vector."""
    for k, c in enumerate(counts_per_slide):
        if np.ndim(c):
            kk = np.repeat(np.arange(len(c), dtype=np.int64), c)
            kk = kk[rng_keys.permutation(len(kk))]
        else:
            kk = draw_keys(rng_keys, int(c))
        tt = _slide_times(rng_times, len(kk), k, slide)
        yield {"ts": tt, "key": kk, "value": values_for(rng_vals, kk)}


def _normal_values(mu, cv):
    def f(rng, kk):
        m = mu[kk]
        return np.maximum(rng.normal(m, cv * m), 0.01)
    return f


def _lognormal_values(mu, cv):
    s2 = math.log(1 + cv * cv)

    def f(rng, kk):
        return mu[kk] * np.exp(rng.normal(-s2 / 2, math.sqrt(s2), len(kk)))
    return f


def _halves(tpw: int, slides: int) -> list[int]:
    """Per-slide totals so that every window (two consecutive slides) holds ``tpw`` tuples."""
    a, b = tpw // 2, tpw - tpw // 2
    return [a if k % 2 == 0 else b for k in range(slides)]


def _syn_common(fn, params, extra):
    return _params(fn, params, {
        "windows": (extra.pop("windows"), _num(1, integer=True)),
        "tuples_per_window": (extra.pop("tuples_per_window"), _num(2, integer=True)),
        "range_s": (extra.pop("range_s"), _num(0, lo_open=True)),
        **extra,
    })


def _zipf_windows(out_dir, fn: str, p: dict, seed: int, name, values_for: Callable, overwrite, progress,
                  extra_meta) -> dict:
    """SYN-Zipf's and SYN-DEBS-like's stream: ``tuples_per_window`` tuples per window over
    ``groups`` Zipf(``alpha``) keys with means ``mu_g ~ U(10, 100)``, values from
    ``values_for(mu, cv)``."""
    G, r = int(p["groups"]), float(p["range_s"])
    mu = _rng(seed, _T_MU).uniform(10, 100, G)
    cdf = _zipf_cdf(G, p["alpha"])
    chunks = _slide_stream(_rng(seed, _T_KEYS), _rng(seed, _T_TIMES), _rng(seed, _T_VALUES),
                           _halves(int(p["tuples_per_window"]), int(p["windows"]) + 1), r / 2,
                           lambda rng, n: _draw(rng, cdf, n), values_for(mu, float(p["cv"])))
    meta = {**_base_meta(fn, p, seed, G, name), **_window_meta(r)}
    return _write(out_dir, ["seq", "ts", "key", "value"], chunks, meta, overwrite, progress, extra_meta)


def syn_zipf(out_dir: Path, *, params: dict, seed: int, inputs: list[Path], name: str | None = None,
             overwrite: bool = False, progress: Callable[[int], None] | None = None,
             extra_meta: dict | None = None) -> dict:
    """SYN-Zipf: keys Zipf(``alpha``) over ``groups`` (key 0 the most frequent); values
    ``Normal(mu_g, (cv mu_g)^2)`` clipped at 0.01 with ``mu_g ~ U(10, 100)``; exactly
    ``tuples_per_window`` tuples in each of ``windows`` complete windows of ``range_s`` (slide
    half of it; ``windows + 1`` slides of ``tuples_per_window / 2``), at sorted uniform times."""
    fn = "syn_zipf"
    p = _syn_common(fn, params, {"windows": 20, "tuples_per_window": 100_000, "range_s": 60.0,
                                 "alpha": (1.0, _num(0)), "groups": (100, _num(1, integer=True)),
                                 "cv": (0.5, _num(0))})
    return _zipf_windows(out_dir, fn, p, seed, name, _normal_values, overwrite, progress, extra_meta)


SYN_BURST_SHARES = (0.6, 0.25, 0.13, 0.02)


def syn_burst(out_dir: Path, *, params: dict, seed: int, inputs: list[Path], name: str | None = None,
              overwrite: bool = False, progress: Callable[[int], None] | None = None,
              extra_meta: dict | None = None) -> dict:
    """SYN-burst: 4 keys with shares 0.6/0.25/0.13/0.02 of ``tuples_per_window`` (the base rate),
    values ``Normal(mu_g, (cv mu_g)^2)`` clipped at 0.01, ``mu_g ~ U(10, 100)``; key 0 arrives
    ``burst_factor`` times faster in windows ``burst = [first, last]`` (slides first..last+1,
    see the module's window convention).  Per-slide per-key counts are Poisson."""
    fn = "syn_burst"
    p = _syn_common(fn, params, {"windows": 100, "tuples_per_window": 20_000, "range_s": 3600.0,
                                 "burst": ([50, 65], _pair()), "burst_factor": (10.0, _num(0)),
                                 "cv": (0.5, _num(0))})
    r = float(p["range_s"])
    rng_counts = _rng(seed, _T_KEYS)
    base = np.array(SYN_BURST_SHARES) * p["tuples_per_window"] / 2
    first, last = p["burst"]
    counts = []
    for k in range(int(p["windows"]) + 1):
        lam = base.copy()
        if first <= k <= last + 1:
            lam[0] *= p["burst_factor"]
        counts.append(rng_counts.poisson(lam))
    mu = _rng(seed, _T_MU).uniform(10, 100, 4)
    chunks = _slide_stream(_rng(seed, _T_KEYS + 100), _rng(seed, _T_TIMES), _rng(seed, _T_VALUES), counts, r / 2,
                           None, _normal_values(mu, float(p["cv"])))
    meta = {**_base_meta(fn, p, seed, 4, name), **_window_meta(r), "shares": list(SYN_BURST_SHARES),
            "burst_slides": [first, last + 1]}
    return _write(out_dir, ["seq", "ts", "key", "value"], chunks, meta, overwrite, progress, extra_meta)


def syn_debs_like(out_dir: Path, *, params: dict, seed: int, inputs: list[Path], name: str | None = None,
                  overwrite: bool = False, progress: Callable[[int], None] | None = None,
                  extra_meta: dict | None = None) -> dict:
    """SYN-DEBS-like: exactly ``tuples_per_window`` tuples per window over ``groups`` Zipf(``alpha``)
    keys; values lognormal with mean ``mu_g ~ U(10, 100)`` and CV ``cv``."""
    fn = "syn_debs_like"
    p = _syn_common(fn, params, {"windows": 20, "tuples_per_window": 15_000, "range_s": 1800.0,
                                 "groups": (10_000, _num(1, integer=True)), "alpha": (0.8, _num(0)),
                                 "cv": (1.0, _num(0))})
    return _zipf_windows(out_dir, fn, p, seed, name, _lognormal_values, overwrite, progress, extra_meta)


# --------------------------------------------------------------------------------------------
# GCM surrogate

def read_gcm_sample(paths: list[Path]) -> dict[str, Any]:
    """Google cluster trace v2 ``task_events`` rows -> scheduling class and CPU request.

    Kept: 13 columns, a timestamp other than 0 and 2^63-1, a class in 0..3 and a non-empty,
    finite, non-negative CPU request.  Returns the arrays and the row accounting."""
    cls, cpu = [], []
    acc = {"lines": 0, "kept": 0, "empty_cpu": 0, "edge_timestamp": 0, "malformed": 0}
    for path in paths:
        with open(path, newline="") as f:
            for row in csv.reader(f):
                acc["lines"] += 1
                if len(row) != 13:
                    acc["malformed"] += 1
                    continue
                if not row[9].strip():
                    acc["empty_cpu"] += 1
                    continue
                try:
                    t, c, v = int(row[0]), int(row[7]), float(row[9])
                except ValueError:
                    acc["malformed"] += 1
                    continue
                if t == 0 or t == INT64_MAX:
                    acc["edge_timestamp"] += 1
                    continue
                if not 0 <= c <= 3 or not math.isfinite(v) or v < 0:
                    acc["malformed"] += 1
                    continue
                cls.append(c)
                cpu.append(v)
    acc["kept"] = len(cls)
    return {"cls": np.array(cls, dtype=np.int64), "cpu": np.array(cpu, dtype=np.float64), "rows": acc}


def gcm_surrogate(out_dir: Path, *, params: dict, seed: int, inputs: list[Path], name: str | None = None,
                  overwrite: bool = False, progress: Callable[[int], None] | None = None,
                  extra_meta: dict | None = None) -> dict:
    """Scheduling class -> CPU request, shaped on the Google cluster trace sample.

    The real rows are cleaned as in shedpart.spec.md 4.2 (:func:`read_gcm_sample`).  ``hours``
    hours at ``events_per_hour``: per 30-minute slide and class a Poisson count at the class's
    measured share of the rate, at sorted uniform times; each event's CPU request is drawn
    (bootstrap) from its class's real values.  In the 1-hour windows (slide 30 min, aligned at
    0) ``surge_windows = [50, 65]`` class ``surge_class`` arrives ``surge_factor`` times faster.
    ``surge_class`` defaults to 0, the busiest class (66% of the sample): a tenfold surge of it
    lifts a fields-grouping worker's window to about 10x the median imbalance, the tail of
    ShedPart Table III (R2); a minor class would barely move Storm's imbalance.
    key = class (n_keys 4, key names ``class 0``..``class 3``), value = CPU request, ts from 0.
    """
    fn = "gcm_surrogate"
    p = _params(fn, params, {
        "hours": (72, _num(0, lo_open=True)),
        "events_per_hour": (200_000, _num(0, lo_open=True)),
        "surge_class": (0, _num(0, 3, integer=True)),
        "surge_factor": (10.0, _num(0)),
        "surge_windows": ([50, 65], _pair()),
    })
    paths = _inputs(fn, inputs, "the Google cluster task_events sample (task_event_*.csv)")
    real = read_gcm_sample(paths)
    cls, cpu = real["cls"], real["cpu"]
    if len(cls) == 0:
        raise SkewbenchError(f"workload {fn}: no usable row (class and CPU request) in {[str(x) for x in paths]}")
    n_cls = np.bincount(cls, minlength=4)
    shares = n_cls / n_cls.sum()
    by_class = [np.sort(cpu[cls == c]) for c in range(4)]
    sc = int(p["surge_class"])
    if n_cls[sc] == 0:
        raise SkewbenchError(f"workload {fn}: parameter 'surge_class' names class {sc}, absent from the sample")

    def cv(v):
        return float(v.std(ddof=1) / v.mean()) if len(v) > 1 and v.mean() > 0 else None

    stats = {"rows": real["rows"], "class_rows": n_cls.tolist(), "class_shares": shares.tolist(),
             "class_mean_cpu": [float(v.mean()) if len(v) else None for v in by_class],
             "class_cv": [cv(v) for v in by_class],
             "class_distinct_values": [int(len(np.unique(v))) for v in by_class],
             "overall_cv": cv(cpu),
             "cv_check": "shedpart.spec.md R2 implied check wants within-class CV about 0.5-1.5",
             "few_rows_classes": [c for c in range(4) if 0 < n_cls[c] < 20],
             "absent_classes": [c for c in range(4) if n_cls[c] == 0]}
    if stats["few_rows_classes"]:
        stats["few_rows_note"] = (f"classes {stats['few_rows_classes']} have fewer than 20 real rows; "
                                  "their values are still resampled from those rows")
    slide = 1800.0
    slides = int(math.ceil(p["hours"] * 3600 / slide - 1e-9))
    first, last = p["surge_windows"]
    if last + 2 > slides:
        stats["surge_note"] = f"the stream has {slides} slides: the surge in windows {first}-{last} is cut short"
    rng_n, rng_t, rng_v = _rng(seed, _T_KEYS), _rng(seed, _T_TIMES), _rng(seed, _T_VALUES)
    lam = shares * p["events_per_hour"] / 2
    total_h = p["hours"] * 3600

    def chunks():
        for k in range(slides):
            lk = lam.copy()
            if first <= k <= last + 1:
                lk[sc] *= p["surge_factor"]
            width = min(slide, total_h - k * slide)
            counts = rng_n.poisson(lk * width / slide)
            kk = np.repeat(np.arange(4, dtype=np.int64), counts)
            kk = kk[rng_n.permutation(len(kk))]
            tt = np.sort(rng_t.uniform(k * slide, k * slide + width, len(kk)))
            vals = np.empty(len(kk))
            for c in range(4):
                sel = kk == c
                if sel.any():
                    vals[sel] = by_class[c][rng_v.integers(0, len(by_class[c]), int(sel.sum()))]
            yield {"ts": tt, "key": kk, "value": vals}

    meta = {**_base_meta(fn, p, seed, 4, name), **_window_meta(3600.0),
            "inputs": [str(x) for x in paths],
            "surrogate_of": f"the Google cluster trace v2 task_events (scheduling class -> CPU request), resampled "
                            f"from a {len(cls):,}-row sample ({', '.join(x.name for x in paths)}); a surrogate, "
                            "not the paper's slice of the trace",
            "source_stats": stats}
    return _write(out_dir, ["seq", "ts", "key", "value"], chunks(), meta, overwrite, progress, extra_meta,
                  key_names=[f"class {c}" for c in range(4)])


# --------------------------------------------------------------------------------------------
# DEBS surrogate

DEBS_SENTINEL_CELL = 255   # the compact rides mark out-of-grid coordinates with cell 255


def read_debs_sample(paths: list[Path]) -> dict[str, Any]:
    """Compact DEBS 2015 rides (medallion, trip distance, drop-off epoch s, pickup cell x, y,
    drop-off cell x, y, fare, tip) -> route, distance, fare.

    Dropped (shedpart.spec.md 4.2 cleaning): out-of-grid cells (outside 1..300, or the sample's
    sentinel 255), negative or missing fares, zero or negative distances (meter glitches, which
    would distort the fare-per-distance fit), malformed lines."""
    routes, dist, fare = [], [], []
    acc = {"lines": 0, "kept": 0, "out_of_grid": 0, "bad_fare": 0, "zero_distance": 0, "malformed": 0}
    for path in paths:
        with open(path, newline="") as f:
            for row in csv.reader(f):
                acc["lines"] += 1
                if len(row) < 9:
                    acc["malformed"] += 1
                    continue
                try:
                    d, fa = float(row[1]), float(row[7])
                    cells = [int(row[i]) for i in (3, 4, 5, 6)]
                except ValueError:
                    acc["malformed"] += 1
                    continue
                if any(c < 1 or c > 300 or c == DEBS_SENTINEL_CELL for c in cells):
                    acc["out_of_grid"] += 1
                    continue
                if not math.isfinite(fa) or fa < 0:
                    acc["bad_fare"] += 1
                    continue
                if not math.isfinite(d) or d <= 0:
                    acc["zero_distance"] += 1
                    continue
                routes.append(tuple(cells))
                dist.append(d)
                fare.append(fa)
    acc["kept"] = len(routes)
    return {"routes": routes, "dist": np.array(dist), "fare": np.array(fare), "rows": acc}


def _route_name(c) -> str:
    return f"{c[0]}.{c[1]}-{c[2]}.{c[3]}"


def _expected_distinct(weights: np.ndarray, n: float) -> float:
    return float(-np.expm1(-n * weights).sum())


def _routes_by_frequency(routes: list) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The sample's distinct routes by decreasing frequency (then cells): their cells, ride
    counts, and each ride's route id."""
    uniq, inv, cnt = np.unique(np.array(routes, dtype=np.int64), axis=0, return_inverse=True, return_counts=True)
    inv = inv.reshape(-1)
    order = np.lexsort((np.arange(len(cnt)), -cnt))
    new_id = np.empty(len(cnt), dtype=np.int64)
    new_id[order] = np.arange(len(cnt))
    return uniq[order], cnt[order], new_id[inv]


def _fare_fit(dist: np.ndarray, fare: np.ndarray) -> tuple[float, float, np.ndarray, np.ndarray]:
    """``fare = a + b distance`` by least squares: ``(a, b)``, the relative residuals
    ``fare / fit - 1`` (fit clipped at 1) and the absolute ones."""
    A = np.vstack([np.ones(len(dist)), dist]).T
    (a, b), *_ = np.linalg.lstsq(A, fare, rcond=None)
    fitted = np.maximum(a + b * dist, 1.0)
    return a, b, fare / fitted - 1.0, fare - (a + b * dist)


def _route_weights(cnt: np.ndarray, share: float, tail_alpha: float, n_tail: int) -> np.ndarray:
    """Route probabilities: the real routes' measured frequencies scaled to ``share``, then
    ``n_tail`` synthetic routes continuing a Zipf(``tail_alpha``) law past the real ranks."""
    w_real = cnt / cnt.sum() * share
    if n_tail <= 0 or share >= 1:
        return w_real / w_real.sum()
    t = np.arange(len(cnt) + 1, len(cnt) + n_tail + 1, dtype=np.float64) ** (-tail_alpha)
    return np.concatenate([w_real, t / t.sum() * (1 - share)])


def _tail_size(fn: str, p: dict, cnt: np.ndarray, n_win: float) -> int:
    """The number of synthetic routes: ``routes`` minus the real ones, or (``routes: null``) the
    smallest tail (to 0.5%) whose expected distinct routes per window reach ``groups_per_window``,
    at most ``max_routes`` routes in all."""
    R_real = len(cnt)
    share, alpha = float(p["real_share"]), float(p["tail_alpha"])
    if p["routes"] is not None:
        n_tail = max(int(p["routes"]) - R_real, 0)
    else:
        target = float(p["groups_per_window"])
        lo, hi = 0, max(int(p["max_routes"]) - R_real, 0)
        if _expected_distinct(_route_weights(cnt, share, alpha, hi), n_win) <= target:
            n_tail = hi
        else:
            while hi - lo > max(1, lo // 200):   # to 0.5%
                mid = (lo + hi) // 2
                if _expected_distinct(_route_weights(cnt, share, alpha, mid), n_win) < target:
                    lo = mid
                else:
                    hi = mid
            n_tail = hi
    if share < 1 and n_tail == 0:
        raise SkewbenchError(f"workload {fn}: parameter 'routes' leaves no synthetic route for the "
                             f"{1 - share:.0%} of rides off the sample's {R_real} routes; raise it or set real_share 1")
    return n_tail


def _cell_code(c: np.ndarray) -> np.ndarray:
    return ((c[:, 0] * 301 + c[:, 1]) * 301 + c[:, 2]) * 301 + c[:, 3]


def _synthetic_routes(rng: np.random.Generator, uniq: np.ndarray, all_real: np.ndarray, dist: np.ndarray,
                      n_tail: int) -> tuple[np.ndarray, np.ndarray]:
    """``n_tail`` synthetic routes: the cells of a random real ride moved by N(0, 4) cells,
    distinct from each other and from the real routes; and each one's base distance, drawn from
    the sample's."""
    seen = set(_cell_code(uniq).tolist())
    syn_cells = np.zeros((0, 4), dtype=np.int64)
    while len(syn_cells) < n_tail:
        need = n_tail - len(syn_cells)
        cand = all_real[rng.integers(0, len(all_real), 2 * need + 16)]
        cand = cand + np.rint(rng.normal(0, 4, cand.shape)).astype(np.int64)
        cand = np.clip(cand, 1, 300)
        cand = cand[(cand != DEBS_SENTINEL_CELL).all(axis=1)]
        codes = _cell_code(cand)
        _, idx = np.unique(codes, return_index=True)
        idx = np.sort(idx)
        keep = [i for i in idx.tolist() if codes[i] not in seen]
        keep = keep[:need]
        seen.update(codes[keep].tolist())
        syn_cells = np.vstack([syn_cells, cand[keep]])
    return syn_cells, dist[rng.integers(0, len(dist), n_tail)]


def _rides(seed: int, slides: int, n_win: float, cdf: np.ndarray, dist: np.ndarray, inv: np.ndarray,
           cnt: np.ndarray, syn_base_d: np.ndarray, fit: tuple, jitter: float) -> Iterable[dict[str, np.ndarray]]:
    """The rides, slide by slide (15 minutes each): Poisson counts of mean ``n_win / 2``, routes
    from ``cdf``, a distance of the route (real: one of its sample distances; synthetic: its
    base distance) jittered by ``exp(N(0, jitter))``, and a fare from the fit and a residual."""
    R_real = len(cnt)
    a, b, rel = fit[0], fit[1], fit[2]
    # each real route's distances, as slices of one sorted array
    d_sorted = dist[np.argsort(inv, kind="stable")]
    r_start = np.concatenate([[0], np.cumsum(cnt)[:-1]])
    rng_k, rng_t, rng_v = _rng(seed, _T_KEYS), _rng(seed, _T_TIMES), _rng(seed, _T_VALUES)
    for k in range(slides):
        n = int(rng_k.poisson(n_win / 2))
        kk = _draw(rng_k, cdf, n)
        tt = _slide_times(rng_t, n, k, 900.0)
        d = np.empty(n)
        isreal = kk < R_real
        rk = kk[isreal]
        d[isreal] = d_sorted[r_start[rk] + (rng_v.random(len(rk)) * cnt[rk]).astype(np.int64)]
        d[~isreal] = syn_base_d[kk[~isreal] - R_real]
        d *= np.exp(rng_v.normal(0, jitter, n))
        e = rel[rng_v.integers(0, len(rel), n)]
        f = np.maximum((a + b * d) * (1 + e), 2.5)
        yield {"ts": tt, "key": kk, "value": f}


def _debs_stats(real: dict, cnt: np.ndarray, inv: np.ndarray, fit: tuple, top_route: str) -> dict[str, Any]:
    """What was measured on the sample (the dataset's ``source_stats``)."""
    dist, fare = real["dist"], real["fare"]
    a, b, rel, resid = fit
    logd = np.log(dist)
    within = [logd[inv == i].std() for i in np.flatnonzero(cnt >= 5)]  # routes with >= 5 rides
    return {"rows": real["rows"], "routes": int(len(cnt)), "singleton_routes": int((cnt == 1).sum()),
            "good_turing_unseen_mass": float((cnt == 1).sum() / cnt.sum()),
            "top_route_share": float(cnt[0] / cnt.sum()), "top_route": top_route,
            "fare_fit": {"a": float(a), "b_per_mile": float(b)},
            "residual_sd": float(resid.std(ddof=2)), "residual_rel_sd": float(rel.std()),
            "residual_rel_iqr": [float(x) for x in np.percentile(rel, [25, 75])],
            "fare_mean": float(fare.mean()), "fare_cv": float(fare.std() / fare.mean()),
            "distance_median": float(np.median(dist)),
            "within_route_log_distance_sd_median": float(np.median(within)) if within else None}


def debs_surrogate(out_dir: Path, *, params: dict, seed: int, inputs: list[Path], name: str | None = None,
                   overwrite: bool = False, progress: Callable[[int], None] | None = None,
                   extra_meta: dict | None = None) -> dict:
    """Rides in 30-minute windows (slide 15 min), shaped on the DEBS 2015 rides sample.

    *Routes.*  The sample's routes (ids ``0..R_real-1``, by decreasing sample frequency) carry
    ``real_share`` of the rides at their measured relative frequencies; the rest goes to
    synthetic routes (ids ``R_real..``) whose weights continue a Zipf(``tail_alpha``) law past
    the real routes' ranks (synthetic route ``i`` weighs ``(R_real + i)^-tail_alpha``), so every
    synthetic route is rarer than the sample's frequent ones.  The default ``real_share`` 0.5 is
    near the Good-Turing estimate of the sample's own unseen mass (singletons / rides = 0.37).
    The sample is 36 minutes of one night and too concentrated for the paper's "about 10^4
    groups per window", so by default (``routes: null``) the number of synthetic routes is
    calibrated so that the expected number of distinct routes per window of
    ``rides_per_window`` rides is ``groups_per_window`` (capped at ``max_routes`` routes in
    all); an integer ``routes`` fixes the total instead.  Synthetic routes get real-looking cell
    pairs (a real ride's cells moved by a few cells), distinct from each other and from the
    real routes.

    *Fares.*  ``fare = a + b distance`` is fitted by least squares on the real rides; a ride's
    fare is ``max(2.5, (a + b d) (1 + e))`` with ``e`` drawn from the real relative residuals
    ``fare / fit - 1``.  Its distance ``d`` is one of its route's real distances (a synthetic
    route: one base distance drawn from the sample), times ``exp(N(0, distance_jitter))``.  So no
    real ride is copied and every route's fares vary.  Per-slide ride counts are Poisson with
    mean ``rides_per_window / 2``, at sorted uniform times.  key = route id, value = fare.
    """
    fn = "debs_surrogate"
    p = _params(fn, params, {
        "windows": (16, _num(1, integer=True)),
        "rides_per_window": (15_000, _num(2, integer=True)),
        "routes": (None, _num(1, integer=True, optional=True)),
        "groups_per_window": (10_000, _num(1)),
        "real_share": (0.5, _num(0, 1, lo_open=True)),
        "tail_alpha": (0.8, _num(0)),
        "max_routes": (2_000_000, _num(1, integer=True)),
        "distance_jitter": (0.1, _num(0)),
    })
    paths = _inputs(fn, inputs, "the DEBS 2015 compact rides sample (frequent_route_compact_ride_10000.csv)")
    real = read_debs_sample(paths)
    dist = real["dist"]
    if len(dist) < 2:
        raise SkewbenchError(f"workload {fn}: fewer than 2 usable rides in {[str(x) for x in paths]}")
    uniq, cnt, inv = _routes_by_frequency(real["routes"])
    fit = _fare_fit(dist, real["fare"])
    n_win = float(p["rides_per_window"])
    n_tail = _tail_size(fn, p, cnt, n_win)
    weights = _route_weights(cnt, float(p["real_share"]), float(p["tail_alpha"]), n_tail)
    cdf = np.cumsum(weights)
    cdf /= cdf[-1]
    syn_cells, syn_base_d = _synthetic_routes(_rng(seed, _T_ROUTES), uniq, np.array(real["routes"], dtype=np.int64),
                                              dist, n_tail)
    names = [_route_name(c) for c in uniq.tolist()] + [_route_name(c) for c in syn_cells.tolist()]
    chunks = _rides(seed, int(p["windows"]) + 1, n_win, cdf, dist, inv, cnt, syn_base_d, fit,
                    float(p["distance_jitter"]))
    meta = {**_base_meta(fn, p, seed, len(cnt) + n_tail, name), **_window_meta(1800.0),
            "inputs": [str(x) for x in paths],
            "routes": {"real": int(len(cnt)), "synthetic": int(n_tail),
                       "expected_groups_per_window": _expected_distinct(weights, n_win)},
            "surrogate_of": f"the DEBS 2015 Grand Challenge taxi rides (route -> fare), shaped on a "
                            f"{len(dist):,}-ride sample ({', '.join(x.name for x in paths)}) plus a synthetic "
                            "route tail; a surrogate, not the paper's slice of the trace",
            "source_stats": _debs_stats(real, cnt, inv, fit, names[0])}
    return _write(out_dir, ["seq", "ts", "key", "value"], chunks, meta, overwrite, progress, extra_meta,
                  key_names=names)
