"""The papers' engine experiments on a running engine (REPRODUCTION.md, "Live engine").

* Grouping R15/R16 (dchoices.spec.md; the paper's Fig. 13-14 were measured on Storm): here the
  live job on Flink (a keyed windowed aggregation with its merge stage, 5 sources, a standalone
  cluster of two TaskManagers), 8 workers, 1 ms of work per tuple (sleeping), offered at 62.5%
  of the workers' capacity, a Zipf stream over 10^4 keys at z = 1.8 (where the hottest key holds
  more than PKG's two workers sustain, so KG, PKG and the balanced strategies are three levels),
  every phase twice; KG, PKG, D-C, SG and Flink's own keyBy; measured medians against the
  model's prediction.  The run (tests/conftest.py ``live_grouping_run``) also serves the live job's
  own checks (tests/integration/test_live_flink.py), so it takes checkpoints every 2 s and has a
  TaskManager killed in its last phase, which runs again, on a warmed-up replacement, to be
  measured.  The head-of-line run below adds z = 1.4 for KG and SG.
* Head-of-line blocking (the model's bounded channels): KG with 4 KB network buffers (a cluster of
  its own, ``taskmanager.memory.segment-size: 4kb``), where its backlog fills the channels within
  seconds: the sources are back-pressured on the engine, and the prediction with bounded
  channels follows throughput and back-pressure where the unbounded one does not.
* LAS's prototype (las.spec.md, Fig. 7, orders of magnitude): one operator at 75% provisioning,
  tau = 6.4 ms, on the first 2,000 tuples of ``las-e1``: the queueing latency LAS, BL, SM and FK
  leave, measured.

Timing is measured, so the numbers REPRODUCTION.md prints come from the recording command
(``scripts/record_live.py``: longer phases, three repetitions); these shorter runs assert what
the verdicts rest on, with the bands REPRODUCTION.md states.  Runs in ``make reproduce`` (it needs
the Flink environment), alone (marker ``timing``), on the session's Flink cluster.
"""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np
import pytest

from tests.live_common import LIVE_RUN
from tests.reproduction.common import record

pytestmark = [pytest.mark.reproduction, pytest.mark.slow, pytest.mark.timing]

P = LIVE_RUN["workers"]
KEYS = 10_000
ZS = (LIVE_RUN["z"],)
STRATEGIES = LIVE_RUN["strategies"]
#: the issue's bands: measured over predicted, every strategy, medians of the repetitions
THROUGHPUT = (0.85, 1.15)
P99 = (0.75, 1.35)


@functools.lru_cache(maxsize=None)
def _dataset(root: str, z: float, tuples: int = 200_000) -> str:
    from skewbench.datasets.generators import StreamSpec, generate

    out = Path(root) / f"live-zipf-{z}"
    if not (out / "_skewbench.json").exists():
        generate(StreamSpec.zipf(z, KEYS, tuples, seed=1), out, name=f"live-zipf-{z}")
    return str(out)


@pytest.fixture(scope="module")
def runs(live_grouping_run):
    """The timing part's grouping run (tests/conftest.py ``live_grouping_run``, shared with
    tests/integration/test_live_flink.py), by z."""
    return {ZS[0]: live_grouping_run[1]}


def rows_of(res, routing: str | None = None) -> dict[str, dict]:
    return {r["strategy"]: r for r in res.rows if routing is None or r["routing"] == routing}


