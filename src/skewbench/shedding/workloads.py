"""The shedding family's workloads: generators the catalog calls by name (``workload:`` entries).

Each function writes one dataset with :class:`~skewbench.datasets.contract.DatasetWriter` and
returns its metadata; it is deterministic in ``(params, seed, input contents)``.  Surrogates say
so in their metadata (``surrogate_of``, with the real sample's statistics in ``source_stats``);
the replay engine copies that into every result's ``data`` column.

* :func:`las_tweets`: LAS E4's tweets (las.spec.md A24): entity mentions with class costs.
* :func:`syn_zipf`, :func:`syn_burst`, :func:`syn_debs_like`: ShedPart's synthetic streams
  (shedpart.spec.md 4.2).
* :func:`gcm_surrogate`: scheduling class -> CPU request of the Google cluster trace sample,
  resampled per class, at a chosen rate, with one class surging in windows 50-65.
* :func:`debs_surrogate`: DEBS 2015 rides whose routes follow the sample's route frequencies
  (plus a Zipf tail of synthetic routes up to the paper's ~10^4 routes per window) and whose
  fares follow the sample's fare-per-distance relation with its spread.

Sliding windows are ``[k s, k s + r)`` seconds (range ``r``, slide ``s = r/2``), numbered from 0;
each dataset records its query window as ``shedpart_window``.
"""

from __future__ import annotations

import csv
import math
from pathlib import Path
from typing import Any, Callable, Mapping

import numpy as np

from skewbench.datasets.contract import DatasetWriter
from skewbench.errors import SkewbenchError

CHUNK = 1 << 20


def _rng(seed: int, tag: int) -> np.random.Generator:
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence(seed, spawn_key=(tag,))))


def _params(name: str, params: Mapping[str, Any], defaults: dict[str, Any]) -> dict[str, Any]:
    unknown = set(params) - set(defaults)
    if unknown:
        raise SkewbenchError(f"workload {name}: unknown parameter(s) {sorted(unknown)}; it takes {sorted(defaults)}")
    out = {**defaults, **params}
    for k, v in out.items():
        d = defaults[k]
        if isinstance(d, (int, float)) and not isinstance(d, bool):
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not v > 0 and k not in ("surge_class",):
                raise SkewbenchError(f"workload {name}: parameter {k} must be a number > 0, got {v!r}")
    return out


def _write(out_dir, columns, chunks, meta, overwrite, progress, extra_meta, key_names=None) -> dict:
    with DatasetWriter(out_dir, columns, overwrite=overwrite) as w:
        for ch in chunks:
            for lo in range(0, len(ch["key"]), CHUNK):
                part = {k: v[lo:lo + CHUNK] for k, v in ch.items()}
                w.append(part)
                if progress:
                    progress(len(part["key"]))
        if key_names is not None:
            w.write_keys(key_names)
        return w.commit({**meta, **(extra_meta or {})})


def _windowed_times(rng, counts_per_slide: np.ndarray, slide: float) -> np.ndarray:
    """Sorted uniform times: ``counts_per_slide[k]`` in ``[k s, (k+1) s)``."""
    out = []
    for k, c in enumerate(counts_per_slide):
        out.append(np.sort(rng.uniform(k * slide, (k + 1) * slide, int(c))))
    return np.concatenate(out) if out else np.zeros(0)


# --------------------------------------------------------------------------------------------
# LAS


