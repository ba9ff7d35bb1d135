"""Reproduction of the ShedPart paper's targets R1-R10 (``shedpart.spec.md`` section 5).

Katsipoulakis, Labrinidis, Chrysanthis, *Improving Stream Load Balance through Shedding*.  The
paper's DEBS and GCM slices are not available here: the real samples in ``../shared/data`` hold
10,000 rows each, less than one of the paper's windows.  So the targets are checked on

* the spec's synthetic streams (SYN-burst, SYN-DEBS-like; spec 4.2, recommended, not the
  paper's data), and
* trace-derived **surrogates** (:mod:`skewbench.shedding.workloads`): a GCM stream whose classes
  and CPU requests are resampled from the real sample, and a DEBS stream whose routes and fares
  follow the real sample.  A surrogate is not the paper's trace; its numbers say how ShedPart
  behaves on data shaped like it.

The surrogates are built from the real samples, so their tests take the ``shared_data`` fixture
(``tests/conftest.py``): absent samples skip them with a reason, present ones are asserted in full.
Several figures hold by construction of a synthetic stream or a surrogate (Storm's spike is the
injected surge factor, the group counts are the surrogates' keys); the tests check them as checks of
the stream, and REPRODUCTION.md labels them so, not as reproductions.

Every number goes through the replay engine (:func:`skewbench.shedding.engine.run_cell`): Storm
fields grouping with the Java hash (``fld``) against ShedPart on it (``shedpart``), V = 4,
error 10% at 95% (two-sided z), T_g = 3, pre-check 15%, exact mode.  Measured values are printed
as ``REPRO {json}`` lines (``-s``); ``REPRODUCTION.md`` (ShedPart section) records them.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

import numpy as np
import pytest

from skewbench.replay import Cell
from skewbench.shedding import workloads
from skewbench.shedding.engine import ShedConfig, run_cell
from tests.reproduction.common import record, rounds_to

pytestmark = pytest.mark.reproduction

FULL = os.environ.get("SKEWBENCH_REPRODUCE") == "full" or os.environ.get("SKEWBENCH_SLOW") == "1"


def pick(fast, full):
    """A measured value of the fast subset or of the full set (SKEWBENCH_REPRODUCE=full)."""
    return full if FULL else fast


#: shedpart.spec.md 5, Table III (GCM): imbalance p50 / p75 / p99 / max of Storm and ShedPart
PAPER_GCM = {"storm": (98050, 150360, 1571172.39, 1763230), "shedpart": (128, 185, 307.6, 315)}

# measured (deterministic): imbalance p50/p75/p99/max of Storm and ShedPart, their ratios (Storm over ShedPart) as
# REPRODUCTION.md prints them, Storm's largest load over ShedPart's, the largest worker load in windows 50-65 over
# its median (Storm, ShedPart), the smallest per-window Storm / ShedPart largest-load ratio and the GCM coverage.
# The full run is SYN-burst at 20,000 tuples per window and the GCM surrogate over 72 h; the fast subset SYN-burst
# at 5,000 and GCM over 36 h.
MEASURED = {
    "burst": {"storm": (7049.25, 7133.875, 88384.805, 88572.5), "shedpart": (3.25, 5.0, 15.81, 17.75),
              "printed": ((7049, 7134, 88385, 88573), 1, (3.25, 5.00, 15.81, 17.75), 0.01),
              "reduction": (2169, 1427, 5590, 4990), "load_max_ratio": 1050, "spike": (10.00, 1.21),
              "window_ratio_min": 108} if FULL else
             {"storm": (1758.875, 1821.6875, 22231.7175, 22287.25), "shedpart": (5.375, 7.4375, 13.81, 15.75),
              "printed": ((1759, 1822, 22232, 22287), 1, (5.38, 7.44, 13.81, 15.75), 0.01),
              "reduction": (327, 245, 1610, 1415), "load_max_ratio": 271, "spike": (10.07, 1.12),
              "window_ratio_min": 27},
    "gcm": {"storm": (82060.5, 82254.5, 973859.25, 974007.25), "shedpart": (435.75, 456.75, 497.55, 518.25),
            "printed": ((82061, 82255, 973859, 974007), 1, (435.8, 456.8, 497.6, 518.3), 0.1),
            "reduction": (188, 180, 1957, 1879), "load_max_ratio": 1378, "spike": (10.00, 1.08),
            "window_ratio_min": 138, "coverage": 0.970} if FULL else
           {"storm": (82151.5, 527052.5, 973918.51, 974007.25), "shedpart": (443.0, 464.25, 504.31, 518.25),
            "printed": ((82152, 527053, 973919, 974007), 1, (443.0, 464.3, 504.3, 518.3), 0.1),
            "reduction": (185, 1135, 1931, 1879), "load_max_ratio": 1378, "spike": (10.00, 1.07),
            "window_ratio_min": 138, "coverage": 0.960},
}
QS = ("p50", "p75", "p99", "max")


def gcm_inputs(shared: Path) -> list[Path]:
    return [shared / "google-cluster" / f"task_event_{i}_10000.csv" for i in (1, 2, 3)]


def debs_inputs(shared: Path) -> list[Path]:
    return [shared / "debs2015" / "frequent_route_compact_ride_10000.csv"]


@functools.lru_cache(maxsize=None)
def dataset(kind: str, root: str, shared: str | None = None) -> str:
    """The stream ``kind`` under ``root``; the surrogates ("gcm", "debs") need the samples' directory."""
    out = Path(root) / kind
    if out.exists():
        return str(out)
    inputs = {"gcm": gcm_inputs, "debs": debs_inputs}.get(kind, lambda _: [])(Path(shared or "."))
    absent = [str(p) for p in inputs if not p.is_file()]
    if absent:  # the directory is there (shared_data) but a sample is not: skip with its name, never pass
        pytest.skip(f"real sample absent: {', '.join(absent)}")
    if kind == "burst":
        workloads.syn_burst(out, params={} if FULL else {"tuples_per_window": 5000}, seed=1, inputs=[])
    elif kind == "debs-like":
        workloads.syn_debs_like(out, params={}, seed=1, inputs=[])
    elif kind == "gcm":
        # the paper's rate (about 200,000 events per hour); 36 hours (windows 0-70) in the fast subset
        workloads.gcm_surrogate(out, params={} if FULL else {"hours": 36}, seed=1, inputs=inputs)
    elif kind == "debs":
        workloads.debs_surrogate(out, params={}, seed=1, inputs=inputs)
    else:
        raise ValueError(kind)
    return str(out)


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    return str(tmp_path_factory.mktemp("shedpart-repro"))


