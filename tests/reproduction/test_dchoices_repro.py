"""Reproduction checks for D-Choices / W-Choices (Nasir et al., ICDE 2016).

Targets are those of ``/work/shared/papers/dchoices.spec.md`` section 5 ("spec"): the text claims
R1-R17 (5.1), the derived reference tables (5.2) and the pilot values (5.3).  The "Kind" of a
target decides the assertion: **T**/**D** exact to the printed precision, **A** within the
tolerance the wording allows, **Q** as an ordering or trend.  Every number compared with a
paper/spec value is computed here (from ``zipf_pmf``, ``oracle_d``, the replay engine or the
strategies); a target that cannot be met is an ``xfail(strict=True)`` carrying the measured
value, never a weakened assertion.

Fast subset (``pytest tests/reproduction/test_dchoices_repro.py``, ~75 s on 2 cores):
the 5.2 tables, R1, R4 (printed p1), R6, R17, the issue's headline (Zipf 1.4, |K|=1e4, m=1e6,
s=5, n in {10, 50, 100}, 10 hash seeds; engine replay for D-C on all seeds and for KG/PKG/W-C on
three, direct strategy calls for the other seeds, cross-checked against the engine), a small
R12 ordering, R10 and a small R9.  ``slow`` tests (``make reproduce`` /
``SKEWBENCH_REPRODUCE=full``) add the remaining engine seeds, R5-R8 with sampled counts, the R9
grid, R11 (Min-d), the R12 grid, R2/R3/R4/R13/R14 on the WP/TW/CT surrogates of spec 4.1 and
on the real Slashdot sample, the 5.3 pilot spot checks, the R15/R16 queueing proxy and the A9
refresh check.

Every test prints its measured values as ``REPRO {json}`` lines (visible with ``-s`` or
``-rP``); with ``SKEWBENCH_REPRO_LOG=/some/file.jsonl`` they are also appended to that file.
``REPRODUCTION.md`` (D-Choices section) records the numbers of a full run.

Scale used here (documented deviations from the paper): synthetic streams have ``m = 1e6``
(paper ``1e7``; balanced schemes' normalised imbalance is then ~10x higher, spec 5.3), the
surrogates ``m = 2e6`` (WP, TW) and 690k (CT, the paper's own size); the noise floor of a
balanced scheme is a few messages per source, i.e. ``~s/m = 5e-6``.
"""

from __future__ import annotations

import functools
import json
import math
import os
import statistics
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

from skewbench.datasets.contract import open_dataset
from skewbench.datasets.generators import Plan, StreamSpec, generate, zipf_pmf
from skewbench import registry
from skewbench.grouping.base import Batch, hash_choice_py, hash_seeds
from skewbench.grouping.strategies.dchoices import head_probabilities, oracle_d
from skewbench.grouping.engine import ReplayConfig, grid, replay

pytestmark = pytest.mark.reproduction

K = 10_000  # |K| of the synthetic streams (spec 4.1 default)
M = 1_000_000  # stream length used here (paper: 1e7; see the module docstring)
S = 5  # sources
STREAM_SEED = 1
SEEDS = list(range(10))  # hash seeds
ENGINE_SEEDS_FAST = [0]  # KG/PKG/W-C seeds replayed by the engine in the fast subset
EPS = 1e-4
NOISE = S / M  # a balanced scheme's noise floor at M: about one message per source
ZS = [round(0.1 * i, 1) for i in range(1, 21)]


# --------------------------------------------------------------------------------------------
# helpers


def report(target: str, **values) -> None:
    """Print one ``REPRO`` line (and append it to $SKEWBENCH_REPRO_LOG when set)."""
    line = json.dumps({"target": target, **values}, default=_plain, sort_keys=False)
    print("REPRO " + line)
    path = os.environ.get("SKEWBENCH_REPRO_LOG")
    if path:
        with open(path, "a") as fh:
            fh.write(line + "\n")


def _plain(x):
    if isinstance(x, (np.integer,)):
        return int(x)
    if isinstance(x, (np.floating,)):
        return float(x)
    if isinstance(x, np.ndarray):
        return x.tolist()
    if isinstance(x, tuple):
        return list(x)
    return str(x)


def sig(x: float, digits: int = 3) -> float:
    """Round to significant digits (for compact reports)."""
    if x == 0 or not math.isfinite(x):
        return float(x)
    return float(f"{x:.{digits}g}")


def imbalance(counts: np.ndarray) -> float:
    """``I = max_w c_w / m - 1/n`` (spec 1.2, 3.1)."""
    counts = np.asarray(counts)
    return float(counts.max() / counts.sum() - 1.0 / len(counts))


@functools.lru_cache(maxsize=None)
def p1_exact(z: float, n_keys: int = K) -> float:
    return float(pmf(n_keys, z)[0])


@functools.lru_cache(maxsize=64)
def pmf(n_keys: int, z: float) -> np.ndarray:
    """``zipf_pmf`` (cached, read-only)."""
    p = zipf_pmf(n_keys, z)
    p.setflags(write=False)
    return p


def harmonic(n_keys: int, z: float, m_exact: int = 1000) -> float:
    """``sum_{x=1..N} x^-z``: exact up to 2e6 terms, Euler-Maclaurin beyond (error < 1e-15 rel)."""
    if n_keys <= 2_000_000:
        return math.fsum(np.arange(1, n_keys + 1, dtype=np.float64) ** (-z))
    a, n = m_exact, n_keys
    head = math.fsum(np.arange(1, a, dtype=np.float64) ** (-z))
    integral = math.log(n / a) if abs(z - 1) < 1e-12 else (n ** (1 - z) - a ** (1 - z)) / (1 - z)
    return (head + integral + (a ** -z + n ** -z) / 2 + z / 12 * (a ** (-z - 1) - n ** (-z - 1))
            - z * (z + 1) * (z + 2) / 720 * (a ** (-z - 3) - n ** (-z - 3)))


def zipf_exponent_for_p1(p1: float, n_keys: int) -> float:
    """The Zipf exponent whose finite distribution over ``n_keys`` has top probability ``p1``."""
    lo, hi = 0.0, 4.0
    for _ in range(60):
        mid = (lo + hi) / 2
        if 1.0 / harmonic(n_keys, mid) < p1:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


@functools.lru_cache(maxsize=6)
def zipf_keys(z: float, n_keys: int = K, m: int = M, seed: int = STREAM_SEED) -> np.ndarray:
    """The key column of ``generate(StreamSpec.zipf(z, n_keys, m, seed))``, built in memory
    (the same blocks the generator writes)."""
    plan = Plan(StreamSpec.zipf(z, n_keys, m, seed))
    return np.concatenate([plan.block(b)["key"] for b in range(plan.n_blocks)])


def spec_keys(spec: StreamSpec) -> np.ndarray:
    plan = Plan(spec)
    return np.concatenate([plan.block(b)["key"] for b in range(plan.n_blocks)])


@functools.lru_cache(maxsize=4)
def dataset_keys(path: str) -> np.ndarray:
    ds = open_dataset(path)
    return np.concatenate([b["key"] for b in ds.iter_batches(["key"], 1 << 20)])


def route(name: str, keys: np.ndarray, n: int, seed: int = 0, sources: int = S, **params):
    """Route a whole in-memory stream through a fresh strategy; returns (workers, strategy)."""
    strat = registry.get("grouping", name)(n, sources, seed, **params)
    m = len(keys)
    batch = Batch(np.arange(m, dtype=np.int64), np.ascontiguousarray(keys, dtype=np.int64),
                  np.zeros(m), np.ones(m))
    return strat.route(batch), strat


def route_imbalance(name: str, keys: np.ndarray, n: int, seed: int = 0, **params) -> float:
    w, _ = route(name, keys, n, seed, **params)
    return imbalance(np.bincount(w, minlength=n))


def rows_by(rows, *fields):
    return {tuple(r[f] for f in fields): r for r in rows}


def stats_of(row) -> dict:
    return json.loads(row["stats"])


def mean(xs) -> float:
    return float(np.mean(list(xs)))


def median(xs) -> float:
    return float(statistics.median(list(xs)))


def full_run() -> bool:
    return os.environ.get("SKEWBENCH_REPRODUCE") == "full" or os.environ.get("SKEWBENCH_SLOW") == "1"


@pytest.fixture(scope="module")
def zipf_dataset(tmp_path_factory):
    """``get(z, n_keys, m, seed)``: a generated Zipf dataset on disk (cached per module)."""
    root = tmp_path_factory.mktemp("dchoices-repro")
    cache: dict = {}

    def get(z: float, n_keys: int = K, m: int = M, seed: int = STREAM_SEED) -> Path:
        key = (z, n_keys, m, seed)
        if key not in cache:
            path = root / f"zipf-z{z}-k{n_keys}-m{m}-s{seed}"
            generate(StreamSpec.zipf(z, n_keys, m, seed), path)
            cache[key] = path
        return cache[key]

    return get


# --------------------------------------------------------------------------------------------
# 5.2 derived tables (kind D: exact to the printed precision)

P1_PERCENT_1E4 = [0.02, 0.05, 0.11, 0.24, 0.50, 1.02, 2.00, 3.69, 6.37, 10.22, 15.14, 20.84,
                  26.87, 32.86, 38.57, 43.88, 48.73, 53.15, 57.16, 60.80]

BREAKDOWN = {  # |K| -> smallest z with p1 > 2/n, for n = 5, 10, 20, 50, 100
    10_000: [1.6, 1.2, 1.0, 0.9, 0.8],
    100_000: [1.6, 1.3, 1.1, 0.9, 0.8],
    1_000_000: [1.6, 1.3, 1.1, 1.0, 0.9],
}
NS = [5, 10, 20, 50, 100]

PKG_BOUND_ZS = [0.8, 1.0, 1.2, 1.4, 1.6, 1.8, 2.0]
PKG_BOUND = {
    5: [0, 0, 0, 0, 0.019, 0.066, 0.104],
    10: [0, 0, 0.004, 0.064, 0.119, 0.166, 0.204],
    20: [0, 0.001, 0.054, 0.114, 0.169, 0.216, 0.254],
    50: [0, 0.031, 0.084, 0.144, 0.199, 0.246, 0.284],
    100: [0.008, 0.041, 0.094, 0.154, 0.209, 0.256, 0.294],
}

HEAD_ZS = [0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.1, 1.2, 1.4, 1.6, 1.8, 2.0]
HEAD_SIZE = {
    (50, "2/n"): [0, 0, 0, 0, 1, 2, 3, 3, 4, 4, 4, 3],
    (50, "1/(5n)"): [1, 4, 9, 16, 21, 25, 27, 26, 23, 18, 15, 12],
    (100, "2/n"): [0, 0, 0, 2, 3, 5, 6, 7, 7, 6, 6, 5],
    (100, "1/(5n)"): [6, 15, 26, 38, 46, 51, 51, 48, 38, 29, 22, 17],
}

ORACLE_ZS = [0.4, 0.6, 0.8, 0.9, 1.0, 1.1, 1.2, 1.3, 1.4, 1.5, 1.6, 1.7, 1.8, 1.9, 2.0]
ORACLE_D = {
    5: ["-", "-", "-", 2, 2, 2, 2, 4, "W", "W", "W", "W", "W", "W", "W"],
    10: ["-", "-", 2, 2, 2, 2, 3, 7, 8, 9, "W", "W", "W", "W", "W"],
    20: ["-", 2, 2, 2, 3, 4, 7, 9, 10, 12, 13, 15, 17, 19, "W"],
    50: ["-", 2, 2, 4, 6, 9, 13, 18, 22, 27, 31, 36, 40, 45, 49],
    100: [2, 2, 4, 7, 12, 18, 25, 34, 43, 52, 61, 69, 78, 87, 95],
}


def oracle_cell(z: float, n: int, mode: str = "spec"):
    """The oracle table's entry: '-' for an empty head, 'W' for d = n, else d."""
    p = pmf(K, z)
    if len(head_probabilities(p, 1.0 / (5 * n))) == 0:
        return "-"
    d = oracle_d(p, n, mode=mode)
    return "W" if d >= n else d


def test_5_2_p1_table_k1e4():
    """5.2 / R1 (D): p1 of the finite Zipf, |K| = 1e4, z = 0.1..2.0, in % to two decimals."""
    ours = [round(100 * p1_exact(z), 2) for z in ZS]
    report("5.2 p1 |K|=1e4", ours=ours)
    assert ours == P1_PERCENT_1E4


