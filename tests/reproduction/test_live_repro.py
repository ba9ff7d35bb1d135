"""The papers' engine experiments on a running engine (REPRODUCTION.md, "Live engine").

* Grouping R15/R16 (dchoices.spec.md; the paper's Fig. 13-14 were measured on Storm, 80 workers):
  here Flink and Spark, 8 workers, 4,000 tuples of a Zipf stream over 10^4 keys at
  z in {1.4, 1.7, 2.0}, 1 ms of work per tuple (sleeping), offered at 125% of the workers'
  aggregate capacity, so every strategy is measured at or past saturation, as the paper's
  throughput runs were; each strategy's decisions executed exactly (the records per worker are
  checked against its loads to the tuple by the run itself).
* The engine defaults (Flink's keyBy, natively too; Kafka's partitioner) against PKG and CHWBL on
  the same streams.
* LAS's prototype (las.spec.md, Fig. 7, orders of magnitude): one operator at 75% provisioning,
  tau = 6.4 ms, on the first 2,000 tuples of ``las-e1``: the queueing latency LAS, BL, SM and FK
  leave, measured.

Timing is measured, so the numbers printed in REPRODUCTION.md come from one recorded run
(``REPRO`` lines); what is asserted is what a verdict rests on: orderings, and measured against
predicted within stated bands.  Runs in ``make reproduce`` (it needs the Flink environment), alone
(marker ``timing``): beside another pytest worker's Airflow soak test the engines' per-tuple time
drifted from its calibration mid-run (LAS measured at 61 tau, W-C 10% under SG), so these tests run
after the others, with nothing else on the machine's two cores.
"""

from __future__ import annotations

import functools
from pathlib import Path

import pytest

from tests.reproduction.common import record

pytestmark = [pytest.mark.reproduction, pytest.mark.slow, pytest.mark.timing]

P = 8
TUPLES = 4000
KEYS = 10_000
ZS = (1.4, 1.7, 2.0)
COST_MS = 1.0
RATE = 1.25 * P * 1000.0 / COST_MS  # 125% of the aggregate capacity: 10,000 tuples/s
STRATEGIES = ("kg", "pkg", "dc", "wc", "sg", "flink", "kafka", "chwbl")
#: measured over predicted throughput, on both engines: 0.90-1.00 on an idle machine, 0.94-1.11 beside other work;
#: the band leaves room for a loaded one (the other pytest worker runs beside it)
THROUGHPUT_BAND = (0.75, 1.20)


@functools.lru_cache(maxsize=None)
def _dataset(root: str, z: float) -> str:
    from skewbench.datasets.generators import StreamSpec, generate

    out = Path(root) / f"live-zipf-{z}"
    if not (out / "_skewbench.json").exists():
        generate(StreamSpec.zipf(z, KEYS, TUPLES, seed=1), out, name=f"live-zipf-{z}")
    return str(out)


@pytest.fixture(scope="module")
def runs(tmp_path_factory, flink_env):
    """One live run per z on both engines (a Flink JVM and a Spark session each)."""
    from skewbench.live.config import LiveConfig
    from skewbench.live.run import live_rows

    root = tmp_path_factory.mktemp("live-repro")
    out = {}
    for z in ZS:
        cfg = LiveConfig(dataset=f"zipf-{z}", workers=P, tuples=TUPLES, rate=RATE, cost=COST_MS, grouping=STRATEGIES)
        res = live_rows(_dataset(str(root), z), cfg, root / f"work-{z}", state=root / "state")
        out[z] = res
    return out


def rows_of(res, engine: str, routing: str = "routed") -> dict[str, dict]:
    return {r["strategy"]: r for r in res.rows if r["engine"] == engine and r["routing"] == routing}


