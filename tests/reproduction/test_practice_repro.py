"""What practitioners run, against the claims of ``practice.spec.md`` and ``practice-allocation.spec.md``.

None of these strategies comes with a paper number for our model: the specs' section 5 lists the
claims found in their sources, most of them qualitative, plus values derived from the engines'
published functions (practice.spec.md 5.2).  Each check here computes our number and asserts it
at the precision REPRODUCTION.md ("Practice") prints; the verdict there says whether it is a
reproduction (a claim about behaviour on data), a guarantee of the algorithm checked on the data
(true by construction: listed, never called a reproduction), or not reproducible here.

Exact engine facts (Kafka's murmur2 vectors P4, Spark's hash() vector P5, the Java hash codes)
are checked against the engines themselves in ``tests/integration/test_engine_hashes.py``; the
spec's hand-derived tables (5.2) and the placement behaviours P3-P7 and E1 values by the
property tests ``tests/property/test_engines_property.py``, ``test_containers_property.py`` and
``test_storm_property.py``.  This file holds what needs a stream or an instance set.

Every check runs in ``make test`` and ``make reproduce`` alike (about 30 s): Zipf streams of
m = 10^6 tuples over 10^4 keys (seed 1) routed directly, the engine's table on 2 x 10^5, and the
E5 graph set, whose optimum is shared with the allocation checks.
"""

from __future__ import annotations

import functools
import json
import math

import numpy as np
import pytest

from skewbench import registry
from skewbench.allocation.model import evaluate
from skewbench.datasets.generators import Plan, StreamSpec
from skewbench.grouping.strategies import engines
from skewbench.grouping.base import Batch
from tests.reproduction.common import e5_reference, record, rounds_to

pytestmark = pytest.mark.reproduction

K = 10_000  # keys of the Zipf streams (practice.spec.md 4)
M = 1_000_000
S = 5
ALPHAS = (1.0, 1.4, 2.0)


@functools.lru_cache(maxsize=None)
def zipf(alpha: float, m: int = M, keys: int = K) -> np.ndarray:
    """The keys of a finite-Zipf stream (dense ids after the generator's random permutation), seed 1."""
    plan = Plan(StreamSpec.zipf(alpha, keys, m, seed=1))
    return np.concatenate([plan.block(b)["key"] for b in range(plan.n_blocks)]).astype(np.int64)


def route(name: str, keys: np.ndarray, n: int, s: int = S, seed: int = 0, values: np.ndarray | None = None,
          **params) -> tuple[np.ndarray, dict]:
    """Worker loads and the strategy's summary, the stream fed whole (tuple t from source t mod s)."""
    obj = registry.get("grouping", name)(n, s, seed, **params)
    if values is not None:
        obj.bind_key_values(values)
    m = len(keys)
    w = obj.route(Batch(np.arange(m, dtype=np.int64), keys, np.zeros(m), np.ones(m)))
    return np.bincount(w, minlength=n), obj.summary()


def imbalance(loads: np.ndarray) -> float:
    return float(loads.max() / loads.sum() - 1.0 / len(loads))


# ============================================================================================
# Flink's key groups (practice.spec.md 2.2, 5.1 P6, 5.2)

FLINK_TABLE = {  # n: (P, groups per operator min, max, operators at the max, limit ceil(P/n)/P - 1/n)
    5: (128, 25, 26, 3, 0.003125), 10: (128, 12, 13, 8, 0.0015625), 20: (128, 6, 7, 8, 0.0046875),
    50: (128, 2, 3, 28, 0.0034375), 100: (256, 2, 3, 56, 0.00171875),
}


@pytest.mark.parametrize("n", sorted(FLINK_TABLE))
def test_p6_flink_key_groups_per_operator(n):
    """P6 and the 5.2 table: the default max parallelism and the key groups each operator owns,
    counted from the kernel's own operator index of every key group; and the imbalance of many
    uniform keys (10^6 distinct ids, each once) against the table's limit ceil(P/n)/P - 1/n."""
    P = engines.flink_default_max_parallelism(n)
    owner = np.array([engines.flink_operator_index(kg, P, n) for kg in range(P)])
    groups = np.bincount(owner, minlength=n)
    assert np.all(np.diff(owner) >= 0)  # contiguous ranges
    keys = np.arange(1_000_000, dtype=np.int64)
    loads, summ = route("flink", keys, n, s=1)
    measured = imbalance(loads)
    expected = FLINK_TABLE[n]
    record(f"P6 flink n={n}", P=P, groups_min=int(groups.min()), groups_max=int(groups.max()),
           at_max=int(np.sum(groups == groups.max())), limit=expected[4], imbalance=measured,
           max_over_mean=float(loads.max() / loads.mean()))
    assert (P, int(groups.min()), int(groups.max()), int(np.sum(groups == groups.max()))) == expected[:4]
    assert (summ["max_parallelism"], summ["key_groups_per_operator_min"], summ["key_groups_per_operator_max"]) \
        == (P, expected[1], expected[2])
    assert math.isclose(math.ceil(P / n) / P - 1 / n, expected[4], rel_tol=1e-12)
    imb, ratio = MEASURED_FLINK[n]
    assert rounds_to(measured, imb, 1e-6) and rounds_to(loads.max() / loads.mean(), ratio, 1e-4), measured
    # within the sampling noise above the limit: the fullest operator's ceil(P/n) groups hold
    # about ceil(P/n) 10^6 / P keys, give or take a few standard deviations of their sum
    sd = math.sqrt(math.ceil(P / n) * 1e6 / P) / 1e6
    assert expected[4] < measured < expected[4] + 4 * sd