def test_5_2_p1_larger_key_spaces():
    """5.2 (D): |K| = 1e5 / 1e6 are lower at small z (z = 1.0: 8.27 / 6.95 %) and "identical
    to two decimals" for z >= 1.6.  The last claim holds for p1 as a fraction (0.44, 0.49, ...);
    in percent the values differ by up to 0.12 points at z = 1.6 (reported)."""
    at1 = [round(100 * p1_exact(1.0, k), 2) for k in (100_000, 1_000_000)]
    hi = {z: [p1_exact(z, k) for k in (10_000, 100_000, 1_000_000)] for z in (1.6, 1.7, 1.8, 1.9, 2.0)}
    spread_pct = {z: round(100 * (max(v) - min(v)), 3) for z, v in hi.items()}
    report("5.2 p1 |K|=1e5/1e6", z1_percent=at1, spread_percent_points_z_ge_1_6=spread_pct)
    assert at1 == [8.27, 6.95]
    for z in ZS:
        assert p1_exact(z, 100_000) <= p1_exact(z, 10_000) and p1_exact(z, 1_000_000) <= p1_exact(z, 100_000)
    for z, v in hi.items():
        assert len({round(x, 2) for x in v}) == 1, (z, v)
    assert {z: round(v[0], 2) for z, v in hi.items()} == {1.6: 0.44, 1.7: 0.49, 1.8: 0.53, 1.9: 0.57, 2.0: 0.61}
    assert [round(100 * x, 2) for x in hi[1.6]] == [43.88, 43.78, 43.76]
    assert round(spread_pct[1.6], 2) == 0.12 and max(spread_pct.values()) == spread_pct[1.6]


def test_5_2_pkg_breakdown_table():
    """5.2 (D): smallest z (0.1 grid) with p1 > 2/n, for |K| in {1e4, 1e5, 1e6}."""
    ours = {k: [next(z for z in ZS if p1_exact(z, k) > 2.0 / n) for n in NS] for k in BREAKDOWN}
    report("5.2 PKG break-down", ours={str(k): v for k, v in ours.items()})
    assert ours == BREAKDOWN


def test_5_2_pkg_lower_bound_table():
    """5.2 (D): PKG bound max(0, p1/2 - 1/n) for |K| = 1e4, three decimals."""
    ours = {n: [round(max(0.0, p1_exact(z) / 2 - 1.0 / n), 3) for z in PKG_BOUND_ZS] for n in NS}
    report("5.2 PKG lower bound", ours=ours)
    for n in NS:
        assert ours[n] == pytest.approx(PKG_BOUND[n], abs=1e-12), n


def test_5_2_head_size_table_r5():
    """5.2 / R5 (D, Q): |H| = #{k : p_k >= theta} from exact probabilities, |K| = 1e4; the head
    is "a handful to a few tens" and at most 5n on the whole z grid."""
    ours = {}
    for n in (50, 100):
        for label, theta in (("2/n", 2.0 / n), ("1/(5n)", 1.0 / (5 * n))):
            ours[(n, label)] = [int(np.sum(pmf(K, z) >= theta)) for z in HEAD_ZS]
    full = {n: max(int(np.sum(pmf(K, z) >= 1.0 / (5 * n))) for z in ZS) for n in (50, 100)}
    report("5.2 head size", ours={f"n={n}, theta={t}": v for (n, t), v in ours.items()},
           max_over_z_theta_1_5n=full)
    assert ours == HEAD_SIZE
    assert full == {50: 27, 100: 51}  # "a few tens", <= 5n


def test_5_2_oracle_d_table_r6():
    """5.2 / R6 (D, Q): oracle FindOptimalChoices table (exact integers, spec 7.17); d < n for
    n = 50, 100 at every z <= 2.0, while smaller clusters reach W at high skew; and the authors'
    code variant is equal or larger by up to about 6, with the printed examples."""
    ours = {n: [oracle_cell(z, n) for z in ORACLE_ZS] for n in NS}
    authors = {n: [oracle_cell(z, n, "authors") for z in ORACLE_ZS] for n in NS}
    report("5.2 oracle d", ours=ours, authors_variant=authors)
    assert ours == ORACLE_D
    # R6 on the full 0.1 grid
    assert [max(oracle_d(pmf(K, z), n) for z in ZS) for n in (50, 100)] == [49, 95]
    assert ours[5][-1] == "W" and ours[10][-1] == "W" and ours[20][-1] == "W"
    # the authors' variant (parenthetical under the table)
    num = lambda c, n: 0 if c == "-" else (n if c == "W" else c)  # noqa: E731
    diffs = [num(a, n) - num(o, n) for n in NS for a, o in zip(authors[n], ours[n])]
    assert min(diffs) == 0 and max(diffs) == 5
    assert authors[20][ORACLE_ZS.index(1.2)] == 11 and authors[100][-1] == 97
    assert all(c == "W" for z, c in zip(ORACLE_ZS, authors[10]) if z >= 1.3)
    assert all(c == "W" for z, c in zip(ORACLE_ZS, authors[20]) if z >= 1.7)


def analytic_memory(f: np.ndarray, n: int, d: int, theta: float | None = None) -> dict:
    """The memory formulas of spec 2.10 on (real or integer) counts ``f``; head = f/m >= theta."""
    theta = 1.0 / (5 * n) if theta is None else theta
    f = np.asarray(f, dtype=np.float64)
    head = f >= theta * f.sum()
    mem_pkg = float(np.minimum(f, 2).sum())
    mem_sg = float(np.minimum(f, n).sum())
    tail2 = float(np.minimum(f[~head], 2).sum())
    mem_dc = float(np.minimum(f[head], d).sum()) + tail2
    mem_wc = float(np.minimum(f[head], n).sum()) + tail2
    return {"wc_vs_pkg": mem_wc / mem_pkg - 1, "dc_vs_pkg": mem_dc / mem_pkg - 1,
            "wc_share_sg": mem_wc / mem_sg, "dc_share_sg": mem_dc / mem_sg, "head": int(head.sum())}


def memory_curves(counts_for_z) -> dict:
    out = {}
    for n in (50, 100):
        for z in ZS:
            d = oracle_d(pmf(K, z), n)
            out[(n, z)] = analytic_memory(counts_for_z(z), n, d)
    return out


def test_5_2_memory_ratios_exact_counts():
    """5.2 analytic memory ratios (D) with f_k = 1e7 p_k and oracle d; the printed values have
    two digits, so each is checked to +-0.005 (to +-0.01 where the text says "~")."""
    mem = memory_curves(lambda z: 1e7 * pmf(K, z))
    g = lambda n, z, k: mem[(n, z)][k]  # noqa: E731
    report("5.2 memory ratios (f=1e7 p)", **{
        f"n{n}_{k}": {str(z): sig(g(n, z, k), 3) for z in ZS}
        for n in (50, 100) for k in ("wc_vs_pkg", "dc_vs_pkg", "wc_share_sg", "dc_share_sg")})
    # n = 100
    assert g(100, 1.0, "wc_vs_pkg") == pytest.approx(0.25, abs=0.005)
    assert g(100, 1.1, "wc_vs_pkg") == pytest.approx(0.25, abs=0.005)
    assert max(g(100, z, "wc_vs_pkg") for z in ZS if z <= 1.5) == pytest.approx(0.25, abs=0.005)
    assert g(100, 1.6, "wc_vs_pkg") == pytest.approx(0.14, abs=0.01)
    assert min(g(100, z, "wc_vs_pkg") for z in ZS if 1.2 <= z <= 2.0) == pytest.approx(0.14, abs=0.01)
    assert g(100, 2.0, "wc_vs_pkg") == pytest.approx(0.26, abs=0.005)
    assert max(g(100, z, "dc_vs_pkg") for z in ZS if z <= 1.0) < 0.03
    assert g(100, 1.2, "dc_vs_pkg") == pytest.approx(0.055, abs=0.0025)
    assert g(100, 1.6, "dc_vs_pkg") == pytest.approx(0.086, abs=0.0025)
    assert g(100, 2.0, "dc_vs_pkg") == pytest.approx(0.25, abs=0.005)
    assert g(100, 0.1, "wc_share_sg") == pytest.approx(2 / 100, abs=0.0005)
    assert max(g(100, z, "wc_share_sg") for z in ZS) == pytest.approx(0.16, abs=0.01)
    # n = 50
    peak_z = max((z for z in ZS if z <= 1.5), key=lambda z: g(50, z, "wc_vs_pkg"))
    assert peak_z == 1.1 and g(50, 1.1, "wc_vs_pkg") == pytest.approx(0.065, abs=0.0025)
    assert g(50, 2.0, "wc_vs_pkg") == pytest.approx(0.09, abs=0.005)
    assert max(g(50, z, "dc_vs_pkg") for z in ZS if z <= 1.6) <= 0.0265
    assert g(50, 2.0, "dc_vs_pkg") == pytest.approx(0.09, abs=0.005)
    assert g(50, 0.1, "wc_share_sg") == pytest.approx(2 / 50, abs=0.0005)
    assert g(50, 1.9, "wc_share_sg") == pytest.approx(0.20, abs=0.005)
    assert g(50, 2.0, "wc_share_sg") == pytest.approx(0.20, abs=0.005)
    # our values as REPRODUCTION.md prints them (three digits)
    assert [sig(g(100, z, "wc_vs_pkg"), 3) for z in (1.0, 1.1, 1.6, 2.0)] == [0.25, 0.25, 0.143, 0.262]
    assert [sig(g(100, z, "dc_vs_pkg"), 3) for z in (1.2, 1.6, 2.0)] == [0.0552, 0.086, 0.248]
    assert sig(max(g(100, z, "dc_vs_pkg") for z in ZS if z <= 1.0), 2) == 0.026
    assert sig(max(g(100, z, "wc_share_sg") for z in ZS), 3) == 0.165
    assert [sig(g(50, z, "wc_vs_pkg"), 3) for z in (1.1, 2.0)] == [0.0648, 0.0905]
    assert [sig(max(g(50, z, "dc_vs_pkg") for z in ZS if z <= 1.6), 3), sig(g(50, 2.0, "dc_vs_pkg"), 3)] == [0.0263, 0.0886]
    assert [sig(g(50, z, "wc_share_sg"), 3) for z in (1.9, 2.0)] == [0.204, 0.203]


# --------------------------------------------------------------------------------------------
# R1, R4 (printed p1 values), 4.1 surrogate exponents, R17


def test_r1_zipf_2_top_key():
    """R1 (A + D): at z = 2.0 the top key holds nearly 60% (D: 0.608 at |K| = 1e4), so PKG
    cannot be balanced beyond 3 workers (2/p1 = 3.29: p1 > 2/n for every n >= 4)."""
    p1 = p1_exact(2.0)
    report("R1", p1=round(p1, 4), two_over_p1=round(2 / p1, 3),
           largest_n_with_p1_le_2_over_n=max(n for n in range(1, 50) if p1 <= 2 / n))
    assert round(p1, 3) == 0.608
    assert round(2 / p1, 2) == 3.29
    assert 0.55 <= p1 < 0.65  # "nearly 60%"
    assert max(n for n in range(1, 50) if p1 <= 2 / n) == 3


REAL = {"WP": (0.0932, 2_900_000), "TW": (0.0267, 31_000_000), "CT": (0.0329, 2_900)}


def test_r4_real_dataset_bounds_and_surrogate_exponents():
    """R4 (D) from Table I's p1: WP 0.0266 (n=50), 0.0366 (n=100), 0 for n <= 20 (2/n >= p1
    up to n = 21); TW 0.0034 (n=100, zero below n=75); CT 0.0064 (n=100, zero below n=61).
    4.1 [derived]: finite Zipf with the same |K| has that p1 at z ~ 1.055 / 0.921 / 0.719."""
    bound = lambda p1, n: max(0.0, p1 / 2 - 1.0 / n)  # noqa: E731
    wp, tw, ct = REAL["WP"][0], REAL["TW"][0], REAL["CT"][0]
    first_positive = {k: min(n for n in range(1, 1000) if bound(p, n) > 0) for k, (p, _) in REAL.items()}
    zs = {k: zipf_exponent_for_p1(p, nk) for k, (p, nk) in REAL.items()}
    # Euler-Maclaurin sanity against the exact sum where both are cheap
    em_check = harmonic(2_000_001, 1.055) / math.fsum(np.arange(1, 2_000_002, dtype=np.float64) ** -1.055) - 1
    report("R4 real bounds", wp_n50=round(bound(wp, 50), 4), wp_n100=round(bound(wp, 100), 4),
           tw_n100=round(bound(tw, 100), 4), ct_n100=round(bound(ct, 100), 5),
           first_n_with_positive_bound=first_positive, largest_n_with_2_over_n_ge_p1_wp=max(
               n for n in range(1, 100) if 2 / n >= wp),
           surrogate_z={k: round(v, 4) for k, v in zs.items()}, em_rel_err=em_check)
    assert round(bound(wp, 50), 4) == 0.0266 and round(bound(wp, 100), 4) == 0.0366
    assert all(bound(wp, n) == 0 for n in (5, 10, 20))
    assert max(n for n in range(1, 100) if 2 / n >= wp) == 21
    assert bound(tw, 100) == pytest.approx(0.0034, abs=5e-5) and first_positive["TW"] == 75
    assert bound(ct, 100) == pytest.approx(0.0064, abs=5e-5 + 1e-12) and first_positive["CT"] == 61
    assert abs(em_check) <= 2.3e-16
    assert {k: round(v, 4) for k, v in zs.items()} == {"WP": 1.0552, "TW": 0.9208, "CT": 0.7193}


