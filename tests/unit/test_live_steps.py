"""The live DAG's Airflow-free pieces: its Params (sections, defaults, one sentence per bad value),
what they make of a live run (:class:`skewbench.live.config.LiveConfig`), the Flink engine's
preconditions, the retry note, the simulated-vs-measured figures, and ``make live``'s short
default run (``scripts/run_live.py``: its conf and the progress lines it echoes)."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import io
import re
from pathlib import Path

import pytest
from PIL import Image

from skewbench.present import livepage
from skewbench.errors import SkewbenchError
from skewbench.live import config as lc
from skewbench.live import steps

REPO = Path(__file__).resolve().parents[2]
SECTIONS = {
    "datasets": "Datasets", "engines": "Engines", "flink_address": "Engines", "taskmanagers": "Engines",
    "native": "Engines", "strategies": "Strategies", "routing": "Strategies", "shedders": "Shedders", "workers": "Stream and work",
    "duration": "Stream and work", "load": "Stream and work", "rate": "Stream and work", "tuples": "Stream and work",
    "cost": "Stream and work", "work": "Stream and work", "job": "Flink job", "window": "Flink job",
    "merge_parallelism": "Flink job", "state_backend": "Flink job", "checkpoint_interval": "Flink job",
    "repeat": "Measurement", "spark_tuples": "Measurement", "capacity_search": "Capacity search",
    "capacity_strategies": "Capacity search", "capacity_duration": "Capacity search", "capacity_steps": "Capacity search"}
#: the capacity search's Params (not LiveConfig fields: capacity_config makes its configuration)
CAPACITY = ("capacity_search", "capacity_strategies", "capacity_duration", "capacity_steps")
#: a Param and the option of ``skewbench live`` (its click parameter's name) that it sets
CLI_NAMES = {"workers": "workers", "duration": "duration_s", "load": "load", "rate": "rate", "tuples": "tuples",
             "cost": "cost", "work": "work", "job": "job", "window": "window_ms",
             "merge_parallelism": "merge_parallelism", "state_backend": "state_backend",
             "checkpoint_interval": "checkpoint_s", "repeat": "repeat", "spark_tuples": "spark_tuples",
             "taskmanagers": "taskmanagers", "routing": "routing"}
#: a Param and the LiveConfig field it sets
FIELDS = {**CLI_NAMES, "engines": "engines", "strategies": "grouping", "shedders": "shedding", "native": "native",
          "flink_address": "flink_address"}


def test_params_come_in_sections_with_the_cli_defaults():
    from skewbench.live.cli import command

    schema = steps.params_schema()
    assert {k: v["section"] for k, v in schema.items()} == SECTIONS
    assert schema["strategies"]["default"] == [*lc.DEFAULT_GROUPING, "spark-sql"]
    # every Param's default is `skewbench live`'s
    cli = {p.name: p.default for p in command.params}
    assert {k: schema[k]["default"] for k in CLI_NAMES} == {k: cli[v] for k, v in CLI_NAMES.items()}
    assert {k: schema[k]["default"] for k in CLI_NAMES} == {
        "workers": 8, "duration": 30.0, "load": 62.5, "rate": None, "tuples": None, "cost": "1", "work": "sleep",
        "job": "agg", "window": 1000.0, "merge_parallelism": 0, "state_backend": "hashmap", "checkpoint_interval": 0.0,
        "repeat": 3, "spark_tuples": 4000, "taskmanagers": 2, "routing": "engine"}
    # rate and tuples may be left empty (from load and from duration): optional in the form
    assert schema["rate"]["type"] == ["null", "number"] and schema["tuples"]["type"] == ["null", "integer"]
    assert (schema["job"]["enum"], schema["state_backend"]["enum"]) == (["agg", "map"], ["hashmap", "rocksdb"])
    assert schema["routing"]["enum"] == ["replay", "engine"]
    # the form's number inputs would clamp an out-of-range value silently: no bounds, the range in words
    assert not any({"minimum", "maximum"} & set(spec) for spec in schema.values())
    assert "(allowed: 1 to 64)" in schema["workers"]["description"]
    assert "(allowed: 1 to 600)" in schema["duration"]["description"]
    assert "(allowed: 1 to 20)" in schema["repeat"]["description"]
    assert "empty = from load" in schema["rate"]["description"]
    assert "empty = from duration" in schema["tuples"]["description"]
    assert set(steps.form_params()) == set(schema)


def test_defaults_run_the_live_set_as_skewbench_live_would():
    conf = steps.check_params({"engines": ["spark"]})
    assert conf["datasets"] == ["live-zipf-1.4", "live-zipf-2.0"]
    assert (conf["cost"], conf["workers"], conf["tuples"], conf["rate"], conf["native"]) == (1.0, 8, None, None, True)
    cfg = steps.config(conf, "live-zipf-1.4")
    # the LiveConfig of `skewbench live live-zipf-1.4 --engines spark --strategies <the DAG's>`
    want = lc.LiveConfig(dataset="live-zipf-1.4", engines=("spark",), grouping=steps.DEFAULT_STRATEGIES)
    assert dataclasses.asdict(cfg) == dataclasses.asdict(want)
    assert (cfg.rate_for(1.0), cfg.tuples_for(1.0)) == (5000.0, 150_000)  # 30 s at 62.5% of 8 workers of 1 ms


def test_every_param_reaches_the_live_run():
    given = {"engines": ["spark"], "strategies": ["kg", "pkg"], "shedders": ["las"], "native": False,
             "flink_address": "", "workers": 4, "duration": 12.5, "load": 80, "rate": 300, "tuples": 900,
             "cost": "2.5", "work": "cpu", "job": "map", "window": 500, "merge_parallelism": 3,
             "state_backend": "rocksdb", "checkpoint_interval": 5, "repeat": 2, "spark_tuples": 1000,
             "taskmanagers": 3, "routing": "replay"}
    cfg = steps.config(steps.check_params(given), "live-zipf-2.0")
    assert set(FIELDS) | {"datasets", *CAPACITY} == set(steps.params_schema())
    got = {k: getattr(cfg, f) for k, f in FIELDS.items()}
    assert got == {**given, "engines": ("spark",), "strategies": ("kg", "pkg"), "shedders": ("las",), "cost": 2.5,
                   "duration": 12.5, "load": 80.0, "rate": 300.0, "window": 500.0, "checkpoint_interval": 5.0}
    assert cfg.dataset == "live-zipf-2.0" and (cfg.rate_for(2.5), cfg.tuples_for(2.5)) == (300.0, 900)
    # rate empty: from the load; tuples empty: from the duration at that rate
    cfg = steps.config(steps.check_params({**given, "rate": None, "tuples": None}), "live-zipf-2.0")
    assert (cfg.rate, cfg.tuples, cfg.rate_for(2.5), cfg.tuples_for(2.5)) == (None, None, 1280.0, 16_000)
    # a rate of 0 (every tuple due at once) is Spark's alone
    assert steps.config(steps.check_params({**given, "rate": 0}), "live-zipf-2.0").rate == 0.0


#: one bad value per Param, and the sentence each gets, in the order check_params writes them
EVERY_BAD = [
    ("colour", "red", "unknown parameter 'colour'; known: datasets, engines, "),
    ("engines", ["spark", "storm"], "parameter 'engines': 'storm' is not one of flink, spark."),
    ("routing", "offline", "parameter 'routing': 'offline' is not one of replay, engine."),
    ("workers", 0, "parameter 'workers': 0 is out of range; allowed: 1 to 64."),
    ("duration", 0.5, "parameter 'duration': 0.5 is out of range; allowed: 1 to 600."),
    ("load", 0, "parameter 'load': 0 is out of range; allowed: above 0 and at most 1,000."),
    ("rate", -1, "parameter 'rate': -1 is out of range; allowed: 0 to 200,000."),
    ("tuples", 2.5, "parameter 'tuples' is an integer or empty, got 2.5."),
    ("cost", "x", "parameter 'cost' is milliseconds per tuple or 'dataset', got 'x'."),
    ("work", "gpu", "parameter 'work': 'gpu' is not one of sleep, cpu."),
    ("job", "join", "parameter 'job': 'join' is not one of agg, map."),
    ("window", 1, "parameter 'window': 1 is out of range; allowed: above 1 and at most 3,600,000."),
    ("merge_parallelism", -1, "parameter 'merge_parallelism': -1 is out of range; allowed: 0 to 64."),
    ("state_backend", "memory", "parameter 'state_backend': 'memory' is not one of hashmap, rocksdb."),
    ("checkpoint_interval", "often", "parameter 'checkpoint_interval' is a number, got 'often'."),
    ("repeat", 21, "parameter 'repeat': 21 is out of range; allowed: 1 to 20."),
    ("spark_tuples", 0, "parameter 'spark_tuples': 0 is out of range; allowed: 1 to 5,000,000."),
    ("taskmanagers", 17, "parameter 'taskmanagers': 17 is out of range; allowed: 1 to 16."),
    ("capacity_search", "yes", "parameter 'capacity_search' is true or false, got 'yes'."),
    ("capacity_strategies", ["kg", "zz"], "parameter 'capacity_strategies': 'zz' is not one of "),
    ("capacity_duration", 0.5, "parameter 'capacity_duration': 0.5 is out of range; allowed: 1 to 120."),
    ("capacity_steps", 21, "parameter 'capacity_steps': 21 is out of range; allowed: 0 to 20."),
    ("native", "yes", "parameter 'native' is true or false, got 'yes'."),
    ("flink_address", "nohost", "parameter 'flink_address' is HOST:PORT of a Flink REST endpoint or empty, got "
                                "'nohost'."),
]


def test_every_bad_value_is_one_sentence_before_anything_starts():
    with pytest.raises(SkewbenchError, match=r"^unknown parameter 'colour'; known: datasets, ") as e:
        steps.check_params({name: v for name, v, _ in EVERY_BAD})
    msg = str(e.value)
    assert "\n" not in msg
    assert re.findall(r"parameter '(\w+)'", msg) == [name for name, _, _ in EVERY_BAD]
    at = [msg.index(sentence) for _, _, sentence in EVERY_BAD]
    assert at == sorted(at), msg


@pytest.mark.parametrize("name, value, sentence", EVERY_BAD[1:], ids=[n for n, _, _ in EVERY_BAD[1:]])
def test_each_bad_value_alone_is_its_sentence(name, value, sentence):
    with pytest.raises(SkewbenchError, match="^" + re.escape(sentence) + ("" if sentence.endswith(".") else ".*") + "$"):
        steps.check_params({"engines": ["spark"], name: value})


def test_the_capacity_search_defaults_are_the_searchs_own():
    """The weekly run searches kg, pkg, dc and sg with the command's defaults (repeated in steps so
    that parsing the DAG imports neither module)."""
    from skewbench.live import capacity, capacity_run

    schema = steps.params_schema()
    assert schema["capacity_search"]["default"] is True
    assert schema["capacity_strategies"]["default"] == list(capacity_run.DEFAULT_STRATEGIES)
    assert schema["capacity_duration"]["default"] == capacity_run.DEFAULT_DURATION_S
    assert schema["capacity_steps"]["default"] == capacity.STEPS


def test_the_capacity_search_runs_on_flink_alone_with_its_strategies():
    conf = steps.check_params({"engines": ["spark"]})
    assert not steps.searches(conf)  # no Flink: no search, and its defaults are no error
    # an empty list is refused only when the search runs
    steps.check_params({"engines": ["spark"], "capacity_strategies": []})
    conf = {**conf, "engines": ["flink", "spark"], "shedders": ["las"], "rate": 300, "tuples": 900,
            "capacity_strategies": ["kg", "dc"], "capacity_duration": 5.0}
    assert steps.searches(conf) and not steps.searches({**conf, "capacity_search": False})
    cfg = steps.capacity_config(conf, "live-zipf-1.4")
    base = steps.config(conf, "live-zipf-1.4")
    assert (cfg.engines, cfg.grouping, cfg.shedding, cfg.rate, cfg.tuples, cfg.duration_s) == (
        ("flink",), ("kg", "dc"), (), None, None, 5.0)
    assert dataclasses.replace(cfg, engines=base.engines, grouping=base.grouping, shedding=base.shedding, rate=base.rate,
                               tuples=base.tuples, duration_s=base.duration_s) == base


@pytest.mark.parametrize("params,message", [
    ({"strategies": [], "shedders": []}, r"^no strategy to run: name grouping strategies or shedders\.$"),
    ({"shedders": ["las", "shedpart"]}, r"^parameter 'shedders': shedpart partitions a windowed aggregation"),
    ({"strategies": ["kg", "kg"]}, r"^parameter 'strategies' names 'kg' twice\.$"),
    ({"engines": []}, r"^parameter 'engines' is empty; choose from flink, spark\.$"),
    ({"datasets": ["zipf-1.2"]}, r"^unknown dataset 'zipf-1\.2'"),
    ({"cost": "0"}, r"^parameter 'cost': 0\.0 is out of range; allowed: above 0 and at most 1,000\.$"),
    ({"tuples": True}, r"^parameter 'tuples' is an integer or empty, got True\.$"),
    ({"rate": "fast"}, r"^parameter 'rate' is a number or empty, got 'fast'\.$"),
    ({"duration": None}, r"^parameter 'duration' is a number, got None\.$"),
    ({"engines": ["flink", "spark"], "rate": 0},
     r"^parameter 'rate': 0 \(every tuple due at once\) has no steady state to measure on Flink; leave it empty "
     r"\(from load\) or give tuples per second\.$"),
    # at a fixed rate (the load's: 1,000 tuples a second of 5 ms on 8 workers), 2,000 s of stream
    ({"tuples": 2_000_000, "cost": "5", "engines": ["flink", "spark"]}, r"^2,000,000 tuples of 5 ms on 8 workers take at least 2000 s per strategy "
                                         r"and engine; at most 600: a shorter duration, fewer tuples, a lower load or "
                                         r"a lower cost$"),
    ({"tuples": 40_000, "rate": 50, "engines": ["flink", "spark"]}, r"^40,000 tuples of 1 ms on 8 workers at 50/s take at least 800 s "),
    # 600 s at ten times the workers' capacity: 48,000,000 tuples, 6,000 s of work
    ({"duration": 600, "load": 1000, "engines": ["flink", "spark"]},
     r"^48,000,000 tuples of 1 ms on 8 workers take at least 6000 s per strategy"),
    # the search runs on Flink: it needs a strategy to search
    ({"engines": ["flink"], "capacity_strategies": []}, r"^parameter 'capacity_strategies' is empty; choose from "),
    ({"spark_tuples": 2_000_000, "cost": "5"},
     r"^parameter 'spark_tuples': 2,000,000 tuples of 5 ms on 8 workers take at least 1250 s per strategy on Spark; "
     r"at most 600: fewer spark_tuples or a lower cost\.$"),
])
def test_bad_params(params, message):
    with pytest.raises(SkewbenchError, match=message):
        steps.check_params({"engines": ["spark"], **params})


def test_the_limits_themselves_pass():
    for params in ({"duration": 1}, {"duration": 600}, {"load": 1000, "duration": 60}, {"rate": 0}, {"rate": 200_000,
                   "tuples": 1000}, {"tuples": 1}, {"tuples": 2_000_000, "rate": 10_000}, {"window": 3_600_000},
                   {"merge_parallelism": 64}, {"checkpoint_interval": 3600}, {"repeat": 1}, {"repeat": 20},
                   {"spark_tuples": 1}, {"taskmanagers": 1}, {"taskmanagers": 16}, {"job": "map"},
                   {"state_backend": "rocksdb"}, {"cost": "dataset", "tuples": 2_000_000}):
        steps.check_params({"engines": ["spark"], **params})


def test_the_flink_engine_without_its_environment_is_one_line(monkeypatch, tmp_path):
    monkeypatch.setenv("SKEWBENCH_FLINK_PYTHON", str(tmp_path / "none" / "bin" / "python"))
    with pytest.raises(SkewbenchError, match=r"^the Flink environment's interpreter .* does not exist "
                                             r"\(SKEWBENCH_FLINK_PYTHON\): install it with `make flink-env`$"):
        steps.check_params({})  # engines default to flink and spark
    steps.check_params({"engines": ["spark"]})  # Spark alone needs no Flink


@pytest.mark.slow  # it needs the Flink environment, which make slow installs and make test does not
def test_an_unreachable_flink_address_is_one_line(flink_env, monkeypatch):
    import socket

    monkeypatch.setenv("SKEWBENCH_FLINK_PYTHON", str(flink_env.python))
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nothing listens on it
    with pytest.raises(SkewbenchError, match=rf"^parameter 'flink_address': nothing answers at 127\.0\.0\.1:{port} "):
        steps.check_params({"engines": ["flink"], "flink_address": f"127.0.0.1:{port}"})


def test_a_retried_attempt_says_its_timings_are_its_own():
    assert steps.attempt_note(1) == "1: the run's first attempt"
    assert steps.attempt_note(2).startswith("2: retried after a failed attempt; every phase ran again from the start")
    assert "a run's timing after a restart is not a measurement" in steps.attempt_note(2)


def _row(engine, strategy, routing, thr, lat=None):
    return {"engine": engine, "strategy": strategy, "routing": routing,
            "throughput_measured": thr[0], "throughput_predicted": thr[1],
            "latency_p99_measured_ms": None if lat is None else lat[0],
            "latency_p99_predicted_ms": None if lat is None else lat[1],
            "makespan_measured_s": 1.0, "makespan_predicted_s": 0.9}


def test_figures_measured_against_predicted_per_engine():
    rows = [_row("flink", "kg", "routed", (300, 320), (900, 1000)), _row("flink", "pkg", "routed", (800, 850), (8, 6)),
            _row("flink", "flink", "native", (500, 510), (40, 45)), _row("spark", "kg", "routed", (310, 330))]
    # Flink measures latency; Spark runs a batch stage: its makespan instead
    assert livepage.engine_metrics(rows, "flink") == ["throughput", "latency_p99"]
    assert livepage.engine_metrics(rows, "spark") == ["throughput", "makespan"]
    for engine, metric in (("flink", "throughput"), ("flink", "latency_p99"), ("spark", "makespan")):
        png = livepage.figure_png(rows, engine, metric, f"{engine} {metric}", tau=1.0)
        img = Image.open(io.BytesIO(png))
        img.load()
        assert img.format == "PNG" and img.size == (540, 460)
    assert livepage.figure_png(rows, "spark", "latency_p99", "none") is None
    html = livepage.page_html("t", [{"dataset": "d", "rows": rows, "simulated": {"kg": "http://ui/#/x"}}])
    assert html.count("<img ") == 4 and html.count('href="http://ui/#/x"') == 2
    assert "kg (native)" not in html and "flink (native)" in html
    assert "router ns a tuple" not in html  # no row routed by a Java router: no such column


def test_the_page_gives_a_routers_time_and_its_share_of_a_source():
    """A row routed by its Java router in Flink's sources: its nanoseconds a tuple and the share of
    a source's time they take at the run's rate (the row's router_source_share), in the table."""
    engine = {**_row("flink", "dc", "engine", (800, 850), (8, 6)), "router_ns_per_tuple": 1431.2,
              "router_source_share": 1431.2e-9 * 5000 / 5}
    html = livepage.page_html("t", [{"dataset": "d", "rows": [engine, _row("flink", "kg", "routed", (300, 320))]}])
    assert "<th>router ns a tuple (share of a source)</th>" in html
    assert ">1,431 (0.14%)</td>" in html and html.count("<td class=\"num\">–</td>") >= 1
    # how each row was routed, in words: the replay's decision made offline, or the engine's router
    assert "<td>in the engine</td>" in html and "<td>decided offline</td>" in html


def test_the_console_table_says_how_each_row_was_routed():
    """`skewbench live`'s table: a strategy routed by the replay's decisions is marked decided
    offline, one routed by its Java router in the engine (engine), the engine's own (native); a
    line under the table says what each mark means."""
    from skewbench.live.cli import table

    rows = [{**_row("flink", s, routing, (800, 850), (8, 6)), "subtask_records": [1, 2], "repeat": 1}
            for s, routing in (("dc", "engine"), ("osg", "routed"), ("flink", "native"))]
    lines = table(rows).splitlines()
    assert [ln.split()[1:3] for ln in lines[1:4]] == [["dc", "(engine)"], ["osg", "(offline)"], ["flink", "(native)"]]
    assert lines[-1].startswith("(engine): decided in Flink's sources by the strategy's Java router; (offline): decided "
                                "by the replay before the run")


# --------------------------------------------------------------------------------------------
# make live (scripts/run_live.py)


def _run_live_script():
    spec = importlib.util.spec_from_file_location("run_live_script", REPO / "scripts" / "run_live.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_make_live_runs_a_short_default_conf():
    """Without a conf, `make live` runs one dataset of the live set on both engines, six strategies
    (both engines' own routing among them), 8 s phases twice at 10 ms a tuple: the Params check
    passes it, its 8 s at the load's rate fit in the dataset (no phase cut short), and each
    strategy's work stays within a few seconds a phase on either engine."""
    from skewbench.datasets.catalog import load_catalog

    conf = _run_live_script().DEFAULT_CONF
    assert conf["engines"] == ["flink", "spark"] and {"flink", "spark-sql"} <= set(conf["strategies"])
    assert len(conf["strategies"]) == 6 and conf["duration"] == 8 and conf["repeat"] == 2
    values, bad = steps._values(conf)
    assert bad == []
    (name,) = values["datasets"]
    entry = load_catalog().select([name])[0]
    assert "live" in entry.sets
    cost = float(values["cost"])
    cfg = steps.config(values, name)
    assert (cfg.rate_for(cost), cfg.tuples_for(cost)) == (500.0, 4000) and cfg.tuples_for(cost) <= entry.spec.tuples
    # balanced, a phase's work is its 8 s at 62.5% (5 s on each worker); a Spark stage 1.25 s
    assert cfg.tuples_for(cost) * cost / 1000 / cfg.workers == 5.0
    assert cfg.spark_tuples * cost / 1000 / cfg.workers == 1.25


def test_make_live_echoes_the_tasks_and_the_live_runs_progress():
    shown = _run_live_script().SHOWN
    # as skewbench.live.run and flinkcluster write them
    for line in ("flink: a local cluster of 2 TaskManagers x 8 slots is up at localhost:8081 (12 s)",
                 "flink: 12 phases (6 strategies x 2), about 3 min of stream and drain (predicted)",
                 "flink: calibration calibration-before-busy done (15,000 tuples, 6 s of stream; 21 s so far)",
                 "flink: calibration before: overhead 0.012 ms per record, transport 0.31 ms, channels of ...",
                 "flink: phase kg#1 done (20,000 tuples, 8 s of stream; 19 s so far)",
                 "flink: phase flink (native)#2 done (20,000 tuples, 8 s of stream; 201 s so far)",
                 "flink: again pkg#2 done (20,000 tuples, 8 s of stream; 13 s so far)",
                 "flink: calibration after: overhead 0.013 ms per record, transport 0.30 ms",
                 "flink: engine done in 262 s",
                 "spark: repetition 1/2 kg done", "spark: repetition 2/2 spark-sql (native) done"):
        assert shown.search(line), line
    m = shown.search("[2026-11-28] INFO - [DAG TEST] end task task_id=run_live map_index=0")
    assert m and m.groups() == ("run_live", "0")
    for line in ("flink: warm-up warm-up-idle done (3,000 tuples; 9 s so far)", "spark: phase",
                 "INFO - Task instance is in running state", "flink: 20,000 tuples at 2,500/s (8 s of stream)"):
        assert not shown.search(line), line


def test_a_runs_one_line_says_what_each_engine_ran():
    result = {"dataset": "live-zipf-1.4",
              "stream": {"dataset": "live-zipf-1.4", "workers": 8, "cost_model": "fixed 2 ms", "rate": 2500.0,
                         "tuples": 20_000},
              "rows": [{"engine": "flink", "tuples_offered": 20_000, "repeat": 2},
                       {"engine": "spark", "tuples_offered": 4000, "repeat": 2},
                       {"engine": "spark", "tuples_offered": 4000, "repeat": 2}]}
    assert steps.describe(result) == ("live-zipf-1.4 (8 workers, fixed 2 ms; flink: 20,000 tuples at 2,500/s, 2 runs "
                                      "a phase; spark: a batch stage of 4,000 tuples, 2 runs a phase)")
    result["rows"] = result["rows"][1:2]
    result["rows"][0]["repeat"] = 1
    assert steps.describe(result).endswith("(8 workers, fixed 2 ms; spark: a batch stage of 4,000 tuples, 1 run a "
                                           "phase)")


#: a capacity search's result as capacity_run.capacity_search returns it (the fields the page,
#: MLflow and the console read)
CAPACITY_DOC = {
    "dataset": "live-zipf-1.4", "workers": 8, "repeat": 3, "duration_s": 8.0, "overhead_ms": 0.0421,
    "search": {"share": 0.01}, "verdict": {"tolerance": 0.15, "within": False, "outside": ["pkg"]},
    "rows": [{"strategy": "kg", "routing": "engine", "tuples": 20_000, "predicted": 2500.0, "measured": 2400.0,
              "measured_min": 2300.0, "measured_max": 2450.0, "ratio": 0.96, "within": True, "separated": True},
             {"strategy": "pkg", "routing": "engine", "tuples": 40_000, "predicted": 6000.0, "measured": 4500.0,
              "measured_min": 4400.0, "measured_max": 4800.0, "ratio": 0.75, "within": False, "separated": False}]}


def test_a_capacity_search_is_its_parent_runs_metrics():
    from skewbench.live.tracking import capacity_metrics

    assert capacity_metrics({"dataset": "d", "capacity": None}) == {} == capacity_metrics({"dataset": "d"})
    m = capacity_metrics({"dataset": "live-zipf-1.4", "capacity": CAPACITY_DOC})
    assert m["capacity/live-zipf-1.4/overhead_ms"] == 0.0421
    assert {k: v for k, v in m.items() if k.startswith("capacity/live-zipf-1.4/pkg/")} == {
        "capacity/live-zipf-1.4/pkg/predicted": 6000.0, "capacity/live-zipf-1.4/pkg/measured": 4500.0,
        "capacity/live-zipf-1.4/pkg/measured_min": 4400.0, "capacity/live-zipf-1.4/pkg/measured_max": 4800.0,
        "capacity/live-zipf-1.4/pkg/ratio": 0.75, "capacity/live-zipf-1.4/pkg/within": 0.0,
        "capacity/live-zipf-1.4/pkg/separated": 0.0}
    assert m["capacity/live-zipf-1.4/kg/within"] == 1.0 and len(m) == 1 + 2 * 7


def test_the_page_has_a_capacity_section_with_its_figure_and_rows():
    html = "\n".join(livepage.capacity_sections(CAPACITY_DOC, "live-zipf-1.4"))
    assert "live-zipf-1.4: capacity on Flink, measured against predicted" in html
    assert "Verdict: outside 15% of its prediction: pkg." in html
    assert "with 8 workers" in html and "searched 3 times" in html
    rows = re.findall(r"<tr><td>(\w+)</td>(.*?)</tr>", html)
    assert [r[0] for r in rows] == ["kg", "pkg"]
    assert [re.sub(r"<[^>]+>", "|", r[1]).replace("||", "|").strip("|").split("|") for r in rows] == [
        ["20,000", "2,500", "2,400", "2,300–2,450", "0.96", "yes", "yes"],
        ["40,000", "6,000", "4,500", "4,400–4,800", "0.75", "no", "no"]]
    png = re.search(r'alt="live-zipf-1.4 flink capacity" src="data:image/png;base64,([^"]+)"', html)
    assert png is not None
    import base64

    assert Image.open(io.BytesIO(base64.b64decode(png.group(1)))).size[0] > 300
    # a run without a search has no such section
    run = {"dataset": "d", "rows": []}
    assert "capacity on Flink" not in "".join(livepage.run_sections(run))
    assert "capacity on Flink" in "".join(livepage.run_sections({**run, "capacity": CAPACITY_DOC}))


def test_a_failed_capacity_search_is_named_in_the_reason(tmp_path):
    """failure.json names the capacity search when it failed (the live run's own failure is named
    by its dataset and attempt alone)."""
    root = tmp_path / "run"
    for name, doc in (("a", {"dataset": "a", "attempt": 2, "error": "SkewbenchError: no cost column"}),
                      ("b", {"dataset": "b", "attempt": 1, "step": "capacity search",
                             "error": "ImplausibleCalibration: drifted"})):
        d = steps.dataset_dir(root, name)
        d.mkdir(parents=True)
        (d / steps.FAILURE).write_text(json.dumps(doc))
    assert steps.failure_reason(str(root), ["a", "b", "c"], "fallback") == (
        "a (attempt 2): SkewbenchError: no cost column; b (attempt 1, capacity search): ImplausibleCalibration: drifted")
    assert steps.failure_reason(str(root), ["c"], "fallback") == "fallback"