#: measured imbalance, and busiest / mean load, of 10^6 distinct ids, each once (REPRODUCTION.md, Practice)
MEASURED_FLINK = {5: (0.003469, 1.0173), 10: (0.002018, 1.0202), 20: (0.005064, 1.1013), 50: (0.003732, 1.1866),
                  100: (0.00195, 1.195)}


def test_flink_at_parallelism_100_on_200000_uniform_keys():
    """The issue's figure: at parallelism 100 (P = 256) the busiest operator gets about 1.24x the
    mean load on 200,000 uniform distinct keys; the other engines and KG on the same keys, as
    dense ids (0..199,999) and as uniform 63-bit values (practice.spec.md 4: DENSE and RAND63)."""
    keys = np.arange(200_000, dtype=np.int64)
    rand63 = np.random.default_rng(63).integers(0, 2**63 - 1, size=len(keys), dtype=np.int64)
    out = {}
    for name in ("flink", "kafka", "spark-hash", "spark-sql", "kg"):
        for label, values in (("dense", None), ("rand63", rand63)):
            loads, _ = route(name, keys, 100, s=1, values=values)
            out[f"{name} {label}"] = round(float(loads.max() / loads.mean()), 4)
    record("flink 200k keys n=100", max_over_mean=out)
    assert out == MEASURED_200K


MEASURED_200K = {"flink dense": 1.2435, "flink rand63": 1.218, "kafka dense": 1.0435, "kafka rand63": 1.041,
                 "spark-hash dense": 1.0, "spark-hash rand63": 1.0545, "spark-sql dense": 1.061,
                 "spark-sql rand63": 1.053, "kg dense": 1.071, "kg rand63": 1.071}


# ============================================================================================
# CHWBL (practice.spec.md 2.1, 5.1 P2, P3)

FACTORS = (110, 125, 150, 200)
CHWBL_N = (5, 10, 50)


@functools.lru_cache(maxsize=None)
def chwbl_grid() -> dict:
    """(alpha, n, F) -> imbalance, its bound (F/100 - 1)/n + s/m, busiest / mean, displaced fraction."""
    out = {}
    for a in ALPHAS:
        keys = zipf(a)
        for n in CHWBL_N:
            for F in FACTORS:
                loads, summ = route("chwbl", keys, n, factor=F)
                out[a, n, F] = {"imbalance": imbalance(loads), "bound": (F / 100 - 1) / n + S / M,
                                "max_over_mean": float(loads.max() / loads.mean()),
                                "displaced": summ["displaced_fraction"], "walk_mean": summ["walk_mean"]}
    return out


def test_p2_chwbl_never_exceeds_its_bound():
    """P2 (HAProxy's hash-balance-factor: 150 means no server exceeds 1.5x the average load): a
    guarantee of the algorithm (per source, after every decision; spec 2.1), so true by
    construction: checked here on every cell of the grid, with the global form I <= eps/n + s/m,
    and its busiest / mean load at F = 150.  Not a reproduction: the numbers show where the bound
    binds (at F = 125 it is the imbalance on every stream skewed enough)."""
    g = chwbl_grid()
    record("P2 chwbl", cells={f"z={a} n={n} F={F}": {k: round(v, 6) for k, v in c.items()}
                              for (a, n, F), c in g.items()})
    for c in g.values():
        assert c["imbalance"] <= c["bound"] + 1e-12
    at150 = {f"z={a} n={n}": round(g[a, n, 150]["max_over_mean"], 4) for a in ALPHAS for n in CHWBL_N}
    assert all(v <= 1.5 + S * n / M for (a, n, F), c in g.items() if F == 150 for v in [c["max_over_mean"]])
    at125 = {f"z={a} n={n}": round(g[a, n, 125]["imbalance"], 5) for a in ALPHAS for n in CHWBL_N}
    assert (at150, at125) == (MEASURED_CHWBL_150, MEASURED_CHWBL_125)


