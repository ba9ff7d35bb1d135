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
from tests.reproduction.common import record

pytestmark = pytest.mark.reproduction

FULL = os.environ.get("SKEWBENCH_REPRODUCE") == "full" or os.environ.get("SKEWBENCH_SLOW") == "1"
MAPPINGS, SEEDS = (20, 5) if FULL else (6, 2)
M, N_KEYS, TAU = 32768, 4096, 6.4
U_GRID = [90, 80, 70, 60, 50, 40, 30, 20, 10, 0, -10]
ALPHAS = [0.0, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0]
KINDS = ("bl", "sm", "las", "fk")
BASE = 20161


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
def e1(alpha: float = 1.0, u_grid: tuple[int, ...] = tuple(U_GRID), extra: tuple = ()) -> dict:
    """{(kind, u): [(Q mean, dropped, DR, lambda, prefix violations, prefix max)] per run}."""
    out: dict = {}
    kinds = [(k, {}) for k in KINDS] + [(name, dict(params)) for name, params in extra]
    for i in range(MAPPINGS):
        for j in range(SEEDS):
            keys, cost = stream(i, j, alpha)
            d = operator_data(keys, cost)
            for u in u_grid:
                for idx, (k, params) in enumerate(kinds):
                    strategy = k if idx < len(KINDS) else "las"
                    row, _, _ = simulate_operator(strategy, params, d, 100 - u, TAU, j)
                    out.setdefault((k if idx < len(KINDS) else f"las{params}", u), []).append(
                        (row["queueing_latency_mean"], row["dropped"], row["dropped_ratio"], row["shed_lambda"],
                         row["prefix_violation_share"], row["prefix_max"]))
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
    # "FK drops nothing, LAS almost nothing": an early burst can lift the running average over tau
    # for a few tuples even at 91% load, so both are held to 0.5% ("almost nothing")
    assert drops["fk"].mean() <= 0.005 and drops["las"].mean() <= 0.005
    # "all four give (nearly) the same Q": every strategy's mean within 10% of Base Line's (which keeps all)
    for k in KINDS:
        assert abs(q[k].mean() - q["bl"].mean()) <= 0.10 * q["bl"].mean(), (k, q[k].mean(), q["bl"].mean())


def test_t2_base_line_and_straw_man_far_above_the_bound():
    r = e1()
    worst = {}
    for k in ("bl", "sm"):
        worst[k] = min(col(r[(k, u)], 0).mean() / TAU for u in U_GRID if u >= 0)
    record("T2", min_q_over_tau=worst, per_u={f"{k}{u}": col(r[(k, u)], 0).mean() / TAU
                                            for k in ("bl", "sm") for u in U_GRID if u >= 0})
    assert worst["bl"] >= 5 and worst["sm"] >= 5


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
    for u, v in t3_values().items():
        # the paper: "close to 6.4 ms", some runs above: the mean within 25% of tau at every u
        assert 0.75 <= v["q_over_tau"] <= 1.25, (u, v)
        # the spec's sanity prediction of LAS's drop rate, 1 - (1-u)/(1+eps), within 1 point
        assert abs(v["dr"] - v["dr_predicted"]) <= 0.01, (u, v)


@pytest.mark.xfail(strict=True, raises=AssertionError, reason="T3 as the issue words it (LAS at or under tau on average at every u): "
                   "over tau by 3-16% at u = 0, 10, 30, 90 (REPRODUCTION.md); the paper says 'close to tau'")
def test_t3_las_at_or_under_the_bound_at_every_u():
    for u, v in t3_values().items():
        assert v["q_over_tau"] <= 1.0, (u, v)


@pytest.mark.xfail(strict=True, raises=AssertionError, reason="T3 ablation: without the (1+eps) factor LAS's Q is 5-12x tau, not at "
                   "tau as the spec's sanity note predicts: the Count-Min estimates run about 2% low on these "
                   "streams and that drift accumulates between syncs (REPRODUCTION.md)")
def test_t3_ablation_without_the_factor_sits_at_the_bound():
    for u, v in t3_values().items():
        if u >= 10:
            assert 0.85 <= v["ablation_q_over_tau"] <= 1.15, (u, v)


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
    for u, (fk, las_) in means.items():
        if u > 0:  # overloaded: FK drops no more than LAS on average
            assert fk <= las_, (u, fk, las_)


def test_t5_drop_ordering():
    r = e1()
    rows = {}
    for u in U_GRID:
        if u <= 0:
            continue
        d = {k: col(r[(k, u)], 1).mean() for k in KINDS}
        rows[u] = d
    record("T5", mean_drops=rows)
    for u, d in rows.items():
        assert abs(d["bl"] - d["sm"]) <= 0.05 * d["bl"], (u, d)            # d_BL ~ d_SM
        assert 0.99 * min(d["bl"], d["sm"]) <= d["fk"] <= d["las"], (u, d)  # then FK (ties within 1%), then LAS
        assert d["las"] <= 1.5 * d["bl"], (u, d)                             # "differences small"


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
    # T6: Base Line and Straw-Man bad (Q > 5 tau) for every distribution
    assert min(min(q["bl"]), min(q["sm"])) > 5 * TAU
    # T7: LAS improves with skew (to or below tau), worst on Uniform / Zipf-0.5
    worst = int(np.argmax(q["las"]))
    assert ALPHAS[worst] in (0.0, 0.5) and q["las"][-1] < q["las"][0]
    assert all(v <= TAU for a, v in zip(ALPHAS, q["las"]) if a >= 1.5)
    # T8 is checked in test_t8_lambda_falls_with_skew (a miss is reported, not hidden)


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
            _, series, _ = simulate_operator(kind, params, d, 100, E3_TAU, r, E3_WINDOW)
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


