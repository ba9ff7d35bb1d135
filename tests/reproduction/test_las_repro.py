"""Reproduction of the LAS paper's targets T1-T15 (``las.spec.md`` section 5).

Rivetti, Busnel, Querzoni, *Load-Aware Shedding in Stream Processing Systems*, DEBS 2016.  The
paper's figures have no plotted values in the text, so nearly every target is an ordering, a
trend or a number the prose states; the verdicts and measured numbers are in
``REPRODUCTION.md`` (LAS section).

Setup (spec 4.1-4.3 and the section 6 choices the engine makes)
---------------------------------------------------------------
* Streams: ``m = 32,768`` tuples over ``n = 4,096`` keys drawn i.i.d. from Zipf (Uniform for
  ``alpha = 0``), 64 durations 0.1..6.4 ms assigned to a shuffled key -> group mapping.  Run
  ``(i, j)`` is mapping ``i`` (its own shuffle) with sample seed ``j`` (stream order, hash
  functions, Base Line's coins and the warm-up sample): spec 4.1's 100 mappings x 50 seeds,
  reduced to :data:`MAPPINGS` x :data:`SEEDS`.
* Every number goes through :func:`skewbench.shedding.engine.simulate_operator`, the function
  the replay engine runs per cell: evenly spaced arrivals at ``P = 100 (1 - u)`` percent of the
  capacity computed from the run's own mean duration (A6-A8), LAS warm-started (A5) for E1/E2
  and cold for E3, tau = 6.4 ms (E1, E2), 64 ms (E3), 32 ms (E4).
* "mean Q" is the mean over runs of each run's mean queueing latency.

Every test prints its measured values as ``REPRO {json}`` lines (``-s``); with
``SKEWBENCH_REPRO_LOG=/some/file.jsonl`` they are also appended there.
"""

from __future__ import annotations

import functools
import os

import numpy as np
import pytest

from skewbench.shedding.engine import operator_data, simulate_operator
from tests.reproduction.common import record, rounds_to

pytestmark = pytest.mark.reproduction

FULL = os.environ.get("SKEWBENCH_REPRODUCE") == "full" or os.environ.get("SKEWBENCH_SLOW") == "1"
MAPPINGS, SEEDS = (20, 5) if FULL else (6, 2)
M, N_KEYS, TAU = 32768, 4096, 6.4
U_GRID = [90, 80, 70, 60, 50, 40, 30, 20, 10, 0, -10]
ALPHAS = [0.0, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0]
KINDS = ("bl", "sm", "las", "fk")
BASE = 20161


def pick(fast, full):
    """A measured value of the fast subset (the one REPRODUCTION.md quotes) or of the full set."""
    return full if FULL else fast


def shown(x, printed, decimals: int) -> bool:
    """x rounds to `printed` at `decimals` places, the precision REPRODUCTION.md gives it."""
    return rounds_to(x, printed, 10.0 ** -decimals)


def zipf_keys(rng: np.random.Generator, m: int, n: int, alpha: float) -> np.ndarray:
    p = np.arange(1, n + 1, dtype=np.float64) ** (-alpha)
    cdf = np.cumsum(p)
    cdf /= cdf[-1]
    return np.minimum(np.searchsorted(cdf, rng.random(m), side="right"), n - 1).astype(np.int64)