def test_every_strategy_measured_as_predicted(runs):
    """Throughput within 0.85-1.15 and p99 within 0.75-1.35 of the prediction, every strategy at
    every z; Kendall's tau of the throughput medians against the predictions at least 0.8."""
    table = {}
    for z, res in runs.items():
        r = rows_of(res)
        table[z] = {s: {"throughput": (r[s]["throughput_measured"], r[s]["throughput_predicted"]),
                        "throughput_range": (r[s]["throughput_measured_min"], r[s]["throughput_measured_max"]),
                        "p99_ms": (r[s]["latency_p99_measured_ms"], r[s]["latency_p99_predicted_ms"]),
                        "ratios": (r[s]["throughput_ratio"], r[s]["latency_p99_ratio"])} for s in STRATEGIES}
        tau = {a["metric"]: a["kendall_tau"] for a in res.agreement}
        table[z]["kendall_tau"] = tau
        table[z]["calibrations"] = res.calibrations["flink"]
        for s in STRATEGIES:
            assert THROUGHPUT[0] <= r[s]["throughput_ratio"] <= THROUGHPUT[1], (z, s, table[z][s])
            assert P99[0] <= r[s]["latency_p99_ratio"] <= P99[1], (z, s, table[z][s])
        assert tau["throughput"] >= 0.8, (z, tau, res.agreement)
    record("LIVE grouping flink", per_z=table)


def test_r15_throughput_order_on_a_real_engine(runs):
    """KG below PKG below the balanced D-C and SG (Fig. 13), each separated from the next (its
    largest repetition below the next one's smallest), while D-C and SG keep the offered rate (their
    repetitions' ranges overlap: not separated, as the paper's equal bars)."""
    r = {z: rows_of(res) for z, res in runs.items()}
    thr = {z: {s: (x[s]["throughput_measured_min"], x[s]["throughput_measured"], x[s]["throughput_measured_max"])
               for s in STRATEGIES} for z, x in r.items()}
    record("LIVE R15 flink", throughput_min_median_max=thr)
    for z, t in thr.items():
        assert t["kg"][2] < t["pkg"][0] and t["pkg"][2] < min(t["dc"][0], t["sg"][0]), (z, t)
        assert min(t["dc"][1], t["sg"][1]) >= 0.99 * runs[z].stream["rate"], (z, t)


def test_r16_latency_order_on_flink(runs):
    """KG's p99 above PKG's above D-C's and SG's (Fig. 14), each separated from the next."""
    r = {z: rows_of(res) for z, res in runs.items()}
    p99 = {z: {s: (x[s]["latency_p99_measured_ms_min"], x[s]["latency_p99_measured_ms"],
                   x[s]["latency_p99_measured_ms_max"]) for s in STRATEGIES} for z, x in r.items()}
    record("LIVE R16 flink", p99_ms_min_median_max=p99)
    for z, p in p99.items():
        assert p["kg"][0] > p["pkg"][2] and p["pkg"][0] > max(p["dc"][2], p["sg"][2]), (z, p)


def test_flinks_keyby_measured_against_pkg(runs):
    """Flink's own keyBy (natively: Flink routed every tuple where our flink strategy says) is key
    grouping: its throughput measured below PKG's; the ratio is recorded."""
    out = {}
    for z, res in runs.items():
        r = rows_of(res)
        assert r["flink"]["routing"] == "native" and r["flink"]["routing_exact"]
        out[z] = r["flink"]["throughput_measured"] / r["pkg"]["throughput_measured"]
        assert out[z] < 1.0, (z, out)
    record("LIVE keyBy over PKG flink", ratio=out)


# ---- head-of-line blocking -------------------------------------------------------------------

#: measured over predicted for the blocked KG: throughput and the sources' back-pressured time
HOL_THROUGHPUT = (0.85, 1.15)
#: the model's bounded channels predict less back-pressure than Flink reports: measured over predicted
#: 1.30 and 1.34 in two 12-s runs on 2026-11-29, 1.38 over 15 s (REPRODUCTION.md, L-HOL: approx)
HOL_BACKPRESSURE = (0.9, 1.5)


