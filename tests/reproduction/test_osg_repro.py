"""Reproduction of the OSG paper's targets T0-T27 (``osg.spec.md`` section 5).

Rivetti, Anceaume, Busnel, Querzoni, Sericola, *Online Scheduling for Shuffle Grouping in
Distributed Stream Processing Systems*, Middleware 2016.  The verdicts and measured numbers are
summarised in ``REPRODUCTION.md`` (OSG section).

Setup (spec 4.1-4.5, section 6 choices)
---------------------------------------
* Streams: finite Zipf (``alpha = 0`` is Uniform), ``m = 100,000`` tuples, ``n = 4,096`` keys,
  ``n(w) = 64`` cost levels evenly spaced in 0.1..6.4 ms (A1), a fresh key sample *and* a fresh
  key-to-cost association per stream: stream ``i`` is generator seed ``STREAM_BASE + i`` (A14).
  Hash seeds ``0..S-1`` are independent of the stream seeds.
* ``k = 5``; deterministic arrivals at ``P = 100%`` of the capacity computed from the stream's
  empirical mean cost (A10); ``N = 1024``, ``mu = 0.05``, ``c = 54``, ``r = 4`` (the strategy's
  defaults).
* "OSG" is OSG-WL (work-left variant, A8, the strategy's default); literal OSG is run as an
  ablation.  "FK" is FK-ideal, the spec's primary reading (A9), with the *literal* accumulated-work
  rule of spec 2.6 (``fk``'s default, ``semantics="literal"``; ``semantics="wl"`` is FK-WL of spec
  2.7 item 5 and gives nearly the same numbers); FK-osg is run as well.
* ``Lambda = sum l_RR / sum l`` per execution against round robin on the same stream (spec 3.3);
  ``gain = 1 - mean L_alg / mean L_RR`` over the runs (spec 3.4, A13).

How numbers are produced
------------------------
The headline checks go through the replay engine (:func:`skewbench.grouping.engine.replay`), as a
user would run them.  The sweeps call the strategies directly and compute FIFO completion times
with a vectorised max-plus scan (:func:`fifo_latency`); :func:`test_direct_harness_matches_engine`
shows that this harness reproduces the engine's numbers.

Repetitions: the paper uses 100 streams x 50 hash seeds (5,000 executions).  Ours, reduced:

* fast subset: the headline on 20 streams x 3 hash seeds (through the engine);
* Fig. 4/5 (distributions): 40 streams x 3 seeds per distribution;
* Fig. 6 (P = 95..115% in steps of 1%): 40 streams x 2 seeds per point;
* Fig. 7 (max_w), Fig. 8 (n(w)), Fig. 9 (k = 2..20), Fig. 10 (28 values of eps): 20 streams x 2
  seeds per point;
* Fig. 11 (time series): 3 streams x hash seed 0 (the paper shows a single run).

Verdict rules
-------------
* **exact**: equality (bit for bit where the claim is exact).
* **approx** ("≈", "on average", "roughly"): the paper's value must lie inside our 95% confidence
  interval for the mean (t interval over per-stream means: streams are the independent unit,
  hash seeds of one stream are not; percentile bootstrap over streams for gains) widened on
  each side by a slack for the imprecision of the prose: 20% of the *effect* (``Lambda - 1`` or
  the gain) plus 0.01 for the two-digit rounding.  20% of the effect is what separates the two
  readings of "a gain of 20%" (``1 - L/L_RR = 0.20`` against ``Lambda - 1 = 0.25``, A13).
  The slack is 0.056 for ``Lambda ≈ 1.23``, 0.022 for ``≈ 1.06``, 0.53 for ``≈ 3.6``, 0.05 for
  a gain of 20% and 0.018 for a gain of 4%.
* **qualitative**: orderings and trends, with the stated margins.
* A miss is never weakened: the check stays as the paper states it and is marked
  ``xfail(strict=True)`` with the measured value and the reason in ``reason``.

Set ``SKEWBENCH_OSG_RECORD=/path/file.json`` to dump every measured number.
"""

from __future__ import annotations

import functools
import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from statistics import NormalDist

import numpy as np
import pytest

from skewbench.datasets.generators import Plan, StreamSpec, generate
from skewbench import registry
from skewbench.grouping.base import Batch, WorkerModel
from skewbench.grouping.engine import ReplayConfig, grid, replay
from tests.reproduction.common import rounds_to

pytestmark = pytest.mark.reproduction

K = 5
M = 100_000
N_KEYS = 4096
#: spec 4.2 / A1: 64 levels in 0.1..6.4 ms
COST = (("model", "levels"), ("levels", 64), ("low", 0.1), ("high", 6.4))
#: spec 4.6: the time series uses costs x10, i.e. 1..64 ms
COST_TS = (("model", "levels"), ("levels", 64), ("low", 1.0), ("high", 64.0))
#: identical costs (T14): every tuple costs 0.1 ms
COST_ONE = (("model", "constant"), ("value", 0.1))
STREAM_BASE = 1000
#: "≈" tolerance: 20% of the effect plus 0.01 (see the module docstring)
SLACK_REL = 0.20
SLACK_ABS = 0.01

#: name -> (strategy, parameters, depends on the hash seed)
ALGOS = {
    "osg": ("osg", {"variant": "wl"}, True),
    "osg-lit": ("osg", {"variant": "literal"}, True),
    "fk": ("fk", {"variant": "ideal", "semantics": "literal"}, False),
    "fk-wl": ("fk", {"variant": "ideal", "semantics": "wl"}, False),
    "fk-osg": ("fk", {"variant": "osg", "semantics": "wl"}, True),
}

RECORD: dict[str, object] = {}


def record(target: str, **values) -> None:
    """Keep (and print, visible with ``-s``) the measured numbers of a target."""
    RECORD.setdefault(target, {}).update(values)
    print(f"\n[{target}] " + json.dumps(values, default=_jsonable, sort_keys=True))
    path = os.environ.get("SKEWBENCH_OSG_RECORD")
    if path:
        old = {}
        if os.path.exists(path):
            with open(path) as f:
                old = json.load(f)
        old.setdefault(target, {}).update(json.loads(json.dumps(values, default=_jsonable)))
        with open(path, "w") as f:
            json.dump(old, f, indent=1, sort_keys=True)


def _jsonable(x):
    if isinstance(x, np.ndarray):
        return x.tolist()
    if isinstance(x, (np.floating, np.integer)):
        return x.item()
    if isinstance(x, Ci):
        return {"mean": round(x.mean, 4), "lo": round(x.lo, 4), "hi": round(x.hi, 4), "n": x.n}
    raise TypeError(type(x))


# --------------------------------------------------------------------------------------------
# statistics

def t_quantile(p: float, df: int) -> float:
    """Student-t quantile (Cornish-Fisher expansion; within 1e-3 of the exact value for df >= 5)."""
    z = NormalDist().inv_cdf(p)
    g1 = (z ** 3 + z) / 4
    g2 = (5 * z ** 5 + 16 * z ** 3 + 3 * z) / 96
    g3 = (3 * z ** 7 + 19 * z ** 5 + 17 * z ** 3 - 15 * z) / 384
    return z + g1 / df + g2 / df ** 2 + g3 / df ** 3


@dataclass
class Ci:
    """Mean of per-stream values with its 95% t confidence interval."""

    mean: float
    lo: float
    hi: float
    n: int

    @staticmethod
    def of(values) -> "Ci":
        v = np.asarray(values, dtype=np.float64)
        n = len(v)
        mean = float(v.mean())
        half = t_quantile(0.975, n - 1) * float(v.std(ddof=1)) / math.sqrt(n) if n > 1 else math.inf
        return Ci(mean, mean - half, mean + half, n)

    def approx(self, target: float, slack: float) -> bool:
        """The "≈" rule: the target lies in the CI widened by ``slack`` on both sides."""
        return self.lo - slack <= target <= self.hi + slack

    def approx_lambda(self, target: float) -> bool:
        """"≈" for a speed-up: slack ``slack(target - 1)``."""
        return self.approx(target, slack(target - 1.0))

    def approx_gain(self, target: float) -> bool:
        """"≈" for a gain: slack ``slack(target)``."""
        return self.approx(target, slack(target))

    def contains(self, target: float) -> bool:
        """``target`` lies in the interval itself (no slack)."""
        return self.lo <= target <= self.hi

    def __str__(self) -> str:
        return f"{self.mean:.3f} [{self.lo:.3f}, {self.hi:.3f}] (n={self.n})"


def ci_is(ci: "Ci", mean: float, lo: float, hi: float, step: float = 1e-3) -> bool:
    """``ci`` is ``mean [lo, hi]`` as written in REPRODUCTION.md."""
    return all(rounds_to(x, v, step) for x, v in ((ci.mean, mean), (ci.lo, lo), (ci.hi, hi)))


def slack(effect: float) -> float:
    """Tolerance of a "≈" target whose effect (``Lambda - 1`` or a gain) is ``effect``:
    ``SLACK_REL * |effect| + SLACK_ABS``."""
    return SLACK_REL * abs(effect) + SLACK_ABS