def las_tweets(out_dir: Path, *, params: dict, seed: int, inputs: list[Path], name: str | None = None,
               overwrite: bool = False, progress: Callable[[int], None] | None = None,
               extra_meta: dict | None = None) -> dict:
    """Tweets mentioning 1-8 of 35,000 Zipf(0.94) entities; cost = the sum of the mentioned
    entities' class costs (other 1 ms, politician 5 ms, media 25 ms); key = the sorted set of
    mentions.  Arrivals every ``1/rate`` s."""
    p = _params("las_tweets", params, {"tuples": 500_000, "entities": 35_000, "alpha": 0.94, "media_share": 0.137,
                                       "politician_share": 0.14, "rate": 1000 / 9.7})
    m, n = int(p["tuples"]), int(p["entities"])
    rng = _rng(seed, 1)
    pmf = np.arange(1, n + 1, dtype=np.float64) ** (-float(p["alpha"]))
    pmf /= pmf.sum()
    cdf = np.cumsum(pmf)
    # classes by mention weight: entities in a random order, cut where their cumulative mention
    # probability reaches the shares (other, then politician, then media)
    perm = rng.permutation(n)
    cum = np.cumsum(pmf[perm])
    other = 1.0 - p["media_share"] - p["politician_share"]
    cls = np.empty(n, dtype=np.int64)
    cls[perm] = np.where(cum <= other, 0, np.where(cum <= other + p["politician_share"], 1, 2))
    cost_of = np.array([1.0, 5.0, 25.0])[cls]
    k = np.minimum(rng.geometric(0.5, m), 8)
    total = int(k.sum())
    ents = np.minimum(np.searchsorted(cdf, rng.random(total), side="right"), n - 1)
    owner = np.repeat(np.arange(m), k)
    cost = np.bincount(owner, weights=cost_of[ents], minlength=m)
    # key: the sorted tuple of mentioned entities -> dense id in order of first appearance
    order = np.lexsort((ents, owner))
    ents_sorted = ents[order]
    starts = np.concatenate([[0], np.cumsum(k)[:-1]])
    sig = np.zeros(m, dtype=np.uint64)
    with np.errstate(over="ignore"):
        h = (ents_sorted.astype(np.uint64) + np.uint64(1)) * np.uint64(0x9E3779B97F4A7C15)
        for j in range(8):
            idx = starts + j
            ok = j < k
            sig[ok] = sig[ok] * np.uint64(1_000_003) + h[idx[ok]]
    _, first, inv = np.unique(sig, return_index=True, return_inverse=True)
    rank = np.empty(len(first), dtype=np.int64)
    rank[np.argsort(first)] = np.arange(len(first))
    keys = rank[inv]
    ts = np.arange(m) / float(p["rate"])
    stats = {"mean_cost": float(cost.mean()), "p_cost_1": float((cost == 1).mean()), "max_cost": float(cost.max()),
             "distinct_costs": int(len(np.unique(cost))), "distinct_keys": int(len(first))}
    meta = {"kind": "synthetic", "generator": "workload:las_tweets", "params": p, "seed": seed,
            "n_keys": int(len(first)), "name": name,
            "surrogate_of": "the 2014 European elections tweets of the LAS paper (not public); a generator "
                            "per las.spec.md A24, not the paper's data",
            "source_stats": stats}
    return _write(out_dir, ["seq", "ts", "key", "cost"], [{"ts": ts, "key": keys, "cost": cost}], meta, overwrite,
                  progress, extra_meta)


# --------------------------------------------------------------------------------------------
# ShedPart synthetics


def _groups_stream(name, p, seed, mu, cv, shares_per_slide, slide, lognormal=False):
    rng = _rng(seed, 2)
    keys, ts = [], []
    for k, shares in enumerate(shares_per_slide):
        counts = rng.multinomial(int(round(shares.sum())), shares / shares.sum())
        kk = np.repeat(np.arange(len(shares)), counts)
        tt = rng.uniform(k * slide, (k + 1) * slide, len(kk))
        o = np.argsort(tt, kind="stable")
        keys.append(kk[o].astype(np.int64))
        ts.append(tt[o])
    keys = np.concatenate(keys)
    ts = np.concatenate(ts)
    m_g = mu[keys]
    if lognormal:
        s2 = math.log(1 + cv * cv)
        values = m_g * np.exp(rng.normal(-s2 / 2, math.sqrt(s2), len(keys)))
    else:
        values = np.maximum(rng.normal(m_g, cv * m_g), 0.01)
    return ts, keys, values


def _syn_meta(name, p, seed, n_keys, r, extra):
    return {"kind": "synthetic", "generator": f"workload:{name}", "params": p, "seed": seed, "n_keys": n_keys,
            "name": extra, "shedpart_window": {"range_s": float(r), "slide_s": float(r) / 2}}