@functools.lru_cache(maxsize=None)
def replay(path: str, strategy: str, seeds: tuple[int, ...] = (0,), **params):
    rows, series = [], []
    for seed in seeds:
        cell = Cell(strategy, (("provisioning", 100), ("workers", 4)), seed, tuple(sorted(params.items())))
        r, s = run_cell(path, cell, ShedConfig())
        rows.append(r)
        series.append(s)
    return rows, series


def quantiles(row) -> dict:
    return {q: row[f"imbalance_{q}"] for q in QS}


def test_r1_r4_r5_debs_like_skips_every_window_and_equals_storm(root):
    path = dataset("debs-like", root)
    (storm,), (s_ser,) = replay(path, "fld")
    (sp,), (p_ser,) = replay(path, "shedpart")
    record("R1-R5 SYN-DEBS-like", storm=quantiles(storm), shedpart=quantiles(sp), skip_rate=sp["skip_rate"],
           shed_fraction=sp["shed_fraction"], precheck_max=max(w["precheck"] for w in p_ser),
           groups_mean=sp["groups_mean"])
    assert sp["skip_rate"] == 1.0 and sp["shed_fraction"] == 0.0
    assert quantiles(sp) == quantiles(storm) and sp["load_max"] == storm["load_max"]
    assert [w["imbalance"] for w in p_ser] == [w["imbalance"] for w in s_ser]
    assert list(quantiles(sp).values()) == pytest.approx([292.5, 301.0, 395.88, 402.0], abs=1e-6)
    assert round(max(w["precheck"] for w in p_ser), 1) == 1.8  # percent, far below the 15% threshold


