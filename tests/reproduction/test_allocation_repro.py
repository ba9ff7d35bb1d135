"""Reproduction of the allocation paper's targets (``allocation.spec.md`` section 5, R1-R12).

Chatzistergiou and Viglas, *Fast Heuristics for Near-Optimal Task Allocation in Data Stream
Processing over Clusters* (CIKM 2014).  Every instance comes from the spec's recommended choices
(:mod:`skewbench.allocation.instances`): the paper gives the micro-benchmarks' parameters only in
words, the E5 generator only in outline (A18), and the E6-E8 topology annotations only in its
figures, so the Twitter and stock jobs carry placeholder annotations (A23) and the magnitudes of
R7, R8 and R10 are not comparable with the paper's; only their directions are checked.

The numbers are computed here by calling the heuristics (the modules of :mod:`skewbench.allocation.strategies`),
the exact optimum (:func:`skewbench.allocation.opt.solve`, F2) and the monitor
(:func:`skewbench.allocation.monitor.monitor`) directly, and evaluated with the count form of phi
(:func:`skewbench.allocation.model.gain`).  Optimality is the spec's ratio of sums,
Omega_A = sum phi_A / sum phi_OPT over the instances where OPT is proven and A overloads no node.

R5 and R11 (allocation throughput and its scaling) are speed targets: the benchmark measures the rates
(BENCHMARKS.md); this file checks the operation counts behind them and, in ``make reproduce`` (slow), R5's
acceptance criterion of the spec (TD at least 50x TL's rate at 100 tasks per group, the gap widening with the
tasks) as a ratio of two timings taken in the same run.  Measured values are printed as
``REPRO {json}`` lines (``-s``); REPRODUCTION.md (Allocation section) records them.  ``make test`` runs
everything but the eta = 0 sensitivity case of E5 (another 2000 graphs, about 30 s), which ``make reproduce`` adds.
"""

from __future__ import annotations

import functools
import time
from collections import Counter

import numpy as np
import pytest

from skewbench.allocation import instances, opt
from skewbench.allocation.model import collocated_links, counts, evaluate, gain
from skewbench.allocation.monitor import monitor
from skewbench.allocation.strategies.naive import naive
from skewbench.allocation.strategies.stormrr import storm_rr
from skewbench.allocation.strategies.td import td
from skewbench.allocation.strategies.tl import tl
from tests.reproduction.common import E5_COUNT, e5_reference, record, rounds_to

pytestmark = pytest.mark.reproduction

TL_SEEDS = 30  # spec 2.9: >= 30 shuffle seeds on micro cases
E1_SEEDS = 200
PAPER_E5 = {"opt_gbs": 26.3, "td_gbs": 24.5, "tl_gbs": 22.6, "td": 0.931, "tl": 0.859}


def r4(x: float) -> float:
    return round(float(x), 4)


# --------------------------------------------------------------------------------------------- E1
@functools.lru_cache(maxsize=None)
def e1_tl(key: str) -> tuple[tuple[np.ndarray, np.ndarray], ...]:
    """(collocated links per edge, a_{g,k}) of TL with ``key`` for every one of the 200 seeds."""
    job = instances.example2()[0]
    out = []
    for s in range(E1_SEEDS):
        a = tl(job, key=key, seed=s)
        assert a.success
        out.append((collocated_links(job, a.node), counts(job, a.node)))
    return tuple(out)


def test_r1_td_puts_five_v1_and_ten_v2_on_two_nodes_and_opt_gains_more():
    job = instances.example2()[0]
    a = td(job)
    links = collocated_links(job, a.node)
    a_gk = counts(job, a.node)
    v12_nodes = sorted((int(a_gk[0, k]), int(a_gk[1, k])) for k in range(job.K) if a_gk[0, k] or a_gk[1, k])
    o = opt.solve(job, method="f2")
    td_gain = gain(job, a.node)
    record("R1 TD and OPT (E1)", td_v1_v2_links=int(links[0]), td_v1_v2_per_node=v12_nodes, td_gain=td_gain,
           opt_gain=o.gain, opt_status=o.status, opt_v1_v2_links=int(collocated_links(job, o.node)[0]))
    assert a.success
    assert v12_nodes == [(5, 10), (5, 10)]
    assert int(links[0]) == 100
    assert o.status == "optimal"
    assert td_gain == pytest.approx(55.0, abs=1e-9)
    assert o.gain == pytest.approx(63.0, abs=1e-9)
    assert int(collocated_links(job, o.node)[0]) == 72