@pytest.fixture(scope="module")
def hol_run(tmp_path_factory, flink_env):
    """KG and SG at z = 1.4 for 12 s on a cluster whose network buffers are 4 KB (83 records)."""
    from skewbench.live.config import LiveConfig
    from skewbench.live.flinkcluster import local_cluster
    from skewbench.live.run import live_rows

    root = tmp_path_factory.mktemp("live-hol")
    options = {"taskmanager.memory.segment-size": "4kb"}
    cfg = LiveConfig(dataset="zipf-1.4", workers=P, duration_s=12.0, repeat=1, cost=1.0, engines=("flink",),
                     grouping=("kg", "sg"), flink_options=options)
    with local_cluster(root / "cluster", parallelism=P, options=options) as cluster:
        return live_rows(_dataset(str(root), 1.4), cfg, root / "work", state=root / "state", cluster=cluster)


def test_head_of_line_blocking_is_measured_and_predicted(hol_run):
    """KG's hot worker fills its channels: Flink reports its sources back-pressured for seconds;
    the model with bounded channels predicts that time and the throughput it leaves, within the
    bands; the model with unbounded channels predicts no back-pressure and a throughput outside
    them. SG, balanced, is never back-pressured."""
    r = rows_of(hol_run)
    kg, sg = r["kg"], r["sg"]
    c = hol_run.calibrations["flink"]["before"]
    bp, bp_pred = kg["source_backpressured_ms"], kg["source_backpressured_predicted_ms"]
    record("LIVE head-of-line blocking", capacity=(c["capacity"], c["capacity_remote"]),
           chunk=(c["chunk_records"], c["slice_ms"]),
           throughput=(kg["throughput_measured"], kg["throughput_predicted"], kg["throughput_predicted_unbounded"]),
           backpressured_ms=(bp, bp_pred, kg["source_backpressured_predicted_unbounded_ms"]),
           p99_ms=(kg["latency_p99_measured_ms"], kg["latency_p99_predicted_ms"],
                   kg["latency_p99_predicted_unbounded_ms"]), sg_backpressured_ms=sg["source_backpressured_ms"])
    assert c["capacity"] < 2000  # the small buffers hold few records
    assert bp > 2000.0, bp  # seconds of back-pressure over the five sources, on the engine
    assert HOL_BACKPRESSURE[0] <= bp / bp_pred <= HOL_BACKPRESSURE[1], (bp, bp_pred)
    assert HOL_THROUGHPUT[0] <= kg["throughput_ratio"] <= HOL_THROUGHPUT[1], kg["throughput_ratio"]
    assert kg["source_backpressured_predicted_unbounded_ms"] == 0.0
    assert not HOL_THROUGHPUT[0] <= kg["throughput_ratio_unbounded"] <= HOL_THROUGHPUT[1], kg["throughput_ratio_unbounded"]
    assert sg["source_backpressured_ms"] < 100.0 and sg["source_backpressured_predicted_ms"] == 0.0


# ---- LAS's prototype on Flink ----------------------------------------------------------------


@pytest.fixture(scope="module")
def las_run(tmp_path_factory, flink_cluster):
    from skewbench.datasets.catalog import load_catalog
    from skewbench.live.config import LiveConfig
    from skewbench.live.run import live_rows
    from skewbench.materialize import materialize

    root = tmp_path_factory.mktemp("live-las")
    status = materialize(load_catalog().select(["las-e1"])[0], root / "data", engine="local")
    cfg = LiveConfig(dataset="las-e1", workers=P, tuples=2000, cost="dataset", engines=("flink",), grouping=(),
                     shedding=("las", "bl", "sm", "fk"), provisioning=75.0, bound_ms=6.4, repeat=1)
    return live_rows(str(status["path"]), cfg, root / "work", state=root / "state", cluster=flink_cluster)