def syn_zipf(out_dir: Path, *, params: dict, seed: int, inputs: list[Path], name: str | None = None,
             overwrite: bool = False, progress=None, extra_meta: dict | None = None) -> dict:
    """SYN-Zipf: Zipf(alpha) over G groups, Normal(mu_g, (cv mu_g)^2) values clipped at 0.01,
    mu_g ~ U(10, 100), ``tuples_per_window`` per window of ``range_s`` (slide half of it)."""
    p = _params("syn_zipf", params, {"alpha": 1.0, "groups": 100, "cv": 0.5, "tuples_per_window": 100_000,
                                     "windows": 20, "range_s": 60.0})
    G, r = int(p["groups"]), float(p["range_s"])
    mu = _rng(seed, 3).uniform(10, 100, G)
    pmf = np.arange(1, G + 1, dtype=np.float64) ** (-float(p["alpha"]))
    per_slide = pmf / pmf.sum() * p["tuples_per_window"] / 2
    ts, keys, values = _groups_stream("syn_zipf", p, seed, mu, float(p["cv"]), [per_slide] * (int(p["windows"]) + 1),
                                      r / 2)
    return _write(out_dir, ["seq", "ts", "key", "value"], [{"ts": ts, "key": keys, "value": values}],
                  _syn_meta("syn_zipf", p, seed, G, r, name), overwrite, progress, extra_meta)


def syn_burst(out_dir: Path, *, params: dict, seed: int, inputs: list[Path], name: str | None = None,
              overwrite: bool = False, progress=None, extra_meta: dict | None = None) -> dict:
    """SYN-burst: 4 keys with shares 0.6/0.25/0.13/0.02 and CV 0.5; key 0's rate times
    ``burst_factor`` in windows ``burst_first..burst_last`` (windows of ``range_s``, slide half)."""
    p = _params("syn_burst", params, {"windows": 100, "tuples_per_window": 20_000, "range_s": 3600.0,
                                      "burst_first": 50, "burst_last": 65, "burst_factor": 10.0, "cv": 0.5})
    r = float(p["range_s"])
    base = np.array([0.6, 0.25, 0.13, 0.02]) * p["tuples_per_window"] / 2
    slides = []
    for k in range(int(p["windows"]) + 1):
        s = base.copy()
        # slide k belongs to windows k-1 and k: it surges when either is a burst window
        if p["burst_first"] <= k <= p["burst_last"] + 1:
            s[0] *= p["burst_factor"]
        slides.append(s)
    mu = _rng(seed, 3).uniform(10, 100, 4)
    ts, keys, values = _groups_stream("syn_burst", p, seed, mu, float(p["cv"]), slides, r / 2)
    return _write(out_dir, ["seq", "ts", "key", "value"], [{"ts": ts, "key": keys, "value": values}],
                  _syn_meta("syn_burst", p, seed, 4, r, name), overwrite, progress, extra_meta)


def syn_debs_like(out_dir: Path, *, params: dict, seed: int, inputs: list[Path], name: str | None = None,
                  overwrite: bool = False, progress=None, extra_meta: dict | None = None) -> dict:
    """SYN-DEBS-like: about ``tuples_per_window`` tuples per window over ``groups`` Zipf(alpha)
    keys with lognormal values of CV ``cv``."""
    p = _params("syn_debs_like", params, {"windows": 20, "tuples_per_window": 15_000, "range_s": 1800.0,
                                          "groups": 10_000, "alpha": 0.8, "cv": 1.0})
    G, r = int(p["groups"]), float(p["range_s"])
    pmf = np.arange(1, G + 1, dtype=np.float64) ** (-float(p["alpha"]))
    per_slide = pmf / pmf.sum() * p["tuples_per_window"] / 2
    mu = _rng(seed, 3).uniform(5, 60, G)
    ts, keys, values = _groups_stream("syn_debs_like", p, seed, mu, float(p["cv"]),
                                      [per_slide] * (int(p["windows"]) + 1), r / 2, lognormal=True)
    return _write(out_dir, ["seq", "ts", "key", "value"], [{"ts": ts, "key": keys, "value": values}],
                  _syn_meta("syn_debs_like", p, seed, G, r, name), overwrite, progress, extra_meta)


# --------------------------------------------------------------------------------------------
# trace-derived surrogates