def test_r1_debs_surrogate_reported(root, shared_data):
    path = dataset("debs", root, str(shared_data))
    (storm,), (s_ser,) = replay(path, "fld")
    (sp,), (p_ser,) = replay(path, "shedpart")
    same = sum(a["imbalance"] == b["imbalance"] for a, b in zip(s_ser, p_ser))
    record("R1 DEBS surrogate", storm=quantiles(storm), shedpart=quantiles(sp), skip_rate=sp["skip_rate"],
           shed_fraction=sp["shed_fraction"], windows=sp["windows"], windows_equal=same,
           precheck=[w["precheck"] for w in p_ser], groups_mean=sp["groups_mean"], groups_max=sp["groups_max"])
    # the paper's claim: identical to Storm in every window (the pre-check skips them all)
    assert sp["skip_rate"] == 1.0 and same == sp["windows"] == 14
    assert list(quantiles(sp).values()) == pytest.approx([76.75, 95.125, 117.19, 118.75], abs=1e-6)
    pre = [w["precheck"] for w in p_ser]
    assert (round(min(pre), 1), round(max(pre), 1)) == (1.7, 2.1), pre


@functools.lru_cache(maxsize=None)
def r2_values(kind: str, path: str) -> dict:
    """Storm (``fld``) against ShedPart on one stream: the figures of R2, R3 and R6."""
    (storm,), (s_ser,) = replay(path, "fld")
    (sp,), (p_ser,) = replay(path, "shedpart")
    lm_storm = np.array([w["load_max"] for w in s_ser])
    lm_sp = np.array([w["load_max"] for w in p_ser])
    assert [w["window"] for w in s_ser] == [w["window"] for w in p_ser] == list(range(len(s_ser)))
    burst = [w for w in range(len(s_ser)) if 50 <= w <= 65]
    v = {"storm": quantiles(storm), "shedpart": quantiles(sp), "windows": sp["windows"],
         "reduction": {q: storm[f"imbalance_{q}"] / sp[f"imbalance_{q}"] for q in QS},
         "load_max_ratio": storm["load_max"] / sp["load_max"], "burst_windows": len(burst),
         "spike": (float(lm_storm[burst].max() / np.median(lm_storm)), float(lm_sp[burst].max() / np.median(lm_sp))),
         "window_ratio_min": float((lm_storm / lm_sp).min()), "coverage": sp["coverage"],
         "groups_max": sp["groups_max"], "shed_fraction": sp["shed_fraction"],
         "window_error_mean_max": max(w["error_mean"] for w in p_ser)}
    record(f"R2-R6 {kind}", **v)
    return v


@pytest.fixture(params=["burst", "gcm"])
def r2(request, root):
    """R2/R3/R6 figures of SYN-burst and of the GCM surrogate (which needs the real sample)."""
    shared = str(request.getfixturevalue("shared_data")) if request.param == "gcm" else None
    return request.param, r2_values(request.param, dataset(request.param, root, shared))


def test_r2_r3_r6_imbalance_and_the_spike(r2):
    kind, v = r2
    m = MEASURED[kind]
    # the figures REPRODUCTION.md prints, at its precision: the quantiles of Storm and ShedPart, the reductions
    # and the largest-load ratio (whole numbers), the spikes (two decimals)
    storm_p, storm_step, sp_p, sp_step = m["printed"]
    assert all(rounds_to(x, e, storm_step) for x, e in zip(v["storm"].values(), storm_p)), v["storm"]
    assert all(rounds_to(x, e, sp_step) for x, e in zip(v["shedpart"].values(), sp_p)), v["shedpart"]
    assert list(v["storm"].values()) == pytest.approx(m["storm"], rel=1e-4)
    assert list(v["shedpart"].values()) == pytest.approx(m["shedpart"], rel=1e-4)
    assert all(rounds_to(x, e, 1) for x, e in zip(v["reduction"].values(), m["reduction"])), v["reduction"]
    assert rounds_to(v["load_max_ratio"], m["load_max_ratio"], 1), v["load_max_ratio"]
    assert all(rounds_to(x, e, 0.01) for x, e in zip(v["spike"], m["spike"])), v["spike"]
    # ShedPart below Storm at every quantile and its largest load in every window at least 10x lower (R6's
    # "much lower in every window"; the spec's expectation [R]: >= 10x)
    assert all(r > 1 for r in v["reduction"].values()), v["reduction"]
    assert v["window_ratio_min"] >= 10 and rounds_to(v["window_ratio_min"], m["window_ratio_min"], 1), v["window_ratio_min"]
    # R6: the stream covers windows 50-65; Storm's spike there is the injected surge factor of 10 (a check of
    # the stream, by construction); ShedPart's largest load stays within 2x of its median (spec 7.19)
    assert v["burst_windows"] == 16 and v["windows"] == {"burst": 98, "gcm": pick(69, 141)}[kind], v["windows"]
    assert v["spike"][0] == pytest.approx(10.0, abs=pick(0.075, 0.005) if kind == "burst" else 0.005), v["spike"]
    assert v["spike"][1] <= 2, v["spike"]
    if kind == "gcm":  # R10 on the GCM surrogate: 0.970 (fast subset 0.960), every window's mean error at most
        # 7.3% (fast subset 7.2%): within the 10% budget in every window
        assert rounds_to(v["coverage"], m["coverage"], 0.001), v["coverage"]
        assert v["window_error_mean_max"] <= 0.10, v["window_error_mean_max"]
        assert rounds_to(v["window_error_mean_max"], pick(0.072, 0.073), 0.001), v["window_error_mean_max"]