def sign_flip_p(d) -> float:
    """Two-sided paired sign-flip permutation test of ``mean(d) = 0`` (exact for len(d) <= 20)."""
    d = np.asarray(d, dtype=np.float64)
    n = len(d)
    obs = abs(d.sum())
    if n <= 20:
        hits = 0
        total = 1 << n
        chunk = 1 << min(n, 16)
        bits = (np.arange(chunk)[:, None] >> np.arange(min(n, 16))[None, :]) & 1
        low = np.where(bits == 1, -1.0, 1.0) @ d[:min(n, 16)]
        for hi in range(total // chunk):
            hb = (hi >> np.arange(n - min(n, 16))) & 1
            high = float(np.where(hb == 1, -1.0, 1.0) @ d[min(n, 16):]) if n > 16 else 0.0
            hits += int(np.sum(np.abs(low + high) >= obs - 1e-12))
        return hits / total
    rng = np.random.default_rng(0)
    s = rng.choice([-1.0, 1.0], size=(200_000, n)) @ d
    return float((np.sum(np.abs(s) >= obs - 1e-12) + 1) / (len(s) + 1))


def gain_ci(lat_alg, lat_rr, reps: int = 4000) -> Ci:
    """``gain = 1 - mean L_alg / mean L_RR`` with a percentile bootstrap over streams.

    ``lat_alg`` is [stream, seed] (mean completion time per run), ``lat_rr`` is [stream]."""
    a = np.asarray(lat_alg, dtype=np.float64).mean(axis=1)
    r = np.asarray(lat_rr, dtype=np.float64)
    g = 1.0 - a.mean() / r.mean()
    rng = np.random.default_rng(12345)
    idx = rng.integers(0, len(a), size=(reps, len(a)))
    boot = 1.0 - a[idx].mean(axis=1) / r[idx].mean(axis=1)
    lo, hi = np.percentile(boot, [2.5, 97.5])
    return Ci(float(g), float(lo), float(hi), len(a))


# --------------------------------------------------------------------------------------------
# streams and the direct harness

def stream_spec(alpha: float, stream: int, m: int = M, cost=COST, n_keys: int = N_KEYS) -> StreamSpec:
    return StreamSpec.zipf(alpha, n_keys, m, STREAM_BASE + stream, cost=dict(cost))


@functools.lru_cache(maxsize=32)
def stream_arrays(alpha: float, stream: int, m: int = M, cost=COST):
    """``(seq, key, cost)`` of a stream, generated in memory (same data as :func:`generate`)."""
    b = Plan(stream_spec(alpha, stream, m, cost)).block(0)
    return b["seq"], b["key"], b["cost"]


def arrival_times(seq, cost, k: int, P: float) -> np.ndarray:
    """Deterministic arrivals at ``P`` percent of capacity (spec 4.3, empirical ``W``)."""
    return seq.astype(np.float64) * (float(np.mean(cost)) * P / (100.0 * k))


def fifo_latency(assign, a, x, k: int) -> np.ndarray:
    """Completion time ``l_t = e_t - a_t`` of FIFO instances without preemption.

    Per instance ``e_i = max(a_i, e_{i-1}) + x_i`` is a max-plus scan:
    ``e_i = S_i + max_{j <= i} (a_j - S_{j-1})`` with ``S`` the running sum of ``x``."""
    lat = np.empty(len(a))
    for o in range(k):
        idx = np.flatnonzero(assign == o)
        if len(idx) == 0:
            continue
        ai, xi = a[idx], x[idx]
        s = np.cumsum(xi)
        e = s + np.maximum.accumulate(ai - (s - xi))
        lat[idx] = e - ai
    return lat


def run_direct(algo: str, seq, key, cost, k: int, P: float, seed: int = 0,
               wm: WorkerModel | None = None, **extra):
    """Route a stream through ``algo`` (a key of :data:`ALGOS`, or ``"rr"``); returns
    ``(assignment, completion times, arrivals, strategy object or None)``."""
    wm = wm or WorkerModel.uniform(k)
    a = arrival_times(seq, cost, k, P)
    if algo == "rr":
        asg, strat = seq % k, None
    else:
        name, params, _ = ALGOS[algo]
        strat = registry.get("grouping", name)(k, 1, seed, worker_model=wm, **{**params, **extra})
        asg = strat.route(Batch(seq, key, a, cost))
    lat = fifo_latency(asg, a, wm.exec_times(seq, cost, asg), k)
    return asg, lat, a, strat


@dataclass
class Sweep:
    """One configuration point over streams x hash seeds."""

    lam: dict[str, np.ndarray] = field(default_factory=dict)  # [stream, seed] speed-ups
    lat: dict[str, np.ndarray] = field(default_factory=dict)  # [stream, seed] mean l
    thr: dict[str, np.ndarray] = field(default_factory=dict)  # [stream, seed] tuples/s
    lat_rr: np.ndarray | None = None  # [stream]
    thr_rr: np.ndarray | None = None  # [stream]
    stats: dict[str, list] = field(default_factory=dict)  # strategy summaries

    def ci(self, algo: str) -> Ci:
        return Ci.of(self.lam[algo].mean(axis=1))

    def gain(self, algo: str) -> Ci:
        return gain_ci(self.lat[algo], self.lat_rr)

    def mean(self, algo: str) -> float:
        return float(self.lam[algo].mean())


def _throughput(lat, a) -> float:
    return len(a) / (float(np.max(a + lat) - a[0]) / 1000.0)


@functools.lru_cache(maxsize=None)
def sweep(alpha: float = 1.0, k: int = K, P: float = 100.0, streams: int = 20,
          seeds: tuple[int, ...] = (0, 1), algos: tuple[str, ...] = ("osg", "osg-lit", "fk"),
          cost=COST, extra: tuple = ()) -> Sweep:
    """Every ``algo`` on ``streams`` streams x ``seeds`` (``extra``: parameters for OSG)."""
    out = Sweep()
    S, H = streams, len(seeds)
    for name in algos:
        out.lam[name], out.lat[name], out.thr[name] = (np.zeros((S, H)) for _ in range(3))
        out.stats[name] = []
    out.lat_rr, out.thr_rr = np.zeros(S), np.zeros(S)
    for i in range(S):
        seq, key, c = stream_arrays(alpha, i, M, cost)
        _, rr, a, _ = run_direct("rr", seq, key, c, k, P)
        out.lat_rr[i], out.thr_rr[i] = rr.mean(), _throughput(rr, a)
        for name in algos:
            seeded = ALGOS[name][2]
            ex = dict(extra) if name.startswith("osg") else {}
            for j, h in enumerate(seeds if seeded else seeds[:1]):
                _, lat, _, strat = run_direct(name, seq, key, c, k, P, h, **ex)
                out.lam[name][i, j] = rr.sum() / lat.sum()
                out.lat[name][i, j] = lat.mean()
                out.thr[name][i, j] = _throughput(lat, a)
                out.stats[name].append(strat.summary())
            if not seeded:
                for arr in (out.lam, out.lat, out.thr):
                    arr[name][i, :] = arr[name][i, 0]
    return out


# --------------------------------------------------------------------------------------------
# T0, T1: exact

def test_T0_toy_example():
    """Paper 2 / spec 1.5: a0, b1, a2 at 0, 1, 2 s; w_a = 10 s, w_b = 1 s; k = 2."""
    seq = np.arange(3, dtype=np.int64)
    key = np.array([0, 1, 0], dtype=np.int64)
    ts = np.array([0.0, 1000.0, 2000.0])
    cost = np.array([10_000.0, 1000.0, 10_000.0])
    rr = fifo_latency(seq % 2, ts, cost, 2)
    assert rr.tolist() == [10_000.0, 1000.0, 18_000.0]
    assert rr.sum() == 29_000.0 and rr.mean() == pytest.approx(29_000.0 / 3, rel=1e-15)
    got = {}
    for algo in ("fk", "fk-wl"):
        name, params, _ = ALGOS[algo]
        asg = registry.get("grouping", name)(2, 1, 0, **params).route(Batch(seq, key, ts, cost))
        lat = fifo_latency(asg, ts, cost, 2)
        assert asg.tolist() == [0, 1, 1], algo  # after b1, C = [10, 1]: a2 goes to O_1
        assert lat.tolist() == [10_000.0, 1000.0, 10_000.0] and lat.sum() == 21_000.0
        got[algo] = lat.mean() / 1000.0
    record("T0", rr_mean_s=rr.mean() / 1000.0, greedy_mean_s=got)


@pytest.mark.parametrize("k", [2, 3, 5, 8, 12, 20])
def test_T1_greedy_tight_bound(k):
    """Theorem 4.2: k(k-1) jobs of w/k then one of w (all at time 0): greedy makespan (2-1/k) w,
    OPT = w; random batches stay within (2 - 1/k) max(sum w / k, max w)."""
    w = float(k)  # jobs of w/k = 1.0 keep the arithmetic exact
    m = k * (k - 1) + 1
    cost = np.concatenate([np.full(m - 1, w / k), [w]])
    seq = np.arange(m, dtype=np.int64)
    ratio = {}
    for algo in ("fk", "fk-wl"):
        name, params, _ = ALGOS[algo]
        asg = registry.get("grouping", name)(k, 1, 0, **params).route(Batch(seq, seq, np.zeros(m), cost))
        makespan = float(np.max(fifo_latency(asg, np.zeros(m), cost, k)))
        assert makespan == (2 - 1 / k) * w, algo  # OPT = max(sum / k, max) = w by construction
        ratio[algo] = makespan / w
    rng = np.random.default_rng(k)
    for _ in range(20):
        n = int(rng.integers(1, 200))
        c = rng.uniform(0.1, 6.4, n)
        s = np.arange(n, dtype=np.int64)
        asg = registry.get("grouping", "fk")(k, 1, 0, semantics="literal").route(Batch(s, s, np.zeros(n), c))
        span = float(np.max(fifo_latency(asg, np.zeros(n), c, k)))
        assert span <= (2 - 1 / k) * max(c.sum() / k, c.max()) * (1 + 1e-12)
    record(f"T1[k={k}]", makespan_over_w=ratio)


# --------------------------------------------------------------------------------------------
# the headline, through the engine

HEAD_STREAMS = 20
HEAD_SEEDS = (0, 1, 2)


def _dataset(root, alpha, i, m=M, cost=COST):
    path = root / (f"a{alpha}-s{i}-m{m}-" + "-".join(str(v) for _, v in cost))
    if not path.exists():
        generate(stream_spec(alpha, i, m, cost), path, name=path.name)
    return path


@pytest.fixture(scope="module")
def data_root(tmp_path_factory):
    return tmp_path_factory.mktemp("osg-repro")


def _cells():
    cells = grid(["osg", "sg"], [K], [1], list(HEAD_SEEDS), {"osg": {"variant": ["wl", "literal"]}})
    cells += grid(["fk"], [K], [1], [0], {"fk": {"semantics": ["literal", "wl"]}})
    return cells


def _label(row) -> str:
    p = json.loads(row["params"])
    if row["strategy"] == "osg":
        return "osg" if p["variant"] == "wl" else "osg-lit"
    if row["strategy"] == "fk":
        return "fk" if p["semantics"] == "literal" else "fk-wl"
    return row["strategy"]


@pytest.fixture(scope="module")
def headline(data_root):
    """20 streams x 3 hash seeds at the paper's default (Zipf-1.0, k = 5, P = 100%)."""
    cells = _cells()
    lam: dict[str, np.ndarray] = {}
    lat: dict[str, np.ndarray] = {}
    lat_rr = np.zeros(HEAD_STREAMS)
    run_index = []
    for i in range(HEAD_STREAMS):
        res = replay(_dataset(data_root, 1.0, i), cells, ReplayConfig(provisioning=100.0))
        col: dict[str, list] = {}
        for row in res.summary:
            col.setdefault(_label(row), []).append(row)
            lat_rr[i] = row["latency_mean_rr"]
        for name, rows in col.items():
            lam.setdefault(name, np.zeros((HEAD_STREAMS, len(rows))))[i] = [r["speedup_vs_rr"] for r in rows]
            lat.setdefault(name, np.zeros((HEAD_STREAMS, len(rows))))[i] = [r["latency_mean"] for r in rows]
        run_index += [json.loads(r["stats"])["run_index"] for r in col["osg"]]
    return {"lam": lam, "lat": lat, "lat_rr": lat_rr, "run_index": np.array(run_index)}


def test_A9_fk_wl_within_3_percent_of_literal_fk(headline):
    """A9 (REPRODUCTION.md): FK-WL (the spec's work-left reading) stays within 3% of literal FK
    in mean completion time, on each of the headline's 20 streams."""
    ratio = headline["lat"]["fk-wl"][:, 0] / headline["lat"]["fk"][:, 0]
    record("A9 FK-WL vs FK", ratio_min=float(ratio.min()), ratio_max=float(ratio.max()))
    assert np.all(np.abs(ratio - 1) <= 0.03), ratio
    assert rounds_to(ratio.min(), 0.9963, 1e-4) and rounds_to(ratio.max(), 1.0001, 1e-4), ratio


def test_headline_T3_T19_osg_beats_rr(headline):
    """Issue headline / T3 / T19: at Zipf-1.0, k = 5, P = 100% OSG beats RR by about 20% in mean
    completion time (mean Lambda ≈ 1.23), significantly over 20 streams x 3 hash seeds."""
    lam, lat, lat_rr = headline["lam"], headline["lat"], headline["lat_rr"]
    osg = Ci.of(lam["osg"].mean(axis=1))
    gain = gain_ci(lat["osg"], lat_rr)
    d = lat_rr - lat["osg"].mean(axis=1)  # per stream: RR minus OSG mean completion time
    p = sign_flip_p(d)
    ablation = {name: Ci.of(lam[name].mean(axis=1)) for name in ("osg-lit", "fk", "fk-wl")}
    wins = int(np.sum(d > 0))
    record("T3/T19 headline", streams=HEAD_STREAMS, seeds=len(HEAD_SEEDS), osg_lambda=osg,
           osg_lambda_min=float(lam["osg"].min()), osg_lambda_max=float(lam["osg"].max()),
           gain=gain, lambda_minus_1=osg.mean - 1, p_sign_flip=p, streams_won=wins,
           rr_mean_ms=float(lat_rr.mean()), osg_mean_ms=float(lat["osg"].mean()),
           run_index_median=float(np.median(headline["run_index"])),
           **{f"{n}_lambda": c for n, c in ablation.items()})
    # significance: the CI of mean Lambda excludes 1; OSG is faster on every stream, so the
    # exact sign-flip test gives its smallest possible p, 2 / 2^20 = 1.9e-6
    assert osg.lo > 1.0, osg
    assert wins == HEAD_STREAMS, wins
    assert p == pytest.approx(2.0 / 2 ** HEAD_STREAMS, rel=1e-9), p
    assert gain.lo > 0.0, gain
    # magnitude, no slack: the intervals hold T19's Lambda 1.23 and T3's gain of 20%
    assert osg.contains(1.23), osg
    assert gain.contains(0.20), gain
    assert ci_is(osg, 1.246, 1.187, 1.306) and ci_is(gain, 0.187, 0.150, 0.223), (osg, gain)
    assert rounds_to(float(lam["osg"].min()), 0.88, 0.01) and rounds_to(float(lam["osg"].max()), 1.56, 0.01)
    # A8: the literal variant is the weaker one at P = 100% but still above RR; FK stays far
    # ahead of OSG (T6)
    assert ablation["osg-lit"].mean < osg.mean and ablation["osg-lit"].lo > 1.0
    assert ablation["fk"].lo > osg.hi
    assert ci_is(ablation["osg-lit"], 1.080, 1.030, 1.130), ablation["osg-lit"]
    assert ci_is(ablation["fk"], 2.549, 2.269, 2.830), ablation["fk"]


def test_direct_harness_matches_engine(headline, data_root):
    """The direct harness used by the sweeps gives the engine's numbers for every algorithm of
    :data:`ALGOS` (first 3 streams; FK-osg is not in the headline, so it is replayed here)."""
    fk_osg = grid(["fk"], [K], [1], list(HEAD_SEEDS), {"fk": {"variant": ["osg"], "semantics": ["wl"]}})
    for i in range(3):
        seq, key, cost = stream_arrays(1.0, i)
        _, rr, _, _ = run_direct("rr", seq, key, cost, K, 100.0)
        assert rr.mean() == pytest.approx(headline["lat_rr"][i], rel=1e-9)
        engine = {name: headline["lat"][name][i] for name in ("osg", "osg-lit", "fk", "fk-wl")}
        res = replay(_dataset(data_root, 1.0, i), fk_osg, ReplayConfig(provisioning=100.0))
        engine["fk-osg"] = [r["latency_mean"] for r in res.summary]
        for name, want in engine.items():
            seeds = HEAD_SEEDS if ALGOS[name][2] else HEAD_SEEDS[:1]
            assert len(want) == len(seeds), name
            for j, h in enumerate(seeds):
                _, lat, _, _ = run_direct(name, seq, key, cost, K, 100.0, h)
                assert lat.mean() == pytest.approx(want[j], rel=1e-9), (name, i, h)


@pytest.mark.parametrize("P", [100.0, 110.0])
def test_headline_T14_identical_costs_fk_equals_rr_exactly(data_root, P):
    """T14 / spec 7.9: with identical costs FK (lowest-index ties) is round robin bit for bit,
    so Lambda = 1 exactly (engine, 3 streams)."""
    cells = grid(["fk"], [K], [1], [0], {"fk": {"semantics": ["literal", "wl"]}})
    got = {}
    for i in range(3):
        res = replay(_dataset(data_root, 1.0, i, cost=COST_ONE), cells, ReplayConfig(provisioning=P))
        for row in res.summary:
            got.setdefault(f"{_label(row)}_lambda", []).append(row["speedup_vs_rr"])
            assert row["speedup_vs_rr"] == 1.0, (_label(row), row["speedup_vs_rr"])
            assert row["latency_mean"] == row["latency_mean_rr"]
            assert row["worker_tuples"] == [M // K] * K
        seq, key, cost = stream_arrays(1.0, i, M, COST_ONE)
        for algo in ("fk", "fk-wl"):
            asg, _, _, _ = run_direct(algo, seq, key, cost, K, P)
            assert np.array_equal(asg, seq % K), algo
    record(f"T14 FK [P={P:g}]", streams=3, **got)


def _identical_cost_osg(data_root, P):
    return _identical_cost_osg_cached(str(data_root), P)


@functools.lru_cache(maxsize=None)
def _identical_cost_osg_cached(root: str, P: float):
    cells = grid(["osg"], [K], [1], [0, 1], {"osg": {"variant": ["wl", "literal"]}})
    out = {"osg": [], "osg-lit": []}
    for i in range(3):
        res = replay(_dataset(Path(root), 1.0, i, cost=COST_ONE), cells, ReplayConfig(provisioning=P))
        for row in res.summary:
            out[_label(row)].append(row["speedup_vs_rr"])
    return {k: np.array(v) for k, v in out.items()}


def test_T14_identical_costs_osg_within_1pct_at_P110(data_root):
    """Spec 7.9 / T14: with identical costs OSG and literal OSG give |Lambda - 1| < 0.01 at
    P = 110% (the only deviations come from SEND_ALL restarting at instance 0)."""
    lam = _identical_cost_osg(data_root, 110.0)
    record("T14 OSG [P=110]", streams=3, seeds=2, osg=[float(lam["osg"].min()), float(lam["osg"].max())],
           osg_lit=[float(lam["osg-lit"].min()), float(lam["osg-lit"].max())])
    for name, v in lam.items():
        assert np.all(np.abs(v - 1.0) < 0.01), (name, v)
    assert np.all(np.abs(lam["osg"] - 0.9994) < 5e-5), lam["osg"]
    assert rounds_to(lam["osg-lit"].min(), 0.9986, 1e-4) and rounds_to(lam["osg-lit"].max(), 0.9987, 1e-4)


def test_T14_identical_costs_osg_at_P100_measured(data_root):
    """T14 at P = 100%, what we measure (the miss below): with the paper's resync restart (A15)
    OSG-WL and FK-osg give Lambda 0.624 on every run; every instance ships at exactly 2N
    executions and SEND_ALL is entered before tuple 10,244.  With ``resync_start=continue`` OSG-WL
    assigns ``seq mod k`` tuple for tuple and equals RR exactly, at P = 100% and 110%."""
    lam = _identical_cost_osg(data_root, 100.0)
    fk_osg, sa_index = [], set()
    for i in range(3):
        seq, key, cost = stream_arrays(1.0, i, M, COST_ONE)
        rr = {P: run_direct("rr", seq, key, cost, K, P)[1] for P in (100.0, 110.0)}
        for h in (0, 1):
            _, _, _, strat = run_direct("osg", seq, key, cost, K, 100.0, h)
            st = strat.debug_state()
            assert np.all(st["ship_executed"][:K] == 2 * 1024)  # every instance ships at 2N
            assert sorted(st["ship_op"][:K]) == list(range(K))
            sa_index.add(strat.summary()["send_all_index"])
            _, lat_fko, _, _ = run_direct("fk-osg", seq, key, cost, K, 100.0, h)
            fk_osg.append(float(rr[100.0].sum() / lat_fko.sum()))
            for P in (100.0, 110.0):
                asg, lat_c, _, strat_c = run_direct("osg", seq, key, cost, K, P, h, resync_start="continue")
                assert strat_c.summary()["run_index"] > 0  # the protocol did leave round robin
                assert np.array_equal(asg, seq % K) and np.array_equal(lat_c, rr[P]), (i, h, P)
    record("T14 OSG [P=100] measured", osg=lam["osg"], osg_lit=lam["osg-lit"], fk_osg=fk_osg,
           send_all_index=sorted(sa_index))
    assert np.all(np.abs(lam["osg"] - 0.624) < 1e-3), lam["osg"]
    assert np.all(np.abs(np.array(fk_osg) - 0.624) < 1e-3), fk_osg
    lit = lam["osg-lit"]
    assert rounds_to(float(lit.min()), 0.54, 0.01) and rounds_to(float(lit.max()), 0.66, 0.01), lit
    assert sa_index == {10_244} and 10_244 % K == 4


@pytest.mark.xfail(strict=True, raises=AssertionError, reason=(
    "T14 at the paper's default P = 100%: OSG gives Lambda = 0.624 (literal OSG 0.54-0.66), not 1 "
    "(3 streams x 2 seeds).  With identical costs every instance ships at exactly 2N executions, "
    "so the scheduler enters SEND_ALL before stream tuple 10,244 (10,244 mod 5 = 4); SEND_ALL "
    "restarts at instance 0 (A15), which shifts the round-robin phase: instance 0 gets a tuple "
    "while still busy and instance 4 idles.  At critical load idle time is never made up, and "
    "every later epoch adds some.  FK-osg (exact estimates) gives the same 0.624, so this is the "
    "warm-up/epoch protocol, not estimation.  At P = 110% the deviation is 6e-4 (test above)."))
def test_T14_identical_costs_osg_equals_rr_at_P100(data_root):
    """Issue headline, second half: "OSG equals RR exactly with uniform (identical) costs"."""
    lam = _identical_cost_osg(data_root, 100.0)
    record("T14 OSG [P=100]", streams=3, seeds=2, osg=[float(lam["osg"].min()), float(lam["osg"].max())],
           osg_lit=[float(lam["osg-lit"].min()), float(lam["osg-lit"].max())])
    for name, v in lam.items():
        assert np.all(np.abs(v - 1.0) < 0.01), (name, v)


# --------------------------------------------------------------------------------------------
# T2-T7: key distributions (Fig. 4, 5), 40 streams x 3 hash seeds per distribution

DISTS = (("U", 0.0), ("Z0.5", 0.5), ("Z1.0", 1.0), ("Z1.5", 1.5), ("Z2.0", 2.0), ("Z2.5", 2.5),
         ("Z3.0", 3.0))
DIST_ALGOS = ("osg", "osg-lit", "fk", "fk-wl", "fk-osg")


def dist_sweep(alpha: float) -> Sweep:
    return sweep(alpha=alpha, streams=40, seeds=(0, 1, 2), algos=DIST_ALGOS)


def spearman(x, y) -> float:
    """Spearman rank correlation (no ties)."""
    rx = np.argsort(np.argsort(np.asarray(x)))
    ry = np.argsort(np.argsort(np.asarray(y)))
    n = len(rx)
    return float(1 - 6 * np.sum((rx - ry) ** 2) / (n * (n * n - 1)))


def _dist_table():
    rows = {}
    for label, alpha in DISTS:
        sw = dist_sweep(alpha)
        rows[label] = {
            "L_rr": float(sw.lat_rr.mean()),
            **{f"L_{a}": float(sw.lat[a].mean()) for a in DIST_ALGOS},
            **{f"lambda_{a}": sw.ci(a) for a in DIST_ALGOS},
            "gain_osg": sw.gain("osg"),
        }
    return rows


@pytest.mark.slow
@pytest.mark.parametrize("label", [
    pytest.param("U", marks=pytest.mark.xfail(strict=True, raises=AssertionError, reason=(
        "T2 Uniform: OSG-WL gain -1.8% [-5.0%, +1.4%] (Lambda 0.992 [0.958, 1.027]; 40 streams x "
        "3 seeds), not +4%: OSG is no better than RR.  With 4,096 equiprobable keys in 54 "
        "columns every cell averages ~76 random costs, so estimates carry little information "
        "(FK-osg with exact estimates: Lambda 1.68), while each epoch's SEND_ALL restart at "
        "instance 0 costs idle time that never drains at P = 100% (see T14).  Literal OSG is "
        "worse (gain -15%)."))),
    "Z0.5",
])
def test_T2_low_skew_gain_about_4pct(label):
    """T2: under Uniform and Zipf-0.5 OSG beats RR by ≈4% on average (the paper): the gain interval
    holds 4% (no slack).  At Zipf-0.5 it holds 0 as well, so the row is inconclusive; under Uniform
    it misses (the xfail; what we measure there: test_T2_uniform_osg_about_rr)."""
    sw = dist_sweep(dict(DISTS)[label])
    gain, lam = sw.gain("osg"), sw.ci("osg")
    record(f"T2 [{label}]", streams=40, seeds=3, gain=gain, lambda_osg=lam,
           gain_osg_lit=sw.gain("osg-lit"), lambda_fk_osg=sw.ci("fk-osg"))
    assert gain.contains(0.04), (label, gain)
    assert gain.contains(0.0), (label, gain)
    if label == "Z0.5":
        assert ci_is(gain, 0.009, -0.027, 0.044) and rounds_to(lam.mean, 1.022, 1e-3), (gain, lam)


@pytest.mark.slow
def test_T2_uniform_osg_about_rr():
    """T2 Uniform, what we measure (the miss above): OSG is no better and no worse than RR (both
    intervals hold the no-effect value), while FK-osg with exact estimates is far ahead."""
    sw = dist_sweep(0.0)
    gain, lam, fko, lit = sw.gain("osg"), sw.ci("osg"), sw.ci("fk-osg"), sw.gain("osg-lit")
    assert gain.lo < 0.0 < gain.hi and lam.lo < 1.0 < lam.hi, (gain, lam)
    assert ci_is(gain, -0.018, -0.050, 0.014) and ci_is(lam, 0.992, 0.958, 1.027), (gain, lam)
    assert rounds_to(fko.mean, 1.68, 0.01) and fko.lo > lam.hi, fko
    assert rounds_to(lit.mean, -0.15, 0.01), lit


@pytest.mark.slow
def test_T3_zipf1_gain_about_20pct_fig4_grid():
    """T3 on the Fig. 4 grid: 40 streams (the headline's 20 and 20 more) x 3 seeds, direct harness."""
    sw = dist_sweep(1.0)
    gain, lam = sw.gain("osg"), sw.ci("osg")
    record("T3 (Fig. 4 grid)", gain=gain, lambda_osg=lam)
    # approx: the Lambda interval holds 1.23, the gain interval stops just short of 20%
    assert lam.contains(1.23), lam
    assert 0.19 <= gain.hi < 0.20, gain
    assert ci_is(gain, 0.173, 0.146, 0.199) and ci_is(lam, 1.223, 1.181, 1.264), (gain, lam)


@pytest.mark.slow
@pytest.mark.xfail(strict=True, raises=AssertionError, reason=(
    "T4: at Zipf-1.5 OSG's worst run (max L = 148 ms) is far above RR's best stream (min L = "
    "67 ms; 40 streams x 3 seeds).  At critical load L is dominated by queueing, which varies "
    "from stream to stream (RR 67-170 ms) much more than the OSG-RR gap (mean Lambda 1.35 "
    "[1.28, 1.42]); paired per stream, OSG beats RR in 40 of 40 streams."))
def test_T4_zipf15_osg_max_about_rr_min():
    sw = dist_sweep(1.5)
    mx, mn = float(sw.lat["osg"].max()), float(sw.lat_rr.min())
    wins = int(np.sum(sw.lat["osg"].mean(axis=1) < sw.lat_rr))
    record("T4", osg_max_L=mx, rr_min_L=mn, rr_max_L=float(sw.lat_rr.max()), streams_osg_better=wins,
           lambda_osg=sw.ci("osg"))
    assert mx <= 1.10 * mn, (mx, mn)  # "almost smaller": within 10%


@pytest.mark.slow
def test_T4_zipf15_measured():
    """T4, what we measure (the miss above): paired per stream OSG beats RR on all 40 streams
    (Lambda 1.35 [1.28, 1.42]), while OSG's worst run (148 ms) is far above RR's best stream
    (67 ms; RR ranges 67-170 ms)."""
    sw = dist_sweep(1.5)
    wins = int(np.sum(sw.lat["osg"].mean(axis=1) < sw.lat_rr))
    assert wins == 40, wins
    assert ci_is(sw.ci("osg"), 1.35, 1.28, 1.42, 0.01), sw.ci("osg")
    assert rounds_to(float(sw.lat["osg"].max()), 148, 1) and rounds_to(float(sw.lat_rr.min()), 67, 1)
    assert rounds_to(float(sw.lat_rr.max()), 170, 1)


@pytest.mark.slow
@pytest.mark.parametrize("alpha", [2.0, 2.5, 3.0])
def test_T5_high_skew_osg_about_fk_osg(alpha):
    """T5 with FK-osg (A9): mean Lambda of OSG within 10% of FK-osg's at Zipf >= 2."""
    sw = dist_sweep(alpha)
    o, f = sw.mean("osg"), sw.mean("fk-osg")
    record(f"T5 [Z{alpha}] FK-osg", lambda_osg=sw.ci("osg"), lambda_fk_osg=sw.ci("fk-osg"),
           ratio=o / f)
    assert abs(o / f - 1.0) <= 0.10, (o, f)


#: T5 as REPRODUCTION.md prints it: alpha -> Lambda OSG, FK-osg, OSG/FK-osg, FK-ideal, OSG/FK-ideal
T5_MEASURED = {2.0: (1.58, 1.61, 0.98, 2.32, 0.68), 2.5: (1.81, 1.85, 0.97, 2.38, 0.76),
               3.0: (1.86, 1.89, 0.98, 2.43, 0.77)}


@pytest.mark.slow
@pytest.mark.parametrize("alpha", sorted(T5_MEASURED))
def test_T5_measured(alpha):
    """T5, what we measure: mean Lambda of OSG, FK-osg and FK-ideal and the two ratios (the
    FK-ideal comparison is the miss below)."""
    sw = dist_sweep(alpha)
    o, fo, f = sw.mean("osg"), sw.mean("fk-osg"), sw.mean("fk")
    got = (o, fo, o / fo, f, o / f)
    assert all(rounds_to(x, v, 0.01) for x, v in zip(got, T5_MEASURED[alpha])), (alpha, got)


@pytest.mark.slow
@pytest.mark.parametrize("alpha", [
    pytest.param(2.0, marks=pytest.mark.xfail(strict=True, raises=AssertionError, reason=(
        "T5 with FK-ideal (A9): at Zipf-2.0 OSG Lambda 1.58 vs FK-ideal 2.32 (ratio 0.68).  "
        "FK-ideal has no warm-up and no estimation error, so it stays far ahead; FK-osg (1.61) "
        "matches OSG (test above), as the spec's pilot found."))),
    pytest.param(2.5, marks=pytest.mark.xfail(strict=True, raises=AssertionError, reason=(
        "T5 with FK-ideal (A9): at Zipf-2.5 OSG Lambda 1.81 vs FK-ideal 2.38 (ratio 0.76)"))),
    pytest.param(3.0, marks=pytest.mark.xfail(strict=True, raises=AssertionError, reason=(
        "T5 with FK-ideal (A9): at Zipf-3.0 OSG Lambda 1.86 vs FK-ideal 2.43 (ratio 0.77)"))),
])
def test_T5_high_skew_osg_about_fk_ideal(alpha):
    sw = dist_sweep(alpha)
    o, f = sw.mean("osg"), sw.mean("fk")
    record(f"T5 [Z{alpha}] FK-ideal", lambda_osg=sw.ci("osg"), lambda_fk=sw.ci("fk"), ratio=o / f)
    assert abs(o / f - 1.0) <= 0.10, (o, f)


@pytest.mark.slow
def test_T6_ordering_and_skew_trend():
    """T6: L_FK < L_OSG (every distribution), L_OSG < L_RR (Zipf >= 1; Uniform and Zipf-0.5 in the
    next test), and every algorithm improves as skew grows, Uniform / Zipf-0.5 the worst."""
    tab = _dist_table()
    record("T6", **{k: {c: v[c] for c in ("L_rr", "L_osg", "L_osg-lit", "L_fk", "L_fk-osg")}
                    for k, v in tab.items()})
    labels = [d[0] for d in DISTS]
    for label in labels:
        assert tab[label]["L_fk"] < tab[label]["L_osg"], label
    for label in labels[2:]:
        assert tab[label]["L_osg"] < tab[label]["L_rr"], label
    # Uniform is the exception (xfail below): OSG 138.7 ms against RR 136.2 ms
    assert rounds_to(tab["U"]["L_osg"], 138.7, 0.1) and rounds_to(tab["U"]["L_rr"], 136.2, 0.1), tab["U"]
    ends = {"rr": (136, 67), "osg": (139, 36), "fk": (57, 28)}  # ms, Uniform -> Zipf-3.0
    for algo in ("rr", "osg", "fk"):
        L = np.array([tab[label][f"L_{algo}"] for label in labels])
        # improves with skew: Spearman rank correlation between skew and L is strongly negative
        assert spearman(-np.arange(len(L)), L) >= 0.85, (algo, L)
        assert rounds_to(L[0], ends[algo][0], 1) and rounds_to(L[-1], ends[algo][1], 1), (algo, L)
        # Uniform and Zipf-0.5 are the worst cases: per stream (same stream seeds for every
        # distribution), neither is significantly better than any Zipf >= 1.0
        per = {label: (dist_sweep(alpha).lat_rr if algo == "rr" else
                       dist_sweep(alpha).lat[algo].mean(axis=1)) for label, alpha in DISTS}
        for worst in ("U", "Z0.5"):
            for label in labels[2:]:
                assert Ci.of(per[worst] - per[label]).hi >= 0.0, (algo, worst, label)


@pytest.mark.slow
@pytest.mark.parametrize("label", [
    pytest.param("U", marks=pytest.mark.xfail(strict=True, raises=AssertionError, reason=(
        "T6 ordering L_OSG < L_RR fails under Uniform: OSG 138.7 ms vs RR 136.2 ms (40 streams x "
        "3 seeds); same cause as T2"))),
    "Z0.5",
])
def test_T6_ordering_osg_below_rr_low_skew(label):
    tab = _dist_table()
    assert tab[label]["L_osg"] < tab[label]["L_rr"], (label, tab[label]["L_osg"], tab[label]["L_rr"])


@pytest.mark.slow
def test_T7_equal_throughput():
    """T7 / spec 7.15: RR, OSG and FK give the same throughput (within 1%) for every distribution."""
    worst = 0.0
    for label, alpha in DISTS:
        sw = dist_sweep(alpha)
        ref = sw.thr_rr.mean()
        for algo in ("osg", "osg-lit", "fk", "fk-osg"):
            dev = abs(sw.thr[algo].mean() / ref - 1.0)
            worst = max(worst, dev)
            assert dev < 0.01, (label, algo, dev)
    record("T7", max_rel_throughput_diff=worst)
    assert rounds_to(worst, 0.0077, 1e-4), worst  # 0.77%


# --------------------------------------------------------------------------------------------
# T8-T13: over-provisioning (Fig. 6), 40 streams x 2 hash seeds per point, P = 95..115 step 1

P_GRID = tuple(float(p) for p in range(95, 116))
P_ALGOS = ("osg", "osg-lit", "fk", "fk-wl", "fk-osg")


def p_sweep(P: float) -> Sweep:
    return sweep(P=P, streams=40, algos=P_ALGOS)


def _p_curve(algo: str) -> np.ndarray:
    return np.array([p_sweep(P).mean(algo) for P in P_GRID])


@pytest.mark.slow
def test_T8_undersized_small_speedup_fk_same_as_osg():
    """T8: P = 95..98%: Lambda_OSG small (<= 1.05) and FK gives the same speed-up (within 0.05);
    measured OSG 1.0002-1.0007, FK 1.005-1.026 and FK-osg within 1e-4 of OSG."""
    got = {}
    for P in (95.0, 96.0, 97.0, 98.0):
        sw = p_sweep(P)
        got[P] = (sw.mean("osg"), sw.mean("fk"), sw.mean("fk-osg"))
        assert got[P][0] <= 1.05 and abs(got[P][1] - got[P][0]) <= 0.05, (P, got[P])
        assert abs(got[P][2] - got[P][0]) <= 1e-4, (P, got[P])
    record("T8", **{f"P{P:g}": {"osg": v[0], "fk": v[1], "fk_osg": v[2]} for P, v in got.items()})
    osg, fk = [v[0] for v in got.values()], [v[1] for v in got.values()]
    assert rounds_to(min(osg), 1.0002, 1e-4) and rounds_to(max(osg), 1.0007, 1e-4), osg
    assert rounds_to(min(fk), 1.005, 1e-3) and rounds_to(max(fk), 1.026, 1e-3), fk


#: T9: mean Lambda_OSG and its 95% interval at P = 100..108% as REPRODUCTION.md prints them
T9_CI = dict(zip(range(100, 109), ((1.210, 1.168, 1.252), (1.248, 1.195, 1.301), (1.203, 1.163, 1.243),
                                   (1.195, 1.155, 1.234), (1.180, 1.148, 1.211), (1.168, 1.138, 1.198),
                                   (1.154, 1.128, 1.179), (1.141, 1.118, 1.165), (1.130, 1.108, 1.152))))
#: T9's verdict per P, from the interval against the bound 1.14: "match" when the whole interval is at
#: or above it, "miss" when the whole interval is below it, "inconclusive" when it contains it
T9_VERDICT = {P: "match" if P <= 104 else "inconclusive" for P in range(100, 109)}


def bound_verdict(ci: "Ci", bound: float) -> str:
    """A "mean >= bound" target judged by the 95% interval: match, miss or inconclusive."""
    if ci.lo >= bound:
        return "match"
    return "miss" if ci.hi < bound else "inconclusive"


@pytest.mark.slow
@pytest.mark.parametrize("P", [float(p) for p in range(100, 109)])
def test_T9_osg_at_least_114(P):
    """T9: mean Lambda_OSG >= 1.14 throughout P = 100..108%, each P judged by its 95% interval with
    no slack (the paper states a bound): a match where the interval lies at or above 1.14 (100-104%),
    inconclusive where it contains 1.14 (105-108%: the point estimate alone would call 105-107% a
    match); none lies wholly below (REPRODUCTION.md)."""
    ci = p_sweep(P).ci("osg")
    record(f"T9 [P={P:g}]", lambda_osg=ci, verdict=bound_verdict(ci, 1.14))
    assert ci_is(ci, *T9_CI[int(P)]), ci
    assert bound_verdict(ci, 1.14) == T9_VERDICT[int(P)], ci


@pytest.mark.slow
def test_T10_measured_peak_at_101():
    """T10, what we measure (the miss below): Lambda_OSG 1.168 [1.138, 1.198] at P = 105%; the
    curve peaks at P = 101% (1.248)."""
    curve = _p_curve("osg")
    assert P_GRID[int(np.argmax(curve))] == 101.0 and rounds_to(float(curve.max()), 1.248, 1e-3), curve
    assert ci_is(p_sweep(105.0).ci("osg"), 1.168, 1.138, 1.198), p_sweep(105.0).ci("osg")


@pytest.mark.slow
@pytest.mark.xfail(strict=True, raises=AssertionError, reason=(
    "T10: Lambda_OSG at P = 105% is 1.168 [1.138, 1.198] (40 streams x 2 seeds), not 1.29, and "
    "our curve peaks at P = 101% (1.248), not 105%.  The spec's pilot also found 1.20 at 105%."))
def test_T10_peak_129_at_105():
    ci = p_sweep(105.0).ci("osg")
    curve = _p_curve("osg")
    peak = P_GRID[int(np.argmax(curve))]
    record("T10", lambda_osg_105=ci, peak_P=peak, peak_lambda=float(curve.max()))
    assert ci.approx_lambda(1.29), ci
    assert abs(peak - 105.0) <= 2.0, peak


@pytest.mark.slow
def test_T11_P115_osg_106_fk_157():
    """T11: at P = 115% mean Lambda_OSG ≈ 1.06 and Lambda_FK ≈ 1.57."""
    sw = p_sweep(115.0)
    record("T11", lambda_osg=sw.ci("osg"), lambda_fk=sw.ci("fk"), lambda_fk_wl=sw.ci("fk-wl"),
           lambda_fk_osg=sw.ci("fk-osg"), lambda_osg_lit=sw.ci("osg-lit"))
    assert sw.ci("osg").approx_lambda(1.06), sw.ci("osg")
    assert sw.ci("fk").approx_lambda(1.57), sw.ci("fk")
    assert ci_is(sw.ci("osg"), 1.056, 1.040, 1.071) and ci_is(sw.ci("fk"), 1.558, 1.512, 1.604), sw.ci("fk")
    assert rounds_to(sw.mean("fk-wl"), 1.589, 1e-3) and rounds_to(sw.mean("fk-osg"), 1.433, 1e-3)


@pytest.mark.slow
def test_T12_fk_peak_36_at_101():
    """T12: FK peaks at P = 101% with Lambda_FK ≈ 3.6 (ours: at 101%, 6% higher)."""
    sw = p_sweep(101.0)
    curve = _p_curve("fk")
    peak = P_GRID[int(np.argmax(curve))]
    record("T12", lambda_fk_101=sw.ci("fk"), lambda_fk_wl_101=sw.ci("fk-wl"),
           lambda_fk_osg_101=sw.ci("fk-osg"), peak_P=peak, fk_curve=dict(zip(P_GRID, curve.round(3))))
    # measured 3.83 [3.68, 3.98]: above the paper's 3.6 by 6%, its interval excludes 3.6
    # (REPRODUCTION.md: approximate); the peak's position matches
    assert 3.6 < sw.ci("fk").mean < 3.6 * 1.10, sw.ci("fk")
    assert sw.ci("fk").lo > 3.6 and ci_is(sw.ci("fk"), 3.83, 3.68, 3.98, 0.01), sw.ci("fk")
    assert peak == 101.0, peak
    # FK falls to 2.53 at 100% and 1.56 at 115%; at 101% FK-WL 3.85, FK-osg 2.62 (A9)
    assert rounds_to(curve[P_GRID.index(100.0)], 2.53, 0.01) and rounds_to(curve[-1], 1.56, 0.01), curve
    assert rounds_to(sw.mean("fk-wl"), 3.85, 0.01) and rounds_to(sw.mean("fk-osg"), 2.62, 0.01)


@pytest.mark.slow
def test_T13_throughput_vs_provisioning():
    """T13: all algorithms about the same throughput (within 2%) at every P; highest when
    undersized (95-99%), then falling as P rises."""
    thr = {}
    for P in P_GRID:
        sw = p_sweep(P)
        ref = sw.thr_rr.mean()
        for algo in ("osg", "osg-lit", "fk", "fk-osg"):
            assert abs(sw.thr[algo].mean() / ref - 1.0) < 0.02, (P, algo)
        thr[P] = float(ref)
    t = np.array([thr[P] for P in P_GRID])
    record("T13", rr_throughput=dict(zip(P_GRID, t.round(1))))
    over = t[np.array(P_GRID) >= 100]
    assert np.all(np.diff(over) < 0)
    assert t[np.array(P_GRID) < 100].min() >= over.max()
    assert rounds_to(t[:5].min(), 1537.0, 0.1) and rounds_to(t[:5].max(), 1537.6, 0.1), t
    assert rounds_to(over[0], 1535.6, 0.1) and rounds_to(t[-1], 1342.9, 0.1), t


@pytest.mark.slow
def test_A9_fk_wl_within_3_percent_of_literal_fk_on_sweeps():
    """A9: FK-WL within 3% of literal FK in mean completion time, per stream, on every sweep that
    runs both (the 7 distributions of Fig. 4 and the 21 loads of Fig. 6)."""
    ratio = {**{f"dist {label}": dist_sweep(alpha) for label, alpha in DISTS},
             **{f"P={P:g}": p_sweep(P) for P in P_GRID}}
    ratio = {n: sw.lat["fk-wl"][:, 0] / sw.lat["fk"][:, 0] for n, sw in ratio.items()}
    lo, hi = min(float(r.min()) for r in ratio.values()), max(float(r.max()) for r in ratio.values())
    record("A9 FK-WL vs FK (sweeps)", ratio_min=lo, ratio_max=hi)
    for n, r in ratio.items():
        assert np.all(np.abs(r - 1) <= 0.03), (n, r)
    assert rounds_to(lo, 0.978, 1e-3) and rounds_to(hi, 1.001, 1e-3), (lo, hi)


@pytest.mark.slow
def test_A8_literal_osg_below_rr_when_over_provisioned():
    """Spec 6 A8 (ablation, a predicted deviation): literal OSG (accumulated work since time 0)
    falls below RR once over-provisioned, while OSG-WL stays above."""
    got = {}
    for P in (100.0, 105.0, 110.0, 115.0):
        sw = p_sweep(P)
        got[P] = (sw.ci("osg-lit"), sw.ci("osg"))
    record("A8 literal vs WL", **{f"P{P:g}": {"literal": v[0], "wl": v[1]} for P, v in got.items()})
    for P in (105.0, 110.0, 115.0):
        assert got[P][0].hi < 1.0 < got[P][1].lo, (P, got[P])
    # at P = 100% the literal variant is still above RR: 1.076 [1.040, 1.112]
    assert got[100.0][0].lo > 1.0 and ci_is(got[100.0][0], 1.076, 1.040, 1.112), got[100.0]
    for P, lit, wl in ((105.0, 0.785, 1.168), (110.0, 0.824, 1.107), (115.0, 0.837, 1.056)):
        assert rounds_to(got[P][0].mean, lit, 1e-3) and rounds_to(got[P][1].mean, wl, 1e-3), (P, got[P])


# --------------------------------------------------------------------------------------------
# T14-T16: max_w (Fig. 7), min_w = 0.1 ms, 64 levels, 20 streams x 2 seeds

MAXW = tuple(round(0.1 * 2 ** j, 1) for j in range(11))  # 0.1 .. 102.4 ms
MAXW_ALGOS = ("osg", "fk", "fk-osg")


def maxw_sweep(mx: float) -> Sweep:
    cost = (("model", "levels"), ("levels", 64), ("low", 0.1), ("high", mx))
    if mx == 0.1:
        cost = COST_ONE
    return sweep(algos=MAXW_ALGOS, cost=cost)


@pytest.mark.slow
def test_T14_fig7_identical_costs_fk():
    """T14 on the Fig. 7 grid: max_w = min_w = 0.1 ms gives Lambda_FK = 1 exactly."""
    sw = maxw_sweep(0.1)
    record("T14 (Fig. 7 grid)", lambda_fk=sw.ci("fk"), lambda_osg=sw.ci("osg"), lambda_fk_osg=sw.ci("fk-osg"))
    assert np.all(sw.lam["fk"] == 1.0)


@pytest.mark.slow
def test_T15_osg_levels_off_about_125():
    """T15 (level): Lambda_OSG ≈ 1.25 at max_w = 102.4 ms."""
    ci = maxw_sweep(102.4).ci("osg")
    record("T15 level", lambda_osg_102_4=ci, curve={m: round(maxw_sweep(m).mean("osg"), 3) for m in MAXW})
    assert ci.approx_lambda(1.25), ci
    assert ci_is(ci, 1.198, 1.144, 1.252), ci


#: T15: mean Lambda_OSG at max_w = 0.2..102.4 ms as REPRODUCTION.md prints it
T15_CURVE = (1.18, 1.27, 1.10, 1.12, 1.18, 1.23, 1.22, 1.21, 1.25, 1.20)


@pytest.mark.slow
def test_T15_measured_no_trend():
    """T15 (trend), what we measure (the miss below): the curve over max_w = 0.2..102.4 ms and its
    Spearman rho of 0.33."""
    curve = np.array([maxw_sweep(m).mean("osg") for m in MAXW[1:]])
    assert all(rounds_to(x, v, 0.01) for x, v in zip(curve, T15_CURVE)), curve
    assert rounds_to(spearman(np.arange(len(curve)), curve), 0.33, 0.01), curve


@pytest.mark.slow
@pytest.mark.xfail(strict=True, raises=AssertionError, reason=(
    "T15 (trend): Lambda_OSG does not rise with max_w: 1.18 at max_w = 0.2 ms, then 1.10-1.27 "
    "without a trend up to 102.4 ms (Spearman rho = 0.33 over 0.2..102.4; 20 streams x 2 "
    "seeds).  In a discrete-event simulation only the ratio max_w/min_w matters, and above "
    "a ratio of ~4 the estimates' relative quality hardly changes; the paper's rise may come "
    "from its real-time simulator's fixed overheads (A1)."))
def test_T15_osg_rises_with_maxw():
    curve = np.array([maxw_sweep(m).mean("osg") for m in MAXW[1:]])
    rho = spearman(np.arange(len(curve)), curve)
    record("T15 trend", spearman_rho=float(rho), curve=dict(zip(MAXW[1:], curve.round(3))))
    assert rho >= 0.7, rho


@pytest.mark.slow
def test_T16_fk_above_osg_from_04():
    """T16 (ordering): FK above OSG for every max_w >= 0.4 ms."""
    for m in MAXW[2:]:
        sw = maxw_sweep(m)
        assert sw.ci("fk").lo > sw.ci("osg").hi, m
    record("T16 ordering", fk_curve={m: round(maxw_sweep(m).mean("fk"), 3) for m in MAXW})
    # what the level miss below measures: FK 2.34-2.55 over max_w = 0.2..102.4 ms
    fk = [maxw_sweep(m).mean("fk") for m in MAXW[1:]]
    assert rounds_to(min(fk), 2.34, 0.01) and rounds_to(max(fk), 2.55, 0.01), fk
    assert ci_is(maxw_sweep(102.4).ci("fk"), 2.553, 2.272, 2.834), maxw_sweep(102.4).ci("fk")


@pytest.mark.slow
@pytest.mark.xfail(strict=True, raises=AssertionError, reason=(
    "T16 (level): FK levels off at Lambda 2.55 [2.27, 2.83] (20 streams x 2 seeds), not 3.4, "
    "at P = 100%.  FK is extremely sensitive to the load right at critical load: 2.53 at "
    "P = 100% but 3.83 at 101% (T12 matches).  With the empirical mean cost (A10) P = 100% is "
    "exactly rho = 1; the paper's simulator probably ran slightly below it."))
def test_T16_fk_levels_off_about_34():
    ci = maxw_sweep(102.4).ci("fk")
    record("T16 level", lambda_fk_102_4=ci)
    assert ci.approx_lambda(3.4), ci


# --------------------------------------------------------------------------------------------
# T17: n(w) (Fig. 8), costs 0.1..6.4 ms, 20 streams x 2 seeds

NW = tuple(2 ** j for j in range(1, 13))  # 2 .. 4096


def nw_sweep(nw: int) -> Sweep:
    return sweep(algos=("osg", "fk", "fk-osg"), cost=(("model", "levels"), ("levels", nw), ("low", 0.1), ("high", 6.4)))


@pytest.mark.slow
def test_T17_mean_and_spread_fall_then_flat():
    """T17: mean L and its spread fall as n(w) grows; little change for n(w) >= 16 (the range of
    mean L over n(w) = 16..4096 is at most a fifth of its fall from n(w) = 2 to 16)."""
    tab = {}
    for nw in NW:
        sw = nw_sweep(nw)
        tab[nw] = {"L_rr": float(sw.lat_rr.mean()), "L_osg": float(sw.lat["osg"].mean()),
                   "L_fk": float(sw.lat["fk"].mean()), "sd_rr": float(sw.lat_rr.std(ddof=1)),
                   "sd_osg": float(sw.lat["osg"].mean(axis=1).std(ddof=1))}
    record("T17 L", **{str(k): v for k, v in tab.items()})
    for c in ("L_rr", "L_osg", "L_fk"):
        assert tab[2][c] > tab[16][c], c
        flat = np.array([tab[nw][c] for nw in NW if nw >= 16])
        assert flat.max() - flat.min() <= 0.2 * (tab[2][c] - tab[16][c]), (c, flat)
    for c in ("sd_rr", "sd_osg"):
        assert tab[2][c] > max(tab[nw][c] for nw in NW if nw >= 16), c
    # ms at n(w) = 2 -> 16 -> 4096, as REPRODUCTION.md prints them
    for c, want, step in (("L_rr", (230, 142, 133.5), (1, 1, 0.1)), ("L_osg", (212, 118, 114), (1, 1, 1)),
                          ("sd_rr", (24.6, 18.0, 17.2), (0.1, 0.1, 0.1))):
        got = [tab[nw][c] for nw in (2, 16, 4096)]
        assert all(rounds_to(x, v, d) for x, v, d in zip(got, want, step)), (c, got)


@pytest.mark.slow
def test_T17_gain_about_19pct_from_nw8():
    """T17 (gain) from n(w) = 8 on: ≈19% with the "≈" rule (the gain interval widened by
    slack(0.19) = 0.048 holds 0.19); measured 13.6-17.6%."""
    gains = {nw: nw_sweep(nw).gain("osg") for nw in NW}
    record("T17 gain", **{str(k): v for k, v in gains.items()},
           lambda_fk_osg={str(nw): round(nw_sweep(nw).mean("fk-osg"), 3) for nw in NW},
           lambda_osg={str(nw): round(nw_sweep(nw).mean("osg"), 3) for nw in NW})
    for nw in NW[2:]:
        assert gains[nw].approx_gain(0.19), (nw, gains[nw])
    means = [gains[nw].mean for nw in NW[2:]]
    assert rounds_to(min(means), 0.136, 1e-3) and rounds_to(max(means), 0.176, 1e-3), means
    # the miss below: 7.6% [3.6, 11.8] at n(w) = 2, 4.7% [1.0, 8.2] at 4
    assert ci_is(gains[2], 0.076, 0.036, 0.118) and ci_is(gains[4], 0.047, 0.010, 0.082), gains
    # FK-osg dips at n(w) = 2 as well: Lambda 1.33 against 1.52 at n(w) = 64
    fko = {nw: nw_sweep(nw).mean("fk-osg") for nw in (2, 64)}
    assert rounds_to(fko[2], 1.33, 0.01) and rounds_to(fko[64], 1.52, 0.01), fko


@pytest.mark.slow
@pytest.mark.parametrize("nw", [2, 4])
@pytest.mark.xfail(strict=True, raises=AssertionError, reason=(
    "T17 (gain): OSG does not beat RR by ≈19% at n(w) = 2 and 4: gain 7.6% [3.6%, 11.8%] at "
    "n(w) = 2 and 4.7% [1.0%, 8.2%] at 4 (20 streams x 2 seeds), below even with the slack of "
    "0.048; 13.6-17.6% from n(w) = 8 on (test above).  FK-osg also dips at n(w) = 2 (Lambda 1.33 "
    "vs 1.52 at 64), so part of the loss is the protocol, part estimation; not isolated further."))
def test_T17_gain_about_19pct_at_small_nw(nw):
    g = nw_sweep(nw).gain("osg")
    record(f"T17 gain [n(w)={nw}]", gain=g)
    assert g.approx_gain(0.19), (nw, g)


# --------------------------------------------------------------------------------------------
# T18-T22: k (Fig. 9), 20 streams x 2 seeds

KS = tuple(range(2, 21))


def k_sweep(k: int) -> Sweep:
    return sweep(k=k, algos=("osg", "fk", "fk-osg"))


@pytest.mark.slow
@pytest.mark.parametrize("k, target", [
    (2, 1.14), (5, 1.23), (12, 1.09),
    pytest.param(20, 1.06, marks=pytest.mark.xfail(strict=True, raises=AssertionError, reason=(
        "T21: at k = 20 mean Lambda_OSG is 1.012 [1.009, 1.014] (20 streams x 2 seeds), not "
        "1.06.  The warm-up grows with k (median RUN index 3.1-4.1 N k tuples): RUN is entered at "
        "tuple 84,460 (median), so OSG is round robin for 84% of the 100,000-tuple stream (A4)."))),
])
def test_T18_T21_osg_speedup_vs_k(k, target):
    """T18 (k = 2) 1.14, T19 (k = 5) 1.23, T20 (k = 12) 1.09, T21 (k = 20) 1.06."""
    sw = k_sweep(k)
    record(f"T18-T21 [k={k}]", lambda_osg=sw.ci("osg"), lambda_fk=sw.ci("fk"),
           lambda_fk_osg=sw.ci("fk-osg"),
           run_index_median=float(np.median([s["run_index"] for s in sw.stats["osg"]])))
    assert sw.ci("osg").approx_lambda(target), sw.ci("osg")


@pytest.mark.slow
def test_T18_T21_measured():
    """T18-T21, what we measure: Lambda_OSG 1.201 [1.100, 1.302] (k = 2), 1.231 [1.168, 1.294]
    (5), 1.081 [1.055, 1.108] (12), 1.012 [1.009, 1.014] (20, the miss above).  RUN comes later as k
    grows: the median run index rises with k, from 6.3k tuples (k = 2) and 20.8k (5) to 84,460 (20),
    3.1-4.1 N k."""
    for k, want in ((2, (1.201, 1.100, 1.302)), (5, (1.231, 1.168, 1.294)), (12, (1.081, 1.055, 1.108)),
                    (20, (1.012, 1.009, 1.014))):
        assert ci_is(k_sweep(k).ci("osg"), *want), (k, k_sweep(k).ci("osg"))
    run = {k: float(np.median([s["run_index"] for s in k_sweep(k).stats["osg"]])) for k in KS}
    record("T18-T21 run index", median=run, over_N_k={k: round(v / (1024 * k), 2) for k, v in run.items()})
    assert np.all(np.diff([run[k] for k in KS]) > 0), run
    assert run[20] == 84_460 and rounds_to(run[2], 6300, 100) and rounds_to(run[5], 20_800, 100), run
    per = [run[k] / (1024 * k) for k in KS]
    assert rounds_to(min(per), 3.1, 0.1) and rounds_to(max(per), 4.1, 0.1), per


@pytest.mark.slow
def test_T19_measured_peak_at_k3():
    """T19, what we measure (the miss below): the OSG curve over k peaks at k = 3 (1.312);
    k = 4 gives 1.234."""
    curve = np.array([k_sweep(k).mean("osg") for k in KS])
    assert KS[int(np.argmax(curve))] == 3 and rounds_to(float(curve.max()), 1.312, 1e-3), curve
    assert rounds_to(curve[KS.index(4)], 1.234, 1e-3), curve


@pytest.mark.slow
@pytest.mark.xfail(strict=True, raises=AssertionError, reason=(
    "T19 (peak): our curve peaks at k = 3 (1.312), not k = 5; k = 4 and 5 give 1.234 / 1.231 "
    "(20 streams x 2 seeds).  The paper's text does not mention k = 3, but the curve is said to "
    "peak at k = 5.  Smaller k reaches RUN sooner (median RUN index 6.3k tuples at k = 2, 20.8k at "
    "k = 5: 3.1-4.1 N k)."))
def test_T19_peak_at_k5():
    """T19: k = 5 is the peak of the OSG curve (within the slack)."""
    curve = np.array([k_sweep(k).mean("osg") for k in KS])
    record("T19 curve", curve=dict(zip(KS, curve.round(3))), argmax_k=KS[int(np.argmax(curve))])
    assert curve[KS.index(5)] + slack(curve[KS.index(5)] - 1.0) >= curve.max()


@pytest.mark.slow
def test_T22_measured():
    """T22, what we measure (the miss below): FK-ideal 3.61 [3.20, 4.01] at k = 11, highest at
    k = 20 (4.53 [4.08, 4.98]); FK-osg 1.18 at 11 and 1.015 at 20, falling with k from k = 3."""
    fk = np.array([k_sweep(k).mean("fk") for k in KS])
    fko = np.array([k_sweep(k).mean("fk-osg") for k in KS])
    assert ci_is(k_sweep(11).ci("fk"), 3.61, 3.20, 4.01, 0.01), k_sweep(11).ci("fk")
    assert ci_is(k_sweep(20).ci("fk"), 4.53, 4.08, 4.98, 0.01), k_sweep(20).ci("fk")
    assert KS[int(np.argmax(fk))] == 20, fk
    assert rounds_to(fko[KS.index(11)], 1.18, 0.01) and rounds_to(fko[-1], 1.015, 1e-3), fko
    assert np.all(np.diff(fko[KS.index(3):]) < 0), fko


@pytest.mark.slow
@pytest.mark.xfail(strict=True, raises=AssertionError, reason=(
    "T22 (A9): FK-ideal at k = 11 is 3.61 [3.20, 4.01] (its interval holds 4.0) but is highest "
    "at k = 20, 4.53 [4.08, 4.98] (not 2.7): no peak at 11.  FK-osg falls with k from k = 3 on "
    "(1.18 at 11, 1.015 at 20) as its warm-up grows with k.  Neither reading gives the paper's "
    "curve; the spec's pilot found the same."))
def test_T22_fk_peak_40_at_11_then_27():
    fk = np.array([k_sweep(k).mean("fk") for k in KS])
    fko = np.array([k_sweep(k).mean("fk-osg") for k in KS])
    record("T22", fk_curve=dict(zip(KS, fk.round(3))), fk_osg_curve=dict(zip(KS, fko.round(3))),
           fk_11=k_sweep(11).ci("fk"), fk_20=k_sweep(20).ci("fk"))
    assert k_sweep(11).ci("fk").approx_lambda(4.0)
    assert k_sweep(20).ci("fk").approx_lambda(2.7)
    assert abs(KS[int(np.argmax(fk))] - 11) <= 1


# --------------------------------------------------------------------------------------------
# T23: eps (Fig. 10), c = max(1, floor(e/eps)) (A3), 20 streams x 2 seeds

EPS = tuple([1.0] + [round(d * 10.0 ** -e, 4) for e in (1, 2, 3) for d in range(9, 0, -1)])


def eps_sweep(eps: float) -> Sweep:
    return sweep(algos=("osg",), extra=(("eps", eps),))


T23_DECADES = ((1.0, 0.1), (0.1, 0.01), (0.01, 0.001))
_T23_WHY = ("  Between c = 27 and 271 the stability check takes longer (RUN at tuple ~36k for "
            "eps = 0.01 vs ~16k for 0.1), which eats the better estimates at P = 100%.")


@pytest.mark.slow
def test_T23_measured():
    """T23, what we measure (the misses below): Lambda 1.089 (eps 1.0, c = 1) -> 1.182 (0.1) ->
    1.130 (0.01) -> 1.490 (0.001); only the last decade raises it by ≈25%.  The minimum over the
    40 runs is below 1 for 15 of the 18 values eps <= 0.09 (lowest 0.746 at 0.08), above 1 only
    for eps <= 0.003.  RUN comes at ≈36k tuples for eps = 0.01 against ≈16k for 0.1."""
    lam = {e: eps_sweep(e).lam["osg"].mean(axis=1) for e in (1.0, 0.1, 0.01, 0.001)}
    ratios = {f"{a}->{b}": Ci.of(lam[b] / lam[a]) for a, b in T23_DECADES}
    run = {e: float(np.median([s["run_index"] for s in eps_sweep(e).stats["osg"]]))
           for e in (1.0, 0.1, 0.05, 0.01, 0.001)}
    mins = {e: float(eps_sweep(e).lam["osg"].min()) for e in EPS if e <= 0.09}
    record("T23 trend", curve={e: round(eps_sweep(e).mean("osg"), 3) for e in EPS}, ratios=ratios,
           run_index_median=run)
    record("T23 minimum", min_lambda=mins)
    for e, v in ((1.0, 1.089), (0.1, 1.182), (0.01, 1.130), (0.001, 1.490)):
        assert rounds_to(eps_sweep(e).mean("osg"), v, 1e-3), (e, eps_sweep(e).mean("osg"))
    want = ((1.10, 1.03, 1.17), (0.96, 0.91, 1.01), (1.33, 1.24, 1.41))
    for (name, r), (mean, lo, hi) in zip(ratios.items(), want):
        assert ci_is(r, mean, lo, hi, 0.01), (name, r)
    assert rounds_to(run[0.01], 36_000, 1000) and rounds_to(run[0.1], 16_000, 1000), run
    assert len(mins) == 18 and sum(v < 1.0 for v in mins.values()) == 15, mins
    assert {e for e, v in mins.items() if v > 1.0} == {0.003, 0.002, 0.001}, mins
    assert min(mins, key=mins.get) == 0.08 and rounds_to(mins[0.08], 0.746, 1e-3), mins


@pytest.mark.slow
@pytest.mark.parametrize("a, b", [
    pytest.param(1.0, 0.1, marks=pytest.mark.xfail(strict=True, raises=AssertionError, reason=(
        "T23 (trend): eps 1.0 -> 0.1 (c = 1 -> 27) raises mean Lambda_OSG 1.089 -> 1.182, a "
        "per-stream ratio of 1.10 [1.03, 1.17] (20 streams x 2 seeds), not ≈1.25 (slack 0.06)."))),
    pytest.param(0.1, 0.01, marks=pytest.mark.xfail(strict=True, raises=AssertionError, reason=(
        "T23 (trend): eps 0.1 -> 0.01 (c = 27 -> 271) gives Lambda_OSG 1.182 -> 1.130, a ratio of "
        "0.96 [0.91, 1.01] (20 streams x 2 seeds), not ≈1.25." + _T23_WHY))),
    (0.01, 0.001),
])
def test_T23_each_decade_raises_lambda_25pct(a, b):
    """T23 (trend): each 10x cut in eps raises mean Lambda_OSG by ≈25% (per-stream ratio, "≈"
    rule); only the last decade (ratio 1.33 [1.24, 1.41]) does."""
    r = Ci.of(eps_sweep(b).lam["osg"].mean(axis=1) / eps_sweep(a).lam["osg"].mean(axis=1))
    record(f"T23 trend [{a}->{b}]", ratio=r)
    assert r.approx_lambda(1.25), (a, b, r)


@pytest.mark.slow
@pytest.mark.xfail(strict=True, raises=AssertionError, reason=(
    "T23 (minimum): the minimum Lambda_OSG over our 40 runs per eps is below 1 for 15 of the 18 "
    "values eps <= 0.09 (lowest 0.746 at eps = 0.08; above 1 only for eps <= 0.003), while the "
    "paper's minimum over 5,000 runs stays above 1.  At P = 100% a run that reaches RUN late can "
    "be slower than RR (the headline's minimum is 0.88)."))
def test_T23_min_above_1_for_eps_le_009():
    mins = {e: float(eps_sweep(e).lam["osg"].min()) for e in EPS if e <= 0.09}
    for e, v in mins.items():
        assert v > 1.0, (e, v)


@pytest.mark.slow
def test_T23_large_eps_performs_poorly():
    """T23: large eps (>= 0.2, c <= 13) performs poorly: every such mean Lambda_OSG is below the
    default eps = 0.05's and below 1.10."""
    ref = eps_sweep(0.05).mean("osg")
    big = {e: eps_sweep(e).mean("osg") for e in EPS if e >= 0.2}
    record("T23 large eps", reference_0_05=ref, large=big)
    for e, v in big.items():
        assert v < ref and v < 1.10, (e, v)
    assert rounds_to(min(big.values()), 1.06, 0.01) and rounds_to(max(big.values()), 1.10, 0.01), big
    assert rounds_to(ref, 1.231, 1e-3), ref


# --------------------------------------------------------------------------------------------
# T24: time series (Fig. 11, spec 4.6), engine, 3 streams x hash seed 0

TS_M = 150_000
TS_SWITCH = 75_000
TS_SPEED = [(0, [1.05, 1.025, 1.0, 0.975, 0.95]), (TS_SWITCH, [0.90, 0.95, 1.0, 1.05, 1.10])]
TS_WIN = 2000
TS_STREAMS = 3


@functools.lru_cache(maxsize=None)
def _ts_engine(root: str, mu: float = 0.05):
    out = []
    cells = grid(["osg", "sg"], [K], [1], [0], {"osg": {"mu": [mu]}})
    for i in range(TS_STREAMS):
        path = _dataset(Path(root), 1.0, i, TS_M, COST_TS)
        res = replay(path, cells, ReplayConfig(provisioning=100.0, worker_speed=TS_SPEED, window=TS_WIN))
        ser = {}
        for row in res.series:
            ser.setdefault(row["strategy"], []).append(row)
        summ = {r["strategy"]: r for r in res.summary}
        # direct run of the same cell for the shipment log and the assignment
        seq, key, cost = stream_arrays(1.0, i, TS_M, COST_TS)
        wm = WorkerModel.periods(K, TS_SPEED)
        asg, lat, a, strat = run_direct("osg", seq, key, cost, K, 100.0, 0, wm, mu=mu)
        assert lat.mean() == pytest.approx(summ["osg"]["latency_mean"], rel=1e-9)
        out.append({"series": ser, "summary": summ, "asg": asg, "a": a, "state": strat.debug_state(),
                    "stats": json.loads(summ["osg"]["stats"])})
    return out


@pytest.fixture(scope="module")
def ts_root(data_root):
    return str(data_root)


def _post_switch_sketches(run) -> int:
    """Stream index at which the scheduler holds, from every instance, sketches shipped after the
    switch (delivered before the first tuple arriving at or after the shipment time)."""
    st = run["state"]
    deliv = np.searchsorted(run["a"], st["ship_time"], side="left")
    firsts = []
    for o in range(K):
        sel = (st["ship_op"] == o) & (st["ship_seq"] >= TS_SWITCH)
        firsts.append(int(deliv[sel].min()))
    return max(firsts)


@pytest.mark.slow
def test_T24_identical_to_rr_until_send_all_then_better(ts_root):
    """T24: OSG and RR are identical until the scheduler leaves round robin (bit for bit until
    SEND_ALL); in every 2,000-tuple window starting at least one window after RUN, OSG has a lower
    mean and a lower maximum (spread); Lambda 3.0-4.0; RR rises over each half (spec 7.18)."""
    rec = {}
    for i, run in enumerate(_ts_engine(ts_root)):
        osg, rr = run["series"]["osg"], run["series"]["sg"]
        sa, ri = run["stats"]["send_all_index"], run["stats"]["run_index"]
        assert np.array_equal(run["asg"][:int(sa)], np.arange(int(sa)) % K)
        for wo, wr in zip(osg, rr):
            if wo["seq_end"] <= sa:
                assert wo["latency_mean"] == wr["latency_mean"] and wo["latency_max"] == wr["latency_max"]
        after = [(wo, wr) for wo, wr in zip(osg, rr) if wo["seq_start"] >= ri + TS_WIN]
        better_mean = np.mean([wo["latency_mean"] < wr["latency_mean"] for wo, wr in after])
        better_max = np.mean([wo["latency_max"] < wr["latency_max"] for wo, wr in after])
        rr_mean = np.array([w["latency_mean"] for w in rr])
        half = TS_SWITCH // TS_WIN
        rec[f"stream{i}"] = {"send_all": sa, "run": ri, "windows_osg_lower_mean": better_mean,
                             "windows_osg_lower_max": better_max,
                             "lambda": run["summary"]["osg"]["speedup_vs_rr"]}
        assert better_mean == 1.0 and better_max == 1.0, rec[f"stream{i}"]
        assert 3.0 <= rec[f"stream{i}"]["lambda"] <= 4.0, rec[f"stream{i}"]
        for lo, hi in ((0, half), (half, len(rr_mean))):
            seg = rr_mean[lo:hi]
            assert np.polyfit(np.arange(len(seg)), seg, 1)[0] > 0 and seg[-5:].mean() > seg[:5].mean()
    record("T24 identical-then-better", **rec)
    lam = [rec[f"stream{i}"]["lambda"] for i in range(TS_STREAMS)]
    assert all(rounds_to(x, v, 0.01) for x, v in zip(lam, (3.04, 3.24, 3.98))), lam
    # the RUN index miss below: 16,591 / 21,576 / 17,056
    assert [rec[f"stream{i}"]["run"] for i in range(TS_STREAMS)] == [16_591, 21_576, 17_056], rec


@pytest.mark.slow
@pytest.mark.xfail(strict=True, raises=AssertionError, reason=(
    "T24 (RUN index): with mu = 0.05 OSG enters RUN at tuples 16,591 / 21,576 / 17,056 "
    "(3 streams), not ≈10,690.  At the first stability check (2N executions) eta is still above "
    "0.05, so the instances ship at the second check (3N = 3,072 executions) or later; RUN needs "
    "all k sketches plus one epoch (A4).  With mu = 0.10 every instance ships at 2N and RUN comes "
    "at 10.9k-11.4k (sensitivity test below)."))
def test_T24_run_index_about_10690(ts_root):
    """T24: OSG enters RUN (leaves round robin) at ≈10,690 (within 10%)."""
    ri = [run["stats"]["run_index"] for run in _ts_engine(ts_root)]
    record("T24 run index", run_index=ri)
    for v in ri:
        assert abs(v - 10_690) <= 0.10 * 10_690, v


@pytest.mark.slow
@pytest.mark.xfail(strict=True, raises=AssertionError, reason=(
    "T24 (post-switch sketches): with mu = 0.05 the scheduler holds sketches shipped after the "
    "switch from every instance only at tuples 90,936 / 90,428 / 86,059 (3 streams), 1.1k-6.0k "
    "after the paper's 84,912 (tolerance N k = 5,120; two of three streams miss): slower "
    "stabilisation at mu = 0.05 again (A4).  With mu = 0.10: 84.3k-85.7k."))
def test_T24_post_switch_sketches_about_84912(ts_root):
    """T24: the scheduler receives the updated matrices at ≈84,912 (within N k = 5,120)."""
    got = [_post_switch_sketches(run) for run in _ts_engine(ts_root)]
    record("T24 post-switch sketches", at=got)
    for v in got:
        assert abs(v - 84_912) <= K * 1024, v


@pytest.mark.slow
def test_T24_sensitivity_mu_010(ts_root):
    """A4 sensitivity, NOT the paper's setting (mu = 0.10 instead of 0.05, said so): the RUN switch
    lands within 10% of 10,690 (the tolerance of the miss above) and the post-switch sketches
    within N k of 84,912."""
    runs = _ts_engine(ts_root, 0.10)
    ri = [run["stats"]["run_index"] for run in runs]
    got = [_post_switch_sketches(run) for run in runs]
    record("T24 sensitivity mu=0.10", run_index=ri, post_switch_sketches_at=got,
           lambda_vs_rr=[run["summary"]["osg"]["speedup_vs_rr"] for run in runs])
    for v in ri:
        assert abs(v - 10_690) <= 0.10 * 10_690, v
    for v in got:
        assert abs(v - 84_912) <= K * 1024, v
    assert ri == [10_937, 11_410, 11_256] and got == [85_676, 84_338, 84_263], (ri, got)


@pytest.mark.slow
def test_T24_degrades_after_switch_then_recovers_and_adapts(ts_root):
    """T24 / spec 7.18: after the switch at 75,000 OSG degrades (its window mean climbs to a peak
    1.4-5.9x the last pre-switch windows, reached only after the post-switch sketches are in);
    once they are in it adapts (instance 0, now x0.90, gets more tuples than instance 4, now
    x1.10, in every later window) and recovers partially (the last 10 windows average 0.53-0.81
    of the peak, still above the pre-switch level on two of the three streams)."""
    rec, ratios, above = {}, [], []
    for i, run in enumerate(_ts_engine(ts_root)):
        mean = np.array([w["latency_mean"] for w in run["series"]["osg"]])
        sw = TS_SWITCH // TS_WIN
        before = mean[sw - 3:sw].mean()
        new = _post_switch_sketches(run)
        peak_i = sw + int(np.argmax(mean[sw:]))
        peak = mean[peak_i]
        end = mean[-10:].mean()
        first = -(-new // TS_WIN)
        cnt = np.array([np.bincount(run["asg"][w * TS_WIN:(w + 1) * TS_WIN], minlength=K)
                        for w in range(first, TS_M // TS_WIN)])
        adapt = float(np.mean(cnt[:, 0] > cnt[:, 4]))
        rec[f"stream{i}"] = {"pre_switch_ms": before, "post_switch_peak_ms": peak,
                             "peak_window_start": peak_i * TS_WIN, "post_switch_sketches_at": new,
                             "last10_ms": end, "windows_inst0_gets_more": adapt}
        assert TS_SWITCH < new <= peak_i * TS_WIN, rec[f"stream{i}"]
        assert adapt == 1.0, rec[f"stream{i}"]
        assert end < peak, rec[f"stream{i}"]
        ratios.append((peak / before, end / peak))
        above.append(bool(end > before))
    record("T24 switch", **rec)
    up, down = zip(*ratios)
    assert rounds_to(min(up), 1.4, 0.1) and rounds_to(max(up), 5.9, 0.1), up
    assert rounds_to(min(down), 0.53, 0.01) and rounds_to(max(down), 0.81, 0.01), down
    assert [rec[f"stream{i}"]["peak_window_start"] for i in range(TS_STREAMS)] == [106_000, 116_000, 94_000]
    assert above == [True, False, True], above
    # the post-switch sketches miss: 90,936 / 90,428 / 86,059 (tolerance N k of 84,912)
    assert [rec[f"stream{i}"]["post_switch_sketches_at"] for i in range(TS_STREAMS)] == [90_936, 90_428, 86_059]
    # stream 0: 3.9 s at the end against 0.8 s before the switch
    s0 = rec["stream0"]
    assert rounds_to(s0["last10_ms"], 3900, 100) and rounds_to(s0["pre_switch_ms"], 800, 100), s0


# --------------------------------------------------------------------------------------------
# T25-T27 (prototype results: Storm on Azure with real network delay and busy-wait jitter, one
# dataset not public) have no test: a discrete-event simulator cannot reproduce them, and
# REPRODUCTION.md says so (a test that always skips would only count them).