def _read_gcm(inputs: list[Path]) -> tuple[np.ndarray, np.ndarray]:
    cls, cpu = [], []
    for path in inputs:
        with open(path, newline="") as f:
            for row in csv.reader(f):
                if len(row) != 13 or not row[9] or not row[7]:
                    continue
                try:
                    t, c, v = int(row[0]), int(row[7]), float(row[9])
                except ValueError:
                    continue
                if t == 0 or t == 2**63 - 1 or not 0 <= c <= 3:
                    continue
                cls.append(c)
                cpu.append(v)
    if not cls:
        raise SkewbenchError(f"gcm_surrogate: no usable row (class and CPU request) in {[str(p) for p in inputs]}")
    return np.array(cls, dtype=np.int64), np.array(cpu)


def gcm_surrogate(out_dir: Path, *, params: dict, seed: int, inputs: list[Path], name: str | None = None,
                  overwrite: bool = False, progress=None, extra_meta: dict | None = None) -> dict:
    """Events of the 4 scheduling classes at the real sample's class shares, each event's CPU
    request drawn from its class's real values; ``hours`` hours at ``events_per_hour``; in the
    1-hour windows (slide 30 min) ``surge_first..surge_last`` class ``surge_class`` arrives
    ``surge_factor`` times faster (default: the busiest class, whose worker then carries a
    spike in every partitioning that keeps a class on one worker)."""
    p = _params("gcm_surrogate", params, {"hours": 72, "events_per_hour": 200_000, "surge_class": 0,
                                          "surge_factor": 10.0, "surge_first": 50, "surge_last": 65})
    if not inputs:
        raise SkewbenchError("gcm_surrogate needs the Google cluster task_events sample as inputs")
    cls, cpu = _read_gcm([Path(x) for x in inputs])
    shares = np.bincount(cls, minlength=4) / len(cls)
    by_class = [cpu[cls == c] for c in range(4)]
    stats = {"rows": int(len(cls)), "class_shares": shares.tolist(),
             "class_rows": [int(len(v)) for v in by_class],
             "class_cv": [float(v.std(ddof=1) / v.mean()) if len(v) > 1 and v.mean() > 0 else None for v in by_class],
             "class_mean_cpu": [float(v.mean()) if len(v) else None for v in by_class]}
    sc = int(p["surge_class"])
    if not 0 <= sc <= 3 or len(by_class[sc]) == 0:
        raise SkewbenchError(f"gcm_surrogate: surge_class must be a class present in the sample, got {sc}")
    slide = 1800.0
    slides = int(math.ceil(p["hours"] * 3600 / slide))
    rng = _rng(seed, 4)
    per_slide = shares * p["events_per_hour"] / 2
    chunks = []
    for k in range(slides):
        s = per_slide.copy()
        if p["surge_first"] <= k <= p["surge_last"] + 1:
            s[sc] *= p["surge_factor"]
        counts = rng.poisson(s)
        kk = np.repeat(np.arange(4), counts)
        tt = rng.uniform(k * slide, (k + 1) * slide, len(kk))
        o = np.argsort(tt, kind="stable")
        kk, tt = kk[o].astype(np.int64), tt[o]
        vals = np.empty(len(kk))
        for c in range(4):
            sel = kk == c
            if sel.any():
                vals[sel] = by_class[c][rng.integers(0, len(by_class[c]), int(sel.sum()))]
        chunks.append({"ts": tt, "key": kk, "value": vals})
    meta = {"kind": "synthetic", "generator": "workload:gcm_surrogate", "params": p, "seed": seed, "n_keys": 4,
            "name": name, "inputs": [str(x) for x in inputs],
            "surrogate_of": "the Google cluster trace task_events (scheduling class -> CPU request), resampled from "
                            f"a {len(cls):,}-row sample; not the paper's slice",
            "source_stats": stats, "shedpart_window": {"range_s": 3600.0, "slide_s": 1800.0}}
    return _write(out_dir, ["seq", "ts", "key", "value"], chunks, meta, overwrite, progress, extra_meta,
                  key_names=[f"class {c}" for c in range(4)])