def test_r1_tl_v1_v2_links_over_200_seeds():
    shares, dists = {}, {}
    compositions = {"rs": set(), "imc": set()}
    for key in ("rs", "imc"):
        dists[key] = dist = Counter(int(links[0]) for links, _ in e1_tl(key))
        shares[key] = {str(k): dist[k] / E1_SEEDS for k in sorted(dist)}
        for links, a_gk in e1_tl(key):
            if int(links[0]) == 84:
                compositions[key].add(tuple(sorted((int(a_gk[0, k]), int(a_gk[1, k])) for k in range(a_gk.shape[1])
                                                   if a_gk[0, k] or a_gk[1, k])))
    record("R1 TL v1-v2 links (E1)", seeds=E1_SEEDS, shares_tl_rs=shares["rs"], shares_tl_imc=shares["imc"],
           compositions_at_84=sorted(compositions["rs"]), compositions_at_84_imc=sorted(compositions["imc"]),
           paper="84 links from 7 v1 + 6 v2 and 3 v1 + 14 v2")
    for key in ("rs", "imc"):
        # 84 / 96 / 100 links in 19 / 68.5 / 12.5% of the seeds, never above 100
        assert dists[key] == {84: 38, 96: 137, 100: 25}, (key, dists[key])
        # every 84 is the paper's own TL outcome (Example 2): 7 v1 + 6 v2 and 3 v1 + 14 v2
        assert compositions[key] == {((3, 14), (7, 6))}, (key, compositions[key])


def test_r2_no_v2_v3_link_is_collocated():
    job = instances.example2()[0]
    td_links = collocated_links(job, td(job).node)
    tl_v23 = [int(links[1]) for key in ("rs", "imc") for links, _ in e1_tl(key)]
    tl_v34 = Counter(int(links[2]) for links, _ in e1_tl("rs"))
    tl_v34_imc = Counter(int(links[2]) for links, _ in e1_tl("imc"))
    record("R2 v2-v3 links (E1)", td_v2_v3=int(td_links[1]), tl_v2_v3_max=max(tl_v23), td_v3_v4=int(td_links[2]),
           tl_v3_v4_shares={str(k): v / E1_SEEDS for k, v in sorted(tl_v34.items())})
    assert int(td_links[1]) == 0
    assert max(tl_v23) == 0
    # v3-v4: TD 50; TL 50 / 48 / 42 in 66.5 / 32.5 / 1% of the seeds, under both keys
    assert int(td_links[2]) == 50
    assert tl_v34 == tl_v34_imc == {50: 133, 48: 65, 42: 2}, (tl_v34, tl_v34_imc)


# --------------------------------------------------------------------------------------------- E2
def test_r3_imc_policy_falls_linearly_rs_stays_above():
    rows = {}
    identical = {}
    for job in instances.priority():
        f = float(job.meta["f"])
        imc, rs = [], []
        same = True
        for s in range(TL_SEEDS):
            a, b = tl(job, key="imc", seed=s), tl(job, key="rs", seed=s)
            assert a.success and b.success
            imc.append(gain(job, a.node))
            rs.append(gain(job, b.node))
            same = same and np.array_equal(a.node, b.node)
        rows[f] = (float(np.mean(imc)), float(np.mean(rs)))
        identical[f] = same
    inner = sorted(f for f in rows if 1.0 < f <= 2.0)  # f = 1.0 is the IMC tie (edge-index tie-break)
    x = np.array(inner)
    y = np.array([rows[f][0] for f in inner])
    slope, icpt = np.polyfit(x, y, 1)
    r2 = 1.0 - float(np.sum((y - (slope * x + icpt)) ** 2) / np.sum((y - y.mean()) ** 2))
    rs_inner = np.array([rows[f][1] for f in inner])
    rs_spread = float((rs_inner.max() - rs_inner.min()) / rs_inner.max())
    imc_spread = float((y.max() - y.min()) / y.max())
    record("R3 priority policy (E2)", seeds=TL_SEEDS,
           imc_mean={f"{f:g}": r4(rows[f][0]) for f in sorted(rows, reverse=True)},
           rs_mean={f"{f:g}": r4(rows[f][1]) for f in sorted(rows, reverse=True)},
           identical_allocations={f"{f:g}": identical[f] for f in sorted(rows, reverse=True)},
           imc_slope_per_unit_f=r4(slope), imc_linear_r2=r4(r2), rs_relative_spread=r4(rs_spread),
           imc_relative_spread=r4(imc_spread), at_f_1=rows[1.0])
    # the IMC policy's gain falls as c2 drops from 2 c1 towards c1, exactly linearly: 6.0 MB/s per unit f,
    # from 13.08 (f = 2.0) to 7.68 (f = 1.1)
    assert all(rows[a][0] > rows[b][0] for a, b in zip(inner[1:], inner[:-1])), rows
    assert slope == pytest.approx(6.0, abs=1e-9) and r2 >= 1 - 1e-12, (slope, r2)
    assert rows[2.0][0] == pytest.approx(13.08, abs=0.005) and rows[1.1][0] == pytest.approx(7.68, abs=0.005)
    # RS switches at f = (P2 + P3) / (P1 + P2) = 1.75: identical above, strictly better at every f in 1.1-1.7
    for f in rows:
        if f > 1.75:
            assert identical[f], f
        elif 1.0 < f < 1.75:
            assert rows[f][1] > rows[f][0] + 1e-9, (f, rows[f])
    # the f = 1.0 tie: both 12.0
    assert rows[1.0] == pytest.approx((12.0, 12.0), abs=1e-9), rows[1.0]
    # RS stays roughly constant (11.88-13.40, spread 11%) while the IMC policy falls (spread 41%)
    assert rs_inner.min() == pytest.approx(11.88, abs=0.005) and rs_inner.max() == pytest.approx(13.40, abs=0.005)
    assert rs_spread == pytest.approx(0.11, abs=0.005) and imc_spread == pytest.approx(0.41, abs=0.005)