def test_las_prototype_queueing_latency_on_flink(las_run):
    """Fig. 7 in orders of magnitude: LAS keeps the real queueing latency within a few tau, BL and
    SM several times further over it.  FK, exactly at tau in the simulator, is far over it on
    the engine: it keeps the operator exactly saturated, so the engine's per-record overhead
    (measured by the calibration, not seen by FK's decisions) accumulates as queue; the same
    decisions predicted without that overhead sit at tau again."""
    from skewbench.live.model import Constants, predict

    r = {row["strategy"]: row for row in las_run.rows}
    q = {s: r[s]["q_over_bound_measured"] for s in r}
    record("LIVE LAS prototype", q_over_tau_measured=q,
           q_over_tau_predicted={s: r[s]["q_over_bound_predicted"] for s in r},
           q_over_tau_simulator={s: r[s]["q_over_bound_simulator"] for s in r},
           dropped={s: r[s]["dropped"] for s in r}, calibration=las_run.calibrations["flink"]["before"])
    assert q["las"] <= 5.0, q
    assert min(q["bl"], q["sm"]) >= 3.0 * q["las"], q
    assert r["fk"]["q_over_bound_simulator"] <= 1.0 + 1e-6 and q["fk"] >= 4.0, q
    ph = las_run.phases["fk"]
    due = ph.due_s * 1000.0
    pr = predict(due, ph.cost_ms, ph.worker, ph.dense, sources=1, workers=ph.workers, window_ms=1e12,
                 k=Constants(0.0, 0.0, 0, 0.0, 0.0, 0.0, 0.0), job="map")
    lo = 0.2 * float(due.max())
    inside = due >= lo
    no_overhead = float((pr.start - due)[inside].mean()) / 6.4
    record("LIVE LAS FK without overhead", q_over_tau=no_overhead)
    assert no_overhead <= 1.05, no_overhead


# ---- ShedPart's windows as parallel steps on Spark (shedpart.spec.md R5's runtime half, R6's runtime, R7)
#: the surrogates at a size an engine runs in about a minute here (the replay rows use the paper's rates):
#: GCM 4,000 events per hour over 6 hours (9 complete windows of 60 min, slide 30), DEBS 2,000 rides per
#: 30-minute window (4 complete windows, slide 15), 4 workers, 1 ms of work per tuple (sleeping)
GCM_LIVE = {"hours": 6, "events_per_hour": 4000}
DEBS_LIVE = {"windows": 6, "rides_per_window": 2000, "groups_per_window": 1300}
V = 4
#: a window's processing time measured over predicted (its largest load x (cost + the calibrated overhead))
WINDOW_BAND = (0.85, 1.20)


@pytest.fixture(scope="module")
def windowed(tmp_path_factory, shared_data):
    """fld and ShedPart's windows on Spark: GCM once each, DEBS twice each, interleaved (the engine's
    own run-to-run difference, measured beside the strategies' difference)."""
    from skewbench.live import windows
    from skewbench.shedding import workloads

    root = tmp_path_factory.mktemp("live-windows")
    gcm, debs = root / "gcm", root / "debs"
    workloads.gcm_surrogate(gcm, params=GCM_LIVE, seed=1,
                            inputs=[shared_data / "google-cluster" / f"task_event_{i}_10000.csv" for i in (1, 2, 3)])
    workloads.debs_surrogate(debs, params=DEBS_LIVE, seed=1,
                             inputs=[shared_data / "debs2015" / "frequent_route_compact_ride_10000.csv"])
    d = {(ds.name, s): windows.decide(str(ds), s, V) for ds in (gcm, debs) for s in windows.STRATEGIES}
    order = [d["gcm", "fld"], d["gcm", "shedpart"], d["debs", "fld"], d["debs", "shedpart"], d["debs", "fld"],
             d["debs", "shedpart"]]
    res = windows.run(order, cost_ms=1.0)
    n = {k: v.windows for k, v in d.items()}
    rows, out, i = res["rows"], {}, 0
    for key, run in zip([("gcm", "fld", 0), ("gcm", "shedpart", 0), ("debs", "fld", 0), ("debs", "shedpart", 0),
                         ("debs", "fld", 1), ("debs", "shedpart", 1)], order):
        out[key] = rows[i:i + run.windows]
        i += run.windows
    return {"decisions": d, "rows": out, "overhead_ms": res["overhead_ms"], "windows": n}