@pytest.mark.parametrize("engine", ["flink", "spark"])
def test_r15_throughput_order_on_a_real_engine(runs, engine):
    """KG < PKG < D-C ~ W-C ~ SG (Fig. 13): measured, at every z; D-C, W-C, SG within 8% of
    each other; the gaps widen with z; and each strategy's measured throughput within the band
    of the simulator's prediction."""
    table = {}
    for z, res in runs.items():
        r = rows_of(res, engine)
        thr = {s: r[s]["throughput_measured"] for s in STRATEGIES}
        table[z] = {"measured": thr, "predicted": {s: r[s]["throughput_predicted"] for s in STRATEGIES},
                    "ratio": {s: r[s]["throughput_ratio"] for s in STRATEGIES},
                    "dc_over_pkg": thr["dc"] / thr["pkg"], "dc_over_kg": thr["dc"] / thr["kg"],
                    "dc_over_pkg_predicted": r["dc"]["throughput_predicted"] / r["pkg"]["throughput_predicted"],
                    "dc_over_kg_predicted": r["dc"]["throughput_predicted"] / r["kg"]["throughput_predicted"]}
        assert thr["kg"] < thr["pkg"] < min(thr["dc"], thr["wc"], thr["sg"]), (engine, z, thr)
        top = max(thr["dc"], thr["wc"], thr["sg"])
        assert min(thr["dc"], thr["wc"], thr["sg"]) >= 0.92 * top, (engine, z, thr)
        for s in STRATEGIES:
            lo, hi = THROUGHPUT_BAND
            assert lo <= r[s]["throughput_ratio"] <= hi, (engine, z, s, r[s]["throughput_ratio"])
    record(f"LIVE R15 {engine}", per_z=table)
    gaps = [table[z]["dc_over_kg"] for z in ZS]
    assert gaps == sorted(gaps), gaps  # D-C over KG widens with z


def test_r16_latency_order_on_flink(runs):
    """KG's p99 explodes with skew; PKG's below KG's; SG, D-C and W-C far below PKG (Fig. 14),
    measured on Flink at 125% load; each p99 against the prediction."""
    table = {}
    for z, res in runs.items():
        r = rows_of(res, "flink")
        p99 = {s: r[s]["latency_p99_measured_ms"] for s in STRATEGIES}
        pred = {s: r[s]["latency_p99_predicted_ms"] for s in STRATEGIES}
        table[z] = {"measured": p99, "predicted": pred, "pkg_over_kg": p99["pkg"] / p99["kg"],
                    "dc_over_pkg": p99["dc"] / p99["pkg"], "ratio": {s: r[s]["latency_p99_ratio"] for s in STRATEGIES}}
        assert p99["kg"] > p99["pkg"] > max(p99["dc"], p99["wc"], p99["sg"]), (z, p99)
        for s in ("kg", "pkg"):  # the queues that dominate: within 25% of the prediction
            assert 0.75 <= r[s]["latency_p99_ratio"] <= 1.25, (z, s, r[s]["latency_p99_ratio"])
    record("LIVE R16 flink", per_z=table)
    kg = [table[z]["measured"]["kg"] for z in ZS]
    assert kg == sorted(kg), kg  # KG's p99 grows with z


def test_rank_agreement_of_simulated_and_measured(runs):
    """Kendall's tau between measured and predicted, per engine, z and metric."""
    taus = {f"{a['engine']} z={z} {a['metric']}": a["kendall_tau"] for z, res in runs.items() for a in res.agreement}
    record("LIVE rank agreement", tau=taus)
    assert all(t is not None and t >= 0.6 for k, t in taus.items() if "throughput" in k), taus


def test_engine_defaults_against_pkg_and_chwbl(runs):
    """Flink's keyBy (natively: Flink routed every tuple where our flink strategy says) and
    Kafka's partitioner are key grouping: below PKG at every z; CHWBL between KG and PKG."""
    table = {}
    for z, res in runs.items():
        r = rows_of(res, "flink")
        native = rows_of(res, "flink", "native")["flink"]
        assert native["subtask_records"] == r["flink"]["decided_records"]  # Flink's own keyBy = our model
        thr = {s: r[s]["throughput_measured"] for s in ("flink", "kafka", "pkg", "chwbl", "kg")}
        thr["flink native"] = native["throughput_measured"]
        table[z] = thr
        assert max(thr["flink"], thr["kafka"], thr["flink native"]) < thr["pkg"], (z, thr)
    record("LIVE engine defaults flink", per_z=table)


