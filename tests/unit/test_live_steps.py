"""The live DAG's Airflow-free pieces: its Params (sections, defaults, one sentence per bad value),
the Flink engine's preconditions, the retry note, and the simulated-vs-measured figures."""

from __future__ import annotations

import io
import re

import pytest
from PIL import Image

from skewbench.present import livepage
from skewbench.errors import SkewbenchError
from skewbench.live import config as lc
from skewbench.live import steps


def test_params_come_in_sections_with_the_cli_defaults():
    schema = steps.params_schema()
    assert {k: v["section"] for k, v in schema.items()} == {
        "datasets": "Datasets", "engines": "Engines", "flink_address": "Engines", "native": "Engines",
        "strategies": "Strategies", "shedders": "Shedders", "workers": "Stream and work", "tuples": "Stream and work",
        "rate": "Stream and work", "cost": "Stream and work", "work": "Stream and work"}
    assert schema["strategies"]["default"] == [*lc.DEFAULT_GROUPING, "spark-sql"]
    assert (schema["workers"]["default"], schema["tuples"]["default"], schema["cost"]["default"]) == (8, 4000, "1")
    # the form's number inputs would clamp an out-of-range value silently: no bounds, the range in words
    assert not {"minimum", "maximum"} & set(schema["workers"]) and "(allowed: 1 to 64)" in schema["workers"]["description"]
    assert set(steps.form_params()) == set(schema)


def test_defaults_run_the_live_set():
    conf = steps.check_params({"engines": ["spark"]})
    assert conf["datasets"] == ["live-zipf-1.4", "live-zipf-2.0"]
    assert (conf["cost"], conf["workers"], conf["tuples"], conf["native"]) == (1.0, 8, 4000, True)


def test_every_bad_value_is_one_sentence_before_anything_starts():
    bad = {"workers": 0, "tuples": 10**9, "rate": -1, "cost": "x", "engines": ["spark", "storm"], "native": "yes",
           "flink_address": "nohost", "work": "gpu", "colour": "red"}
    with pytest.raises(SkewbenchError, match=r"^unknown parameter 'colour'; known: datasets, ") as e:
        steps.check_params(bad)
    msg = str(e.value)
    assert "\n" not in msg
    sentences = re.findall(r"parameter '(\w+)'", msg)
    assert sentences == ["colour", "engines", "workers", "tuples", "rate", "cost", "work", "native", "flink_address"]
    assert "parameter 'rate': -1 is out of range; allowed: 0 to 200,000." in msg


@pytest.mark.parametrize("params,message", [
    ({"strategies": [], "shedders": []}, r"^no strategy to run: name grouping strategies or shedders\.$"),
    ({"shedders": ["las", "shedpart"]}, r"^parameter 'shedders': shedpart partitions a windowed aggregation"),
    ({"strategies": ["kg", "kg"]}, r"^parameter 'strategies' names 'kg' twice\.$"),
    ({"engines": []}, r"^parameter 'engines' is empty; choose from flink, spark\.$"),
    ({"datasets": ["zipf-1.2"]}, r"^unknown dataset 'zipf-1\.2'"),
    ({"cost": "0"}, r"^parameter 'cost': 0\.0 is out of range; allowed: above 0 and at most 1,000\.$"),
    ({"tuples": 200_000, "cost": "5"}, r"take at least 125 s per strategy and engine; at most 120: fewer tuples or "
                                       r"a lower cost$"),
])
def test_bad_params(params, message):
    with pytest.raises(SkewbenchError, match=message):
        steps.check_params({"engines": ["spark"], **params})


def test_the_flink_engine_without_its_environment_is_one_line(monkeypatch, tmp_path):
    monkeypatch.setenv("SKEWBENCH_FLINK_PYTHON", str(tmp_path / "none" / "bin" / "python"))
    with pytest.raises(SkewbenchError, match=r"^the Flink environment's interpreter .* does not exist "
                                             r"\(SKEWBENCH_FLINK_PYTHON\): install it with `make flink-env`$"):
        steps.check_params({})  # engines default to flink and spark
    steps.check_params({"engines": ["spark"]})  # Spark alone needs no Flink


@pytest.mark.slow  # it needs the Flink environment, which make reproduce installs and make test does not
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
