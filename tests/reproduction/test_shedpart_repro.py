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
from tests.reproduction.common import record

pytestmark = pytest.mark.reproduction

FULL = os.environ.get("SKEWBENCH_REPRODUCE") == "full" or os.environ.get("SKEWBENCH_SLOW") == "1"
SHARED = Path(__file__).resolve().parents[3] / "shared" / "data"
GCM_INPUTS = [SHARED / "google-cluster" / f"task_event_{i}_10000.csv" for i in (1, 2, 3)]
DEBS_INPUTS = [SHARED / "debs2015" / "frequent_route_compact_ride_10000.csv"]

# measured (deterministic): imbalance p50/p75/p99/max of Storm and ShedPart, Storm's largest load over ShedPart's,
# the largest worker load in windows 50-65 over its median (Storm, ShedPart) and the GCM coverage.
# REPRODUCTION.md quotes the full run; the fast subset has SYN-burst at 5,000 tuples per window, GCM over 36 h.
MEASURED = {
    "burst": {"storm": (7049.25, 7133.875, 88384.805, 88572.5), "shedpart": (3.25, 5.0, 15.81, 17.75),
              "load_max_ratio": 1050, "spike": (10.00, 1.21)} if FULL else
             {"storm": (1758.875, 1821.6875, 22231.7175, 22287.25), "shedpart": (5.375, 7.4375, 13.81, 15.75),
              "load_max_ratio": 271, "spike": (10.07, 1.12)},
    "gcm": {"storm": (82060.5, 82254.5, 973859.25, 974007.25), "shedpart": (435.75, 456.75, 497.55, 518.25),
            "load_max_ratio": 1378, "spike": (10.00, 1.08), "coverage": 0.970} if FULL else
           {"storm": (82151.5, 527052.5, 973918.51, 974007.25), "shedpart": (443.0, 464.25, 504.31, 518.25),
            "load_max_ratio": 1378, "spike": (10.00, 1.07), "coverage": 0.960},
}


@functools.lru_cache(maxsize=None)
def dataset(kind: str, root: str) -> str:
    out = Path(root) / kind
    if out.exists():
        return str(out)
    if kind == "burst":
        workloads.syn_burst(out, params={} if FULL else {"tuples_per_window": 5000}, seed=1, inputs=[])
    elif kind == "debs-like":
        workloads.syn_debs_like(out, params={}, seed=1, inputs=[])
    elif kind == "gcm":
        # the paper's rate (about 200,000 events per hour); 36 hours (windows 0-70) in the fast subset
        workloads.gcm_surrogate(out, params={} if FULL else {"hours": 36}, seed=1, inputs=GCM_INPUTS)
    elif kind == "debs":
        workloads.debs_surrogate(out, params={}, seed=1, inputs=DEBS_INPUTS)
    return str(out)


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    return str(tmp_path_factory.mktemp("shedpart-repro"))


def needs(inputs):
    if not all(p.exists() for p in inputs):
        pytest.skip(f"real sample absent: {inputs[0]}")


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
    return {q: row[f"imbalance_{q}"] for q in ("p50", "p75", "p99", "max")}


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


def test_r1_debs_surrogate_reported(root):
    needs(DEBS_INPUTS)
    path = dataset("debs", root)
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