@pytest.fixture(scope="module")
def las_run(tmp_path_factory, flink_env):
    from skewbench.datasets.catalog import load_catalog
    from skewbench.live.config import LiveConfig
    from skewbench.live.run import live_rows
    from skewbench.materialize import materialize

    root = tmp_path_factory.mktemp("live-las")
    status = materialize(load_catalog().select(["las-e1"])[0], root / "data", engine="local")
    cfg = LiveConfig(dataset="las-e1", workers=P, tuples=2000, cost="dataset", engines=("flink",), grouping=(),
                     shedding=("las", "bl", "sm", "fk"), provisioning=75.0, bound_ms=6.4)
    return live_rows(str(status["path"]), cfg, root / "work", state=root / "state")


def test_las_prototype_queueing_latency_on_flink(las_run):
    """Fig. 7 in orders of magnitude: LAS keeps the real queueing latency within a few tau, BL and
    SM several times further over it.  FK, exactly at tau in the simulator, is far over it on
    the engine: it keeps the operator exactly saturated, so the engine's per-tuple overhead
    (measured by the calibration, not seen by FK's decisions) accumulates as queue; the same
    decisions predicted without that overhead sit at tau again."""
    from skewbench.live.predict import Overheads, predict, timing_metrics

    r = {row["strategy"]: row for row in las_run.rows}
    q = {s: r[s]["q_over_bound_measured"] for s in r}
    record("LIVE LAS prototype", q_over_tau_measured=q,
           q_over_tau_predicted={s: r[s]["q_over_bound_predicted"] for s in r},
           q_over_tau_simulator={s: r[s]["q_over_bound_simulator"] for s in r},
           dropped={s: r[s]["dropped"] for s in r}, overheads=las_run.overheads)
    # LAS at 2.1-4.8 tau over three runs here, BL and SM 13-22 tau: the queue of an operator kept
    # near saturation amplifies the engine's timing noise, hence the margins
    assert q["las"] <= 5.0, q
    assert min(q["bl"], q["sm"]) >= 3.0 * q["las"], q
    # FK: at tau in the simulator, over it on the engine, and the overhead is why
    assert r["fk"]["q_over_bound_simulator"] <= 1.0 + 1e-6 and q["fk"] >= 4.0, q
    ph = las_run.phases["fk"]
    start, end = predict(ph.worker, ph.due_s, ph.cost_ms, ph.workers, Overheads(0.0, 0.0))
    no_overhead = timing_metrics(ph.worker, ph.due_s, start, end, ph.workers)["queueing_mean_ms"] / 6.4
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


def test_shedpart_r5_runtime_on_spark_no_measurable_difference_on_debs(windowed):
    """R5's runtime half: on DEBS the pre-check skips every window, so ShedPart's workers aggregate
    exactly what Storm's do and the total window time (ShedPart + processing) is Storm's: its
    difference from Storm's is within the engine's own difference between two runs of the same
    decisions, and ShedPart's own time is a negligible part of it."""
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
    assert between <= max(within, 0.01 * sum(fld) / 2), (fld, sp)  # no more than the engine's own noise (or 1%)
    assert t_sp / (sum(sp) / 2) < 1e-4, t_sp


def test_shedpart_r6_r7_window_time_on_spark_gcm(windowed):
    """R7: ShedPart's share of each GCM window's time (its own time over its time plus the window's
    processing on the engine) is far below 1% (under 0.1% in every window); R6's runtime: its
    window's parallel step is shorter than Storm's in every window, by the factor their largest
    loads predict; and every window's measured processing time within WINDOW_BAND of the prediction."""
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