MEASURED_CHWBL_150 = {'z=1.0 n=5': 1.2654,
                      'z=1.0 n=10': 1.4998,
                      'z=1.0 n=50': 1.5,
                      'z=1.4 n=5': 1.5,
                      'z=1.4 n=10': 1.5,
                      'z=1.4 n=50': 1.5,
                      'z=2.0 n=5': 1.5,
                      'z=2.0 n=10': 1.5,
                      'z=2.0 n=50': 1.5}
MEASURED_CHWBL_125 = {'z=1.0 n=5': 0.04989,
                      'z=1.0 n=10': 0.025,
                      'z=1.0 n=50': 0.005,
                      'z=1.4 n=5': 0.05,
                      'z=1.4 n=10': 0.025,
                      'z=1.4 n=50': 0.005,
                      'z=2.0 n=5': 0.05,
                      'z=2.0 n=10': 0.025,
                      'z=2.0 n=50': 0.005}


def test_p3_displacement_grows_as_the_bound_tightens():
    """P3 (Chen et al.: bounded loads suffer cascaded overflow, worse at high load), qualitative: the
    share of tuples not sent to their first ring worker, and the mean walk, grow as F falls and as
    the skew grows (every cell)."""
    g = chwbl_grid()
    shown = {f"z={a} n={n}": [round(g[a, n, F]["displaced"], 4) for F in FACTORS] for a in ALPHAS for n in CHWBL_N}
    walks = {f"z={a} n={n}": [round(g[a, n, F]["walk_mean"], 3) for F in FACTORS] for a in ALPHAS for n in CHWBL_N}
    record("P3 chwbl displaced", factors=FACTORS, displaced=shown, walk_mean=walks)
    for what in ("displaced", "walk_mean"):
        for a in ALPHAS:
            for n in CHWBL_N:
                d = [g[a, n, F][what] for F in FACTORS]
                assert all(x >= y for x, y in zip(d, d[1:])), (what, a, n, d)
        for n in CHWBL_N:
            for F in FACTORS:
                d = [g[a, n, F][what] for a in ALPHAS]
                assert all(x < y for x, y in zip(d, d[1:])), (what, n, F, d)
    assert (shown, walks) == (MEASURED_DISPLACED, MEASURED_WALK)


MEASURED_DISPLACED = {'z=1.0 n=5': [0.0673, 0.0033, 0.0, 0.0],
                      'z=1.0 n=10': [0.1294, 0.0844, 0.033, 0.0],
                      'z=1.0 n=50': [0.3444, 0.2662, 0.2061, 0.1361],
                      'z=1.4 n=5': [0.2462, 0.181, 0.1062, 0.0063],
                      'z=1.4 n=10': [0.4321, 0.3564, 0.2932, 0.1824],
                      'z=1.4 n=50': [0.6747, 0.6293, 0.5715, 0.4837],
                      'z=2.0 n=5': [0.4441, 0.3816, 0.329, 0.2281],
                      'z=2.0 n=10': [0.669, 0.6225, 0.5541, 0.4416],
                      'z=2.0 n=50': [0.8527, 0.8374, 0.8119, 0.7626]}
MEASURED_WALK = {'z=1.0 n=5': [1.069, 1.003, 1.0, 1.0],
                 'z=1.0 n=10': [1.14, 1.086, 1.033, 1.0],
                 'z=1.0 n=50': [1.724, 1.49, 1.333, 1.181],
                 'z=1.4 n=5': [1.263, 1.182, 1.106, 1.006],
                 'z=1.4 n=10': [1.739, 1.519, 1.375, 1.183],
                 'z=1.4 n=50': [5.039, 4.264, 3.5, 2.59],
                 'z=2.0 n=5': [1.685, 1.513, 1.364, 1.228],
                 'z=2.0 n=10': [2.947, 2.52, 2.124, 1.688],
                 'z=2.0 n=50': [11.32, 9.702, 7.985, 5.912]}