def test_r17_source_state_is_identical_for_dc_wc_rr():
    """R17 (T): at the sources D-C, W-C and RR keep s*n load counters plus one SpaceSaving
    sketch of constant capacity per source; identical for the three (PKG has no sketch)."""
    n, s = 50, S
    keys = zipf_keys(1.4, K, 200_000)
    shapes = {}
    for name in ("dc", "wc", "rr"):
        _, st = route(name, keys, n, 0, sources=s)
        cap = st.params["capacity"]
        sizes = [len(st.sketch(j)) for j in range(s)]
        shapes[name] = {"load_counters": list(st.local_loads().shape), "capacity": cap, "sketch_sizes": sizes}
    _, pkg = route("pkg", keys, n, 0, sources=s)
    report("R17", **shapes, pkg_load_counters=list(pkg.local_loads().shape), pkg_has_sketch=hasattr(pkg, "sketch"))
    for name, sh in shapes.items():
        assert sh["load_counters"] == [s, n]
        assert sh["capacity"] == shapes["dc"]["capacity"] == max(100, math.ceil(4 * 5 * n))
        assert max(sh["sketch_sizes"]) <= sh["capacity"]
    assert not hasattr(pkg, "sketch")


# --------------------------------------------------------------------------------------------
# the headline: Zipf 1.4, |K| = 1e4, m = 1e6, s = 5, n in {10, 50, 100}

HEAD_NS = [10, 50, 100]
HEAD_Z = 1.4


@pytest.fixture(scope="module")
def headline(zipf_dataset):
    """Imbalance per (strategy, n, seed) on one generated 1e6-tuple stream.

    Engine replay (what users run) for D-C on all 10 seeds and for KG/PKG/W-C on seed 0 (the
    engine costs ~0.5-1 s per 1e6-tuple cell); direct strategy calls on the same keys for the
    remaining KG/PKG/W-C seeds (and, as a cross-check, for the engine's seed 0 of all four
    strategies: both paths must agree exactly).  The slow test adds the engine for the rest."""
    path = zipf_dataset(HEAD_Z)
    keys = dataset_keys(str(path))
    cells = grid(["kg", "pkg", "wc"], HEAD_NS, [S], ENGINE_SEEDS_FAST) + grid(["dc"], HEAD_NS, [S], SEEDS)
    res = replay(path, cells, ReplayConfig())
    rows = rows_by(res.summary, "strategy", "workers", "seed")
    imb, src = {}, {}
    for (st, n, seed), r in rows.items():
        imb[(st, n, seed)] = r["imbalance"]
        src[(st, n, seed)] = "engine"
    direct = {}
    for n in HEAD_NS:
        direct[("dc", n, 0)] = route_imbalance("dc", keys, n, 0)
    for st in ("kg", "pkg", "wc"):
        for n in HEAD_NS:
            for seed in SEEDS:
                direct[(st, n, seed)] = route_imbalance(st, keys, n, seed)
                if (st, n, seed) not in imb:
                    imb[(st, n, seed)] = direct[(st, n, seed)]
                    src[(st, n, seed)] = "direct"
    counts = np.bincount(keys, minlength=K)
    return {"imb": imb, "src": src, "direct": direct, "rows": rows, "path": path, "keys": keys,
            "p1_hat": float(counts.max() / len(keys)), "p1": p1_exact(HEAD_Z),
            "top_key": int(np.argmax(counts)), "seconds": res.seconds}


def test_headline_engine_and_direct_routing_agree(headline):
    """The fast path used for extra seeds (direct strategy calls) gives exactly the engine's
    imbalance on the engine's seeds."""
    mism, compared = [], 0
    for (st, n, seed), src in headline["src"].items():
        if src == "engine" and (st, n, seed) in headline["direct"]:
            compared += 1
            if headline["direct"][(st, n, seed)] != headline["imb"][(st, n, seed)]:
                mism.append((st, n, seed, headline["direct"][(st, n, seed)], headline["imb"][(st, n, seed)]))
    assert compared == 4 * len(HEAD_NS)
    report("headline engine==direct", compared=compared,
           mismatches=mism, engine_seconds=round(headline["seconds"], 1))
    assert not mism


def test_headline_kg_and_pkg_lower_bounds(headline):
    """Headline (spec 7.3/7.13): KG >= p^1 - 1/n and PKG >= p^1/2 - 1/n for every hash seed,
    p^1 the stream's empirical top-key share.  Margins against the exact p1 are reported (the
    sample's p^1 may be below p1 by sampling noise; spec 7.13 allows it) and checked to the
    precision REPRODUCTION.md prints.  For n >= 50 PKG sits on its bound (within 0.2%)."""
    imb, ph, p1 = headline["imb"], headline["p1_hat"], headline["p1"]
    out = {}
    for n in HEAD_NS:
        kg = [imb[("kg", n, s)] for s in SEEDS]
        pkg = [imb[("pkg", n, s)] for s in SEEDS]
        out[n] = {
            "kg_min": sig(min(kg), 4), "kg_bound_hat": sig(ph - 1 / n, 4),
            "kg_margin_hat_min": sig(min(kg) - (ph - 1 / n), 3), "kg_margin_exact_min": sig(min(kg) - (p1 - 1 / n), 3),
            "pkg_min": sig(min(pkg), 4), "pkg_max": sig(max(pkg), 4), "pkg_bound_hat": sig(ph / 2 - 1 / n, 4),
            "pkg_margin_hat_min": sig(min(pkg) - (ph / 2 - 1 / n), 3),
            "pkg_margin_exact_min": sig(min(pkg) - (p1 / 2 - 1 / n), 3),
            "pkg_rel_above_bound_max": sig(max(pkg) / (ph / 2 - 1 / n) - 1, 3),
        }
    report("headline KG/PKG bounds", p1_hat=ph, p1_exact=p1, seeds=len(SEEDS), per_n=out)
    for n in HEAD_NS:
        for s in SEEDS:
            assert imb[("kg", n, s)] >= ph - 1 / n - 1e-12, (n, s)
            assert imb[("pkg", n, s)] >= ph / 2 - 1 / n - 1e-12, (n, s)
            if n >= 50:
                assert imb[("pkg", n, s)] <= 1.002 * (ph / 2 - 1 / n), (n, s)
    assert ph == 0.32791 and round(p1, 5) == 0.32865
    assert round((p1 - ph) / math.sqrt(p1 * (1 - p1) / M), 1) == 1.6  # sigmas below p1
    margins = {n: (min(imb[("kg", n, s)] for s in SEEDS) - (ph - 1 / n),
                   min(imb[("pkg", n, s)] for s in SEEDS) - (ph / 2 - 1 / n)) for n in HEAD_NS}
    assert {n: (sig(a, 2), sig(b, 2)) for n, (a, b) in margins.items()} == {
        10: (0.022, 1.5e-3), 50: (1.9e-3, 3.8e-5), 100: (6.9e-4, 3e-6)}
    exact = {n: (a - (p1 - ph), b - (p1 - ph) / 2) for n, (a, b) in margins.items()}
    assert exact[10][0] > 0 and exact[10][1] > 0 and exact[50][0] > 0
    assert (sig(exact[100][0], 2), sig(exact[50][1], 2), sig(exact[100][1], 2)) == (-5.1e-5, -3.3e-4, -3.7e-4)


def test_headline_wc_below_1e_3(headline):
    """Headline / R3-style (T): W-C imbalance < 1e-3 for every seed at every n."""
    imb = headline["imb"]
    worst = {n: max(imb[("wc", n, s)] for s in SEEDS) for n in HEAD_NS}
    report("headline W-C", worst=worst, median={n: median(imb[("wc", n, s)] for s in SEEDS) for n in HEAD_NS})
    for n in HEAD_NS:
        for s in SEEDS:
            assert imb[("wc", n, s)] < 1e-3, (n, s)
    assert round(max(worst.values()) * M) == 4  # worst 4e-6 (four messages)


def test_headline_dc_median_below_1e_3(headline):
    """Headline / R3-style: D-C median imbalance < 1e-3 over 10 seeds at every n (engine);
    seeds above 1e-3 and above s*eps = 5e-4 are counted and reported (spec 1.3: D-C's worst
    case approaches s*eps).  The bad seeds at n = 50 are explained by the distinct workers among
    key 1's d = 22 hashed candidates: I >= p^1/b - 1/n."""
    imb, rows = headline["imb"], headline["rows"]
    out = {}
    for n in HEAD_NS:
        v = [imb[("dc", n, s)] for s in SEEDS]
        d = [stats_of(rows[("dc", n, s)])["d_final"] for s in SEEDS]
        out[n] = {"median": sig(median(v)), "max": sig(max(v)), "above_1e-3": sum(x >= 1e-3 for x in v),
                  "above_5e-4": sum(x > 5e-4 for x in v), "values": [sig(x, 2) for x in v],
                  "d_final": sorted(set(round(x, 1) for x in d)),
                  "oracle_d": oracle_d(pmf(K, HEAD_Z), n)}
    ph, top = headline["p1_hat"], headline["top_key"]
    b = {s: len({hash_choice_py(top, int(h), 50) for h in hash_seeds(s, 22)}) for s in SEEDS}
    report("headline D-C", seeds=len(SEEDS), per_n=out, distinct_workers_key1_n50=b)
    for n in HEAD_NS:
        assert all(headline["src"][("dc", n, s)] == "engine" for s in SEEDS)
        assert out[n]["median"] < 1e-3, n
    assert [round(median(imb[("dc", n, s)] for s in SEEDS) * M, 1) for n in HEAD_NS] == [4.0, 99.5, 201.5]
    assert [out[n]["above_1e-3"] for n in HEAD_NS] == [1, 3, 2]
    assert [out[n]["above_5e-4"] for n in HEAD_NS] == [1, 4, 3] and sig(out[50]["max"], 2) == 4.6e-3
    assert out[50]["d_final"] == [22.0]
    worst3 = sorted(SEEDS, key=lambda s: imb[("dc", 50, s)])[-3:]
    assert [b[s] for s in worst3] == [16, 14, 14], b
    assert all(imb[("dc", 50, s)] >= ph / b[s] - 1 / 50 for s in SEEDS)
    assert round(ph / 14 - 1 / 50, 4) == 0.0034 and round(ph * 50, 1) == 16.4
    assert round(50 * (1 - (1 - 1 / 50) ** 22), 1) == 17.9


def test_headline_pkg_fails_at_50(headline):
    """Headline: PKG imbalance > 0.1 at n = 50 for every seed (p1 = 0.329 > 2/50)."""
    v = [headline["imb"][("pkg", 50, s)] for s in SEEDS]
    report("headline PKG n=50", min=min(v), max=max(v))
    assert min(v) > 0.1
    assert (sig(min(v), 4), sig(max(v), 4)) == (0.144, 0.1442)


# --------------------------------------------------------------------------------------------
# R12 (small): ordering W-C <= D-C <= PKG <= KG on the mean over seeds


def test_r12_small_ordering(headline):
    """R12 / spec 7.13 (Q): mean over seeds, W-C <= D-C <= PKG <= KG at z = 1.4 (headline,
    10 seeds) and z = 2.0 (5 seeds), n in {10, 50, 100}."""
    means = {}
    for n in HEAD_NS:
        means[(1.4, n)] = {st: mean(headline["imb"][(st, n, s)] for s in SEEDS) for st in ("wc", "dc", "pkg", "kg")}
    keys = zipf_keys(2.0)
    for n in HEAD_NS:
        means[(2.0, n)] = {st: mean(route_imbalance(st, keys, n, s) for s in range(5))
                           for st in ("wc", "dc", "pkg", "kg")}
    report("R12 small ordering", means={f"z={z},n={n}": {k: sig(v) for k, v in m.items()} for (z, n), m in means.items()})
    for key, m in means.items():
        assert m["wc"] <= m["dc"], key
        assert m["dc"] <= m["pkg"], key
        assert m["pkg"] <= m["kg"], key


# --------------------------------------------------------------------------------------------
# R10: head/tail load per worker, n = 5, z = 2.0, theta = 1/(8n)