# --------------------------------------------------------------------------------------------- E3
def test_r4_td_equals_opt_and_tl_degrades_with_asymmetry():
    td_g, opt_g, tl_mean, tl_min, tl_max = {}, {}, {}, {}, {}
    for job in instances.asymmetry():
        f = int(job.meta["f"])
        a = td(job)
        assert a.success
        td_g[f] = gain(job, a.node)
        o = opt.solve(job, method="f2")
        assert o.status == "optimal"
        opt_g[f] = float(o.gain)
        g = []
        for s in range(TL_SEEDS):
            b = tl(job, key="imc", seed=s)
            assert b.success
            g.append(gain(job, b.node))
        tl_mean[f], tl_min[f], tl_max[f] = float(np.mean(g)), float(min(g)), float(max(g))
    fs = sorted(td_g)
    record("R4 asymmetry (E3)", seeds=TL_SEEDS, td={f: td_g[f] for f in fs}, opt={f: opt_g[f] for f in fs},
           tl_mean={f: r4(tl_mean[f]) for f in fs}, tl_min={f: tl_min[f] for f in fs},
           tl_max={f: tl_max[f] for f in fs})
    for f in fs:
        assert td_g[f] == pytest.approx(20.0, abs=1e-9) and opt_g[f] == pytest.approx(20.0, abs=1e-9), f
        assert tl_max[f] <= opt_g[f] + 1e-9
    # TL's mean never rises with f (18.97 ... 13.40), per-seed 12-20, and falls for real
    for a, b in zip(fs, fs[1:]):
        assert tl_mean[b] <= tl_mean[a] + 1e-9, (a, b, tl_mean)
    assert [round(tl_mean[f], 2) for f in fs] == [18.97, 17.93, 16.33, 14.73, 14.47, 14.47, 13.40], tl_mean
    assert min(tl_min.values()) == 12.0 and max(tl_max.values()) == 20.0
    assert tl_mean[fs[-1]] < tl_mean[fs[0]] - 3.0
    assert tl_mean[7] < td_g[7]


# --------------------------------------------------------------------------------------------- E4
def test_r5_r11_operation_counts_on_the_e4_pipeline():
    """R5 and R11 are timings (make bench, BENCHMARKS.md); this checks the counts behind them: on the E4
    pipeline TL walks sum n_i n_j = 3 t^2 task pairs, TD's work (slices, heap operations) does not grow with t."""
    td_info, tl_pairs = {}, {}
    for t in (10, 30, 100, 300):
        job = instances.pipeline(tasks_per_group=t)[0]
        a, b = td(job), tl(job, seed=0)
        assert a.success and b.success
        td_info[t] = {k: a.info[k] for k in ("slices", "fusions", "singles", "heap_ops")}
        tl_pairs[t] = b.info["pairs"]
    record("R5/R11 operation counts (E4)", td=td_info, tl_pairs=tl_pairs)
    assert tl_pairs == {t: 3 * t * t for t in tl_pairs}
    assert all(v == {"slices": 4, "fusions": 0, "singles": 0, "heap_ops": 4} for v in td_info.values()), td_info


def fastest(fn, repeats: int) -> float:
    """The shortest of ``repeats`` timed calls (after one warm-up call): the least disturbed by other load."""
    fn()
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


@pytest.mark.slow
def test_r5_td_at_least_fifty_times_tl_and_the_gap_widens():
    """R5's acceptance criterion (allocation.spec.md 5): Thr_TD / Thr_TL >= 50 at 100 tasks per group, the gap
    widening as the tasks grow; both pure Python, timed in the same run (the fastest of several calls each), so
    the ratio, not the hardware's rate, is what is checked."""
    ratio = {}
    for t, repeats in ((10, 20), (30, 10), (100, 5), (300, 3)):
        job = instances.pipeline(tasks_per_group=t)[0]
        assert td(job).success and tl(job, seed=0).success
        ratio[t] = fastest(lambda: tl(job, seed=0), repeats) / fastest(lambda: td(job), 50)
    record("R5 TD / TL rate (E4)", ratio=ratio)
    assert ratio[100] >= 50, ratio
    assert ratio[10] < ratio[30] < ratio[100] < ratio[300], ratio


# --------------------------------------------------------------------------------------------- E5
E5_STRATEGIES = {
    "td-rs": lambda job, i: td(job),
    "td-imc": lambda job, i: td(job, key="imc"),
    "td-push": lambda job, i: td(job, k0="push"),      # A7 ablation: the literal k = 0 rule
    "td-first": lambda job, i: td(job, second="first"),  # A8 ablation: the literal mode "second"
    "tl-imc": lambda job, i: tl(job, key="imc", seed=i),  # TL's shuffle seeded with the graph index (E5)
    "tl-imct": lambda job, i: tl(job, key="imct", seed=i),
    "tl-rs": lambda job, i: tl(job, key="rs", seed=i),
    "storm": lambda job, i: storm_rr(job),
}