@pytest.mark.parametrize("kind", ["burst", "gcm"])
def test_r2_r3_r6_imbalance_falls_by_two_orders_and_the_spike_goes(kind, root):
    if kind == "gcm":
        needs(GCM_INPUTS)
    path = dataset(kind, root)
    (storm,), (s_ser,) = replay(path, "fld")
    (sp,), (p_ser,) = replay(path, "shedpart")
    ratio = {q: storm[f"imbalance_{q}"] / max(sp[f"imbalance_{q}"], 1e-9) for q in ("p50", "p75", "p99", "max")}
    lm_storm = np.array([w["load_max"] for w in s_ser])
    lm_sp = np.array([w["load_max"] for w in p_ser])
    burst = [w["window"] for w in p_ser if 50 <= w["window"] <= 65]
    record(f"R2-R6 {kind}", storm=quantiles(storm), shedpart=quantiles(sp), reduction=ratio,
           load_max_ratio=float(storm["load_max"] / sp["load_max"]), windows=sp["windows"],
           storm_burst_peak_over_median=float(lm_storm[burst].max() / np.median(lm_storm)) if burst else None,
           shedpart_burst_peak_over_median=float(lm_sp[burst].max() / np.median(lm_sp)) if burst else None,
           groups_max=sp["groups_max"], shed_fraction=sp["shed_fraction"], coverage=sp["coverage"])
    for q, r in ratio.items():
        assert r >= 100, (q, r)
    assert storm["load_max"] / sp["load_max"] >= 10  # R3: "about 100x"; R8: at least an order of magnitude
    assert burst, "the stream must cover windows 50-65"
    assert lm_storm[burst].max() >= 2 * np.median(lm_storm)           # Storm shows the spike
    assert lm_sp[burst].max() <= 2 * np.median(lm_sp)                 # ShedPart does not (spec 7.19)
    # the figures REPRODUCTION.md gives (R2/R3 quantiles and largest load, R6 spikes, GCM coverage)
    m = MEASURED[kind]
    assert list(quantiles(storm).values()) == pytest.approx(m["storm"], rel=1e-4)
    assert list(quantiles(sp).values()) == pytest.approx(m["shedpart"], rel=1e-4)
    assert storm["load_max"] / sp["load_max"] == pytest.approx(m["load_max_ratio"], abs=0.5)
    spike = (lm_storm[burst].max() / np.median(lm_storm), lm_sp[burst].max() / np.median(lm_sp))
    assert spike == pytest.approx(m["spike"], abs=0.005), spike
    if "coverage" in m:
        assert sp["coverage"] == pytest.approx(m["coverage"], abs=0.0005)


def test_r9_groups_per_window(root):
    rows = {}
    for kind, inputs in (("debs-like", []), ("debs", DEBS_INPUTS), ("gcm", GCM_INPUTS)):
        if not all(p.exists() for p in inputs):
            continue
        (sp,), _ = replay(dataset(kind, root), "fld")
        rows[kind] = {"mean": sp["groups_mean"], "max": sp["groups_max"]}
    record("R9", groups=rows)
    # GCM: all 4 scheduling classes in every window (the surrogate's key is the class: 4 by construction)
    if "gcm" in rows:
        assert rows["gcm"] == {"mean": 4.0, "max": 4}
    # DEBS: 9,958 routes per window (max 10,082), the paper's ~10k (the surrogate is calibrated to it)
    if "debs" in rows:
        assert round(rows["debs"]["mean"]) == 9958 and rows["debs"]["max"] == 10082
    assert round(rows["debs-like"]["mean"]) == 5240


def test_r10_coverage_at_the_error_budget(root):
    path = dataset("burst", root)
    seeds = tuple(range(7 if FULL else 3))
    rows, _ = replay(path, "shedpart", seeds)
    trimmed = sum(r["trimmed_pairs"] for r in rows)
    covered = sum(r["coverage"] * r["trimmed_pairs"] for r in rows)
    one_sided, _ = replay(path, "shedpart", seeds, z_rule="one-sided")
    cov1 = sum(r["coverage"] * r["trimmed_pairs"] for r in one_sided) / sum(r["trimmed_pairs"] for r in one_sided)
    err_mean, err_max = float(np.mean([r["error_mean"] for r in rows])), max(r["error_max"] for r in rows)
    gcm = None
    if all(p.exists() for p in GCM_INPUTS):  # the R2/R3 GCM run, cached when that test ran first
        (sp,), _ = replay(dataset("gcm", root), "shedpart")
        gcm = sp["coverage"]
    record("R10", seeds=len(seeds), trimmed_pairs=trimmed, coverage=covered / trimmed, coverage_one_sided=cov1,
           error_mean=err_mean, error_max=err_max, coverage_gcm=gcm)
    assert trimmed >= 100
    assert covered / trimmed >= 0.93
    assert cov1 < covered / trimmed
    # as measured (full run: 7 seeds; fast subset: 3 seeds on the 5,000-tuple stream)
    exp = (2744, 0.960, 0.918, 0.039, 0.200) if FULL else (1017, 0.958, 0.919, 0.032, 0.193)
    assert trimmed == exp[0]
    assert (covered / trimmed, cov1) == pytest.approx(exp[1:3], abs=0.0005)
    assert (err_mean, err_max) == pytest.approx(exp[3:], abs=0.0005)
    if gcm is not None:
        assert gcm == pytest.approx(MEASURED["gcm"]["coverage"], abs=0.0005)