@functools.lru_cache(maxsize=None)
def chwbl_walk_positions() -> dict:
    """(alpha, n, F) -> the share of all tuples displaced past the first worker after their own (walk
    position >= 3: the successor was full too, the cascade), the share of the displaced tuples on that
    first successor (position 2) and the displaced tuples' mean walk position (where they landed in
    omega(k), 1 being the key's own worker), measured tuple by tuple from the routing."""
    out = {}
    for a in ALPHAS:
        keys = zipf(a)
        uniq, inv = np.unique(keys, return_inverse=True)
        m = len(keys)
        for n in CHWBL_N:
            ring = registry.get("grouping", "chwbl")(n, S, 0)
            pos = ring.walk_positions(uniq)  # pos[key, worker] = the worker's place in omega(key)
            for i in (0, len(uniq) // 2, len(uniq) - 1):  # the same walks as walk_order's, key by key
                assert list(np.argsort(pos[i])) == ring.walk_order(int(uniq[i]))
            for F in FACTORS:
                obj = registry.get("grouping", "chwbl")(n, S, 0, factor=F)
                w = obj.route(Batch(np.arange(m, dtype=np.int64), keys, np.zeros(m), np.ones(m)))
                p = pos[inv, w]
                disp = p[p > 1]
                assert disp.size / m == obj.summary()["displaced_fraction"]  # the same tuples the strategy counts
                out[a, n, F] = {"cascade": float((disp >= 3).sum() / m),
                                "successor": float((disp == 2).mean()) if disp.size else None,
                                "position": float(disp.mean()) if disp.size else None}
    return out


def test_p3_displaced_tuples_cluster_on_ring_successors_and_cascade():
    """P3 (Chen et al.: bounded loads suffer cascaded overflow, overflow from one bin spilling onto its
    ring neighbours, worse at high load), measured: where each displaced tuple landed on its key's walk.
    Displaced tuples land on the first workers after their own (their mean walk position below the
    (n + 2) / 2 of a spread over the other workers, in every cell), and the cascade, the share of tuples
    sent past a full successor (walk position >= 3), grows as F tightens (every cell) and with the skew
    (at n = 10 and 50, every F)."""
    g = chwbl_walk_positions()
    at10 = {a: [round(g[a, 10, F]["cascade"], 4) for F in FACTORS] for a in ALPHAS}
    pos10 = {a: [None if g[a, 10, F]["position"] is None else round(g[a, 10, F]["position"], 2) for F in FACTORS]
             for a in ALPHAS}
    record("P3 chwbl cascade", factors=FACTORS, cascade_n10=at10, position_n10=pos10,
           cells={f"z={a} n={n} F={F}": v for (a, n, F), v in g.items()})
    for (a, n, F), c in g.items():
        assert c["position"] is None or c["position"] < (n + 2) / 2, (a, n, F, c)
    for a in ALPHAS:
        for n in CHWBL_N:
            d = [g[a, n, F]["cascade"] for F in FACTORS]
            assert all(x >= y for x, y in zip(d, d[1:])), (a, n, d)
    for n in (10, 50):
        for F in FACTORS:
            d = [g[a, n, F]["cascade"] for a in ALPHAS]
            assert all(x < y for x, y in zip(d, d[1:])), (n, F, d)
    assert (at10, pos10) == MEASURED_CASCADE


#: at n = 10, F = 110 / 125 / 150 / 200: the cascade share of the tuples and the displaced tuples' mean walk
#: position (6 if they were spread over the other nine workers), as REPRODUCTION.md prints them
MEASURED_CASCADE = ({1.0: [0.01, 0.0013, 0.0002, 0.0], 1.4: [0.1957, 0.1312, 0.0817, 0.0005],
                     2.0: [0.4754, 0.4022, 0.3237, 0.2193]},
                    {1.0: [2.08, 2.02, 2.01, 2.26], 1.4: [2.71, 2.46, 2.28, 2.0], 2.0: [3.91, 3.44, 3.03, 2.56]})


# ============================================================================================
# local-global aggregation (2.5, 5.1 P7)

def test_p7_local_global_lowers_the_hot_spot_of_the_global_phase():
    """P7 (Flink's tuning guide: local-global aggregation reduces the global aggregation's hot spot),
    qualitative: on Zipf 1.4, n = 10, the global phase's delivered load (one partial per key, source
    and mini-batch) is far more even than the tuples' (KG's), more so as the mini-batch grows, and
    mini-batches of 1 deliver every tuple."""
    keys = zipf(1.4)
    kg = imbalance(route("kg", keys, 10)[0])
    out = {}
    for B in (1, 500, 5000, 50000):
        loads, summ = route("local-global", keys, 10, batch=B)
        assert imbalance(loads) == kg  # the tuples go where KG sends them
        out[B] = (round(summ["imbalance_delivered"], 5), round(summ["delivered_fraction"], 5))
    record("P7 local-global z=1.4 n=10", kg=round(kg, 5), delivered=out)
    assert out[1] == (round(kg, 5), 1.0)
    imb = [out[B][0] for B in (1, 500, 5000, 50000)]
    assert all(x > y for x, y in zip(imb, imb[1:]))
    assert (round(kg, 5), out) == MEASURED_LG


MEASURED_LG = (0.27893, {1: (0.27893, 1.0), 500: (0.05132, 0.21946), 5000: (0.02013, 0.10404), 50000: (0.01321, 0.04407)})


# ============================================================================================
# DKG (2.6, 5.1 P8)

def best_two_workers(counts: np.ndarray, n: int) -> int:
    """The least largest worker load (tuples) when every key may be split over at most two workers:
    the lower bound max(ceil(m / n), ceil(c_1 / 2)) (the average, and the largest key's bigger half),
    met by McNaughton's wrap-around (keys largest first, each worker filled to the bound, a key
    spilling onto the next worker); the construction is checked to use at most two workers a key, so
    the bound is the optimum (a ValueError otherwise)."""
    c = np.sort(np.asarray(counts, dtype=np.int64))[::-1]
    bound = max(-(-int(c.sum()) // n), -(-int(c[0]) // 2))
    loads, w = np.zeros(n, dtype=np.int64), 0
    for x in (int(v) for v in c):
        used = set()
        while x > 0:
            take = min(x, bound - int(loads[w]))
            loads[w] += take
            x -= take
            used.add(w)
            if loads[w] == bound and w < n - 1:
                w += 1
        if len(used) > 2:
            raise ValueError("the wrap-around split a key over three workers: the bound is not shown optimal")
    assert loads.sum() == c.sum() and loads.max() == bound
    return bound


def dkg_routed(keys: np.ndarray, n: int) -> np.ndarray:
    """DKG's worker per tuple, one source, learning on the first 10% (as P8's check)."""
    obj = registry.get("grouping", "dkg")(n, 1, 0, learn=M // 10)
    m = len(keys)
    return obj.route(Batch(np.arange(m, dtype=np.int64), keys, np.zeros(m), np.ones(m)))


def test_p8_dkg_against_key_grouping_and_the_optima():
    """P8 (DKG: near-optimal load distribution for skewed inputs).  One source, n = 10, learning on the
    first 10% of the stream.  DKG may place a key on two workers (its learning-phase worker, KG's, and
    its learned one) and does so with its hot key, so its optimum is the least busiest worker when each
    key may be split over at most two workers (:func:`best_two_workers`); the whole-key optimum of the
    true counts (the engine's 'whole keys' optimum) is shown beside, as a bound only on strategies that
    never split a key.  Near-optimal (criterion: within 20% of the two-worker optimum) at alpha 1.0 only:
    the misses are test_p8_dkg_near_optimal_at_every_skew."""
    out = p8_values()
    record("P8 dkg n=10 s=1", load_max=out)
    for a, r in out.items():
        assert r["dkg"] < r["kg"], a
        assert r["dkg_workers_per_key"] <= 2, a  # DKG uses at most the two workers its optimum allows
        assert r["two_workers"] <= r["optimum"] and r["two_workers"] <= r["dkg"], a
    ratio = {a: r["dkg"] / r["two_workers"] for a, r in out.items()}
    assert all(rounds_to(ratio[a], e, 0.01) for a, e in zip(ALPHAS, (1.15, 1.84, 1.81))), ratio
    assert rounds_to(out[1.0]["dkg"] / out[1.0]["optimum"] - 1, 0.13, 0.01)  # 13% above the whole-key optimum
    assert ratio[1.0] <= 1.2 and ratio[1.4] > 1.2 and ratio[2.0] > 1.2, ratio
    assert out == MEASURED_DKG


@pytest.mark.xfail(strict=True, raises=AssertionError, reason="P8: DKG's busiest worker is 1.84x and 1.81x the "
                   "two-worker optimum at alpha 1.4 and 2.0 (1.15x at 1.0): its hot key is split 10/90 between the "
                   "learning-phase worker and the learned one, where the optimum halves it (REPRODUCTION.md)")
def test_p8_dkg_near_optimal_at_every_skew():
    """P8 read as a number: DKG's busiest worker within 20% of the best any key-splitting over at most
    two workers allows, at every skew."""
    out = p8_values()
    assert all(r["dkg"] <= 1.2 * r["two_workers"] for r in out.values()), out


@functools.lru_cache(maxsize=None)
def p8_values() -> dict:
    from skewbench.solver import best_whole_keys

    out = {}
    for a in ALPHAS:
        keys = zipf(a)
        counts = np.bincount(keys)
        counts = counts[counts > 0].astype(np.float64)
        best = best_whole_keys(counts, 10, time_limit=120.0, max_vars=2000, node_limit=200, gap_tol=1e-3)
        w = dkg_routed(keys, 10)
        pairs = np.unique(keys * 10 + w)
        dkg = np.bincount(w, minlength=10)
        kg, _ = route("kg", keys, 10, s=1)
        _, summ = route("dkg", keys, 10, s=1, learn=M // 10)
        out[a] = {"dkg": round(float(dkg.max() / M), 5), "kg": round(float(kg.max() / M), 5),
                  "optimum": round(float(best.value) / M, 5),
                  "two_workers": round(best_two_workers(counts, 10) / M, 6),
                  "dkg_workers_per_key": int(np.bincount(pairs // 10).max()), "hh": summ["hh_size"]}
    return out


MEASURED_DKG = {1.0: {'dkg': 0.11533, 'kg': 0.18057, 'optimum': 0.10179, 'two_workers': 0.1,
                      'dkg_workers_per_key': 2, 'hh': 5.0},
                1.4: {'dkg': 0.30172, 'kg': 0.37893, 'optimum': 0.32791, 'two_workers': 0.163955,
                      'dkg_workers_per_key': 2, 'hh': 7.0},
                2.0: {'dkg': 0.5501, 'kg': 0.63005, 'optimum': 0.60798, 'two_workers': 0.303989,
                      'dkg_workers_per_key': 2, 'hh': 5.0}}


# ============================================================================================
# what each costs: the engine's table (balance, replication, merge, cardinality) and P9

M_ENGINE = 200_000
TABLE = ("kg", "pkg", "wc", "flink", "kafka", "chwbl", "local-global", "salt", "dkg", "cm", "am", "cam")


@functools.lru_cache(maxsize=None)
def engine_table(tmp: str) -> dict:
    from skewbench.datasets.generators import generate
    from skewbench.grouping.engine import ReplayConfig, grid, replay

    out = {}
    for a in (1.0, 1.4):
        path = f"{tmp}/z{a}"
        generate(StreamSpec.zipf(a, K, M_ENGINE, seed=1), path, name=f"zipf-{a}")
        per_window = M_ENGINE // 100  # the engine's 100 windows: also the CM/AM/cAM and merge windows
        params = {"dkg": {"learn": [M_ENGINE // 50]}, "salt": {"merge_window": [per_window]},
                  **{x: {"window": [per_window // S]} for x in ("cm", "am", "cam")}}
        res = replay(path, grid(list(TABLE), [10], [S], [0], params), ReplayConfig(latency=False))
        for r in res.summary:
            st = json.loads(r["stats"])
            out[a, r["strategy"]] = {
                "imbalance": round(r["imbalance"], 5), "replication": round(r["replication"], 3),
                "merge_partials": round(r["merge_partials"], 1),
                "cardinality_imbalance": round(r["cardinality_imbalance"], 3),
                **({"delivered_imbalance": round(st["imbalance_delivered"], 5)} if "imbalance_delivered" in st else {}),
                **({"merge_messages_per_window": round(st["merge_per_window"], 1)} if "merge_per_window" in st else {}),
            }
    return out


def test_p9_what_each_strategy_costs(tmp_path_factory):
    """P9 (Katsipoulakis et al.: considering both tuple imbalance and aggregation cost gives up to
    an order of magnitude better performance): not reproducible here, since throughput is not
    modelled; what is measured is the trade-off those strategies make, for every practice
    strategy and the papers' baselines on the same streams (n = 10, s = 5, 100 windows): tuple
    imbalance against replication, the partial records a windowed aggregation must merge per
    window and the cardinality imbalance of the windows.  The cardinality-aware CM and AM hold the
    lowest cardinality imbalance; every key-splitting strategy pays merge records that key
    grouping (and Flink, Kafka, local-global) does not."""
    t = engine_table(str(tmp_path_factory.mktemp("practice")))
    record("P9 engine table n=10 s=5", table={f"z={a} {s}": v for (a, s), v in t.items()})
    for a in (1.0, 1.4):
        for name in ("kg", "flink", "kafka", "local-global"):
            assert t[a, name]["merge_partials"] == 0.0 and t[a, name]["replication"] == 1.0
        card = {name: t[a, name]["cardinality_imbalance"] for name in TABLE}
        assert min(card, key=card.get) in ("cm", "am"), card
    assert {f"z={a} {s}": v for (a, s), v in t.items()} == MEASURED_TABLE


MEASURED_TABLE = {'z=1.0 kg': {'imbalance': 0.0815, 'replication': 1.0, 'merge_partials': 0.0, 'cardinality_imbalance': 0.186},
                  'z=1.0 pkg': {'imbalance': 3e-05, 'replication': 1.56, 'merge_partials': 192.1, 'cardinality_imbalance': 0.441},
                  'z=1.0 wc': {'imbalance': 0.0, 'replication': 1.647, 'merge_partials': 256.2, 'cardinality_imbalance': 0.154},
                  'z=1.0 flink': {'imbalance': 0.14532, 'replication': 1.0, 'merge_partials': 0.0, 'cardinality_imbalance': 0.166},
                  'z=1.0 kafka': {'imbalance': 0.06177, 'replication': 1.0, 'merge_partials': 0.0, 'cardinality_imbalance': 0.16},
                  'z=1.0 chwbl': {'imbalance': 0.02499,
                                  'replication': 1.159,
                                  'merge_partials': 49.9,
                                  'cardinality_imbalance': 0.214},
                  'z=1.0 local-global': {'imbalance': 0.0815,
                                         'replication': 1.0,
                                         'merge_partials': 0.0,
                                         'cardinality_imbalance': 0.186,
                                         'delivered_imbalance': 0.0125},
                  'z=1.0 salt': {'imbalance': 0.04712,
                                 'replication': 1.022,
                                 'merge_partials': 33.4,
                                 'cardinality_imbalance': 0.19,
                                 'merge_messages_per_window': 53.3},
                  'z=1.0 dkg': {'imbalance': 0.01633,
                                'replication': 2.875,
                                'merge_partials': 373.7,
                                'cardinality_imbalance': 0.313},
                  'z=1.0 cm': {'imbalance': 0.04081, 'replication': 1.652, 'merge_partials': 223.7, 'cardinality_imbalance': 0.101},
                  'z=1.0 am': {'imbalance': 0.0523, 'replication': 1.654, 'merge_partials': 184.1, 'cardinality_imbalance': 0.073},
                  'z=1.0 cam': {'imbalance': 0.01597,
                                'replication': 1.624,
                                'merge_partials': 168.7,
                                'cardinality_imbalance': 0.345},
                  'z=1.4 kg': {'imbalance': 0.28022, 'replication': 1.0, 'merge_partials': 0.0, 'cardinality_imbalance': 0.351},
                  'z=1.4 pkg': {'imbalance': 0.07106, 'replication': 1.045, 'merge_partials': 30.0, 'cardinality_imbalance': 0.667},
                  'z=1.4 wc': {'imbalance': 0.0, 'replication': 1.295, 'merge_partials': 155.0, 'cardinality_imbalance': 0.293},
                  'z=1.4 flink': {'imbalance': 0.40656, 'replication': 1.0, 'merge_partials': 0.0, 'cardinality_imbalance': 0.308},
                  'z=1.4 kafka': {'imbalance': 0.25446, 'replication': 1.0, 'merge_partials': 0.0, 'cardinality_imbalance': 0.318},
                  'z=1.4 chwbl': {'imbalance': 0.025, 'replication': 1.202, 'merge_partials': 60.0, 'cardinality_imbalance': 0.392},
                  'z=1.4 local-global': {'imbalance': 0.28022,
                                         'replication': 1.0,
                                         'merge_partials': 0.0,
                                         'cardinality_imbalance': 0.351,
                                         'delivered_imbalance': 0.01987},
                  'z=1.4 salt': {'imbalance': 0.06815,
                                 'replication': 1.026,
                                 'merge_partials': 44.6,
                                 'cardinality_imbalance': 0.345,
                                 'merge_messages_per_window': 72.5},
                  'z=1.4 dkg': {'imbalance': 0.20309,
                                'replication': 1.832,
                                'merge_partials': 165.5,
                                'cardinality_imbalance': 0.814},
                  'z=1.4 cm': {'imbalance': 0.18474, 'replication': 1.308, 'merge_partials': 105.7, 'cardinality_imbalance': 0.203},
                  'z=1.4 am': {'imbalance': 0.23692, 'replication': 1.325, 'merge_partials': 86.9, 'cardinality_imbalance': 0.163},
                  'z=1.4 cam': {'imbalance': 0.21494, 'replication': 1.23, 'merge_partials': 62.8, 'cardinality_imbalance': 0.488}}


# ============================================================================================
# placements (practice-allocation.spec.md 5, P1) on the E5 graphs

PLACEMENTS = ("ras", "ras-prox", "ras-rr", "rstorm", "flink-pack", "flink-spread", "flink-fg", "k8s-least",
              "k8s-most", "heron-rr", "heron-ffd")


@functools.lru_cache(maxsize=None)
def e5_placements() -> dict:
    jobs, opt_gain, proven = e5_reference(0.5)
    out = {}
    for name in PLACEMENTS:
        strategy = registry.get("allocation", name)()
        gains, ok, codes = [], [], {}
        for i, job in enumerate(jobs):
            o = strategy.allocate(job, i)
            ev = evaluate(job, o.node)
            code = o.stats["outcome"]
            codes[code] = codes.get(code, 0) + 1
            gains.append(ev.gain)
            ok.append(code == "OK")
            if code == "OK":
                assert ev.gain <= opt_gain[i] * (1 + 1e-9) + 1e-9, (name, i)  # never above the optimum
        g, ok = np.array(gains), np.array(ok) & proven
        out[name] = {"mean_phi": round(float(g.mean()), 2), "ok": int(ok.sum()),
                     "omega_ok": round(float(g[ok].sum() / opt_gain[ok].sum()), 4) if ok.any() else None,
                     "outcomes": dict(sorted(codes.items())), "_gain": g, "_ok": ok}
    # the same graphs for every strategy: the ones Flink's three placements place whole (the same 112)
    common = out["flink-pack"]["_ok"]
    assert all(np.array_equal(out[f]["_ok"], common) for f in ("flink-spread", "flink-fg"))
    for name, r in out.items():
        g, both = r.pop("_gain"), r.pop("_ok") & common
        r["common"] = int(both.sum())
        r["omega_common"] = round(float(g[both].sum() / opt_gain[both].sum()), 4) if both.any() else None
    return out


def test_p1_ras_against_r_storm_and_the_round_robin_strategy():
    """P1 (Storm's docs: the enhanced RAS gives a better network metric than the original R-Storm
    strategy and a resource-respecting round robin), qualitative, on the E5 graphs (all 2000 end OK
    for the four): RAS keeps more on-node than RAS-RR, but less than R-Storm (and RAS-PROX more
    than both)."""
    t = e5_placements()
    record("P1 E5", **{k: t[k] for k in ("ras", "ras-prox", "ras-rr", "rstorm")})
    assert t["ras"]["mean_phi"] > t["ras-rr"]["mean_phi"]
    assert t["ras"]["mean_phi"] < t["rstorm"]["mean_phi"] < t["ras-prox"]["mean_phi"]


def test_placements_on_e5_against_the_optimum():
    """Every placement on the 2000 E5 graphs: outcomes, mean phi and Omega over the graphs it
    placed whole within capacity (an overloaded or partial allocation is not compared), with how many;
    and, so that every strategy's Omega is over the same graphs, Omega over the 112 graphs Flink's
    placements place (with how many of them the strategy placed too); no placement above the proven
    optimum on any graph."""
    t = e5_placements()
    record("placements E5", table=t)
    assert t["flink-pack"]["common"] == 112 and t["ras"]["common"] == 112
    assert t == MEASURED_E5


MEASURED_E5 = {
    'ras': {'mean_phi': 11.27, 'ok': 2000, 'omega_ok': 0.5272, 'outcomes': {'OK': 2000}, 'common': 112,
            'omega_common': 0.9282},
    'ras-prox': {'mean_phi': 14.0, 'ok': 2000, 'omega_ok': 0.6546, 'outcomes': {'OK': 2000}, 'common': 112,
                 'omega_common': 0.8682},
    'ras-rr': {'mean_phi': 6.69, 'ok': 2000, 'omega_ok': 0.3127, 'outcomes': {'OK': 2000}, 'common': 112,
               'omega_common': 0.4778},
    'rstorm': {'mean_phi': 13.63, 'ok': 2000, 'omega_ok': 0.6374, 'outcomes': {'OK': 2000}, 'common': 112,
               'omega_common': 0.9319},
    'flink-pack': {'mean_phi': 20.4, 'ok': 112, 'omega_ok': 0.8909,
                   'outcomes': {'FAIL-SLOTS': 554, 'OK': 112, 'OK-OVERLOADED': 1334}, 'common': 112,
                   'omega_common': 0.8909},
    'flink-spread': {'mean_phi': 20.4, 'ok': 112, 'omega_ok': 0.8909,
                     'outcomes': {'FAIL-SLOTS': 554, 'OK': 112, 'OK-OVERLOADED': 1334}, 'common': 112,
                     'omega_common': 0.8909},
    'flink-fg': {'mean_phi': 0.28, 'ok': 112, 'omega_ok': 0.8909, 'outcomes': {'FAIL-SLOTS': 1888, 'OK': 112},
                 'common': 112, 'omega_common': 0.8909},
    'k8s-least': {'mean_phi': 5.55, 'ok': 1986, 'omega_ok': 0.2604, 'outcomes': {'FAIL-CAPACITY': 14, 'OK': 1986},
                  'common': 112, 'omega_common': 0.5313},
    'k8s-most': {'mean_phi': 10.71, 'ok': 2000, 'omega_ok': 0.501, 'outcomes': {'OK': 2000}, 'common': 112,
                 'omega_common': 0.3791},
    'heron-rr': {'mean_phi': 11.51, 'ok': 0, 'omega_ok': None, 'outcomes': {'OK-OVERLOADED': 2000}, 'common': 0,
                 'omega_common': None},
    'heron-ffd': {'mean_phi': 8.06, 'ok': 2000, 'omega_ok': 0.377, 'outcomes': {'OK': 2000}, 'common': 112,
                  'omega_common': 0.4327}}