@functools.lru_cache(maxsize=None)
def e5(eta: float) -> dict:
    """Every E5 strategy and OPT on the 2000 graphs: gains, OPT's gains, comparability."""
    jobs, opt_gain, proven = e5_reference(eta)
    imc = np.array([job.imc_total for job in jobs])
    res = {}
    for name, fn in E5_STRATEGIES.items():
        g = np.empty(len(jobs))
        ok = np.empty(len(jobs), dtype=bool)
        failed = 0
        for i, job in enumerate(jobs):
            a = fn(job, i)
            ev = evaluate(job, a.node)
            g[i] = ev.gain
            ok[i] = ev.violations == 0 and proven[i]
            failed += int(not a.success)
        res[name] = {"gain": g, "ok": ok, "failed": failed}
    return {"opt": opt_gain, "proven": proven, "imc": imc, "res": res}


def omega(data: dict, name: str) -> float:
    r = data["res"][name]
    ok = r["ok"]
    return float(r["gain"][ok].sum() / data["opt"][ok].sum())


def rho_stats(data: dict, name: str) -> dict:
    r = data["res"][name]
    ok = r["ok"]
    o = data["opt"][ok]
    rho = np.where(o > 0, r["gain"][ok] / np.where(o > 0, o, 1.0), 1.0)
    return {"mean": r4(rho.mean()), "median": r4(np.median(rho)), "min": r4(rho.min()),
            "share_optimal": r4(np.mean(rho >= 1 - 1e-9))}


# the figures REPRODUCTION.md prints for E5, per eta: Omega in % (one decimal), summed gains in GB/s (two
# decimals), the per-graph rho of TD-RS, the graphs Storm does not overload and the failed (unplaced) runs
E5_PRINTED = {
    0.5: {"omega": {"td-rs": 94.7, "tl-imc": 81.9, "tl-imct": 93.5, "tl-rs": 94.1, "td-imc": 82.4, "td-push": 82.1,
                    "td-first": 94.0, "storm": 36.2},
          "gbs": {"opt": 42.77, "td-rs": 40.50, "tl-imct": 40.00, "tl-imc": 35.01}, "opt_over_paper": 1.63,
          "rho_td": {"mean": 0.946, "median": 0.982, "min": 0.536, "share_optimal": 0.415},
          "storm_compared": 1821, "failed": {"td-imc": 1, "td-push": 3, "storm": 179}, "mean_opt": 21.4, "mean_imc": 76.8,
          "tl_imct_over_paper": 7.6},
    0.0: {"omega": {"td-rs": 95.2, "tl-imc": 81.5, "tl-imct": 93.0, "tl-rs": 93.6, "td-imc": 83.4, "td-push": 83.5,
                    "td-first": 94.5, "storm": 39.9},
          "gbs": {"opt": 41.74}, "opt_over_paper": 1.59, "storm_compared": E5_COUNT, "tl_imct_over_paper": 7.1,
          "failed": {}},
}