def _read_debs(inputs: list[Path]):
    routes, dist, fare = [], [], []
    for path in inputs:
        with open(path, newline="") as f:
            for row in csv.reader(f):
                if len(row) < 9:
                    continue
                try:
                    d, fa = float(row[1]), float(row[7])
                    px, py, dx, dy = (int(row[i]) for i in (3, 4, 5, 6))
                except ValueError:
                    continue
                if fa < 0 or d <= 0:
                    continue
                routes.append(f"{px}.{py}-{dx}.{dy}")
                dist.append(d)
                fare.append(fa)
    if not routes:
        raise SkewbenchError(f"debs_surrogate: no usable ride in {[str(p) for p in inputs]}")
    return routes, np.array(dist), np.array(fare)


def debs_surrogate(out_dir: Path, *, params: dict, seed: int, inputs: list[Path], name: str | None = None,
                   overwrite: bool = False, progress=None, extra_meta: dict | None = None) -> dict:
    """Rides in 30-minute windows (slide 15 min): routes from the sample's route frequencies,
    plus synthetic routes in a Zipf(0.8) tail up to ``routes`` routes in all (the sample's share
    of rides stays ``real_share``); distance per ride from the route's real distances (jittered
    by 10%), or the sample's distances for synthetic routes; fare = a + b distance + a residual
    drawn from the sample's relative residuals, at least 2.5."""
    p = _params("debs_surrogate", params, {"windows": 16, "rides_per_window": 15_000, "routes": 10_000,
                                           "real_share": 0.5})
    if not inputs:
        raise SkewbenchError("debs_surrogate needs the DEBS 2015 rides sample as inputs")
    routes, dist, fare = _read_debs([Path(x) for x in inputs])
    names, inv, cnt = np.unique(np.array(routes), return_inverse=True, return_counts=True)
    A = np.vstack([np.ones(len(dist)), dist]).T
    (a, b), *_ = np.linalg.lstsq(A, fare, rcond=None)
    fitted = np.maximum(a + b * dist, 0.5)
    rel = fare / fitted - 1.0
    R = max(int(p["routes"]), len(names))
    extra = R - len(names)
    tail = np.arange(1, extra + 1, dtype=np.float64) ** -0.8 if extra else np.zeros(0)
    w_real = cnt / cnt.sum() * float(p["real_share"])
    w_tail = tail / tail.sum() * (1 - float(p["real_share"])) if extra else np.zeros(0)
    weights = np.concatenate([w_real, w_tail])
    weights /= weights.sum()
    route_dists = [dist[inv == i] for i in range(len(names))]
    rng = _rng(seed, 5)
    slide = 900.0
    chunks = []
    for k in range(int(p["windows"]) + 1):
        n = rng.poisson(p["rides_per_window"] / 2)
        kk = rng.choice(R, size=n, p=weights).astype(np.int64)
        tt = np.sort(rng.uniform(k * slide, (k + 1) * slide, n))
        d = np.empty(n)
        real = kk < len(names)
        for j in np.flatnonzero(real):
            rd = route_dists[kk[j]]
            d[j] = rd[rng.integers(0, len(rd))]
        d[~real] = dist[rng.integers(0, len(dist), int((~real).sum()))]
        d *= np.exp(rng.normal(0, 0.1, n))
        f = np.maximum((a + b * d) * (1 + rel[rng.integers(0, len(rel), n)]), 2.5)
        chunks.append({"ts": tt, "key": kk, "value": f})
    stats = {"rides": int(len(routes)), "routes": int(len(names)), "fare_a": float(a), "fare_b_per_mile": float(b),
             "residual_rel_sd": float(rel.std()), "top_route_share": float(cnt.max() / cnt.sum())}
    all_names = list(names) + [f"synthetic-{i}" for i in range(extra)]
    meta = {"kind": "synthetic", "generator": "workload:debs_surrogate", "params": p, "seed": seed, "n_keys": R,
            "name": name, "inputs": [str(x) for x in inputs],
            "surrogate_of": f"the DEBS 2015 taxi rides (route -> fare), shaped on a {len(routes):,}-ride sample; "
                            "not the paper's slice",
            "source_stats": stats, "shedpart_window": {"range_s": 1800.0, "slide_s": 900.0}}
    return _write(out_dir, ["seq", "ts", "key", "value"], chunks, meta, overwrite, progress, extra_meta,
                  key_names=all_names)