def test_t9_phase_a():
    s = e3_summary()
    sm, las, fk = s["sm"], s["las"], s["fk"]
    assert sm["A"]["q_last"] > sm["A"]["q_first"] and sm["A"]["dr"] <= 0.01  # SM grows, drops ~0
    assert fk["A"]["q_last"] <= E3_TAU * 1.3 and las["A"]["q_last"] <= E3_TAU  # LAS joins FK near tau
    assert las["A"]["dr"] >= sm["A"]["dr"] and fk["A"]["dr"] >= sm["A"]["dr"]


def test_t10_phase_b_drops_half():
    s = e3_summary()
    for k in ("sm", "las", "fk"):
        assert 0.45 <= s[k]["B"]["dr"] <= 0.55, (k, s[k]["B"])


def test_t11_phase_d_swap():
    s = e3_summary()
    sm, las, fk = s["sm"], s["las"], s["fk"]
    assert fk["D"]["dr"] > fk["C"]["dr"] and las["D"]["dr"] > las["C"]["dr"]
    assert abs(sm["D"]["dr"] - sm["C"]["dr"]) <= 0.01
    assert sm["D"]["q_last"] > 10 * E3_TAU and las["D"]["q_last"] <= 2 * E3_TAU


def test_t12_phase_e_no_drops():
    """Phase E (rho ~ 0.67): nobody drops; LAS and FK end the phase at low Q in every run; SM
    too except in runs where it entered E with a phase-D backlog of over 10 s, which E cannot
    drain (2 of 20 runs in the full set: 11.8 and 13.5 s in, 1.2 and 2.7 s out)."""
    s = e3_summary()
    r = e3()
    last = {k: per_phase(phase_values(v, "queueing_latency_mean"))["E"][:, -1] for k, v in r.items()}
    first = per_phase(phase_values(r["sm"], "queueing_latency_mean"))["E"][:, 0]
    for k in ("sm", "las", "fk"):
        assert s[k]["E"]["dr"] <= 0.01, (k, s[k]["E"])
    for k in ("las", "fk"):
        assert np.all(last[k] <= E3_TAU), (k, last[k])
    low = last["sm"] <= E3_TAU
    assert np.all(first[~low] > 10_000), (first, last["sm"])  # the high ones carry a phase-D backlog
    assert low.mean() >= 0.9, last["sm"]
    record("T12", sm_low_runs=int(low.sum()), runs=len(low), sm_last=[round(float(x), 2) for x in last["sm"]])


def test_t13_phase_f_sm_diverges():
    s = e3_summary()
    assert s["sm"]["F"]["q_first"] > 2 * E3_TAU and s["las"]["F"]["q_first"] > 2 * E3_TAU
    assert s["sm"]["F"]["q_last"] > s["sm"]["F"]["q_first"]


@pytest.mark.xfail(strict=True, raises=AssertionError, reason="T13: LAS comes back toward tau within phase F in only some runs; its "
                   "sync waits for two stable operator windows and then for the queued sync tuple "
                   "(REPRODUCTION.md; with mu = inf it recovers in every run)")
def test_t13_phase_f_las_recovers_within_the_phase():
    s = e3_summary()
    assert s["las"]["F"]["runs_recovered"] == 1.0 and s["las"]["F"]["q_last"] <= 2 * E3_TAU, s["las"]["F"]


def test_t14_phase_g():
    s = e3_summary()
    assert s["sm"]["G"]["q"] > 10 * E3_TAU and s["sm"]["G"]["q_last"] > 10 * E3_TAU  # SM never recovers
    assert s["las"]["G"]["q_last"] <= E3_TAU  # LAS back at the bound by the end


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
def t15_values(tmp: str) -> tuple[dict, dict]:
    r = e4(tmp)
    cl = {k: float(np.mean([row["completion_latency_mean"] for row, _, _ in v])) for k, v in r.items()}
    dr = {k: float(np.mean([row["dropped_ratio"] for row, _, _ in v])) for k, v in r.items()}
    win_dr = {k: [float(np.mean([s[w]["dropped_ratio"] for _, s, _ in v])) for w in range(len(v[0][1]))]
              for k, v in r.items()}
    record("T15", completion_latency_mean=cl, dropped_ratio=dr, stream=r["sm"][0][2],
           window_dr_range={k: (min(x[1:]), max(x[1:])) for k, x in win_dr.items()})
    return cl, dr


@pytest.fixture(scope="module")
def tweets_dir(tmp_path_factory):
    return str(tmp_path_factory.mktemp("tweets"))


def test_t15_tweets_straw_man(tweets_dir):
    cl, dr = t15_values(tweets_dir)
    assert dr["sm"] <= 0.005                                   # SM drops (about) nothing
    assert cl["sm"] >= 10 * cl["las"] and cl["sm"] >= 10 * cl["fk"]  # and waits at least 10x longer


@pytest.mark.xfail(strict=True, raises=AssertionError, reason="T15 on the A24 surrogate: LAS's completion latency is about 2x FK's "
                   "(89 vs 42 ms), not 'very close'; LAS and FK drop 10-11%, just above the paper's 5-10% "
                   "(REPRODUCTION.md)")
def test_t15_tweets_las_close_to_full_knowledge(tweets_dir):
    cl, dr = t15_values(tweets_dir)
    assert cl["las"] <= 1.25 * cl["fk"]
    for k in ("las", "fk"):
        assert 0.05 <= dr[k] <= 0.10, (k, dr[k])