@pytest.mark.parametrize("eta", [0.5, pytest.param(0.0, marks=pytest.mark.slow)])  # eta = 0: make reproduce
def test_r6_closeness_to_optimal(eta):
    data = e5(eta)
    proven = data["proven"]
    om = {name: omega(data, name) for name in E5_STRATEGIES}
    gbs = {"opt": float(data["opt"][proven].sum()) / 1000.0}
    gbs.update({name: float(data["res"][name]["gain"][proven].sum()) / 1000.0 for name in ("td-rs", "tl-imc",
                                                                                           "tl-imct", "tl-rs")})
    record(f"R6 E5 eta={eta:g}", graphs=E5_COUNT, opt_proven=int(proven.sum()),
           omega={k: r4(v) for k, v in om.items()},
           compared={k: int(v["ok"].sum()) for k, v in data["res"].items()},
           failed={k: v["failed"] for k, v in data["res"].items()},
           rho={k: rho_stats(data, k) for k in ("td-rs", "tl-imc", "tl-imct", "tl-rs", "td-imc")},
           summed_gbs={k: r4(v) for k, v in gbs.items()}, opt_over_paper=r4(gbs["opt"] / PAPER_E5["opt_gbs"]),
           mean_opt_mbs=r4(np.nanmean(data["opt"])), mean_imc_total_mbs=r4(data["imc"].mean()),
           paper={"td": PAPER_E5["td"], "tl": PAPER_E5["tl"], "gbs": (26.3, 24.5, 22.6)})
    assert proven.all()
    for name in ("td-rs", "td-imc", "tl-imc", "tl-imct", "tl-rs"):
        assert data["res"][name]["ok"].all(), name  # never over capacity (a failure leaves tasks unplaced)
    for name, r in data["res"].items():  # no heuristic above the proven optimum, on any graph
        assert (r["gain"][r["ok"]] <= data["opt"][r["ok"]] * (1 + 1e-9) + 1e-9).all(), name
    for name in ("td-rs", "tl-imc", "tl-imct", "tl-rs"):
        assert data["res"][name]["failed"] == 0, name
    # ordering OPT > TD > TL (both TL keys), on the summed gains
    assert gbs["opt"] > gbs["td-rs"] > max(gbs["tl-imc"], gbs["tl-imct"])
    # the Done-when criterion: Omega_TD within 5 points of the paper's 93.1%
    assert abs(om["td-rs"] - PAPER_E5["td"]) <= 0.05, om["td-rs"]
    # TL with A3's default key (group IMC C_e) within the same 5 points of the paper's 85.9% (approx; TL-IMCt's
    # 7.6 points are the miss of test_r6_tl_per_link_key_within_five_points)
    assert abs(om["tl-imc"] - PAPER_E5["tl"]) <= 0.05, om["tl-imc"]
    # every figure REPRODUCTION.md prints, at its precision
    pr = E5_PRINTED[eta]
    assert all(rounds_to(100 * om[k], v, 0.1) for k, v in pr["omega"].items()), om
    assert all(rounds_to(gbs[k], v, 0.01) for k, v in pr["gbs"].items()), gbs
    assert rounds_to(gbs["opt"] / PAPER_E5["opt_gbs"], pr["opt_over_paper"], 0.01), gbs
    assert int(data["res"]["storm"]["ok"].sum()) == pr["storm_compared"]
    # TL-IMCt over the paper's TL, in points (the miss of test_r6_tl_per_link_key_within_five_points)
    assert rounds_to(100 * (om["tl-imct"] - PAPER_E5["tl"]), pr["tl_imct_over_paper"], 0.1), om["tl-imct"]
    failed = {k: v["failed"] for k, v in data["res"].items() if v["failed"]}
    assert failed == pr["failed"], failed  # eta = 0: none overloaded, nothing left unplaced
    if eta == 0.5:
        rho = rho_stats(data, "td-rs")
        assert all(rounds_to(rho[k], v, 0.001) for k, v in pr["rho_td"].items()), rho
        assert rounds_to(np.nanmean(data["opt"]), pr["mean_opt"], 0.1) and rounds_to(data["imc"].mean(), pr["mean_imc"], 0.1)
        # the paper's TD 93.1% and TL 85.9%: ours 1.6 points above and 4.0 below
        assert rounds_to(100 * (om["td-rs"] - PAPER_E5["td"]), 1.6, 0.1) and rounds_to(100 * (PAPER_E5["tl"] - om["tl-imc"]), 4.0, 0.1)
    # A7 matters: the literal k = 0 rule loses much of TD's advantage
    assert om["td-push"] < om["td-rs"] - 0.05
    if eta == 0.5:
        # A18: our generator's gains are about 1.6x the paper's
        assert 1.5 <= gbs["opt"] / PAPER_E5["opt_gbs"] <= 1.75


@pytest.mark.parametrize("eta", [0.5, pytest.param(0.0, marks=pytest.mark.slow)])
@pytest.mark.xfail(strict=True, raises=AssertionError,
                   reason="R6 TL with the per-link key (TL-IMCt, A3's other reading of 'TL prioritised with IMC'): "
                          "Omega 93.5% (eta = 0: 93.0%), 7.6 points above the paper's 85.9% (7.1), outside the 5-point "
                          "band (REPRODUCTION.md)")
def test_r6_tl_per_link_key_within_five_points(eta):
    om = omega(e5(eta), "tl-imct")
    assert abs(om - PAPER_E5["tl"]) <= 0.05, om


def test_r9_feature_order_on_e5():
    data = e5(0.5)
    om = {name: omega(data, name) for name in ("storm", "tl-imc", "td-imc", "td-rs")}
    overloaded = int((~data["res"]["storm"]["ok"]).sum())
    record("R9 E5 (eta=0.5)", omega={k: r4(v) for k, v in om.items()}, storm_overloaded_instances=overloaded,
           tl_minus_td_imc_points=r4(100 * (om["tl-imc"] - om["td-imc"])))
    assert om["storm"] < min(om["tl-imc"], om["td-imc"])
    assert abs(om["tl-imc"] - om["td-imc"]) <= 0.03
    assert max(om["tl-imc"], om["td-imc"]) < om["td-rs"]
    # as REPRODUCTION.md states: 36.2% < 81.9% ~ 82.4% (TD-IMC 0.55 points above TL-IMC) < 94.7%
    assert 0.0054 <= om["td-imc"] - om["tl-imc"] <= 0.0056, om
    assert [round(100 * om[k], 1) for k in ("storm", "tl-imc", "td-imc", "td-rs")] == [36.2, 81.9, 82.4, 94.7], om


# --------------------------------------------------------------------------------------------- E6 / E7
@functools.lru_cache(maxsize=None)
def sweep(topology: str) -> list[dict]:
    """TD-RS, TD-IMC, TL-IMC (30 seeds) and STORM-RR at every mu of the topology's capacity sweep."""
    rows = []
    for job in getattr(instances, topology)():
        td_rs, td_imc, storm = td(job), td(job, key="imc"), storm_rr(job)
        assert td_rs.success and td_imc.success
        tl_gains = []
        for s in range(TL_SEEDS):
            b = tl(job, key="imc", seed=s)
            assert b.success
            tl_gains.append(gain(job, b.node))
        rows.append({"mu": float(job.capacity[0]), "imc_total": job.imc_total, "total_pc": job.total_cost,
                     "td": gain(job, td_rs.node), "td_imc": gain(job, td_imc.node), "tl": float(np.mean(tl_gains)),
                     "tl_min": float(min(tl_gains)), "tl_max": float(max(tl_gains)), "storm": gain(job, storm.node),
                     "storm_ok": bool(storm.success), "storm_kuse": int(storm.info["kuse"])})
    return rows