def gcm(root, shared_data) -> dict:
    return r2_values("gcm", dataset("gcm", root, str(shared_data)))


@pytest.mark.xfail(strict=True, raises=AssertionError,
                   reason="R2 on the GCM surrogate: ShedPart's imbalance p50/p75/p99/max 435.8 / 456.8 / 497.6 / 518.3 "
                          "is 3.4 / 2.5 / 1.6 / 1.6x the paper's 128 / 185 / 308 / 315 and the reductions 188x / 180x "
                          "/ 1,957x / 1,879x are 4.1 / 4.5 / 2.6 / 3.0x smaller than its 766x / 813x / 5,108x / "
                          "5,598x (fast subset, 36 h: 443.0 / 464.3 / 504.3 / 518.3; 185x / 1,135x / 1,931x / "
                          "1,879x) (REPRODUCTION.md)")
def test_r2_gcm_shedpart_at_the_papers_level(root, shared_data):
    """Within a factor 2 of Table III: ShedPart's imbalance at every quantile and the reduction factor."""
    v = gcm(root, shared_data)
    paper_red = [a / b for a, b in zip(PAPER_GCM["storm"], PAPER_GCM["shedpart"])]
    ours = list(v["shedpart"].values())
    assert all(0.5 <= o / p <= 2 for o, p in zip(ours, PAPER_GCM["shedpart"])), (ours, PAPER_GCM["shedpart"])
    assert all(0.5 <= o / p <= 2 for o, p in zip(v["reduction"].values(), paper_red)), (v["reduction"], paper_red)


def test_r2_gcm_against_the_paper(root, shared_data):
    """The side-by-side figures of the R2 row: ours over the paper's, as REPRODUCTION.md prints them."""
    v = gcm(root, shared_data)
    paper_red = [a / b for a, b in zip(PAPER_GCM["storm"], PAPER_GCM["shedpart"])]
    assert [round(x) for x in paper_red] == [766, 813, 5108, 5598]  # the spec's reduction factors
    over = [o / p for o, p in zip(v["shedpart"].values(), PAPER_GCM["shedpart"])]
    smaller = [p / o for o, p in zip(v["reduction"].values(), paper_red)]
    storm = [o / p for o, p in zip(v["storm"].values(), PAPER_GCM["storm"])]
    from skewbench.datasets.contract import open_dataset

    cv = open_dataset(dataset("gcm", root, str(shared_data))).meta["source_stats"]["class_cv"]
    n = [(1.96 * c / 0.1) ** 2 for c in cv]  # spec 2.4's sample size at the class's CV (large n1)
    record("R2 GCM vs paper", shedpart_over_paper=over, reduction_paper_over_ours=smaller, storm_over_paper=storm,
           class_cv=cv, sample_size=n)
    # why ShedPart sits above the paper: its sample sizes, (z CV / eps)^2 = 195-845 for the sample's within-class
    # CVs 0.71-1.48, set its load (the spec's R2 sanity check expects CVs of about 0.5-1.5)
    assert rounds_to(min(cv), 0.71, 0.01) and rounds_to(max(cv), 1.48, 0.01), cv
    assert rounds_to(min(n), 195, 1) and rounds_to(max(n), 845, 1), n
    # ShedPart 3.4 / 2.5 / 1.6 / 1.6x the paper's (fast subset 3.5 / 2.5 / 1.6 / 1.6x)
    exp = pick((3.5, 2.5, 1.6, 1.6), (3.4, 2.5, 1.6, 1.6))
    assert all(rounds_to(x, e, 0.1) for x, e in zip(over, exp)), over
    # reductions 4.1 / 4.5 / 2.6 / 3.0x smaller (fast subset 4.1 / 0.7 / 2.6 / 3.0x: its p75 falls in the surge)
    exp = pick((4.1, 0.7, 2.6, 3.0), (4.1, 4.5, 2.6, 3.0))
    assert all(rounds_to(x, e, 0.1) for x, e in zip(smaller, exp)), smaller
    # Storm 0.84 / 0.55 / 0.62 / 0.55x the paper's (fast subset 0.84 / 3.51 / 0.62 / 0.55x): set by the
    # surrogate's rate and class shares (the rate is the one the spec infers from the paper's median)
    exp = pick((0.84, 3.51, 0.62, 0.55), (0.84, 0.55, 0.62, 0.55))
    assert all(rounds_to(x, e, 0.01) for x, e in zip(storm, exp)), storm