def test_shedpart_r5_identical_decisions_on_debs_time_alike(windowed):
    """R5's runtime half, by construction here: on DEBS the pre-check skips every window, so
    ShedPart's workers aggregate exactly what Storm's do (asserted) and the same decisions run
    twice; what is measured is the engine's own run-to-run difference (the total window times of
    the two strategies within it, or 2%: 0.5-1.5% apart in our runs, the run-to-run difference of
    two runs of each a noisy bound) and ShedPart's own time, a negligible part of the total."""
    d, r = windowed["decisions"], windowed["rows"]
    assert (d["debs", "shedpart"].loads_after == d["debs", "fld"].loads_after).all()
    assert d["debs", "shedpart"].ran.sum() == 0
    total = {k: sum(x["t_win_measured_s"] for x in v) for k, v in r.items() if k[0] == "debs"}
    fld = [total["debs", "fld", i] for i in (0, 1)]
    sp = [total["debs", "shedpart", i] for i in (0, 1)]
    between = abs(sum(sp) / 2 - sum(fld) / 2)
    within = max(abs(fld[0] - fld[1]), abs(sp[0] - sp[1]))
    t_sp = sum(x["t_sp_s"] for x in r["debs", "shedpart", 0])
    record("LIVE ShedPart R5 DEBS", windows=windowed["windows"]["debs", "fld"], total_fld_s=fld, total_shedpart_s=sp,
           between_s=between, within_s=within, t_sp_s=t_sp, overhead_ms=windowed["overhead_ms"])
    assert between <= max(within, 0.02 * sum(fld) / 2), (fld, sp)
    assert t_sp / (sum(sp) / 2) < 1e-4, t_sp


def test_shedpart_r6_r7_window_time_of_the_sleep_model_on_spark_gcm(windowed):
    """R7, and R6's runtime, as the timing of Spark stages whose workers sleep the cost of each
    tuple (no aggregation is computed): ShedPart's share of each GCM window's time (its own time
    over its time plus the window's stage) under 0.1% in every window; its stage shorter than
    Storm's in every window, by the factor their largest loads predict; and every window's stage
    within WINDOW_BAND of the prediction (largest load x (cost + the calibrated overhead))."""
    r = windowed["rows"]
    fld, sp = r["gcm", "fld", 0], r["gcm", "shedpart", 0]
    shares = [x["sp_share"] for x in sp]
    speedup = [a["t_proc_measured_s"] / b["t_proc_measured_s"] for a, b in zip(fld, sp)]
    predicted = [a["t_proc_predicted_s"] / b["t_proc_predicted_s"] for a, b in zip(fld, sp)]
    ratios = [x["t_proc_measured_s"] / x["t_proc_predicted_s"] for x in fld + sp]
    record("LIVE ShedPart R6 R7 GCM", windows=len(sp), sp_share_max=max(shares), t_sp_ms_max=1e3 * max(x["t_sp_s"] for x in sp),
           t_proc_fld_s=[round(x["t_proc_measured_s"], 3) for x in fld],
           t_proc_shedpart_s=[round(x["t_proc_measured_s"], 3) for x in sp],
           load_max_fld=[x["load_max"] for x in fld], load_max_shedpart=[x["load_max"] for x in sp],
           speedup_measured=[round(x, 2) for x in speedup], speedup_predicted=[round(x, 2) for x in predicted],
           measured_over_predicted=(min(ratios), max(ratios)), shed_fraction=sum(x["shed"] for x in sp) / sum(x["tuples"] for x in sp),
           ran=[x["ran"] for x in sp])
    assert all(x["ran"] == 1 for x in sp) and all(s < 1e-3 for s in shares), shares
    assert all(m > 1.0 for m in speedup), speedup
    assert all(WINDOW_BAND[0] <= x <= WINDOW_BAND[1] for x in ratios), ratios
    assert np.isfinite(ratios).all()