@functools.lru_cache(maxsize=None)
def mapping(i: int, n: int = N_KEYS, levels: int = 64, lo: float = 0.1, hi: float = 6.4) -> np.ndarray:
    rng = np.random.default_rng([BASE, i])
    vals = lo + np.arange(levels) * (hi - lo) / (levels - 1)
    table = np.empty(n)
    table[rng.permutation(n)] = vals[(np.arange(n) * levels) // n]
    return table


def stream(i: int, j: int, alpha: float = 1.0, m: int = M):
    keys = zipf_keys(np.random.default_rng([BASE, i, j]), m, N_KEYS, alpha)
    return keys, mapping(i)[keys]


@functools.lru_cache(maxsize=None)
def e1_data(i: int, j: int, alpha: float):
    """Run (i, j)'s stream as the operator sees it (shared by every strategy and u)."""
    keys, cost = stream(i, j, alpha)
    return operator_data(keys, cost)


@functools.lru_cache(maxsize=None)
def e1_runs(alpha: float, u_grid: tuple[int, ...], strategy: str, params: tuple = ()) -> dict:
    """{u: [(Q mean, dropped, DR, lambda, prefix violations, prefix max)] per run} of one strategy."""
    out: dict = {}
    for i in range(MAPPINGS):
        for j in range(SEEDS):
            d = e1_data(i, j, alpha)
            for u in u_grid:
                row, _, _ = simulate_operator(strategy, dict(params), d, 100 - u, TAU, j, opt_window=0)
                out.setdefault(u, []).append(
                    (row["queueing_latency_mean"], row["dropped"], row["dropped_ratio"], row["shed_lambda"],
                     row["prefix_violation_share"], row["prefix_max"]))
    return out


def e1(alpha: float = 1.0, u_grid: tuple[int, ...] = tuple(U_GRID), extra: tuple = ()) -> dict:
    """{(kind, u): [(Q mean, dropped, DR, lambda, prefix violations, prefix max)] per run}; each
    strategy's runs computed once per session (``extra`` adds LAS variants, keyed ``las{params}``)."""
    out: dict = {}
    for k in KINDS:
        out.update({(k, u): v for u, v in e1_runs(alpha, u_grid, k).items()})
    for name, params in extra:
        out.update({(f"{name}{dict(params)}", u): v for u, v in e1_runs(alpha, u_grid, name, params).items()})
    return out


def col(runs, i):
    return np.array([r[i] if r[i] is not None else np.nan for r in runs], dtype=float)


# --------------------------------------------------------------------------------------------
# E1 (Fig. 4): Q vs under-provisioning


def test_t1_over_provisioned_nobody_needs_to_shed():
    r = e1()
    q = {k: col(r[(k, -10)], 0) for k in KINDS}
    drops = {k: col(r[(k, -10)], 2) for k in KINDS}
    record("T1", q_mean={k: v.mean() for k, v in q.items()}, dr_mean={k: v.mean() for k, v in drops.items()})
    assert (drops["bl"] == 0).all() and (drops["sm"] == 0).all()
    # "FK and LAS drop ~0": 0.011% and 0.043% (full set 0.012%, 0.071%); an early burst can lift the
    # running average over tau for a few tuples even at 91% load
    assert shown(drops["fk"].mean(), pick(0.00011, 0.00012), 5), drops["fk"].mean()
    assert shown(drops["las"].mean(), pick(0.00043, 0.00071), 5), drops["las"].mean()
    # Q mean BL 3.98, SM 3.98, LAS 3.95, FK 3.96 ms (full set 4.17, 4.17, 4.13, 4.14)
    exp = pick([3.98, 3.98, 3.95, 3.96], [4.17, 4.17, 4.13, 4.14])
    assert all(shown(q[k].mean(), e, 2) for k, e in zip(KINDS, exp)), {k: v.mean() for k, v in q.items()}
    # "all four alike": every strategy's mean Q within 0.8% of Base Line's, which keeps all (full set 1%)
    for k in KINDS:
        assert abs(q[k].mean() - q["bl"].mean()) <= pick(0.008, 0.01) * q["bl"].mean(), (k, q[k].mean(), q["bl"].mean())


def test_t2_base_line_and_straw_man_far_above_the_bound():
    r = e1()
    per_u = {k: {u: col(r[(k, u)], 0).mean() / TAU for u in U_GRID if u >= 0} for k in ("bl", "sm")}
    worst = {k: min(v.values()) for k, v in per_u.items()}
    record("T2", min_q_over_tau=worst, per_u={f"{k}{u}": v for k in per_u for u, v in per_u[k].items()})
    # the smallest: BL 11.8x, SM 7.7x, both at u = 90% (full set 15.8x, 8.5x)
    assert shown(worst["bl"], pick(11.8, 15.8), 1) and shown(worst["sm"], pick(7.7, 8.5), 1), worst
    assert min(per_u["bl"], key=per_u["bl"].get) == 90 and min(per_u["sm"], key=per_u["sm"].get) == 90
    # BL's largest, 29.4-30.6x (full set 24.6-26.3x), at u = 30-50%
    lo, hi = pick((29.4, 30.6), (24.6, 26.3))
    mid = [per_u["bl"][u] for u in (30, 40, 50)]
    assert shown(min(mid), lo, 1) and shown(max(mid), hi, 1) and max(mid) == max(per_u["bl"].values()), per_u["bl"]


@functools.lru_cache(maxsize=None)
def t3_values() -> dict:
    eps = 0.05
    r = e1(extra=(("las", (("inflation", 0.0),)),))
    per_u = {}
    for u in U_GRID:
        if u < 0:
            continue
        q = col(r[("las", u)], 0)
        qa = col(r[("las{'inflation': 0.0}", u)], 0)
        dr = col(r[("las", u)], 2)
        per_u[u] = {"q_over_tau": q.mean() / TAU, "runs_over_tau": float((q > TAU).mean()),
                    "dr": dr.mean(), "dr_predicted": 1 - (1 - u / 100) / (1 + eps),
                    "ablation_q_over_tau": qa.mean() / TAU}
    record("T3", per_u=per_u)
    return per_u


def test_t3_las_close_to_the_bound_and_its_drop_rate():
    vals = t3_values()
    # the paper: "close to 6.4 ms", some runs above: mean Q / tau per u as REPRODUCTION.md lists it
    # (full set 0.88-1.16), and 25-67% of the runs above tau (full set 25-77%)
    qt = {u: v["q_over_tau"] for u, v in vals.items()}
    exp = {0: 1.16, 10: 1.08, 20: 1.01, 30: 1.03, 40: 0.99, 50: 0.94, 60: 0.99, 70: 0.93, 80: 0.94, 90: 1.08}
    if not FULL:
        assert all(shown(qt[u], e, 2) for u, e in exp.items()), qt
    assert shown(min(qt.values()), pick(0.93, 0.88), 2) and shown(max(qt.values()), 1.16, 2), qt
    runs = [v["runs_over_tau"] for v in vals.values()]
    assert min(runs) == 0.25 and shown(max(runs), pick(0.67, 0.77), 2), runs
    # the spec's sanity prediction of LAS's drop rate, 1 - (1-u)/(1+eps): within 0.22 points, most off
    # at u = 0 (full set 0.43 points); LAS's rate at u = 0, 10, 30, 50, 90%: 0.0498, 0.1422, 0.3331,
    # 0.5240, 0.9043
    off = {u: abs(v["dr"] - v["dr_predicted"]) for u, v in vals.items()}
    assert max(off, key=off.get) == 0 and shown(off[0], pick(0.0022, 0.0043), 4), off
    if not FULL:
        exp = {0: 0.0498, 10: 0.1422, 30: 0.3331, 50: 0.5240, 90: 0.9043}
        assert all(shown(vals[u]["dr"], e, 4) for u, e in exp.items()), vals
    # over tau on average by 1-16% at u = 0, 10, 20, 30, 90% (full set 0.3-16% at 0-40%): the miss of
    # the next test
    over = [u for u, v in qt.items() if v > 1]
    assert over == pick([90, 30, 20, 10, 0], [40, 30, 20, 10, 0]), over
    assert shown(min(qt[u] for u in over) - 1, pick(0.01, 0.003), pick(2, 3)) and shown(max(qt.values()) - 1, 0.16, 2)


@pytest.mark.xfail(strict=True, raises=AssertionError, reason="T3 as the issue words it (LAS at or under tau on average at every u): "
                   "over tau by 1-16% at u = 0, 10, 20, 30, 90% (full set 0.3-16% at u = 0-40%; REPRODUCTION.md); "
                   "the paper says 'close to tau'")
def test_t3_las_at_or_under_the_bound_at_every_u():
    for u, v in t3_values().items():
        assert v["q_over_tau"] <= 1.0, (u, v)


@pytest.mark.xfail(strict=True, raises=AssertionError, reason="T3 ablation: without the (1+eps) factor LAS's Q is 5-12x tau "
                   "(full set 4.6-9.4x), not at tau as the spec's sanity note predicts: with no margin each run's "
                   "Count-Min error shows in Q, most where the estimates are low "
                   "(test_t3_ablation_follows_the_sketch_error, REPRODUCTION.md)")
def test_t3_ablation_without_the_factor_sits_at_the_bound():
    for u, v in t3_values().items():
        if u >= 10:
            assert 0.85 <= v["ablation_q_over_tau"] <= 1.15, (u, v)


@functools.lru_cache(maxsize=None)
def sketch_errors() -> np.ndarray:
    """Per E1 run, in e1's order: the relative error of the Count-Min estimate of the stream's mean
    duration (one sketch of the whole stream with the run's hash functions, r = 4, c = 54)."""
    from skewbench.shedding import las

    rows, cols = las.sketch_shape(0.05, 0.1)
    out = []
    for i in range(MAPPINGS):
        for j in range(SEEDS):
            keys, cost = stream(i, j)
            ha, hb = las.hash_params(j, rows)
            F, W = las.sketch(keys, cost, ha, hb, cols)
            out.append(las.estimate(F, W, keys, ha, hb).mean() / cost.mean() - 1)
    return np.array(out)


def test_t3_ablation_follows_the_sketch_error():
    """Why the ablation misses: the sketch is not biased overall (2.4% low to 2.4% high per run), but
    without the margin every run ends over tau, and the further the lower its run's estimates."""
    err = sketch_errors()
    r = e1(extra=(("las", (("inflation", 0.0),)),))
    q = {u: col(r[("las{'inflation': 0.0}", u)], 0) for u in U_GRID if u >= 0}
    corr = {u: float(np.corrcoef(err, v)[0, 1]) for u, v in q.items()}
    under = {u: int(np.sum(v <= TAU)) for u, v in q.items()}
    record("T3 ablation", sketch_error=(err.min(), err.max(), err.mean()), corr_error_q=corr,
           runs_at_or_under_tau=under, min_q_over_tau={u: v.min() / TAU for u, v in q.items()})
    lo, hi = pick((-0.024, 0.024), (-0.024, 0.046))  # 2.4% low to 2.4% high (full set 4.6%)
    assert shown(err.min(), lo, 3) and shown(err.max(), hi, 3), err
    assert shown(err.mean(), pick(0.0002, 0.0009), 4), err  # 0.02% on average (full set 0.09%)
    lo, hi = pick((-0.98, -0.86), (-0.88, -0.60))  # per u, -0.86 to -0.98 (full set -0.60 to -0.88)
    assert shown(min(corr.values()), lo, 2) and shown(max(corr.values()), hi, 2), corr
    assert under == {u: 0 for u in q} | pick({}, {90: 2}), under  # every run over tau (full set: all but 2 at u = 90%)
    # mean Q / tau 9.4-11.9 at u = 10..90%, 5.1 at u = 0 (full set 8.5-9.4, 4.6)
    abl = {u: v["ablation_q_over_tau"] for u, v in t3_values().items()}
    lo, hi, at0 = pick((9.4, 11.9, 5.1), (8.5, 9.4, 4.6))
    rest = [v for u, v in abl.items() if u >= 10]
    assert shown(min(rest), lo, 1) and shown(max(rest), hi, 1) and shown(abl[0], at0, 1), abl


def test_t4_t16_full_knowledge_never_breaks_the_bound():
    r = e1()
    worst_q, worst_prefix, per_run = 0.0, 0.0, {}
    means = {}
    for u in U_GRID:
        q = col(r[("fk", u)], 0)
        worst_q = max(worst_q, np.nanmax(q) / TAU)
        worst_prefix = max(worst_prefix, np.nanmax(col(r[("fk", u)], 4)))
        per_run[u] = int(np.sum(col(r[("fk", u)], 1) > col(r[("las", u)], 1)))
        means[u] = (col(r[("fk", u)], 1).mean(), col(r[("las", u)], 1).mean())
    record("T4", worst_run_q_over_tau=worst_q, worst_prefix_violation_share=worst_prefix,
           runs_fk_drops_more_than_las=per_run, mean_drops_fk_las=means)
    assert worst_q <= 1.0 + 1e-9 and worst_prefix == 0.0
    assert shown(worst_q, pick(0.99999998, 0.99999999), 8), worst_q
    for u, (fk, las_) in means.items():
        if u > 0:  # overloaded: FK drops less than LAS on average
            assert fk < las_, (u, fk, las_)
    # per run FK dropped more than LAS only at u = 0 and -10%: 3 and 3 runs (full set 7 and 24)
    assert per_run == {u: 0 for u in U_GRID if u > 0} | {0: pick(3, 7), -10: pick(3, 24)}, per_run


def test_t5_drop_ordering():
    r = e1()
    rows = {}
    for u in U_GRID:
        if u <= 0:
            continue
        d = {k: col(r[(k, u)], 1).mean() for k in KINDS}
        rows[u] = d
    record("T5", mean_drops=rows)
    # u = 50%: BL / SM / FK / LAS drop 16,465 / 16,382 / 16,374 / 17,171 (full set 16,408 / 16,382 / 16,384 / 17,167)
    exp = pick([16465, 16382, 16374, 17171], [16408, 16382, 16384, 17167])
    assert all(shown(rows[50][k], e, 0) for k, e in zip(("bl", "sm", "fk", "las"), exp)), rows[50]
    # at u = 0 BL and SM drop nothing, FK does (FK above SM at every u <= 30%)
    assert col(r[("bl", 0)], 1).max() == col(r[("sm", 0)], 1).max() == 0 < col(r[("fk", 0)], 1).mean()
    for u, d in rows.items():
        assert abs(d["bl"] - d["sm"]) <= 0.009 * d["bl"], (u, d)  # d_BL ~ d_SM: within 0.9%
        if u >= 40:  # FK ties with SM: within 0.11%
            assert abs(d["fk"] / d["sm"] - 1) <= 0.0011, (u, d)
        else:
            assert d["fk"] > d["sm"], (u, d)
        assert d["fk"] < d["las"] and max(d["bl"], d["sm"]) < d["las"], (u, d)
        # LAS drops the most: at most 1.42x BL and 4.2% of the stream more (full set 1.43x, 4.35%)
        assert d["las"] <= pick(1.425, 1.44) * d["bl"] and d["las"] - d["bl"] <= pick(0.0425, 0.044) * M, (u, d)
    assert max(rows, key=lambda u: rows[u]["las"] / rows[u]["bl"]) == 10
    assert max(rows, key=lambda u: rows[u]["las"] - rows[u]["bl"]) == 10
    d = rows[10]
    assert shown(d["las"] / d["bl"], pick(1.42, 1.43), 2), d
    assert shown((d["las"] - d["bl"]) / M, pick(0.042, 0.0435), pick(3, 4)), d
    # FK below SM at u = 60 and 50% (full set at 60%)
    assert [u for u, d in rows.items() if d["fk"] < d["sm"]] == pick([60, 50], [60]), rows


# --------------------------------------------------------------------------------------------
# E2 (Fig. 5): distributions at u = 25%


@functools.lru_cache(maxsize=None)
def e2() -> dict:
    return {a: e1(a, (25,)) for a in ALPHAS}


def test_t6_t7_t8_distributions():
    r = e2()
    q = {k: [col(r[a][(k, 25)], 0).mean() for a in ALPHAS] for k in KINDS}
    spread = {k: [np.ptp(col(r[a][(k, 25)], 0)) for a in ALPHAS] for k in ("bl", "sm")}
    lam = {k: [np.nanmean(col(r[a][(k, 25)], 3)) for a in ALPHAS] for k in ("sm", "las", "fk")}
    record("T6-T8", alphas=ALPHAS, q_mean=q, bl_sm_spread=spread, lambda_mean=lam)
    # T6: Base Line and Straw-Man bad for every distribution: BL 119-174, SM 75-150 ms, at least
    # 11.7x tau (full set BL 109-149, SM 68-146 ms, 10.6x)
    exp = pick({"bl": (119, 174), "sm": (75, 150)}, {"bl": (109, 149), "sm": (68, 146)})
    assert all(shown(min(q[k]), lo, 0) and shown(max(q[k]), hi, 0) for k, (lo, hi) in exp.items()), q
    assert shown(min(min(q["bl"]), min(q["sm"])) / TAU, pick(11.7, 10.6), 1), q
    # T7: LAS improves with skew (to or below tau), worst on Uniform / Zipf-0.5, falling from 0.5 on
    worst = int(np.argmax(q["las"]))
    assert ALPHAS[worst] in (0.0, 0.5) and q["las"][-1] < q["las"][0]
    assert np.all(np.diff(q["las"][1:]) < 0), q["las"]
    exp = pick([10.72, 12.28, 6.81, 2.37, 1.66, 1.36, 1.17], [10.58, 10.66, 6.64, 2.55, 1.82, 1.54, 1.37])
    assert np.allclose(q["las"], exp, atol=0.006), q["las"]
    assert all(v <= TAU for a, v in zip(ALPHAS, q["las"]) if a >= 1.5)
    # T8 is checked in test_t8_lambda_falls_with_skew (a miss is reported, not hidden); its numbers here:
    exp = pick([0.139, 0.126, 0.129, 0.131, 0.133, 0.134, 0.132], [0.137, 0.136, 0.138, 0.140, 0.138, 0.137, 0.135])
    assert all(shown(v, e, 3) for v, e in zip(lam["las"], exp)), lam["las"]
    # T6's other half (the spread widening with skew) is checked in test_t6_spread_widens_with_skew (a miss);
    # its numbers here: the run-to-run spread (max - min of the runs' mean Q) per distribution, whole ms, and
    # its Spearman correlation with alpha at two decimals
    exp = pick({"bl": [107, 141, 138, 148, 229, 119, 109], "sm": [175, 175, 290, 223, 139, 114, 186]},
               {"bl": [199, 247, 208, 265, 244, 290, 232], "sm": [266, 210, 298, 233, 318, 263, 201]})
    assert all(shown(v, e, 0) for k in exp for v, e in zip(spread[k], exp[k])), spread
    rho = {k: spearman(ALPHAS, spread[k]) for k in ("bl", "sm")}
    assert shown(rho["bl"], pick(0.07, 0.43), 2) and shown(rho["sm"], pick(-0.18, -0.25), 2), rho


def spearman(x, y) -> float:
    """Spearman's rank correlation (no ties in these values)."""
    rx, ry = np.argsort(np.argsort(x)), np.argsort(np.argsort(y))
    return float(np.corrcoef(rx, ry)[0, 1])


@pytest.mark.xfail(strict=True, raises=AssertionError, reason="T6: BL's and SM's run-to-run spread does not widen "
                   "with skew: Spearman rho(alpha, spread) BL 0.07, SM -0.18 (full set 0.43, -0.25); see REPRODUCTION.md")
def test_t6_spread_widens_with_skew():
    """T6's second half (las.spec.md 5): BL's and SM's run-to-run spread (max - min over the runs' mean Q)
    widens with skew, read as a rank correlation of at least 0.5 between alpha and the spread for both."""
    r = e2()
    spread = {k: [np.ptp(col(r[a][(k, 25)], 0)) for a in ALPHAS] for k in ("bl", "sm")}
    record("T6 spread", alphas=ALPHAS, spread=spread)
    assert all(spearman(ALPHAS, v) >= 0.5 for v in spread.values()), spread


@pytest.mark.xfail(strict=True, raises=AssertionError, reason="T8: the (1+eps) over-estimate sets LAS's extra drops almost "
                   "independently of skew (spec section 5 sanity note); see REPRODUCTION.md")
def test_t8_lambda_falls_with_skew():
    r = e2()
    lam = [np.nanmean(col(r[a][("las", 25)], 3)) for a in ALPHAS]
    record("T8", lambda_las=lam)
    assert lam[-1] < lam[0] and np.corrcoef(ALPHAS, lam)[0, 1] < -0.5


# --------------------------------------------------------------------------------------------
# E3 (Fig. 6): the seven phases


PHASES = "ABCDEFG"
PH = 20000
E3_TAU = 64.0
E3_WINDOW = 4000


def phased_stream(i: int, j: int):
    """The seven phases of spec 4.3 E3 as keys, true durations and arrival gaps (in units of W_A)."""
    costs = mapping(i)
    rng = np.random.default_rng([BASE, 7, i, j])
    keys = zipf_keys(rng, 7 * PH, N_KEYS, 1.0)
    # t*: a key with w = w_max other than key 0 (redraw if w(0) = w_max is handled by choosing i)
    cand = np.flatnonzero(costs == costs.max())
    cand = cand[cand != 0]
    t_star = int(np.random.default_rng([BASE, 8, i]).choice(cand))
    k = keys.copy()
    swap = slice(3 * PH, 7 * PH)  # D..G: frequencies of key 0 and t* swapped
    seg = k[swap]
    z, t = seg == 0, seg == t_star
    seg[z], seg[t] = t_star, 0
    k[swap] = seg
    w = costs[k].copy()
    w[5 * PH:6 * PH] *= 2.0  # F: every duration doubled
    rate = np.ones(7 * PH)   # relative to 1/W_A
    rate[1 * PH:2 * PH] = 2.0
    rate[4 * PH:5 * PH] = 1 / 1.5
    ts = np.concatenate([[0.0], np.cumsum(1.0 / rate[1:])])
    return k, w, ts


@functools.lru_cache(maxsize=None)
def e3() -> dict:
    runs = 20 if FULL else 4
    out: dict = {k: [] for k in ("sm", "las", "fk")}
    for r in range(runs):
        i = r if mapping(r)[0] != mapping(r).max() else r + 1000
        k, w, ts = phased_stream(i, r)
        d = operator_data(k, w, ts=ts, ref_end=PH, phase_starts=[p * PH for p in range(7)])
        for kind in out:
            params = {"warm": False} if kind == "las" else {}
            _, series, _ = simulate_operator(kind, params, d, 100, E3_TAU, r, E3_WINDOW, opt_window=0)
            out[kind].append(series)
    return out


def phase_values(runs, metric: str) -> np.ndarray:
    """[run, window] of a series metric."""
    return np.array([[s[metric] if s[metric] is not None else np.nan for s in run] for run in runs], dtype=float)


def per_phase(x: np.ndarray) -> dict:
    wpp = PH // E3_WINDOW
    return {p: x[:, i * wpp:(i + 1) * wpp] for i, p in enumerate(PHASES)}


@functools.lru_cache(maxsize=None)
def e3_summary() -> dict:
    r = e3()
    q = {k: per_phase(phase_values(v, "queueing_latency_mean")) for k, v in r.items()}
    dr = {k: per_phase(phase_values(v, "dropped_ratio")) for k, v in r.items()}
    summary = {k: {p: {"q": float(np.nanmean(q[k][p])), "q_first": float(np.nanmean(q[k][p][:, 0])),
                       "q_last": float(np.nanmean(q[k][p][:, -1])), "q_peak": float(np.nanmean(np.nanmax(q[k][p], 1))),
                       "dr": float(np.nanmean(dr[k][p])),
                       "runs_recovered": float(np.mean(q[k][p][:, -1] < np.nanmax(q[k][p], 1) / 2))}
                   for p in PHASES} for k in r}
    record("T9-T14", per_strategy=summary)
    return summary


def phase_a() -> dict:
    """LAS's and FK's phase-A window Q ([run, window]) and its mean over runs per window."""
    q = {k: per_phase(phase_values(e3()[k], "queueing_latency_mean"))["A"] for k in ("las", "fk")}
    return {"runs": q, "mean": {k: np.nanmean(v, 0) for k, v in q.items()}}


def test_t9_phase_a():
    s = e3_summary()
    sm, las, fk = s["sm"], s["las"], s["fk"]
    a = phase_a()
    later = {k: v[1:] for k, v in a["mean"].items()}  # the windows after the first
    ratio = later["fk"] / later["las"]
    record("T9", las_windows=a["mean"]["las"].tolist(), fk_windows=a["mean"]["fk"].tolist(),
           fk_over_las_later=ratio.tolist(),
           las_largest_run_later=float(a["runs"]["las"][:, 1:].max()))
    # SM grows: every later window's mean Q above the first's (58.3 -> 149.6 ms; full set 65.3 -> 151.1), its
    # windows 58.3, 128.4, 149.9, 111.2, 149.6 ms (full set 65.3, 110.9, 155.5, 152.6, 151.1): not steadily
    # (test_t9_sm_grows_steadily, a miss); and it drops nothing
    assert shown(sm["A"]["q_first"], pick(58.3, 65.3), 1) and shown(sm["A"]["q_last"], pick(149.6, 151.1), 1), sm["A"]
    sm_windows = sm_phase_a_windows()
    exp = pick([58.3, 128.4, 149.9, 111.2, 149.6], [65.3, 110.9, 155.5, 152.6, 151.1])
    assert len(sm_windows) == 5 and all(shown(v, e, 1) for v, e in zip(sm_windows, exp)), sm_windows
    assert np.all(sm_windows[1:] > sm_windows[0]), sm_windows
    assert sm["A"]["dr"] == 0
    # LAS under tau from the 2nd window on, in every run (largest 31.3 ms; full set 55.5): window means
    # 9.5-18.9 ms, 0.15-0.29 tau (full set 11.0-17.4 ms, 0.17-0.27 tau)
    assert np.all(a["runs"]["las"][:, 1:] <= E3_TAU), a["runs"]["las"]
    assert shown(a["runs"]["las"][:, 1:].max(), pick(31.3, 55.5), 1), a["runs"]["las"]
    lo, hi = pick((9.5, 18.9), (11.0, 17.4))
    assert shown(later["las"].min(), lo, 1) and shown(later["las"].max(), hi, 1), later
    lo, hi = pick((0.15, 0.29), (0.17, 0.27))
    assert shown(later["las"].min() / E3_TAU, lo, 2) and shown(later["las"].max() / E3_TAU, hi, 2), later
    # FK's windows 48.3-80.2 ms, 0.75-1.25 tau (full set 52.8-67.0 ms, 0.82-1.05 tau): its running average
    # spends the slack of the cold start; 3.5-6.2x LAS's (full set 3.4-5.6x)
    lo, hi = pick((48.3, 80.2), (52.8, 67.0))
    assert shown(later["fk"].min(), lo, 1) and shown(later["fk"].max(), hi, 1), later
    lo, hi = pick((0.75, 1.25), (0.82, 1.05))
    assert shown(later["fk"].min() / E3_TAU, lo, 2) and shown(later["fk"].max() / E3_TAU, hi, 2), later
    lo, hi = pick((3.5, 6.2), (3.4, 5.6))
    assert shown(ratio.min(), lo, 1) and shown(ratio.max(), hi, 1), ratio
    # the end of A: LAS 12.9 ms, 0.20 tau (full set 14.1, 0.22); FK 80.2 ms, 1.25 tau (full set 67.0, 1.05)
    assert shown(las["A"]["q_last"], pick(12.9, 14.1), 1) and shown(las["A"]["q_last"] / E3_TAU, pick(0.20, 0.22), 2)
    assert shown(fk["A"]["q_last"], pick(80.2, 67.0), 1) and shown(fk["A"]["q_last"] / E3_TAU, pick(1.25, 1.05), 2)
    # drops LAS 3.8%, FK 0.5% (full set 3.7%, 0.5%): both more than SM's 0
    assert shown(las["A"]["dr"], pick(0.038, 0.037), 3) and shown(fk["A"]["dr"], 0.005, 3), (las["A"], fk["A"])


def sm_phase_a_windows() -> np.ndarray:
    """SM's phase-A window Q, the mean over runs of each window."""
    return np.nanmean(per_phase(phase_values(e3()["sm"], "queueing_latency_mean"))["A"], 0)


@pytest.mark.xfail(strict=True, raises=AssertionError, reason="T9 SM's Q 'grows steadily': its phase-A windows are "
                   "58.3, 128.4, 149.9, 111.2, 149.6 ms (full set 65.3, 110.9, 155.5, 152.6, 151.1): above the first, "
                   "not growing window after window (REPRODUCTION.md)")
def test_t9_sm_grows_steadily():
    """T9 (las.spec.md 5): SM's windowed Q grows steadily through phase A, read as every window's mean
    (over runs) above the one before it."""
    w = sm_phase_a_windows()
    record("T9 SM windows", sm_windows=w.tolist())
    assert np.all(np.diff(w) > 0), w


@pytest.mark.xfail(strict=True, raises=AssertionError, reason="T9 'LAS quickly joins FK': from phase A's 2nd window "
                   "LAS's window Q is 0.15-0.29 tau and FK's 0.75-1.25 tau, FK 3.5-6.2x LAS (full set 0.17-0.27 tau, "
                   "0.82-1.05 tau, 3.4-5.6x): LAS sits far under the bound, not with FK (REPRODUCTION.md)")
def test_t9_las_joins_full_knowledge():
    later = {k: v[1:] for k, v in phase_a()["mean"].items()}
    assert np.all(later["fk"] <= 2 * later["las"]) and np.all(later["las"] <= 2 * later["fk"]), later


def drops_pct(s: dict, phase: str) -> dict:
    return {k: 100 * s[k][phase]["dr"] for k in s}


def test_t10_phase_b_drops_half():
    # SM 49.9%, LAS 52.3%, FK 49.9% (full set LAS 52.1%)
    d = drops_pct(e3_summary(), "B")
    assert all(shown(d[k], e, 1) for k, e in zip(("sm", "las", "fk"), (49.9, pick(52.3, 52.1), 49.9))), d


def test_t11_phase_d_swap():
    s = e3_summary()
    sm, las, fk = s["sm"], s["las"], s["fk"]
    assert fk["D"]["dr"] > fk["C"]["dr"] and las["D"]["dr"] > las["C"]["dr"]
    assert abs(sm["D"]["dr"] - sm["C"]["dr"]) <= 0.01
    assert sm["D"]["q_last"] > 10 * E3_TAU and las["D"]["q_last"] <= 2 * E3_TAU
    # drops C -> D: FK 0.5% -> 9.6%, LAS 4.6% -> 12.7% (full set 0.5% -> 9.2%, 4.3% -> 12.0%), SM
    # 0.001% -> 0% (full set the same)
    c, d = drops_pct(s, "C"), drops_pct(s, "D")
    exp = pick({"fk": (0.5, 9.6), "las": (4.6, 12.7)}, {"fk": (0.5, 9.2), "las": (4.3, 12.0)})
    assert all(shown(c[k], a, 1) and shown(d[k], b, 1) for k, (a, b) in exp.items()), (c, d)
    assert shown(c["sm"], 0.001, 3) and d["sm"] == 0, (c, d)
    # the last D window: SM 6,453 ms, LAS 12.5 ms (full set 6,201, 12.5)
    assert shown(sm["D"]["q_last"], pick(6453, 6201), 0) and shown(las["D"]["q_last"], 12.5, 1), (sm["D"], las["D"])


def test_t12_phase_e_no_drops():
    """Phase E (rho ~ 0.67): nobody drops; LAS and FK end the phase at low Q in every run; SM
    too except in runs where it entered E with a phase-D backlog of over 10 s, which E cannot
    drain (2 of 20 runs in the full set: 11.8 and 13.5 s in, 1.2 and 2.7 s out)."""
    s = e3_summary()
    r = e3()
    last = {k: per_phase(phase_values(v, "queueing_latency_mean"))["E"][:, -1] for k, v in r.items()}
    first = per_phase(phase_values(r["sm"], "queueing_latency_mean"))["E"][:, 0]
    low = last["sm"] <= pick(1.12, 2.25)
    record("T12", sm_low_runs=int(low.sum()), runs=len(low), sm_last=[round(float(x), 2) for x in last["sm"]],
           dr={k: s[k]["E"]["dr"] for k in s}, las_fk_last_range=(float(min(last["las"].min(), last["fk"].min())),
                                                                  float(max(last["las"].max(), last["fk"].max()))))
    # drops 0 (full set LAS 0.0025%, FK 0.001%)
    assert s["sm"]["E"]["dr"] == 0, s
    assert shown(100 * s["las"]["E"]["dr"], pick(0, 0.0025), 4), s["las"]["E"]
    assert shown(100 * s["fk"]["E"]["dr"], pick(0, 0.001), 4), s["fk"]["E"]
    # last E window 0.44-1.11 ms in every run for all three (full set 0.27-2.24 ms, SM in 18 of the 20)
    lf = np.concatenate([last["las"], last["fk"], last["sm"][low]])
    assert shown(lf.min(), pick(0.44, 0.27), 2) and shown(lf.max(), pick(1.11, 2.24), 2), last
    # SM the same but in the full set's 2 runs with a phase-D backlog: 11.8 and 13.5 s in, 1.2 and 2.7 s out
    assert int((~low).sum()) == pick(0, 2), last["sm"]
    np.testing.assert_allclose(np.sort(first[~low]), pick([], [11849.0, 13492.0]), rtol=1e-3)
    np.testing.assert_allclose(np.sort(last["sm"][~low]), pick([], [1185.5, 2685.4]), rtol=1e-3)


def test_t13_phase_f_sm_diverges():
    s = e3_summary()
    assert s["sm"]["F"]["q_first"] > 2 * E3_TAU and s["las"]["F"]["q_first"] > 2 * E3_TAU
    assert s["sm"]["F"]["q_last"] > s["sm"]["F"]["q_first"]
    # first F window SM 8,050, LAS 6,538 ms; SM's last 71,802 ms (full set 7,961, 6,430, 71,070)
    exp = pick((8050, 6538, 71802), (7961, 6430, 71070))
    got = (s["sm"]["F"]["q_first"], s["las"]["F"]["q_first"], s["sm"]["F"]["q_last"])
    assert all(shown(g, e, 0) for g, e in zip(got, exp)), got
    # LAS within F (the miss below): back at the bound in 1 run (of 4; of 20 in the full set), mean
    # last-window Q 23,810 ms (full set 30,151)
    last = per_phase(phase_values(e3()["las"], "queueing_latency_mean"))["F"][:, -1]
    assert int(np.sum(last <= E3_TAU)) == 1, last
    assert shown(s["las"]["F"]["q_last"], pick(23810, 30151), 0), s["las"]["F"]


@functools.lru_cache(maxsize=None)
def e3_las_mu_inf_series() -> tuple:
    """LAS on the E3 runs with mu = inf (the operator ships matrices every 2N executions): its window series."""
    series = []
    for r in range(20 if FULL else 4):
        i = r if mapping(r)[0] != mapping(r).max() else r + 1000
        k, w, ts = phased_stream(i, r)
        d = operator_data(k, w, ts=ts, ref_end=PH, phase_starts=[p * PH for p in range(7)])
        series.append(simulate_operator("las", {"warm": False, "mu": float("inf")}, d, 100, E3_TAU, r, E3_WINDOW,
                                        opt_window=0)[1])
    return tuple(series)


def e3_las_mu_inf() -> np.ndarray:
    """[run, window] Q of LAS with mu = inf."""
    return phase_values(e3_las_mu_inf_series(), "queueing_latency_mean")


def test_t13_las_with_mu_inf_recovers_within_f():
    last = per_phase(e3_las_mu_inf())["F"][:, -1]
    record("T13 mu=inf", las_last_f=[round(float(x), 1) for x in last])
    assert shown(last.min(), 10, 0) and shown(last.max(), pick(17, 38), 0), last  # 10-17 ms (full set 10-38 ms)


@pytest.mark.xfail(strict=True, raises=AssertionError, reason="T13: LAS back at tau within phase F in 1 run of 4 "
                   "(1 of 20 in the full set); its sync waits for two stable operator windows and then for the "
                   "queued sync tuple (REPRODUCTION.md; with mu = inf it recovers in every run, "
                   "test_t13_las_with_mu_inf_recovers_within_f)")
def test_t13_phase_f_las_recovers_within_the_phase():
    s = e3_summary()
    assert s["las"]["F"]["runs_recovered"] == 1.0 and s["las"]["F"]["q_last"] <= 2 * E3_TAU, s["las"]["F"]


def test_t14_phase_g():
    s = e3_summary()
    sm, las = s["sm"]["G"], s["las"]["G"]
    assert sm["q"] > 10 * E3_TAU and sm["q_last"] > 10 * E3_TAU  # SM never recovers
    assert s["sm"]["G"]["dr"] == 0  # because it drops nothing
    assert las["q_last"] <= E3_TAU  # LAS back at the bound by the end
    # SM mean 83,299 ms, its windows growing 80,550 -> 86,023 ms (full set 82,359, 79,655 -> 85,032);
    # LAS enters G with F's backlog, 17,318 ms = 271 tau (full set 26,645, 416 tau), and its last window
    # is 2.7 ms (3.8)
    exp = pick((83299, 80550, 86023, 17318), (82359, 79655, 85032, 26645))
    got = (sm["q"], sm["q_first"], sm["q_last"], las["q_first"])
    assert all(shown(g, e, 0) for g, e in zip(got, exp)) and shown(las["q_last"], pick(2.7, 3.8), 1), (sm, las)
    assert shown(las["q_first"] / E3_TAU, pick(271, 416), 0), las
    # LAS's mean window Q is under tau from G's 2nd window on (full set 3rd), but it drops 61% of G
    # against FK's 10% (full set 68% and 9%), 85% -> 38% per window (full set 95% -> 38%)
    q = np.nanmean(per_phase(phase_values(e3()["las"], "queueing_latency_mean"))["G"], 0)
    w = pick(1, 2)
    assert q[w - 1] > E3_TAU and np.all(q[w:] <= E3_TAU), q
    d = drops_pct(s, "G")
    assert shown(d["las"], pick(61, 68), 0) and shown(d["fk"], pick(10, 9), 0), d
    per_window = 100 * np.nanmean(per_phase(phase_values(e3()["las"], "dropped_ratio"))["G"], 0)
    assert np.all(np.diff(per_window) < 0), per_window
    assert shown(per_window[0], pick(85, 95), 0) and shown(per_window[-1], 38, 0), per_window
    # why (the miss below): with mu = inf (matrices every 2N executions) LAS drops 23% of G, 12.9-13.3% per
    # window from the 3rd (full set 23%, 12.4-12.5%)
    inf = 100 * np.nanmean(per_phase(phase_values(e3_las_mu_inf_series(), "dropped_ratio"))["G"], 0)
    record("T14", las_drops_per_window=per_window.tolist(), las_mu_inf_drops_per_window=inf.tolist())
    lo, hi = pick((12.9, 13.3), (12.4, 12.5))
    assert shown(inf.mean(), 23, 0) and shown(inf[2:].min(), lo, 1) and shown(inf[2:].max(), hi, 1), inf


@pytest.mark.xfail(strict=True, raises=AssertionError, reason="T14 'little effect on LAS': LAS's first phase-G window "
                   "is 271 tau (full set 416 tau) and it drops 61% of G against FK's 10% (full set 68% and 9%); with "
                   "mu = inf it drops 23% (REPRODUCTION.md)")
def test_t14_phase_g_little_effect_on_las():
    s = e3_summary()
    d = drops_pct(s, "G")
    assert s["las"]["G"]["q_first"] <= 2 * E3_TAU and d["las"] <= d["fk"] + 5, (s["las"]["G"], d)


# --------------------------------------------------------------------------------------------
# E4 (Fig. 7): the tweets use case, replayed in the simulator on the A24 surrogate


@functools.lru_cache(maxsize=None)
def e4(tmp: str) -> dict:
    from pathlib import Path

    from skewbench.datasets.contract import open_dataset
    from skewbench.shedding import workloads
    from skewbench.shedding.engine import _operator_data

    out: dict = {"sm": [], "las": [], "fk": []}
    for seed in range(3 if FULL else 1):
        path = Path(tmp) / f"tweets-{seed}"
        meta = workloads.las_tweets(path, params={}, seed=seed + 2, inputs=[])
        d = _operator_data(open_dataset(path))
        for kind in out:
            row, series, _ = simulate_operator(kind, {"warm": False} if kind == "las" else {}, d, 100, 32.0, seed,
                                               10_000)
            out[kind].append((row, series, meta["source_stats"]))
    return out


@functools.lru_cache(maxsize=None)
def t15_values(tmp: str) -> tuple[dict, dict, dict, dict]:
    r = e4(tmp)
    cl = {k: float(np.mean([row["completion_latency_mean"] for row, _, _ in v])) for k, v in r.items()}
    dr = {k: float(np.mean([row["dropped_ratio"] for row, _, _ in v])) for k, v in r.items()}
    win_dr = {k: [float(np.mean([s[w]["dropped_ratio"] for _, s, _ in v])) for w in range(len(v[0][1]))]
              for k, v in r.items()}
    win_range = {k: (min(x[1:]), max(x[1:])) for k, x in win_dr.items()}
    stream_stats = {**r["sm"][0][2], "tuples": r["sm"][0][0]["tuples"]}
    record("T15", completion_latency_mean=cl, dropped_ratio=dr, stream=stream_stats, window_dr_range=win_range)
    return cl, dr, win_range, stream_stats


@pytest.fixture(scope="module")
def tweets_dir(tmp_path_factory):
    return str(tmp_path_factory.mktemp("tweets"))


def test_t15_tweets_straw_man(tweets_dir):
    cl, dr, win, st = t15_values(tweets_dir)
    # the surrogate (the first seed's in both sets): 500,000 tuples, mean cost 9.69 ms, P(w = 1 ms)
    # 0.361, 107 distinct costs, max 175 ms, class mention shares 0.722 / 0.140 / 0.138
    assert st["tuples"] == 500_000 and st["max_cost"] == 175 and st["distinct_costs"] == 107, st
    assert abs(st["mean_cost"] - 9.69) <= 0.005 and abs(st["p_cost_1"] - 0.361) <= 0.0005, st
    shares = st["class_mention_shares"]
    assert np.allclose([shares["other"], shares["politician"], shares["media"]], [0.722, 0.140, 0.138], atol=5e-4), st
    assert dr["sm"] == 0                                            # SM drops nothing
    assert cl["sm"] >= 10 * cl["las"] and cl["sm"] >= 10 * cl["fk"]  # and waits at least 10x longer
    # completion latency SM 2,714, LAS 94.0, FK 41.7 ms (full set, 3 seeds: 3,149, 95.6, 41.7)
    exp = pick({"sm": 2714, "las": 94.0, "fk": 41.7}, {"sm": 3149, "las": 95.6, "fk": 41.7})
    assert all(shown(cl[k], e, 0 if k == "sm" else 1) for k, e in exp.items()), cl
    # the T15 miss below, measured: LAS 2.3x FK's latency; drops LAS 9.5%, FK 11.3% (full set 9.6%,
    # 11.2%), per window 6.2-13.3% (full set 7.8-12.4%)
    assert shown(cl["las"] / cl["fk"], 2.3, 1), cl
    exp = pick({"las": 0.095, "fk": 0.113}, {"las": 0.096, "fk": 0.112})
    assert all(shown(dr[k], e, 3) for k, e in exp.items()), dr
    lo, hi = pick((0.062, 0.133), (0.078, 0.124))
    assert shown(min(win["las"][0], win["fk"][0]), lo, 3) and shown(max(win["las"][1], win["fk"][1]), hi, 3), win


@pytest.mark.xfail(strict=True, raises=AssertionError, reason="T15 on the A24 surrogate: LAS's completion latency is 2.3x FK's "
                   "(94.0 vs 41.7 ms; full set 95.6 vs 41.7), not 'very close'; drops LAS 9.5%, FK 11.3% (full set "
                   "9.6%, 11.2%; over the paper's 5-10%) (REPRODUCTION.md)")
def test_t15_tweets_las_close_to_full_knowledge(tweets_dir):
    cl, dr, _, _ = t15_values(tweets_dir)
    assert cl["las"] <= 1.25 * cl["fk"]
    for k in ("las", "fk"):
        assert 0.05 <= dr[k] <= 0.10, (k, dr[k])