def test_r10_head_tail_per_worker(zipf_dataset):
    """R10 (Q), Fig. 8 at m = 1e6: PKG's two candidate workers of key 1 are overloaded; W-C puts
    every worker at 1/n; RR splits the head evenly but its total is visibly off the line.

    Engine replay (worker_tuples; its worker_head_tuples colours keys with f/m >= 1/(5n)) plus
    a direct replay with the A22 colouring at the experiment's theta = 1/(8n)."""
    n, theta = 5, 1.0 / 40
    path = zipf_dataset(2.0)
    keys = dataset_keys(str(path))
    counts = np.bincount(keys, minlength=K)
    top = int(np.argmax(counts))
    # the first hash seed whose two PKG candidates for key 1 differ
    seed = next(s for s in SEEDS if len({hash_choice_py(top, int(h), n) for h in hash_seeds(s, 2)}) == 2)
    cand = sorted(hash_choice_py(top, int(h), n) for h in hash_seeds(seed, 2))
    cells = grid(["pkg"], [n], [S], [seed]) + grid(["wc", "rr"], [n], [S], [seed], {"wc": {"theta": [theta]},
                                                                                  "rr": {"theta": [theta]}})
    rows = {r["strategy"]: r for r in replay(path, cells, ReplayConfig()).summary}
    m = len(keys)
    load = {st: np.array(rows[st]["worker_tuples"]) / m for st in rows}
    head_eng = {st: np.array(rows[st]["worker_head_tuples"]) / m for st in rows}
    true_head = counts >= theta * m
    head_a22 = {}
    for st in ("pkg", "wc", "rr"):
        w, _ = route(st, keys, n, seed, **({} if st == "pkg" else {"theta": theta}))
        head_a22[st] = np.bincount(w[true_head[keys]], minlength=n) / m
        assert np.array_equal(np.bincount(w, minlength=n), np.array(rows[st]["worker_tuples"]))
    spread = lambda v: float((v.max() - v.min()) / v.mean())  # noqa: E731
    report("R10", seed=seed, key1_candidates=cand, p1_hat=counts.max() / m,
           loads={st: [round(x, 4) for x in v] for st, v in load.items()},
           head_loads_a22={st: [round(x, 4) for x in v] for st, v in head_a22.items()},
           head_loads_engine={st: [round(x, 4) for x in v] for st, v in head_eng.items()},
           imbalance={st: rows[st]["imbalance"] for st in rows},
           rr_head_spread_a22=spread(head_a22["rr"]), rr_head_spread_engine=spread(head_eng["rr"]))
    others = [w for w in range(n) if w not in cand]
    # PKG: key 1's two candidates carry the two largest loads, well above 1/n; the rest below
    assert all(load["pkg"][c] >= 1 / n + 0.05 for c in cand)
    assert all(load["pkg"][w] < 1 / n for w in others)
    # W-C: every worker on the line
    assert np.max(np.abs(load["wc"] - 1 / n)) <= 2 * NOISE
    # RR: head split evenly (per-source round robin: within a few messages), total off the line
    assert spread(head_a22["rr"]) <= 1e-3
    assert rows["rr"]["imbalance"] >= 1e-3
    # the values REPRODUCTION.md prints
    assert cand == [1, 3] and [round(x, 4) for x in load["pkg"]] == [0.1696, 0.3076, 0.1696, 0.3076, 0.0455]
    assert rows["wc"]["imbalance"] == 0 and all(c == m // n for c in rows["wc"]["worker_tuples"])
    assert [round(x, 4) for x in head_a22["rr"]] == [0.1731] * n and sig(spread(head_a22["rr"]), 1) == 2e-4
    assert (round(load["rr"].min(), 4), round(load["rr"].max(), 4)) == (0.1852, 0.2037)
    assert sig(rows["rr"]["imbalance"], 2) == 3.7e-3 and sig(spread(head_eng["rr"]), 2) == 1.4e-3
    assert rows["rr"]["imbalance"] >= 100 * max(rows["wc"]["imbalance"], NOISE / S)


# --------------------------------------------------------------------------------------------
# R9 (small): threshold study, W-C vs RR; pilot threshold table (5.3) order of magnitude

PILOT_THRESHOLD = {  # (z, n) -> {theta label: (W-C, RR)}
    (1.0, 50): {"2/n": (1.1e-5, 4.5e-4), "1/n": (7e-6, 1.5e-5), "1/(2n)": (3e-6, 8e-6), "1/(8n)": (3e-6, 6e-6)},
    (2.0, 50): {"2/n": (2.7e-5, 1.5e-2), "1/n": (3e-6, 6.3e-3), "1/(2n)": (2e-6, 3.0e-3), "1/(8n)": (1e-6, 4.9e-4)},
    (2.0, 5): {"2/n": (2e-6, 2.6e-2), "1/n": (2e-6, 2.6e-2), "1/(2n)": (1e-6, 2.7e-2), "1/(8n)": (1e-6, 2.4e-3)},
}
THETAS = {"2/n": 2.0, "1/n": 1.0, "1/(2n)": 0.5, "1/(4n)": 0.25, "1/(8n)": 0.125}
FLOOR = 5e-5  # "at the noise floor" at m = 1e6 (10 messages per source)


def within_10x(ours: float, pilot: float) -> bool:
    return ours > 0 and abs(math.log10(ours / pilot)) <= 1.0


def order_of_magnitude_match(ours: float, pilot: float) -> bool:
    """Spec 5.3 is indicative: a match is within a factor 10 (no noise floor); a value of 0
    matches only a pilot value of at most one message (1/M)."""
    return within_10x(ours, pilot) or (min(ours, pilot) == 0 and abs(ours - pilot) <= 1 / M + 1e-12)


def test_r9_threshold_small():
    """R9 (Q) small version at m = 1e6, 5 hash seeds (medians): W-C ideal for every
    theta <= 1/n; lowering theta never raises imbalance beyond noise; raising z raises RR's; RR at or above W-C,
    far above it at z = 2.0.  Medians compared with the pilot threshold table (order of
    magnitude, no noise floor)."""
    res = {}
    for (z, n) in PILOT_THRESHOLD:
        keys = zipf_keys(z)
        for label in ("2/n", "1/n", "1/(2n)", "1/(8n)"):
            theta = THETAS[label] / n
            for st in ("wc", "rr"):
                res[(z, n, label, st)] = median(route_imbalance(st, keys, n, s, theta=theta) for s in range(5))
    pilot_ok = {f"z={z},n={n},{lab},{st}": order_of_magnitude_match(res[(z, n, lab, st)], pv[i])
                for (z, n), row in PILOT_THRESHOLD.items() for lab, pv in row.items()
                for i, st in enumerate(("wc", "rr"))}
    report("R9 small", medians={f"z={z},n={n},{lab},{st}": sig(v, 2) for (z, n, lab, st), v in res.items()},
           pilot_order_of_magnitude=pilot_ok)
    for (z, n) in PILOT_THRESHOLD:
        for label in ("1/n", "1/(2n)", "1/(8n)"):
            assert res[(z, n, label, "wc")] <= FLOOR, (z, n, label)
        for st in ("wc", "rr"):
            assert res[(z, n, "1/(8n)", st)] <= res[(z, n, "2/n", st)] + NOISE, (z, n, st)
        for label in ("2/n", "1/n", "1/(2n)", "1/(8n)"):
            assert res[(z, n, label, "rr")] >= res[(z, n, label, "wc")] - NOISE
            if z == 2.0:
                assert res[(z, n, label, "rr")] >= 10 * res[(z, n, label, "wc")], (z, n, label)
    for label in ("2/n", "1/n", "1/(2n)", "1/(8n)"):
        assert res[(2.0, 50, label, "rr")] > res[(1.0, 50, label, "rr")]
    assert all(pilot_ok.values()), [k for k, v in pilot_ok.items() if not v]
    # 23/24 within 10x; the 24th is W-C 0 vs the pilot's 1e-6 (one message)
    not10 = [(z, n, lab, st) for (z, n), row in PILOT_THRESHOLD.items() for lab, pv in row.items()
             for i, st in enumerate(("wc", "rr")) if not within_10x(res[(z, n, lab, st)], pv[i])]
    assert not10 == [(2.0, 5, "1/(8n)", "wc")] and res[not10[0]] == 0, not10
    assert [sig(res[(2.0, 50, lab, st)], 2) for st in ("wc", "rr") for lab in ("2/n", "1/n", "1/(2n)", "1/(8n)")] == [
        3.8e-5, 2e-6, 2e-6, 1e-6, 1.5e-2, 6.1e-3, 3.0e-3, 5.6e-4]


# ============================================================================================
# slow tests (make reproduce)


@pytest.mark.slow
def test_headline_all_seeds_engine(headline):
    """Headline, full: KG/PKG/W-C on all 10 seeds through the engine (the fast subset used
    direct calls for seeds 3-9); same assertions, plus engine == direct."""
    path = headline["path"]
    extra = [s for s in SEEDS if s not in ENGINE_SEEDS_FAST]
    res = replay(path, grid(["kg", "pkg", "wc"], HEAD_NS, [S], extra), ReplayConfig())
    rows = rows_by(res.summary, "strategy", "workers", "seed")
    ph = headline["p1_hat"]
    mism = [(k, r["imbalance"], headline["direct"][k]) for k, r in rows.items() if r["imbalance"] != headline["direct"][k]]
    imb = dict(headline["imb"])
    imb.update({k: r["imbalance"] for k, r in rows.items()})
    summary = {n: {st: {"min": sig(min(imb[(st, n, s)] for s in SEEDS), 4),
                        "median": sig(median(imb[(st, n, s)] for s in SEEDS), 3),
                        "max": sig(max(imb[(st, n, s)] for s in SEEDS), 4)} for st in ("kg", "pkg", "wc", "dc")}
               for n in HEAD_NS}
    avg = {n: {st: sig(mean(r["imbalance_avg"] for k, r in {**headline["rows"], **rows}.items()
                            if k[0] == st and k[1] == n), 3) for st in ("kg", "pkg", "wc", "dc")} for n in HEAD_NS}
    report("headline full engine", seeds=len(SEEDS), compared_with_direct=len(rows), mismatches=mism, per_n=summary, imbalance_avg_mean=avg,
           seconds=round(res.seconds, 1))
    assert not mism
    for n in HEAD_NS:
        for s in SEEDS:
            assert imb[("kg", n, s)] >= ph - 1 / n - 1e-12
            assert imb[("pkg", n, s)] >= ph / 2 - 1 / n - 1e-12
            assert imb[("wc", n, s)] < 1e-3
        assert median(imb[("dc", n, s)] for s in SEEDS) < 1e-3
    assert min(imb[("pkg", 50, s)] for s in SEEDS) > 0.1


@pytest.mark.slow
def test_a9_refresh_1_equals_1000():
    """A9: D-C with R_d = 1 (the paper's per-message rule) and R_d = 1000 (our default) give
    exactly the same imbalance and the same final d; z = 1.4, n in {50, 100}, 3 seeds."""
    keys = zipf_keys(1.4)
    out = {}
    for n in (50, 100):
        for seed in (0, 1, 2):
            a, sa = route("dc", keys, n, seed, refresh=1)
            b, sb = route("dc", keys, n, seed, refresh=1000)
            out[(n, seed)] = (imbalance(np.bincount(a, minlength=n)), imbalance(np.bincount(b, minlength=n)),
                              sa.summary()["d_final"], sb.summary()["d_final"])
    report("A9 refresh", values={f"n={n},seed={s}": [sig(x) for x in v] for (n, s), v in out.items()})
    for (n, s), (i1, i1000, d1, d1000) in out.items():
        assert (i1, d1) == (i1000, d1000), (n, s)
    assert (sig(min(v[0] for v in out.values()), 1), sig(max(v[0] for v in out.values()), 3)) == (6e-6, 1.03e-3)
    assert {n: {round(v[2], 1) for (nn, _), v in out.items() if nn == n} for n in (50, 100)} == {50: {22.0}, 100: {42.6}}


@pytest.mark.slow
def test_r5_r8_memory_sampled_counts():
    """R5-R8 (Q, A) with the memory formulas of 2.10 on sampled integer counts f_k of generated
    m = 1e7 streams (|K| = 1e4) and oracle d:
    R5 head of a handful to a few tens, <= 5n; R7 at n = 100 W-C needs up to ~25% more than PKG
    and both stay <= ~30%; n = 50 (the smaller cluster) both stay close to PKG; D-C clearly
    cheaper than W-C at moderately high skew; curves converge at z = 2.0; the W-C bump follows
    the head-size bump; R8 both need <= ~20% of SG's memory and the share shrinks as n grows."""
    counts = {z: np.bincount(zipf_keys(z, K, 10_000_000, STREAM_SEED), minlength=K) for z in ZS}
    mem = memory_curves(lambda z: counts[z])
    g = lambda n, z, k: mem[(n, z)][k]  # noqa: E731
    report("R5-R8 sampled (m=1e7)", **{
        f"n{n}_{k}": {str(z): sig(g(n, z, k), 3) for z in ZS}
        for n in (50, 100) for k in ("wc_vs_pkg", "dc_vs_pkg", "wc_share_sg", "dc_share_sg", "head")},
        max_wc_vs_pkg={n: sig(max(g(n, z, "wc_vs_pkg") for z in ZS)) for n in (50, 100)},
        max_share_sg={n: sig(max(max(g(n, z, "wc_share_sg"), g(n, z, "dc_share_sg")) for z in ZS)) for n in (50, 100)})
    # R5
    assert [max(g(n, z, "head") for z in ZS) for n in (50, 100)] == [27, 51]
    # R7
    assert 0.20 <= max(g(100, z, "wc_vs_pkg") for z in ZS) <= 0.30
    assert max(max(g(n, z, "wc_vs_pkg"), g(n, z, "dc_vs_pkg")) for n in (50, 100) for z in ZS) <= 0.30
    assert max(max(g(50, z, "wc_vs_pkg"), g(50, z, "dc_vs_pkg")) for z in ZS) <= 0.10
    for n in (50, 100):
        assert all(g(n, z, "dc_vs_pkg") <= g(n, z, "wc_vs_pkg") + 1e-12 for z in ZS)
        assert g(n, 2.0, "dc_vs_pkg") >= 0.85 * g(n, 2.0, "wc_vs_pkg")
    assert all(g(100, z, "dc_vs_pkg") <= 0.5 * g(100, z, "wc_vs_pkg") for z in (0.8, 0.9, 1.0, 1.1, 1.2, 1.3, 1.4))
    # the bump, on the same sampled counts (exact counts tie the head at z = 1.0 and 1.1)
    bump_mem = max((z for z in ZS if z <= 1.6), key=lambda z: g(100, z, "wc_vs_pkg"))
    bump_head = max((z for z in ZS if z <= 1.6), key=lambda z: g(100, z, "head"))
    assert bump_mem == bump_head == 1.1
    assert g(100, 2.0, "wc_vs_pkg") == pytest.approx(0.28, abs=0.01)  # 5.2: "0.28 with sampled counts"
    # the values REPRODUCTION.md prints
    assert (sig(g(100, 2.0, "wc_vs_pkg"), 3), sig(g(100, 1.1, "wc_vs_pkg"), 3)) == (0.277, 0.25)
    assert max(ZS, key=lambda z: g(100, z, "wc_vs_pkg")) == 2.0
    assert sig(max(g(100, z, "dc_vs_pkg") for z in ZS), 3) == 0.263
    assert [sig(max(g(50, z, k) for z in ZS), 2) for k in ("wc_vs_pkg", "dc_vs_pkg")] == [0.096, 0.094]
    assert [round(g(n, 2.0, "dc_vs_pkg") / g(n, 2.0, "wc_vs_pkg"), 2) for n in (100, 50)] == [0.95, 0.98]
    # R8
    share = {n: {z: max(g(n, z, "wc_share_sg"), g(n, z, "dc_share_sg")) for z in ZS} for n in (50, 100)}
    assert sig(max(share[50].values()), 3) == 0.194 and max(ZS, key=share[50].get) == 1.9
    assert sig(max(share[100].values()), 3) == 0.158
    assert all(g(100, z, k) <= g(50, z, k) for z in ZS for k in ("wc_share_sg", "dc_share_sg"))


@pytest.mark.slow
def test_r9_threshold_grid():
    """R9 (Q), Fig. 7 grid at m = 1e6, one hash seed: z in {0.2, ..., 2.0}, n in {5..100},
    theta halving from 2/n to 1/(8n).  W-C at the noise floor for every theta <= 1/n, z and n;
    lowering theta lowers (never raises beyond noise) imbalance; raising z raises RR's; RR shows
    a larger gradient (many more cells above 1e-4 than W-C) and, at larger n, is visibly
    imbalanced (> 1e-4) already at modest skew (onset z at theta = 2/n non-increasing in n,
    <= 1.0 at n = 100).  The counts and values REPRODUCTION.md prints are asserted exactly; W-C's
    hash dependence at theta = 2/n (z = 2.0, n = 50) is checked on 10 seeds."""
    zs = [round(0.2 * i, 1) for i in range(1, 11)]
    res = {}
    for z in zs:
        keys = zipf_keys(z)
        for n in NS:
            for label, f in THETAS.items():
                for st in ("wc", "rr"):
                    res[(z, n, label, st)] = route_imbalance(st, keys, n, 0, theta=f / n)
    wc_ideal_worst = max(res[(z, n, lab, "wc")] for z in zs for n in NS for lab in ("1/n", "1/(2n)", "1/(4n)", "1/(8n)"))
    lowering_viol = [(z, n, st) for z in zs for n in NS for st in ("wc", "rr")
                     if res[(z, n, "1/(8n)", st)] > res[(z, n, "2/n", st)] + NOISE]
    visible = {st: {n: sum(1 for k, v in res.items() if k[3] == st and k[1] == n and v > 1e-4) for n in NS}
               for st in ("wc", "rr")}
    onset = {lab: {n: next((z for z in zs if res[(z, n, lab, "rr")] > 1e-4), None) for n in NS} for lab in THETAS}
    report("R9 grid", wc_worst_theta_le_1_over_n=wc_ideal_worst, lowering_theta_violations=lowering_viol,
           cells_above_1em4=visible, rr_onset_z_above_1em4=onset,
           values={f"z={z},n={n},{lab},{st}": sig(v, 2) for (z, n, lab, st), v in res.items()})
    wc10 = sorted(route_imbalance("wc", zipf_keys(2.0), 50, s, theta=2 / 50) for s in SEEDS)
    report("R9 grid W-C z=2.0 n=50 theta=2/n", seeds=len(SEEDS), values=[sig(v, 2) for v in wc10])
    assert wc_ideal_worst <= FLOOR and round(wc_ideal_worst * M) == 12  # 1.2e-5
    assert not lowering_viol
    # strictly higher after lowering theta: 3 cells, each by one message
    raised = [(z, n, st) for z in zs for n in NS for st in ("wc", "rr")
              if res[(z, n, "1/(8n)", st)] > res[(z, n, "2/n", st)]]
    assert raised == [(0.8, 10, "wc"), (0.8, 10, "rr"), (0.8, 20, "rr")], raised
    assert all(round((res[c[:2] + ("1/(8n)", c[2])] - res[c[:2] + ("2/n", c[2])]) * M) == 1 for c in raised)
    assert visible == {"wc": {5: 1, 10: 0, 20: 1, 50: 2, 100: 0}, "rr": {5: 21, 10: 20, 20: 20, 50: 20, 100: 21}}
    assert sum(1 for k, v in res.items() if k[3] == "wc" and k[2] == "2/n" and v > 1e-4) == 4
    assert [sig(v, 2) for v in wc10[-2:]] == [8.9e-4, 4.2e-3] and 36 <= round(wc10[0] * M) <= round(wc10[-3] * M) <= 42
    for n in NS:
        for label in THETAS:
            assert res[(2.0, n, label, "rr")] >= res[(0.2, n, label, "rr")], (n, label)
    # "larger gradient of results": RR visibly imbalanced (> 1e-4) in many more (z, theta) cells
    for n in NS:
        assert visible["rr"][n] >= visible["wc"][n], n
    assert sum(visible["rr"].values()) >= 5 * max(1, sum(visible["wc"].values()))
    # "more evident at larger scales, where RR is imbalanced already at modest skew" (theta = 2/n)
    on = [onset["2/n"][n] for n in NS]
    assert on == [1.4, 1.2, 1.2, 1.0, 1.0], on
    assert onset["2/n"][100] <= 1.0 and onset["1/n"][100] <= onset["1/n"][5]


def min_d_scan(keys, n, seed, i_wc, taus):
    """Smallest d* (FIXED-d, A15) with I(d*) <= I_WC + tau for each tau; scans d* = 2.. upward,
    stopping once the smallest tau is matched (d* >= n is W-C itself)."""
    found, curve = {}, {}
    for d in range(2, n + 1):
        i = route_imbalance("fixed-d", keys, n, seed, d=d)
        curve[d] = i
        for tau in taus:
            if tau not in found and i <= i_wc + tau:
                found[tau] = d
        if len(found) == len(taus):
            break
    for tau in taus:
        found.setdefault(tau, n)
    return found, curve


@pytest.mark.slow
def test_r11_min_d_vs_dc_d():
    """R11 (Q), Fig. 9: D-C's computed d is very close to Min-d and slightly above it.
    Min-d per A15: smallest FIXED-d d* with I(d*) <= I_WC + tau, tau = s*eps = 5e-4 (1e-4 and
    1e-5 reported for n <= 50), same stream and hash seed; 5 seeds per setting; m = 1e6.
    Assertion ("very close, slightly above"): for the median over seeds, Min-d <= d_DC <=
    Min-d + 0.6; the per-seed values REPRODUCTION.md prints; FIXED-d's drop at z = 1.4, n = 50."""
    settings = [(1.2, 50), (1.4, 50), (1.8, 50), (2.0, 20), (1.4, 100)]
    seeds = [0, 1, 2, 3, 4]
    out = {}
    for z, n in settings:
        keys = zipf_keys(z)
        taus = (5e-4, 1e-4, 1e-5) if n <= 50 else (5e-4,)
        per = []
        for seed in seeds:
            i_wc = route_imbalance("wc", keys, n, seed)
            w, dc = route("dc", keys, n, seed)
            found, curve = min_d_scan(keys, n, seed, i_wc, taus)
            per.append({"seed": seed, "d_dc": dc.summary()["d_final"], "i_dc": imbalance(np.bincount(w, minlength=n)),
                        "i_wc": i_wc, "min_d": found, "curve": {d: sig(v, 2) for d, v in curve.items()}})
        out[(z, n)] = {
            "oracle_d": oracle_d(pmf(K, z), n),
            "d_dc": [p["d_dc"] for p in per], "min_d_5e-4": [p["min_d"][5e-4] for p in per],
            "min_d_1e-4": [p["min_d"].get(1e-4) for p in per], "min_d_1e-5": [p["min_d"].get(1e-5) for p in per],
            "i_dc": [sig(p["i_dc"], 2) for p in per], "i_wc": [sig(p["i_wc"], 2) for p in per],
            "curves": [p["curve"] for p in per],
        }
    report("R11", settings={f"z={z},n={n}": v for (z, n), v in out.items()})
    for (z, n), v in out.items():
        d_med, md_med = median(v["d_dc"]), median(v["min_d_5e-4"])
        assert md_med <= d_med + 0.5, (z, n, d_med, md_med)
        assert 0 <= d_med - md_med <= 0.6 + 1e-9, (z, n, d_med, md_med)
    printed = {(1.2, 50): (13, [14, 13, 14, 12, 11]), (1.4, 50): (22, [22, 21, 22, 28, 23]),
               (1.8, 50): (40, [35, 35, 40, 40, 42]), (2.0, 20): (20, [20] * 5), (1.4, 100): (42.6, [40, 39, 45, 45, 42])}
    for c, (d, md) in printed.items():
        assert round(median(out[c]["d_dc"]), 1) == d and out[c]["min_d_5e-4"] == md, c
    assert max(m - d for v in out.values() for m, d in zip(v["min_d_5e-4"], v["d_dc"])) == 6
    # FIXED-d at z = 1.4, n = 50: (last d* with I >= 5e-4, first d* with I <= I_WC + 1e-5) per seed
    v = out[(1.4, 50)]
    drops = [(max(d for d, i in c.items() if i >= 5e-4), lo) for c, lo in zip(v["curves"], v["min_d_1e-5"])]
    assert drops == [(21, 23), (20, 21), (21, 24), (27, 28), (22, 23)], drops
    assert all(6e-4 <= c[hi] < 1e-3 and c[lo] <= 1.1e-5 for c, (hi, lo) in zip(v["curves"], drops))


R12_ZS = [0.4, 0.8, 1.2, 1.6, 2.0]
R12_KS = (10_000, 100_000)


@pytest.fixture(scope="module")
def r12_grid():
    """Fig. 10 grid at m = 1e6 (paper 1e7), 3 hash seeds, |K| in {1e4, 1e5} (1e6 omitted for
    time), z in R12_ZS, n in {5, ..., 100}; PKG, D-C, W-C, RR; mean final imbalance."""
    res = {}
    for kk in R12_KS:
        for z in R12_ZS:
            keys = zipf_keys(z, kk)
            for n in NS:
                for st in ("pkg", "dc", "wc", "rr"):
                    res[(kk, z, n, st)] = mean(route_imbalance(st, keys, n, s) for s in (0, 1, 2))
    k_ratio = {}
    for z in R12_ZS:
        for n in NS:
            for st in ("pkg", "dc", "wc", "rr"):
                a, b = res[(10_000, z, n, st)], res[(100_000, z, n, st)]
                if max(a, b) > 1e-4:
                    k_ratio[(z, n, st)] = max(a, b) / max(min(a, b), 1e-7)
    return res, k_ratio


@pytest.mark.slow
def test_r12_grid(r12_grid):
    """R12 (Q), Fig. 10: difficulty (PKG) grows with z and n (dips only where both values are
    below 1e-5); W-C lowest in every cell but one (z = 0.4, n = 100, |K| = 1e4, a third of a
    message above RR) and flat (max 5.7e-6); D-C and RR far below PKG (>= 10x) at high z (1.6,
    2.0) and large n (50, 100) and similar to each other there (within two orders of magnitude).
    The |K| claim is the xfail test below; its measured ratios are asserted here."""
    res, k_ratio = r12_grid
    wc_not_lowest = [(kk, z, n) for kk in R12_KS for z in R12_ZS for n in NS
                     if res[(kk, z, n, "wc")] > min(res[(kk, z, n, st)] for st in ("pkg", "dc", "rr")) + 1e-12]
    hi = [(kk, z, n) for kk in R12_KS for z in (1.6, 2.0) for n in (50, 100)]
    dc_rr = {str(c): (sig(res[c + ("dc",)], 2), sig(res[c + ("rr",)], 2), sig(res[c + ("pkg",)], 2)) for c in hi}
    report("R12 grid", means={f"K={kk},z={z},n={n},{st}": sig(v, 2) for (kk, z, n, st), v in res.items()},
           K_ratio_above_1em4={f"z={z},n={n},{st}": sig(v, 2) for (z, n, st), v in k_ratio.items()},
           wc_not_lowest=wc_not_lowest, wc_max=max(res[k] for k in res if k[3] == "wc"), dc_rr_pkg_high=dc_rr)
    for kk in R12_KS:
        for n in NS:
            pk = [res[(kk, z, n, "pkg")] for z in R12_ZS]
            assert all(b >= a or b < a < 1e-5 for a, b in zip(pk, pk[1:])), (kk, n, pk)
        for z in R12_ZS:
            pk = [res[(kk, z, n, "pkg")] for n in NS]
            assert all(b >= a or b < a < 1e-5 for a, b in zip(pk, pk[1:])), (kk, z, pk)
    assert wc_not_lowest == [(10_000, 0.4, 100)], wc_not_lowest
    c = (10_000, 0.4, 100)
    assert (sig(res[c + ("wc",)], 2), sig(res[c + ("rr",)], 2)) == (5.3e-6, 5e-6)
    assert sig(max(res[k] for k in res if k[3] == "wc"), 2) == 5.7e-6
    span = lambda st: (sig(min(res[c + (st,)] for c in hi), 2), sig(max(res[c + (st,)] for c in hi), 2))  # noqa: E731
    assert (span("dc"), span("rr"), span("pkg")) == ((2.7e-5, 9.7e-4), (1.9e-4, 1.4e-3), (0.2, 0.29))
    # |K| ratios (the xfail below): largest per scheme, and PKG where p1 differs
    top = {st: max((v, c) for c, v in k_ratio.items() if c[2] == st) for st in ("pkg", "dc", "rr")}
    assert {st: (sig(v, 2), c[:2]) for st, (v, c) in top.items()} == {
        "pkg": (16.0, (1.2, 5)), "dc": (84.0, (0.8, 100)), "rr": (210.0, (1.6, 5))}, top
    assert sig(k_ratio[(0.8, 100, "pkg")], 2) == 6.6
    assert [round(100 * p1_exact(0.8, kk), 2) for kk in R12_KS] == [3.69, 2.19]
    for c in hi:
        pkg, dc, rr = res[c + ("pkg",)], res[c + ("dc",)], res[c + ("rr",)]
        assert dc <= pkg / 10 and rr <= pkg / 10, c
        assert abs(math.log10(max(dc, NOISE / S) / max(rr, NOISE / S))) <= 2, c


@pytest.mark.slow
@pytest.mark.xfail(strict=True, raises=AssertionError, reason=(
    "R12 '|K| (1e4 vs 1e5) makes no visible difference' (checked: mean imbalance within 2x "
    "wherever one of the two exceeds 1e-4): PKG at z=0.8, n=100 is 8.6e-3 (|K|=1e4) vs 1.3e-3 "
    "(1e5) because p1 itself drops from 3.69% to 2.19% (the spec's own 5.2 note); PKG and D-C at "
    "z=1.2, n=5 differ 16x (1.8e-4 vs 1.1e-5, below PKG's break-down); D-C and RR near "
    "structural thresholds differ by up to ~200x between the two streams (e.g. RR z=1.6, n=5: "
    "1.6e-3 vs 7.7e-6; D-C z=0.8, n=100: 8.1e-4 vs 9.7e-6), hash- and sample-dependent."))
def test_r12_key_space_no_visible_difference(r12_grid):
    _, k_ratio = r12_grid
    bad = {f"z={z},n={n},{st}": sig(v, 3) for (z, n, st), v in k_ratio.items() if v > 2.0}
    report("R12 |K| (xfail)", ratios_above_2=bad)
    assert not bad


# --------------------------------------------------------------------------------------------
# R2, R3, R4, R13, R14 on the surrogates of spec 4.1 (labelled "surrogate")

SURR_M = 2_000_000


def surrogate_specs() -> dict:
    """WP/TW: finite Zipf with Table I's |K| and p1 (z from :func:`zipf_exponent_for_p1`).
    CT (drift, spec 4.1's recipe): the rank-to-key map of the top 50 ranks is re-drawn every 5%
    of the stream; over the whole stream the top key's share is then ~0.8%, not 3.29%.
    CT-stable (our variant, keeps Table I's p1): key 1 stays, ranks 2..50 are re-paired
    (24 random swaps) every 5%."""
    wp_z = zipf_exponent_for_p1(REAL["WP"][0], REAL["WP"][1])
    tw_z = zipf_exponent_for_p1(REAL["TW"][0], REAL["TW"][1])
    ct_z = zipf_exponent_for_p1(REAL["CT"][0], REAL["CT"][1])
    phase = {"tuples": 34_500, "alpha": ct_z}
    ct = StreamSpec.from_dict({
        "generator": "drifting", "n_keys": REAL["CT"][1], "seed": 7,
        "phases": [phase] + [{**phase, "permutation": {"reshuffle_top": 50}, "repeat": 19}]})
    rng = np.random.default_rng(2013)
    phases = [phase]
    for _ in range(19):
        r = rng.permutation(np.arange(2, 51)).tolist()
        phases.append({**phase, "permutation": {"swap": [[r[2 * j], r[2 * j + 1]] for j in range(24)]}})
    ct_stable = StreamSpec.from_dict({"generator": "drifting", "n_keys": REAL["CT"][1], "seed": 7,
                                      "phases": phases})
    return {"WP": StreamSpec.zipf(wp_z, REAL["WP"][1], SURR_M, 5),
            "TW": StreamSpec.zipf(tw_z, REAL["TW"][1], SURR_M, 6), "CT": ct, "CT-stable": ct_stable}


SURR = ("WP", "TW", "CT", "CT-stable")


def time_curves(w: np.ndarray, n: int, windows: int = 100):
    """Cumulative and per-window imbalance at ``windows`` equal message-count checkpoints."""
    m = len(w)
    idx = (np.arange(m) * windows) // m
    per = np.bincount(idx * n + w, minlength=windows * n).reshape(windows, n)
    cum = np.cumsum(per, axis=0)
    return (np.array([imbalance(c) for c in cum]), np.array([imbalance(c) for c in per]))


@pytest.fixture(scope="module")
def surrogates():
    """PKG / D-C / W-C on the surrogates, n in {5..100}, 3 hash seeds (direct calls: the
    engine's per-key replica bit sets would be n_keys x words per (cell, source), too big for
    |K| = 2.9M / 31M).  ``imb``: final I(m); ``avg``: mean cumulative I over 100 checkpoints
    (A2's "average imbalance"); ``curves``: seed 0's cumulative and per-window curves."""
    out = {"imb": {}, "avg": {}, "curves": {}, "p1_hat": {}, "m": {}, "z": {}, "d": {}}
    for name, spec in surrogate_specs().items():
        keys = spec_keys(spec)
        out["p1_hat"][name] = float(np.bincount(keys).max() / len(keys))
        out["m"][name] = len(keys)
        out["z"][name] = spec.phases[0].alpha
        for n in NS:
            for st in ("pkg", "dc", "wc"):
                for seed in (0, 1, 2):
                    w, strat = route(st, keys, n, seed)
                    cum, win = time_curves(w, n)
                    out["imb"][(name, n, st, seed)] = imbalance(np.bincount(w, minlength=n))
                    out["avg"][(name, n, st, seed)] = float(cum.mean())
                    if st == "dc":
                        out["d"][(name, n, seed)] = strat.summary()["d_final"]
                    if seed == 0:
                        out["curves"][(name, n, st)] = (cum, win)
        del keys
    return out


def surr_mean(sur, name, n, st, what="imb"):
    return mean(sur[what][(name, n, st, s)] for s in (0, 1, 2))


@pytest.mark.slow
def test_r2_r3_r4_wp_surrogate(surrogates):
    """On the WP surrogate (finite Zipf, |K| = 2.9M, p1 = 9.32%, m = 2e6):
    R2 (Q) PKG balanced at n = 5, 10 and clearly growing at 20, 50, 100;
    R3 (T) D-C and W-C below 1e-3 at every n (every seed);
    R4 (D) PKG >= p^1/2 - 1/n (n = 50, 100; 0.0266 / 0.0366 for the real p1)."""
    sur = surrogates
    ph = sur["p1_hat"]["WP"]
    pkg = {n: surr_mean(sur, "WP", n, "pkg") for n in NS}
    worst = {st: {n: max(sur["imb"][("WP", n, st, s)] for s in (0, 1, 2)) for n in NS} for st in ("dc", "wc")}
    report("R2/R3/R4 WP surrogate", z=sur["z"]["WP"], p1_hat=ph, pkg_mean=pkg, worst=worst,
           pkg_bound_hat={n: sig(ph / 2 - 1 / n) for n in (50, 100)})
    assert pkg[5] <= 1e-3 and pkg[10] <= 1e-3
    assert pkg[20] < pkg[50] < pkg[100] and pkg[50] >= 1e-2
    for st in ("dc", "wc"):
        assert all(v < 1e-3 for v in worst[st].values()), st
    for n in (50, 100):
        for s in (0, 1, 2):
            assert sur["imb"][("WP", n, "pkg", s)] >= ph / 2 - 1 / n - 1e-12
    # the values REPRODUCTION.md prints; PKG sits on its bound at n = 100 (within 0.5%)
    assert [sig(pkg[n], 2) for n in (5, 10, 20)] + [sig(pkg[n], 3) for n in (50, 100)] == [
        2.5e-6, 2.8e-6, 3.0e-3, 0.0275, 0.0369]
    assert [sig(ph / 2 - 1 / n, 3) for n in (50, 100)] == [0.0267, 0.0367]
    assert pkg[100] <= 1.005 * (ph / 2 - 1 / 100)
    assert sig(worst["dc"][100], 2) == 9.3e-4 and max(worst["dc"].values()) == worst["dc"][100]
    assert max(worst["wc"].values()) <= 2.5e-6 + 1e-12


@pytest.mark.slow
@pytest.mark.xfail(strict=True, raises=AssertionError, reason=(
    "R2 (A) 'PKG's imbalance on WP approaches ~10%': not reachable - on the WP surrogate PKG "
    "measures 0.0369 at n=100 (mean of 3 seeds; bound p^1/2 - 1/n = 0.0367); 10% would need one "
    "worker to carry more than the whole top key (p1 = 9.32%), spec A1.  Real WP not available (A18)."))
def test_r2_pkg_close_to_10_percent(surrogates):
    v = surr_mean(surrogates, "WP", 100, "pkg")
    report("R2 ~10%", pkg_n100=v)
    assert v >= 0.07


def r13_tables(sur):
    means = {(nm, n, st): surr_mean(sur, nm, n, st) for nm in SURR for n in NS for st in ("pkg", "dc", "wc")}
    gm = {(nm, st): math.exp(mean(math.log(max(means[(nm, n, st)], 1e-7)) for n in NS)) for nm in SURR
          for st in ("pkg", "dc", "wc")}
    return means, gm


@pytest.mark.slow
def test_r13_surrogates_imbalance_vs_scale(surrogates):
    """R13 (Q + T), Fig. 11 on the WP/TW/CT surrogates (3 seeds, means of the final imbalance;
    the time-averaged imbalance is reported too).  Asserted: all schemes similar (all < 1e-3)
    at n = 5; W-C <= D-C; D-C around or below s*eps = 5e-4 (means <= 3.6e-4, one run of 60
    above 5e-4); PKG worse than D-C and W-C at n = 20, 50, 100 on WP and, past PKG's
    break-down (p^1 > 2/n), at n = 100 on TW and CT-stable (by >= 10x); CT (both variants)
    harder than TW for every scheme and than WP for W-C (geometric mean over n).  The parts that
    fail (PKG vs D-C at n = 20, 50 on TW/CT and on the spec's CT recipe at n = 100; CT vs WP for
    PKG and D-C) are the xfail tests below; their measured values are asserted here.  On the
    spec's CT recipe D-C ends with d = 2 (n >= 10) and PKG's final imbalance (14 of 15 runs)."""
    sur = surrogates
    means, gm = r13_tables(sur)
    above = sum(1 for k, v in sur["imb"].items() if k[2] == "dc" and v > 5e-4)
    report("R13 surrogates", z=sur["z"], m=sur["m"], p1_hat=sur["p1_hat"],
           d_final_seed0={f"{nm},n={n}": sur["d"][(nm, n, 0)] for nm in SURR for n in NS},
           means={f"{nm},n={n},{st}": sig(v, 2) for (nm, n, st), v in means.items()},
           avg_imbalance={f"{nm},n={n},{st}": sig(surr_mean(sur, nm, n, st, "avg"), 2)
                          for nm in SURR for n in NS for st in ("pkg", "dc", "wc")},
           geo_mean={f"{nm},{st}": sig(v, 2) for (nm, st), v in gm.items()}, dc_runs_above_5em4=above,
           dc_runs=sum(1 for k in sur["imb"] if k[2] == "dc"))
    for nm in SURR:
        assert all(means[(nm, 5, st)] < 1e-3 for st in ("pkg", "dc", "wc")), nm
        for n in NS:
            assert means[(nm, n, "wc")] <= means[(nm, n, "dc")], (nm, n)
            assert means[(nm, n, "dc")] <= 1e-3, (nm, n)
    assert sig(max(v for k, v in means.items() if k[2] == "dc"), 2) == 3.6e-4 and above == 1
    pr = lambda nm, n: (sig(means[(nm, n, "pkg")], 2), sig(means[(nm, n, "dc")], 2))  # noqa: E731
    assert (pr("WP", 20), pr("TW", 100), pr("CT-stable", 100)) == ((3.0e-3, 4.2e-6), (3.5e-3, 8.5e-6), (6.3e-3, 1.5e-5))
    assert pr("TW", 20) == (2.3e-6, 2.3e-6) and pr("CT", 100) == (3.5e-4, 3.5e-4)
    assert {k: sig(gm[k], 2) for k in (("CT", "pkg"), ("CT-stable", "pkg"), ("WP", "pkg"), ("CT-stable", "dc"),
                                         ("WP", "dc"))} == {("CT", "pkg"): 1.5e-5, ("CT-stable", "pkg"): 2.5e-5,
                                                            ("WP", "pkg"): 4.7e-4, ("CT-stable", "dc"): 7.5e-6,
                                                            ("WP", "dc"): 1.1e-5}
    # spec CT recipe: keys look heavy only early on (d = n at the first refresh); D-C ends with
    # d = 2 for n >= 10 (at n = 5 the early d = 5 is kept, with an empty head) and with PKG's
    # final imbalance in every run but one
    assert all(sur["d"][("CT", n, s)] == 2 for n in NS if n >= 10 for s in (0, 1, 2))
    differ = [(n, s) for n in NS for s in (0, 1, 2) if sur["imb"][("CT", n, "dc", s)] != sur["imb"][("CT", n, "pkg", s)]]
    assert differ == [(100, 2)], differ
    assert [sig(sur["imb"][("CT", 100, st, 2)], 3) for st in ("dc", "pkg")] == [3.2e-4, 3.22e-4]
    for nm, ns in (("WP", (20, 50, 100)), ("TW", (100,)), ("CT-stable", (100,))):
        for n in ns:
            assert means[(nm, n, "pkg")] > 10 * means[(nm, n, "dc")], (nm, n)
            assert means[(nm, n, "pkg")] > 10 * means[(nm, n, "wc")], (nm, n)
    for ct in ("CT", "CT-stable"):
        for st in ("pkg", "dc", "wc"):
            assert gm[(ct, st)] > gm[("TW", st)], (ct, st)
        assert gm[(ct, "wc")] > gm[("WP", "wc")], ct


@pytest.mark.slow
@pytest.mark.xfail(strict=True, raises=AssertionError, reason=(
    "R13 'at n = 20, 50, 100 PKG is worse (here: >= 2x) than D-C and W-C' on every dataset: on "
    "the TW and CT surrogates p1 (2.67%, 3.29%; 0.8% overall for the spec's CT recipe) is below "
    "2/n for n <= 50, PKG sits at the noise floor (2e-6..2.2e-5) and D-C computes d = 2, i.e. "
    "routes like PKG (identical imbalance: TW n=20 2.3e-6 both, CT-stable n=50 1.3e-5 both); on "
    "the spec's CT recipe the rotating hot key looks heavy to the cumulative sketches only in the "
    "first messages, so the final d = 2 at n = 100 too (PKG 3.5e-4, D-C 3.5e-4)."))
def test_r13_pkg_worse_everywhere_at_scale(surrogates):
    means, _ = r13_tables(surrogates)
    bad = {f"{nm},n={n}": (sig(means[(nm, n, "pkg")], 2), sig(means[(nm, n, "dc")], 2))
           for nm in SURR for n in (20, 50, 100) if not means[(nm, n, "pkg")] >= 2 * means[(nm, n, "dc")]}
    report("R13 PKG worse everywhere (xfail)", failing_cells_pkg_dc=bad)
    assert not bad


@pytest.mark.slow
@pytest.mark.xfail(strict=True, raises=AssertionError, reason=(
    "R13 'CT is harder to balance for all methods' fails against WP for PKG and (CT-stable) D-C: "
    "a surrogate's PKG/D-C imbalance is set by its p1 (CT 3.29%, 0.8% overall for the spec "
    "recipe, vs WP 9.32%): geometric mean over n of PKG 1.5e-5 (CT) / 2.5e-5 (CT-stable) vs "
    "4.7e-4 (WP); D-C 7.5e-6 (CT-stable) vs 1.1e-5 (WP).  The real CT's burstiness is not modelled."))
def test_r13_ct_harder_than_wp_for_pkg_and_dc(surrogates):
    _, gm = r13_tables(surrogates)
    report("R13 CT harder than WP (xfail)", **{f"{nm},{st}": sig(gm[(nm, st)], 2)
                                               for nm in ("WP", "CT", "CT-stable") for st in ("pkg", "dc")})
    for ct in ("CT", "CT-stable"):
        for st in ("pkg", "dc"):
            assert gm[(ct, st)] > gm[("WP", st)], (ct, st)


@pytest.mark.slow
def test_r14_surrogates_over_time(surrogates):
    """R14 (Q), Fig. 12 (cumulative imbalance at 100 message-count checkpoints, seed 0): PKG's
    imbalance at n = 100 on WP is roughly stable (last 80% of checkpoints within 0.95% of the
    final value) and bad; D-C and W-C good (<= 1.4e-4 after the first 10%) for n in {10, 50, 100}
    on WP/TW; CT noisier/harder (per-window imbalance of D-C and W-C at n = 100 above WP's).
    The values REPRODUCTION.md prints are asserted."""
    cur = surrogates["curves"]
    pkg_cum = cur[("WP", 100, "pkg")][0]
    stab = float(np.max(np.abs(pkg_cum[20:] / pkg_cum[-1] - 1)))
    good = {f"{nm},n={n},{st}": sig(float(cur[(nm, n, st)][0][10:].max()), 2)
            for nm in SURR for n in (10, 50, 100) for st in ("dc", "wc")}
    cv = {nm: {st: sig(float(np.std(cur[(nm, 100, st)][1]) / max(np.mean(cur[(nm, 100, st)][1]), 1e-9)), 3)
               for st in ("pkg", "dc", "wc")} for nm in SURR}
    win_mean = {nm: {st: sig(float(np.mean(cur[(nm, 100, st)][1])), 2) for st in ("pkg", "dc", "wc")}
                for nm in SURR}
    report("R14 over time", pkg_wp_n100_final=pkg_cum[-1], pkg_wp_n100_max_rel_dev_last80=stab,
           dc_wc_max_cum_after_10pct=good, per_window_cv_n100=cv, per_window_mean_n100=win_mean)
    assert pkg_cum[-1] >= 1e-2 and stab <= 0.3
    assert sig(pkg_cum[-1], 3) == 0.0368 and stab <= 0.0095
    for nm in ("WP", "TW"):
        for n in (10, 50, 100):
            for st in ("dc", "wc"):
                assert cur[(nm, n, st)][0][10:].max() <= 1.45e-4, (nm, n, st)
    assert sig(max(cur[(nm, n, st)][0][10:].max() for nm in ("WP", "TW") for n in (10, 50, 100)
                   for st in ("dc", "wc")), 2) == 1.4e-4
    assert sig(float(cur[("CT", 100, "dc")][0][10:].max()), 2) == 2.9e-3
    assert [win_mean[nm]["dc"] for nm in ("CT", "CT-stable", "WP")] == [7.2e-3, 1.4e-3, 4.9e-4]
    assert [win_mean[nm]["wc"] for nm in ("CT", "CT-stable", "WP")] == [7.3e-4, 7.3e-4, 2.3e-4]
    for ct in ("CT", "CT-stable"):
        for st in ("dc", "wc"):
            assert win_mean[ct][st] > win_mean["WP"][st], (ct, st)


@pytest.mark.slow
def test_real_slashdot_trace(shared_data, tmp_path):
    """Extra real trace (not in the paper): Slashdot (SNAP soc-Slashdot0902, 948,464 edges,
    key = source node, in file order, engine replay, 3 seeds).  p1 = 0.26% < 2/100, so PKG's
    bound is 0 for every n <= 100 and R13's "all schemes similar" should hold at every n (final
    imbalance, 1.3e-6..8.8e-6); R3-style: D-C, W-C below 1e-3 at every n and seed.  The file is
    sorted by source node, so every key arrives as one burst: the cumulative imbalance is high
    early (< 1e-2 after the first 10%) and decays (not a paper claim); over time (A2's average
    imbalance, engine ``imbalance_avg``) the ranking W-C <= D-C <= PKG holds at n = 50, 100 (R14-style)."""
    from skewbench.datasets.traces import ingest

    path = tmp_path / "slashdot"
    ingest("slashdot", [shared_data / "slashdot" / "soc-Slashdot0902.txt.gz"], path)
    keys = dataset_keys(str(path))
    ph = float(np.bincount(keys).max() / len(keys))
    res = replay(path, grid(["pkg", "dc", "wc"], NS, [S], [0, 1, 2]), ReplayConfig())
    rows = rows_by(res.summary, "strategy", "workers", "seed")
    imb = {k: r["imbalance"] for k, r in rows.items()}
    series = defaultdict(list)
    for r in res.series:
        series[(r["strategy"], r["workers"], r["seed"])].append(r["imbalance_cum"])
    late = {k: max(v[10:]) for k, v in series.items()}
    avg = {(st, n): mean(rows[(st, n, s)]["imbalance_avg"] for s in (0, 1, 2)) for st in ("pkg", "dc", "wc") for n in NS}
    report("Slashdot", tuples=len(keys), keys=int(len(np.unique(keys))), p1_hat=ph,
           pkg_bound={n: max(0.0, ph / 2 - 1 / n) for n in NS},
           imbalance={f"{st},n={n}": [sig(imb[(st, n, s)], 2) for s in (0, 1, 2)] for st in ("pkg", "dc", "wc") for n in NS},
           max_cum_after_10pct={f"{st},n={n}": sig(max(late[(st, n, s)] for s in (0, 1, 2)), 2)
                                for st in ("pkg", "dc", "wc") for n in NS},
           imbalance_avg={f"{st},n={n}": sig(v, 2) for (st, n), v in avg.items()},
           head_fraction_wc_n100=stats_of(rows[("wc", 100, 0)])["head_fraction"])
    assert all(ph / 2 - 1 / n <= 0 for n in NS)
    assert round(100 * ph, 2) == 0.26 and ph / 2 - 1 / 755 <= 0 < ph / 2 - 1 / 756
    assert all(v < 1e-3 for v in imb.values())
    assert (sig(min(imb.values()), 2), sig(max(imb.values()), 2)) == (1.3e-6, 8.8e-6)
    assert [sig(avg[(st, 100)], 2) for st in ("wc", "dc", "pkg")] == [5.6e-4, 1.3e-3, 3.1e-3]
    assert max(late.values()) < 1e-2 and sig(max(late[("wc", 100, s)] for s in (0, 1, 2)), 1) == 2e-3
    for n in NS:
        m = {st: mean(imb[(st, n, s)] for s in (0, 1, 2)) for st in ("pkg", "dc", "wc")}
        assert max(m.values()) <= 10 * max(min(m.values()), NOISE)  # similar
    for n in (50, 100):
        assert avg[("wc", n)] <= avg[("dc", n)] <= avg[("pkg", n)], n


# --------------------------------------------------------------------------------------------
# 5.3 pilot values (order of magnitude)

PILOT = {  # (z, n) -> KG, PKG, RR, W-C, D-C, D-C final d ("W" = n)
    (0.8, 100): (3.3e-2, 8.4e-3, 6e-6, 4e-6, 1.4e-5, 4),
    (1.4, 10): (0.273, 0.085, 1e-5, 2e-6, 4e-6, 8),
    (1.4, 50): (0.319, 0.144, 1.5e-5, 2e-6, 6.8e-4, 22),
    (1.4, 100): (0.320, 0.154, 5e-5, 2e-6, 1.0e-5, 43),
    (2.0, 10): (0.521, 0.213, 4.9e-3, 1e-6, 1e-6, "W"),
    (2.0, 50): (0.591, 0.284, 8.2e-4, 1e-6, 5e-6, 49),
    (2.0, 100): (0.598, 0.294, 6.2e-4, 1e-6, 5e-6, 95.5),
}


@pytest.fixture(scope="module")
def pilot_results(zipf_dataset):
    """5.3 pilot settings (m = 1e6, |K| = 1e4, s = 5, theta = 1/(5n), C = ceil(4/theta),
    R_d = 500) through the engine, 3 hash seeds (medians; the pilot had one seed); D-C also on
    10 seeds by direct calls (its imbalance is strongly seed dependent)."""
    strategies = ["kg", "pkg", "rr", "wc", "dc"]
    meds, dfin, dc10 = {}, {}, {}
    for z in (0.8, 1.4, 2.0):
        ns = [n for (zz, n) in PILOT if zz == z]
        path = zipf_dataset(z)
        rows = replay(path, grid(strategies, ns, [S], [0, 1, 2], {"dc": {"refresh": [500]}}), ReplayConfig()).summary
        keys = dataset_keys(str(path))
        for n in ns:
            for st in strategies:
                sel = [r for r in rows if r["strategy"] == st and r["workers"] == n]
                meds[(z, n, st)] = median(r["imbalance"] for r in sel)
                if st == "dc":
                    dfin[(z, n)] = median(stats_of(r)["d_final"] for r in sel)
            dc10[(z, n)] = [route_imbalance("dc", keys, n, sd, refresh=500) for sd in SEEDS]
    return meds, dfin, dc10


@pytest.mark.slow
def test_5_3_pilot_spot_checks(pilot_results):
    """5.3 (pilot, indicative): KG, PKG, RR and W-C medians match the pilot to an order of
    magnitude (27 of 28 within 10x, no noise floor; the 28th is 0 vs 1e-6, one message); D-C's
    final d within 0.5 of the pilot's (W = n); the pilot's single-seed D-C value lies inside our
    10-seed D-C range in 6 of 7 cells (z = 0.8, n = 100: one message below it).  The D-C
    order-of-magnitude comparison is the xfail test below."""
    meds, dfin, dc10 = pilot_results
    checks, in_range = {}, {}
    for (z, n), pv in PILOT.items():
        for i, st in enumerate(["kg", "pkg", "rr", "wc"]):
            checks[f"z={z},n={n},{st}"] = order_of_magnitude_match(meds[(z, n, st)], pv[i])
        pd = n if pv[5] == "W" else pv[5]
        checks[f"z={z},n={n},d"] = abs(dfin[(z, n)] - pd) <= 0.5 + 1e-9
        lo, hi, p = (round(x * M) for x in (min(dc10[(z, n)]), max(dc10[(z, n)]), pv[4]))  # in messages
        in_range[(z, n)] = (lo <= p <= hi, p - lo)
    not10 = [(z, n, st) for (z, n), pv in PILOT.items() for i, st in enumerate(["kg", "pkg", "rr", "wc"])
             if not within_10x(meds[(z, n, st)], pv[i])]
    missed = [c for c in PILOT if not order_of_magnitude_match(meds[c + ("dc",)], PILOT[c][4])]
    report("5.3 pilot", medians={f"z={z},n={n},{st}": sig(v, 2) for (z, n, st), v in meds.items()},
           d_final={f"z={z},n={n}": v for (z, n), v in dfin.items()},
           dc_10_seeds={f"z={z},n={n}": [sig(x, 2) for x in v] for (z, n), v in dc10.items()}, checks=checks,
           pilot_dc_in_10_seed_range={f"z={z},n={n}": v for (z, n), v in in_range.items()})
    assert all(checks.values()), [k for k, v in checks.items() if not v]
    assert not10 == [(2.0, 10, "wc")] and meds[(2.0, 10, "wc")] == 0, not10
    assert [c for c, (ok, _) in in_range.items() if not ok] == [(0.8, 100)] and in_range[(0.8, 100)][1] == -1
    assert [round(dfin[c], 1) for c in PILOT] == [4, 8, 22, 42.6, 10, 49, 95.4]
    # the xfail's cells and their 10-seed span
    assert missed == [(1.4, 50), (1.4, 100), (2.0, 50), (2.0, 100)], missed
    assert (sig(min(min(dc10[c]) for c in missed), 1), sig(max(max(dc10[c]) for c in missed), 2)) == (5e-6, 4.6e-3)
    assert [sig(meds[c + ("dc",)], 2) for c in PILOT] == [1.7e-5, 4e-6, 4.2e-5, 1.7e-4, 0, 8.2e-4, 3.4e-4]
    # z = 2.0, n = 50, d = 49: distinct workers among key 1's hashed candidates vs p^1 n needed
    counts = np.bincount(zipf_keys(2.0), minlength=K)
    b = [len({hash_choice_py(int(np.argmax(counts)), int(h), 50) for h in hash_seeds(s, 49)}) for s in SEEDS]
    assert (min(b), max(b), round(counts.max() / M * 50, 1)) == (27, 34, 30.4), b


@pytest.mark.slow
@pytest.mark.xfail(strict=True, raises=AssertionError, reason=(
    "5.3 D-C imbalance vs the single-seed pilot, order of magnitude on our 3-seed median: "
    "z=1.4,n=50 ours 4.2e-5 vs 6.8e-4; z=1.4,n=100 1.7e-4 vs 1.0e-5; z=2.0,n=50 8.2e-4 vs 5e-6; "
    "z=2.0,n=100 3.4e-4 vs 5e-6.  D-C's d is the smallest d whose EXPECTED number of distinct "
    "candidates b = n(1-(1-1/n)^d) covers key 1 (p1 n workers); for a given hash seed the "
    "realised count is often below (z=2.0, n=50, d=49: 27..34 distinct vs 30.4 needed), and "
    "then I ~ p1/b - 1/n: in these cells D-C spans 5e-6..4.6e-3 across 10 seeds, and the "
    "pilot values lie inside that range (asserted above)."))
def test_5_3_pilot_dc_order_of_magnitude(pilot_results):
    meds, _, _ = pilot_results
    bad = {f"z={z},n={n}": (sig(meds[(z, n, "dc")], 2), pv[4]) for (z, n), pv in PILOT.items()
           if not order_of_magnitude_match(meds[(z, n, "dc")], pv[4])}
    report("5.3 pilot D-C (xfail)", misses=bad)
    assert not bad


# --------------------------------------------------------------------------------------------
# R15 / R16: the cluster experiment, through the engine's queueing proxy (spec 3.6, A19)


@pytest.fixture(scope="module")
def proxy_results(zipf_dataset):
    """n = 80, s = 48, |K| = 1e4, m = 5e5 (paper 2e6), z in {1.4, 1.7, 2.0}, 1 ms per message,
    deterministic arrivals at the A19 calibration lambda ~ 5000 msg/s (engine provisioning
    = 100 n / (S lambda) = 1600 %), hash seed 0."""
    m, n, s = 500_000, 80, 48
    lam = 5.0  # msg per ms
    prov = 100.0 * n / (1.0 * lam)
    out = {}
    for z in (1.4, 1.7, 2.0):
        res = replay(zipf_dataset(z, K, m, 11), grid(["kg", "pkg", "sg", "dc", "wc"], [n], [s], [0]),
                     ReplayConfig(provisioning=prov))
        rows = {r["strategy"]: r for r in res.summary}
        out[z] = {st: {"X": r["throughput"], "p99": r["latency_p99"], "p50": r["latency_p50"],
                       "wmax": r["latency_worker_mean_max"], "load_max": r["load_max"]} for st, r in rows.items()}
    ratios = {z: {"DC/PKG": o["dc"]["X"] / o["pkg"]["X"], "DC/KG": o["dc"]["X"] / o["kg"]["X"],
                  "WC/PKG": o["wc"]["X"] / o["pkg"]["X"], "SG/PKG": o["sg"]["X"] / o["pkg"]["X"],
                  "p99 DC vs PKG": 1 - o["dc"]["p99"] / o["pkg"]["p99"],
                  "p99 DC vs KG": 1 - o["dc"]["p99"] / o["kg"]["p99"],
                  "p99 PKG/KG": o["pkg"]["p99"] / o["kg"]["p99"],
                  "p99 PKG/SG": o["pkg"]["p99"] / o["sg"]["p99"]} for z, o in out.items()}
    report("R15/R16 proxy", provisioning=prov,
           values={str(z): {st: {k: sig(v, 4) for k, v in d.items()} for st, d in o.items()} for z, o in out.items()},
           ratios={str(z): {k: sig(v, 3) for k, v in r.items()} for z, r in ratios.items()})
    return out, ratios


@pytest.mark.slow
def test_r15_r16_queueing_proxy(proxy_results):
    """R15/R16 (T ratios, A; here qualitative only, A19) on the engine's queueing proxy.  The
    engine has no max-spout-pending back-pressure, so an overloaded scheme's latency grows with m
    and the paper's orderings are the claim: throughput KG < PKG < D-C ~ W-C ~ SG (within 2%;
    PKG = D-C at z = 1.4, where neither saturates) with the gaps widening in z; KG's latency
    growing with z; p99 latency KG > PKG > D-C, W-C, SG at z = 1.7 and 2.0 (z = 1.4 is the xfail
    test below).  The values REPRODUCTION.md prints (including the SG/D-C/W-C latencies of the
    herding note) are asserted; they are not a reproduction of the paper's 1.5x / 2.3x / -60% /
    -75% (with lambda calibrated as A19 says, SG/PKG at z = 2.0 is ~1.5 by construction)."""
    out, ratios = proxy_results
    for z, o in out.items():
        assert o["kg"]["X"] < o["pkg"]["X"], z
        assert o["pkg"]["X"] < o["dc"]["X"] if z > 1.4 else round(o["pkg"]["X"]) == round(o["dc"]["X"]), z
        best = max(o[st]["X"] for st in ("dc", "wc", "sg"))
        assert all(o[st]["X"] >= 0.98 * best for st in ("dc", "wc", "sg")), z
    for z in (1.7, 2.0):
        o = out[z]
        assert o["kg"]["p99"] > o["pkg"]["p99"] > max(o[st]["p99"] for st in ("dc", "wc", "sg")), z
    zs = sorted(out)
    for a, b in zip(zs, zs[1:]):
        assert ratios[b]["DC/PKG"] > ratios[a]["DC/PKG"]
        assert ratios[b]["DC/KG"] > ratios[a]["DC/KG"]
        assert out[b]["kg"]["p99"] > out[a]["kg"]["p99"]
    # the values REPRODUCTION.md prints (z = 1.4, 1.7, 2.0)
    xs = {"kg": [3033, 2052, 1645], "pkg": [5000, 4108, 3291], "dc": [5000] * 3, "wc": [5000, 5000, 4999], "sg": [4998] * 3}
    assert {st: [round(out[z][st]["X"]) for z in zs] for st in xs} == xs
    assert [round(ratios[z]["DC/PKG"], 2) for z in zs] == [1.0, 1.22, 1.52]
    assert [round(ratios[z]["DC/KG"], 2) for z in zs] == [1.65, 2.44, 3.04]
    assert [sig(out[z]["kg"]["p99"], 2) for z in zs] == [6.3e4, 1.4e5, 2.0e5]
    assert [round(ratios[z]["p99 PKG/KG"], 2) for z in (1.7, 2.0)] == [0.15, 0.25]
    assert [sig(ratios[z]["p99 PKG/SG"], 3) for z in (1.7, 2.0)] == [551, 1320]
    assert [round(ratios[z]["p99 DC vs PKG"], 3) for z in (1.7, 2.0)] == [0.999, 0.999]
    assert [round(ratios[z]["p99 DC vs KG"], 4) for z in (1.7, 2.0)] == [0.9998, 0.9999]
    assert round(out[1.4]["pkg"]["p99"], 1) == 6.4 and round(out[1.4]["pkg"]["load_max"], 3) == 0.164
    for z in zs:
        assert round(out[z]["dc"]["p99"], 1) == round(out[z]["wc"]["p99"], 1) == 29.0, z
        assert (round(out[z]["sg"]["p50"], 1), round(out[z]["sg"]["p99"], 1)) == (19.4, 38.6), z


@pytest.mark.slow
@pytest.mark.xfail(strict=True, raises=AssertionError, reason=(
    "R16 latency ordering PKG > SG ~ D-C ~ W-C at z = 1.4: at lambda = 5000 msg/s PKG is not "
    "saturated (max load 0.164 -> 820 msg/s on its busiest worker, capacity 1000), p99 6.4 ms, "
    "while SG (38.6 ms) and D-C/W-C (29 ms) pay for synchronised bursts: all 48 sources start "
    "their SG pointer at worker 0 and W-C's ties go to the lowest index, so with deterministic "
    "arrivals the sources herd onto the same worker (a modelling artefact of A6/A13, not of "
    "load balance)."))
def test_r16_latency_ordering_at_z_1_4(proxy_results):
    out, _ = proxy_results
    o = out[1.4]
    assert o["kg"]["p99"] > o["pkg"]["p99"] > max(o[st]["p99"] for st in ("dc", "wc", "sg"))