PAPER_E6 = {"twitter": {"imp_storm": 91, "imp_tl": 79, "sav": 13}, "stock": {"imp_storm": 89, "imp_tl": 31, "sav": 22}}
# measured on the placeholder annotations (REPRODUCTION.md): (largest value in %, its mu), and the mu lists
OURS_E6 = {
    "twitter": {"mus": 24, "imp_storm": (88.8, 600), "imp_tl": (8.0, 125), "sav": (44.4, 600),
                "storm_beats_td": [175, 200, 325],
                "tl_beats_td": [100, 150, 175, 200, 275, 300, 325, 350, 375, 400, 425]},
    "stock": {"mus": 13, "imp_storm": (89.5, 300), "imp_tl": (8.1, 100), "sav": (31.0, 400),
              "storm_beats_td": [], "tl_beats_td": [150, 200, 250]},
}


@pytest.mark.parametrize("topology", ["twitter", "stock"])
def test_r7_r8_improvement_and_saving(topology):
    rows = sweep(topology)
    imc = rows[0]["imc_total"]
    imp_storm = {r["mu"]: 100 * (r["td"] - r["storm"]) / r["storm"] for r in rows if r["storm_ok"] and r["storm"] > 0}
    storm_zero = [r["mu"] for r in rows if r["storm_ok"] and r["storm"] == 0]
    imp_tl = {r["mu"]: 100 * (r["td"] - r["tl"]) / r["tl"] for r in rows if r["tl"] > 0}
    sav = {r["mu"]: 100 * (r["td"] - r["storm"]) / imc for r in rows if r["storm_ok"]}
    best = lambda d: (r4(max(d.values())), max(d, key=d.get))  # noqa: E731  (value, mu)
    record(f"R7/R8 {topology} (placeholder annotations, A23)", imc_total=imc,
           mu=[r["mu"] for r in rows], td=[r4(r["td"]) for r in rows], tl_mean=[r4(r["tl"]) for r in rows],
           storm=[r4(r["storm"]) for r in rows], storm_kuse=[r["storm_kuse"] for r in rows],
           imp_td_storm_max=best(imp_storm), storm_gain_zero_at=storm_zero, imp_td_tl_max=best(imp_tl),
           sav_td_storm_max=best(sav), td_pct_of_imc={r["mu"]: r4(100 * r["td"] / imc) for r in rows},
           mu_where_tl_beats_td=[r["mu"] for r in rows if r["tl"] > r["td"] + 1e-9],
           mu_where_storm_beats_td=[r["mu"] for r in rows if r["storm_ok"] and r["storm"] > r["td"] + 1e-9],
           paper=PAPER_E6[topology])
    # directions: TD beats Storm and TL somewhere on the sweep, and saves network load there
    assert max(imp_storm.values()) > 0 and max(sav.values()) > 0
    assert max(imp_tl.values()) > 0
    # the figures REPRODUCTION.md gives, to their printed precision; Storm never overloads a node
    ours = OURS_E6[topology]
    assert len(rows) == ours["mus"] and all(r["storm_ok"] for r in rows)
    assert storm_zero == [50.0]
    for name, d in (("imp_storm", imp_storm), ("imp_tl", imp_tl), ("sav", sav)):
        value, mu = best(d)
        assert (round(value, 1), mu) == ours[name], (name, value, mu)
    storm_beats = [(r["mu"], round(r["storm"] - r["td"], 2)) for r in rows if r["storm"] > r["td"] + 1e-9]
    assert storm_beats == [(mu, 1.33) for mu in ours["storm_beats_td"]], storm_beats  # by 1.33 MB/s each
    assert [r["mu"] for r in rows if r["tl"] > r["td"] + 1e-9] == ours["tl_beats_td"]


@pytest.mark.parametrize("topology", [
    pytest.param("twitter", marks=pytest.mark.xfail(
        strict=True, raises=AssertionError,
        reason="R7 on the placeholder Twitter topology: Storm's round robin beats TD at mu = 175, 200 "
               "(35.08 vs 33.75 MB/s) and 325 (71.50 vs 70.17): both keep the same SRC-CNT and CNT-RNK "
               "links, and the round robin happens to put MRG next to one more RNK task (1.33 MB/s) "
               "(REPRODUCTION.md)")),
    "stock",
])
def test_r7_r8_td_at_least_storm_at_every_mu(topology):
    rows = sweep(topology)
    worse = [(r["mu"], r4(r["td"]), r4(r["storm"])) for r in rows if r["storm_ok"] and r["td"] < r["storm"] - 1e-9]
    record(f"R7/R8 {topology} TD >= Storm", mu_where_storm_beats_td=worse)
    assert not worse, worse