@pytest.mark.xfail(strict=True, raises=AssertionError,
                   reason="R3 on the GCM surrogate: Storm's largest worker load over ShedPart's is 1,378x (both "
                          "sets), not 'about 100x' (REPRODUCTION.md)")
def test_r3_gcm_largest_load_about_100x_lower(root, shared_data):
    """'About 100x', read as within a factor 2 of 100."""
    v = gcm(root, shared_data)
    assert 50 <= v["load_max_ratio"] <= 200, v["load_max_ratio"]


def test_r9_groups_per_window_synthetic(root):
    (sp,), _ = replay(dataset("debs-like", root), "fld")
    record("R9 SYN-DEBS-like", mean=sp["groups_mean"], max=sp["groups_max"])
    assert round(sp["groups_mean"]) == 5240  # SYN-DEBS-like (not a target: about 10^4 keys, Zipf 0.8)


def test_r9_groups_per_window_surrogates(root, shared_data):
    """R9 holds by construction on both surrogates: a check of the surrogates, not a reproduction."""
    rows = {}
    for kind in ("debs", "gcm"):
        (sp,), _ = replay(dataset(kind, root, str(shared_data)), "fld")
        rows[kind] = {"mean": sp["groups_mean"], "max": sp["groups_max"]}
    record("R9", groups=rows)
    # GCM: all 4 scheduling classes in every window (the surrogate's key is the class)
    assert rows["gcm"] == {"mean": 4.0, "max": 4}
    # DEBS: 9,958 routes per window (max 10,082), the surrogate's calibration to the paper's ~10k
    assert round(rows["debs"]["mean"]) == 9958 and rows["debs"]["max"] == 10082


def test_r10_coverage_at_the_error_budget(root):
    path = dataset("burst", root)
    seeds = tuple(range(7 if FULL else 3))
    rows, series = replay(path, "shedpart", seeds)
    trimmed = sum(r["trimmed_pairs"] for r in rows)
    # the spec's second half (shedpart.spec.md 5, R10): the mean error <= 10% in every window, over every seed
    per_window = [w["error_mean"] for s in series for w in s]
    covered = sum(r["coverage"] * r["trimmed_pairs"] for r in rows)
    one_sided, _ = replay(path, "shedpart", seeds, z_rule="one-sided")
    cov1 = sum(r["coverage"] * r["trimmed_pairs"] for r in one_sided) / sum(r["trimmed_pairs"] for r in one_sided)
    err_mean, err_max = float(np.mean([r["error_mean"] for r in rows])), max(r["error_max"] for r in rows)
    record("R10", seeds=len(seeds), trimmed_pairs=trimmed, coverage=covered / trimmed, coverage_one_sided=cov1,
           error_mean=err_mean, error_max=err_max, windows=len(per_window), window_error_mean_max=max(per_window))
    assert trimmed >= 100
    assert max(per_window) <= 0.10, max(per_window)
    assert covered / trimmed >= 0.93
    assert cov1 < covered / trimmed
    # as measured (full run: 7 seeds; fast subset: 3 seeds on the 5,000-tuple stream); the GCM surrogate's
    # coverage is checked with its R2 figures
    exp = (2744, 0.960, 0.918, 0.039, 0.200) if FULL else (1017, 0.958, 0.919, 0.032, 0.193)
    assert trimmed == exp[0]
    assert (covered / trimmed, cov1) == pytest.approx(exp[1:3], abs=0.0005)
    assert (err_mean, err_max) == pytest.approx(exp[3:], abs=0.0005)
    # every window's mean error, over the 98 windows of each seed: at most 9.1% (fast subset 8.5%)
    assert len(per_window) == 98 * len(seeds) and rounds_to(max(per_window), pick(0.085, 0.091), 0.001), per_window
