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
predicted within stated bands.  Runs in ``make reproduce`` (it needs the Flink environment).
"""

from __future__ import annotations

import functools
from pathlib import Path

import pytest

from tests.reproduction.common import record

pytestmark = [pytest.mark.reproduction, pytest.mark.slow]

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