def test_r9_feature_order_on_the_stock_sweep():
    rows = sweep("stock")
    per_mu = []
    for r in rows:
        near = abs(r["tl"] - r["td_imc"]) <= 0.05 * max(r["tl"], r["td_imc"])
        per_mu.append({"mu": r["mu"], "storm": r4(r["storm"]), "tl_imc": r4(r["tl"]), "td_imc": r4(r["td_imc"]),
                       "td_rs": r4(r["td"]), "storm_lt_tl": r["storm"] < r["tl"] - 1e-9, "tl_near_td_imc": near,
                       "td_imc_lt_td_rs": r["td_imc"] < r["td"] - 1e-9})
    record("R9 stock sweep (placeholder annotations, A23)", per_mu=per_mu,
           full_order_holds_at=[p["mu"] for p in per_mu
                                if p["storm_lt_tl"] and p["tl_near_td_imc"] and p["td_imc_lt_td_rs"]])
    # the weak order holds at every mu: Storm <= TL-IMC, Storm <= TD-IMC <= TD-RS
    for r in rows:
        assert r["storm"] <= min(r["tl"], r["td_imc"]) + 1e-9, r
        assert r["td_imc"] <= r["td"] + 1e-9, r
    # Storm strictly lower than TL-IMC and TD-IMC except at mu = 650, where all keep IMC_tot
    assert [r["mu"] for r in rows if r["storm"] >= min(r["tl"], r["td_imc"]) - 1e-9] == [650.0]
    # TL within 5% of TD-IMC at 9 of 13 mu; 5-12% apart at mu = 100-250
    gap = {r["mu"]: abs(r["tl"] - r["td_imc"]) / max(r["tl"], r["td_imc"]) for r in rows}
    far = [mu for mu, g in gap.items() if g > 0.05]
    assert len(rows) == 13 and far == [100.0, 150.0, 200.0, 250.0], gap
    assert all(gap[mu] <= 0.12 for mu in far), gap


@pytest.mark.xfail(strict=True, raises=AssertionError,
                   reason="R9 on the placeholder stock topology: TD-RS and TD-IMC give the same gain at all 13 "
                          "mu (their edge orders differ only in TRD-VWAP vs JOIN-FLT, which does not change "
                          "TD's result); the paper's TD-IMC < TD-RS is not reproduced here (REPRODUCTION.md)")
def test_r9_td_rs_beats_td_imc_somewhere_on_the_stock_sweep():
    rows = sweep("stock")
    assert any(r["td_imc"] < r["td"] - 1e-9 for r in rows), [(r["mu"], r["td_imc"], r["td"]) for r in rows]


# --------------------------------------------------------------------------------------------- R12
@pytest.mark.parametrize("topology", ["twitter", "stock"])
def test_r12_everything_converges_once_the_job_fits_one_node(topology):
    mu = instances.capacity_sweep(topology)[-1]
    job = getattr(instances, topology)([mu])[0]
    assert mu >= job.total_cost
    gains = {"td-rs": gain(job, td(job).node), "td-imc": gain(job, td(job, key="imc").node),
             "storm": gain(job, storm_rr(job).node), "naive": gain(job, naive(job).node)}
    for key in ("imc", "imct", "rs"):
        gains[f"tl-{key} (min of {TL_SEEDS} seeds)"] = min(gain(job, tl(job, key=key, seed=s).node)
                                                            for s in range(TL_SEEDS))
    o = opt.solve(job, method="f2", time_limit=60.0)  # about 7 s on the stock job
    assert o.status == "optimal"
    gains["opt"] = float(o.gain)
    # the first mu from which TD, TL and Storm all give the same gain
    rows = sweep(topology)
    same = [abs(r["td"] - r["storm"]) <= 1e-9 and abs(r["td"] - r["tl"]) <= 1e-9 and r["tl_min"] == r["tl_max"]
            for r in rows]
    first = next(rows[i]["mu"] for i in range(len(rows)) if all(same[i:]))
    record(f"R12 {topology}", mu=mu, total_pc=job.total_cost, imc_total=job.imc_total, gains=gains,
           all_equal_from_mu=first)
    for name, g in gains.items():
        assert g == pytest.approx(job.imc_total, rel=1e-9), name
    # they meet only once the job fits one node (Twitter: mu = 625, sum P = 610, 143 MB/s; stock: 650, 630,
    # 790 MB/s); below that Storm's gain differs from TD's at every mu
    expected = {"twitter": (625, 610, 143), "stock": (650, 630, 790)}[topology]
    assert (mu, job.total_cost, job.imc_total) == pytest.approx(expected)
    assert first == mu
    assert all(abs(r["td"] - r["storm"]) > 1e-9 for r in rows if r["mu"] < first)
    if topology == "stock":  # mu = 400-600: TD = TL = 640, Storm 395 on 2 nodes
        mid = [r for r in rows if 400 <= r["mu"] <= 600]
        assert len(mid) == 5
        assert all(r["storm_kuse"] == 2 for r in mid), mid
        assert [v for r in mid for v in (r["td"], r["tl"], r["storm"])] == pytest.approx([640, 640, 395] * 5), mid


# --------------------------------------------------------------------------------------------- E8
@functools.lru_cache(maxsize=None)
def e8() -> list:
    job = instances.twitter_e8()[0]
    return monitor(job, instances.rate_schedule(), warmup_end=instances.WARMUP_S)


def e8_segments() -> list[dict]:
    """One row per constant-rate segment after the warm-up."""
    segs: list[dict] = []
    for p in e8():
        if not segs or p.r != segs[-1]["r"]:
            segs.append({"r": p.r, "start": p.t, "td_static": p.phi_td_static, "storm_static": p.phi_storm_static,
                         "td_rc": [], "reconfigure": []})
        segs[-1]["td_rc"].append(p.phi_td_rc)
        segs[-1]["reconfigure"].append(p.reconfigure)
    return segs


def test_r10_adapting_to_the_input_rate():
    periods = e8()
    segs = e8_segments()
    triggers = [p.t for p in periods if p.reconfigure]
    changes = [s["start"] for s in segs[1:]]
    record("R10 E8 (placeholder Twitter annotations, A23)",
           segments=[{"r": s["r"], "start_s": s["start"], "td_static": r4(s["td_static"]),
                      "storm_static": r4(s["storm_static"]), "td_rc_min": r4(min(s["td_rc"])),
                      "td_rc_max": r4(max(s["td_rc"])), "td_static_over_storm": r4(s["td_static"] / s["storm_static"])}
                     for s in segs],
           triggers_s=triggers, rate_changes_s=changes,
           violations=sum(p.violations_td_static + p.violations_storm_static + p.violations_td_rc for p in periods),
           td_rc_failed=sum(p.td_rc_failed for p in periods))
    # both static gains fall when the rate drops (and rise when it rises): they scale with r. By construction:
    # E8 scales every P_g and C_e by r (allocation.spec.md E8), so a fixed allocation keeps r times its peak gain
    # (a check of the model, not a reproduction)
    for a, b in zip(segs, segs[1:]):
        if b["r"] < a["r"]:
            assert b["td_static"] < a["td_static"] and b["storm_static"] < a["storm_static"], (a["r"], b["r"])
    assert [s["r"] for s in segs] == [1.0, 0.5, 0.75, 0.3, 1.0, 0.6]
    for s in segs:
        assert s["td_static"] == pytest.approx(80.3333 * s["r"], abs=1e-3), s
        assert s["storm_static"] == pytest.approx(71.5 * s["r"], abs=1e-9), s
    # TD-static 80.3 / 40.2 / 60.3 / 24.1 / 80.3 / 48.2 MB/s at r = 1 / 0.5 / 0.75 / 0.3 / 1 / 0.6
    assert all(rounds_to(s["td_static"], v, 0.1) for s, v in zip(segs, [80.3, 40.2, 60.3, 24.1, 80.3, 48.2])), segs
    assert rounds_to(segs[0]["td_static"], 80.33, 0.01) and rounds_to(segs[0]["storm_static"], 71.50, 0.01), segs[0]
    assert rounds_to(segs[0]["td_static"] / segs[0]["storm_static"], 1.12, 0.01), segs[0]
    # TD-static / STORM-static = 1.12 at every period (80.33 vs 71.50 at the peak; Storm's round robin on 2 nodes)
    assert storm_rr(instances.twitter_e8()[0]).info["kuse"] == 2
    assert all(p.phi_td_static / p.phi_storm_static == pytest.approx(80.3333 / 71.5, abs=1e-4) for p in periods)
    # TD-RC per segment: 80.3 / 71.5 / 87.4 / 42.9 / 80.3 / 85.8 MB/s, constant within each
    assert [round(min(s["td_rc"]), 1) for s in segs] == [80.3, 71.5, 87.4, 42.9, 80.3, 85.8]
    assert all(min(s["td_rc"]) == max(s["td_rc"]) for s in segs)
    # TD-RC is at least TD-static at every period
    assert all(p.phi_td_rc >= p.phi_td_static - 1e-9 for p in periods)
    # one trigger per rate change, at the first period of the new rate, and none otherwise
    assert triggers == changes == [300.0, 540.0, 780.0, 1020.0, 1260.0]
    assert not any(p.td_rc_failed or p.violations_td_rc for p in periods)


@pytest.mark.xfail(strict=True, raises=AssertionError,
                   reason="R10 on the placeholder Twitter topology at mu = 400: TD-static is 1.12x STORM-static "
                          "(80.33 vs 71.50 MB/s at the peak), not about 2x (REPRODUCTION.md)")
def test_r10_td_static_about_twice_storm_static():
    ratios = [p.phi_td_static / p.phi_storm_static for p in e8()]
    assert min(ratios) >= 1.8, (min(ratios), max(ratios))


@pytest.mark.xfail(strict=True, raises=AssertionError,
                   reason="R10 'almost constant' TD-RC: 42.9-87.4 MB/s (max/min 2.04); at r = 0.3 the whole job "
                          "fits on one node and TD-RC already keeps all of r IMC_tot = 42.9 MB/s, so no allocation "
                          "can hold the peak-rate gain there (REPRODUCTION.md)")
def test_r10_td_rc_almost_constant():
    g = [p.phi_td_rc for p in e8()]
    assert max(g) / min(g) <= 1.25, (min(g), max(g))
