"""What a live run refuses before anything starts (``LiveConfig.check``, ``check_work`` and
``skewbench live``): every bad value is one line, ``error: ...`` on stderr with exit status 2
from the command line, nothing written to ``--out``, and no engine started (``run._execute``,
the one door to Spark and Flink, raises :class:`EngineStarted` here if reached)."""

from __future__ import annotations

import re

import pytest
from click.testing import CliRunner

from skewbench.cli import main
from skewbench.errors import SkewbenchError
from skewbench.live import run
from skewbench.live.cli import RESULTS_FILE
from skewbench.live.config import MAX_SECONDS_PER_STRATEGY, LiveConfig
from tests.live_common import write_dataset

GOOD = dict(dataset="d", workers=4, tuples=100, engines=("spark",), grouping=("kg",))
OPERATOR_SHEDDERS = "las, bl, sm, fk, ns"
TUPLES = 300  # the test dataset's


class EngineStarted(Exception):
    pass


@pytest.fixture(autouse=True)
def no_engine(monkeypatch):
    def refuse(*args, **kwargs):
        raise EngineStarted("an engine was started")

    monkeypatch.setattr(run, "_execute", refuse)


@pytest.fixture(scope="module")
def datasets(tmp_path_factory):
    root = tmp_path_factory.mktemp("live-config")
    keys = [k % 17 for k in range(TUPLES)]
    write_dataset(root / "plain", keys)
    write_dataset(root / "costed", keys[:50], cost=[500.0] * 50)
    (root / "not-a-dataset").mkdir()
    return root


# --------------------------------------------------------------------------------------------
# LiveConfig.check

def between(name: str, lo: str, hi: str, got: str, what: str = "an integer") -> str:
    return rf"^--{name} is {what} in {re.escape(lo)}, {re.escape(hi)}, got {re.escape(got)}$"


RATE = r"tuples per second \(0: as fast as the engine takes them\)"
COST = r"milliseconds per tuple, or 'dataset'"
ADDRESS = r"^--flink-address is HOST:PORT of a Flink REST endpoint, got "
LOAD = r"percent of the workers' capacity"
DURATION = r"seconds of stream per phase"
WARMUP = r"the share of a phase left out of its measurement"
CHECKPOINT = r"seconds \(0: no checkpoints\)"
KILL = r"seconds into a phase \(0: none\)"
RATE_0_ON_FLINK = (r"^--rate 0 \(as fast as the engine takes them\) has no steady state to measure on Flink: give a rate "
                   r"in tuples per second, or --load in percent of the workers' capacity$")
KILL_LOCAL = r"^--kill-taskmanager kills a TaskManager of the local cluster \(--cluster local, no --flink-address\)$"
BAD = [
    ({"workers": 0}, between("workers", "[1", "64]", "0")),
    ({"workers": 65}, between("workers", "[1", "64]", "65")),
    ({"workers": True}, between("workers", "[1", "64]", "True")),
    ({"workers": 2.0}, between("workers", "[1", "64]", "2.0")),
    ({"tuples": 0}, between("tuples", "[1", "5,000,000]", "0")),
    ({"tuples": 5_000_001}, between("tuples", "[1", "5,000,000]", "5000001")),
    ({"tuples": 100.0}, between("tuples", "[1", "5,000,000]", "100.0")),
    ({"sources": 0}, between("sources", "[1", "1,000]", "0")),
    ({"load": 0.0}, between("load", "(0", "1000]", "0.0", LOAD)),
    ({"load": -5.0}, between("load", "(0", "1000]", "-5.0", LOAD)),
    ({"load": 1000.5}, between("load", "(0", "1000]", "1000.5", LOAD)),
    ({"load": float("nan")}, between("load", "(0", "1000]", "nan", LOAD)),
    ({"load": "high"}, between("load", "(0", "1000]", "'high'", LOAD)),
    ({"duration_s": 0.5}, between("duration", "[1", "600]", "0.5", DURATION)),
    ({"duration_s": 600.5}, between("duration", "[1", "600]", "600.5", DURATION)),
    ({"warmup": -0.1}, between("warmup", "[0", "0.9]", "-0.1", WARMUP)),
    ({"warmup": 0.95}, between("warmup", "[0", "0.9]", "0.95", WARMUP)),
    ({"repeat": 0}, between("repeat", "[1", "20]", "0")),
    ({"repeat": 21}, between("repeat", "[1", "20]", "21")),
    ({"repeat": 2.0}, between("repeat", "[1", "20]", "2.0")),
    ({"window_ms": 0.0}, between("window", "(0", "3.6e+06]", "0.0", "milliseconds")),
    ({"window_ms": 3_600_001.0}, between("window", "(0", "3.6e+06]", "3600001.0", "milliseconds")),
    ({"watermark_ms": 0}, between("watermark-interval", "[1", "10,000]", "0")),
    ({"watermark_ms": 10_001}, between("watermark-interval", "[1", "10,000]", "10001")),
    ({"merge_parallelism": -1}, between("merge-parallelism", "[0", "64]", "-1")),
    ({"merge_parallelism": 65}, between("merge-parallelism", "[0", "64]", "65")),
    ({"merge_cost_ms": -1.0}, between("merge-cost", "[0", "1000]", "-1.0", "milliseconds per partial aggregate")),
    ({"checkpoint_s": -1.0}, between("checkpoint-interval", "[0", "3600]", "-1.0", CHECKPOINT)),
    ({"checkpoint_s": 3600.5}, between("checkpoint-interval", "[0", "3600]", "3600.5", CHECKPOINT)),
    ({"taskmanagers": 0}, between("taskmanagers", "[1", "16]", "0")),
    ({"taskmanagers": 17}, between("taskmanagers", "[1", "16]", "17")),
    ({"kill_after_s": -1.0}, between("kill-taskmanager", "[0", "600]", "-1.0", KILL)),
    ({"kill_after_s": 601.0}, between("kill-taskmanager", "[0", "600]", "601.0", KILL)),
    ({"spark_tuples": 0}, between("spark-tuples", "[1", "5,000,000]", "0")),
    ({"spark_tuples": 5_000_001}, between("spark-tuples", "[1", "5,000,000]", "5000001")),
    ({"job": "join"}, r"^--job is one of agg, map, got 'join'$"),
    ({"state_backend": "memory"}, r"^--state-backend is one of hashmap, rocksdb, got 'memory'$"),
    ({"routing": "router"}, r"^--routing is one of replay, engine, got 'router'$"),
    ({"cluster": "yarn"}, r"^--cluster is one of local, mini, got 'yarn'$"),
    ({"engines": ("flink",), "rate": 0.0}, RATE_0_ON_FLINK),
    ({"engines": ("flink", "spark"), "rate": 0}, RATE_0_ON_FLINK),
    ({"kill_after_s": 5.0, "flink_address": "localhost:8081"}, KILL_LOCAL),
    ({"kill_after_s": 5.0, "cluster": "mini"}, KILL_LOCAL),
    ({"rate": -1.0}, between("rate", "[0", "200000]", "-1.0", RATE)),
    ({"rate": 200_000.5}, between("rate", "[0", "200000]", "200000.5", RATE)),
    ({"rate": float("nan")}, between("rate", "[0", "200000]", "nan", RATE)),
    ({"rate": float("inf")}, between("rate", "[0", "200000]", "inf", RATE)),
    ({"cost": 0.0}, between("cost", "(0", "1000]", "0.0", COST)),
    ({"cost": -1.0}, between("cost", "(0", "1000]", "-1.0", COST)),
    ({"cost": 1000.5}, between("cost", "(0", "1000]", "1000.5", COST)),
    ({"cost": "abc"}, between("cost", "(0", "1000]", "'abc'", COST)),
    ({"provisioning": 0.5}, between("provisioning", "[1", "1000]", "0.5", "percent")),
    ({"bound_ms": 0.0}, between("bound", "(0", "1e+06]", "0.0", "milliseconds")),
    ({"work": "gpu"}, r"^--work is one of sleep, cpu, got 'gpu'$"),
    ({"engines": ("storm",)}, r"^--engines: choose from flink, spark, got storm$"),
    ({"engines": ("spark", "storm")}, r"^--engines: choose from flink, spark, got spark, storm$"),
    ({"engines": ()}, r"^--engines: choose from flink, spark, got none$"),
    ({"grouping": (), "shedding": ()}, r"^no strategy to run: name grouping strategies or shedders$"),
    ({"grouping": ("kg", "nope")}, r"^unknown grouping strategy nope; known: kg, sg, pkg, "),
    ({"grouping": ("x", "y")}, r"^unknown grouping strategies x, y; known: kg, "),
    ({"shedding": ("nope",)}, r"^unknown shedding strategy nope; known: las, bl, "),
    ({"shedding": ("las", "shedpart")}, rf"^shedder shedpart partitions a windowed aggregation; the live mode runs "
                                        rf"the operator shedders \({OPERATOR_SHEDDERS}\); `skewbench live-windows` runs the "
                                        rf"partition strategies' windows on Spark$"),
    ({"flink_address": "localhost"}, ADDRESS + "'localhost'$"),
    ({"flink_address": ":8081"}, ADDRESS + "':8081'$"),
    ({"flink_address": "host:0"}, ADDRESS + "'host:0'$"),
    ({"flink_address": "host:65536"}, ADDRESS + "'host:65536'$"),
    ({"flink_address": "host:rest"}, ADDRESS + "'host:rest'$"),
    ({"flink_address": "http://host:8081"}, ADDRESS + "'http://host:8081'$"),
    ({"flink_address": "::1:8081"}, ADDRESS + "'::1:8081'$"),
]


def _id(change: dict) -> str:
    return ",".join(f"{k}={v!r}" for k, v in change.items())


@pytest.mark.parametrize("change, message", BAD, ids=[_id(c) for c, _ in BAD])
def test_check_refuses_each_bad_value_in_one_line(change, message):
    with pytest.raises(SkewbenchError, match=message) as e:
        LiveConfig(**{**GOOD, **change}).check()
    assert "\n" not in str(e.value)


GOOD_TOO = [{"workers": 1}, {"workers": 64}, {"tuples": 1}, {"tuples": 5_000_000}, {"tuples": None}, {"rate": None},
            {"rate": 0.0}, {"rate": 200_000.0}, {"cost": 1000.0}, {"cost": 1e-6}, {"cost": "dataset"},
            {"grouping": (), "shedding": ("las", "bl", "sm", "fk", "ns")}, {"flink_address": "localhost:8081"},
            {"flink_address": "10.0.0.7:1"}, {"load": 1e-3}, {"load": 1000.0}, {"duration_s": 1.0},
            {"duration_s": 600.0}, {"warmup": 0.0}, {"warmup": 0.9}, {"repeat": 1}, {"repeat": 20},
            {"window_ms": 0.001}, {"window_ms": 3_600_000.0}, {"watermark_ms": 1}, {"watermark_ms": 10_000},
            {"merge_parallelism": 0}, {"merge_parallelism": 64}, {"merge_cost_ms": 0.0}, {"merge_cost_ms": 1000.0},
            {"checkpoint_s": 0.0}, {"checkpoint_s": 3600.0}, {"taskmanagers": 1}, {"taskmanagers": 16},
            {"kill_after_s": 600.0}, {"spark_tuples": 1}, {"spark_tuples": 5_000_000}, {"job": "map"},
            {"state_backend": "rocksdb"}, {"cluster": "mini"},
            # the Flink engine at any positive rate, or at the load's (rate None); Spark, a batch, at rate 0
            {"engines": ("flink",), "rate": 1e-3}, {"engines": ("flink", "spark")}, {"engines": ("spark",), "rate": 0}]


@pytest.mark.parametrize("change", GOOD_TOO, ids=[_id(c) for c in GOOD_TOO])
def test_check_takes_the_limits_themselves(change):
    LiveConfig(**{**GOOD, **change}).check()


def test_the_rate_comes_from_the_load_unless_given_and_the_prefix_from_the_duration_unless_given():
    """``load`` percent of the workers' capacity (workers x 1000 / mean cost) for ``duration_s``
    seconds; ``rate`` overrides the load and ``tuples`` the duration."""
    cfg = LiveConfig(dataset="d", workers=8, cost=2.0)  # the defaults: 62.5%, 30 s
    assert (cfg.rate_for(2.0), cfg.tuples_for(2.0)) == (2500.0, 75_000)
    assert (cfg.rate_for(4.0), cfg.tuples_for(4.0)) == (1250.0, 37_500)  # the mean cost the stream has
    cfg = LiveConfig(dataset="d", workers=4, load=100.0, duration_s=8.0)
    assert (cfg.rate_for(1.0), cfg.tuples_for(1.0)) == (4000.0, 32_000)
    cfg = LiveConfig(dataset="d", workers=4, load=100.0, duration_s=8.0, rate=300.0)
    assert (cfg.rate_for(1.0), cfg.tuples_for(1.0)) == (300.0, 2400)
    cfg = LiveConfig(dataset="d", workers=4, load=100.0, duration_s=8.0, rate=300.0, tuples=500)
    assert (cfg.rate_for(1.0), cfg.tuples_for(1.0)) == (300.0, 500)
    assert LiveConfig(dataset="d", duration_s=1.0, rate=0.2).tuples_for(1.0) == 1  # never an empty stream


# --------------------------------------------------------------------------------------------
# check_work

def test_check_work_allows_the_limit_and_refuses_past_it():
    """All due at once (rate 0): the work alone, tuples x cost / workers."""
    limit = int(MAX_SECONDS_PER_STRATEGY * 1000)  # tuples of 1 ms on one worker
    LiveConfig(**{**GOOD, "workers": 1, "tuples": limit, "rate": 0.0}).check_work(1.0)
    with pytest.raises(SkewbenchError, match=r"^600,001 tuples of 1 ms on 1 workers take at least 600 s per strategy "
                                             r"and engine; at most 600: fewer --tuples$"):
        LiveConfig(**{**GOOD, "workers": 1, "tuples": limit + 1, "rate": 0.0}).check_work(1.0)
    with pytest.raises(SkewbenchError, match=r"^2,000,000 tuples of 10 ms on 8 workers take at least 2500 s "):
        LiveConfig(**{**GOOD, "workers": 8, "tuples": 2_000_000, "rate": 0.0}).check_work(10.0)


def test_check_work_counts_the_time_the_rate_takes():
    with pytest.raises(SkewbenchError, match=r"^40,000 tuples of 0.1 ms on 8 workers at 50/s take at least 800 s "):
        LiveConfig(**{**GOOD, "workers": 8, "tuples": 40_000, "rate": 50.0}).check_work(0.1)
    LiveConfig(**{**GOOD, "workers": 8, "tuples": 30_000, "rate": 50.0}).check_work(0.1)


def test_check_work_counts_the_duration_at_the_loads_rate():
    """No rate and no tuples: ``duration_s`` at ``load`` percent; over 100% the work outlasts the
    stream (600 s at 1,000%: 48,000,000 tuples of 1 ms on 8 workers are 6,000 s of work)."""
    LiveConfig(dataset="d", workers=8, duration_s=600.0).check_work(1.0)  # 600 s of stream, 375 s of work
    LiveConfig(dataset="d", workers=8, duration_s=600.0, load=100.0).check_work(1.0)
    with pytest.raises(SkewbenchError, match=r"^48,000,000 tuples of 1 ms on 8 workers take at least 6000 s per "
                                             r"strategy and engine; at most 600: fewer --tuples$"):
        LiveConfig(dataset="d", workers=8, duration_s=600.0, load=1000.0).check_work(1.0)


def test_check_work_counts_the_streams_tuples_not_the_asked_for():
    cfg = LiveConfig(**{**GOOD, "workers": 1, "tuples": 2_000_000, "rate": 0.0})
    cfg.check_work(10.0, tuples=2000)  # 20 s: the dataset has 2,000
    with pytest.raises(SkewbenchError, match=r"^100,000 tuples of 10 ms on 1 workers take at least 1000 s "):
        cfg.check_work(10.0, tuples=100_000)


def test_check_spark_work_counts_the_stages_tuples():
    """A Spark stage's work: its tuples' cost over the workers, at most 600 s a strategy."""
    cfg = LiveConfig(**{**GOOD, "workers": 2})
    cfg.check_spark_work(1000.0, 1200)  # 600 s
    with pytest.raises(SkewbenchError, match=r"^1,201 tuples of 1e\+03 ms on 2 workers take at least 600 s per strategy "
                                             r"on Spark; at most 600: fewer --spark-tuples or a lower cost$"):
        cfg.check_spark_work(1000.0, 1201)


def test_a_run_checks_the_work_of_the_tuples_it_has(datasets, tmp_path):
    """50 tuples of 500 ms on one worker (25 s of work, 40 s of stream at the load's 1.25 tuples a
    second) pass though 200,000 were asked for; at 0.05 tuple per second (1,000 s) they are
    refused before any engine starts."""
    cfg = LiveConfig(**{**GOOD, "workers": 1, "tuples": 200_000, "cost": "dataset", "engines": ("flink",)})
    with pytest.raises(EngineStarted):
        run.live_rows(str(datasets / "costed"), cfg, tmp_path / "work", state=tmp_path / "state")
    cfg.rate = 0.05
    with pytest.raises(SkewbenchError, match=r"^50 tuples of 500 ms on 1 workers at 0.05/s take at least 1000 s "):
        run.live_rows(str(datasets / "costed"), cfg, tmp_path / "work", state=tmp_path / "state")


# --------------------------------------------------------------------------------------------
# the command line

def live(*args: str):
    r = CliRunner().invoke(main, ["live", *args], catch_exceptions=False)
    return r.exit_code, r.stdout, r.stderr


SPARK = ("--engines", "spark")
CLI_BAD = [
    (["--workers", "0", *SPARK], r"--workers is an integer in \[1, 64\], got 0"),
    (["--workers", "65", *SPARK], r"--workers is an integer in \[1, 64\], got 65"),
    (["--tuples", "0", *SPARK], r"--tuples is an integer in \[1, 5,000,000\], got 0"),
    (["--tuples", "5000001", *SPARK], r"--tuples is an integer in \[1, 5,000,000\], got 5000001"),
    (["--load", "0", *SPARK], rf"--load is {LOAD} in \(0, 1000\], got 0.0"),
    (["--duration", "0.5", *SPARK], rf"--duration is {DURATION} in \[1, 600\], got 0.5"),
    (["--warmup", "0.95", *SPARK], rf"--warmup is {WARMUP} in \[0, 0.9\], got 0.95"),
    (["--repeat", "0", *SPARK], r"--repeat is an integer in \[1, 20\], got 0"),
    (["--window", "0", *SPARK], r"--window is milliseconds in \(0, 3.6e\+06\], got 0.0"),
    (["--watermark-interval", "0", *SPARK], r"--watermark-interval is an integer in \[1, 10,000\], got 0"),
    (["--merge-parallelism", "65", *SPARK], r"--merge-parallelism is an integer in \[0, 64\], got 65"),
    (["--merge-cost", "-1", *SPARK], r"--merge-cost is milliseconds per partial aggregate in \[0, 1000\], got -1.0"),
    (["--checkpoint-interval", "-1", *SPARK], rf"--checkpoint-interval is {CHECKPOINT} in \[0, 3600\], got -1.0"),
    (["--taskmanagers", "0", *SPARK], r"--taskmanagers is an integer in \[1, 16\], got 0"),
    (["--kill-taskmanager", "700", *SPARK], rf"--kill-taskmanager is {KILL} in \[0, 600\], got 700.0"),
    (["--kill-taskmanager", "5", "--cluster", "mini", *SPARK], KILL_LOCAL[1:-1]),
    (["--spark-tuples", "0", *SPARK], r"--spark-tuples is an integer in \[1, 5,000,000\], got 0"),
    (["--rate", "0"], RATE_0_ON_FLINK[1:-1]),
    (["--flink-option", "parallelism", *SPARK],
     r"--flink-option is KEY=VALUE \(a Flink configuration option\), got 'parallelism'"),
    (["--rate", "-5", *SPARK], rf"--rate is {RATE} in \[0, 200000\], got -5.0"),
    (["--rate", "1e9", *SPARK], rf"--rate is {RATE} in \[0, 200000\], got 1000000000.0"),
    (["--cost", "-1", *SPARK], rf"--cost is {COST} in \(0, 1000\], got -1.0"),
    (["--cost", "0", *SPARK], rf"--cost is {COST} in \(0, 1000\], got 0.0"),
    (["--cost", "abc", *SPARK], r"--cost is milliseconds per tuple or 'dataset', got 'abc'"),
    (["--engines", "storm"], r"--engines: choose from flink, spark, got storm"),
    (["--engines", ","], r"--engines: choose from flink, spark, got none"),
    (["--strategies", "kg,nope", *SPARK], r"unknown grouping strategy nope; known: kg, sg, pkg(, [a-z-]+)+"),
    (["--strategies", "none", *SPARK], r"no strategy to run: name grouping strategies or shedders"),
    (["--strategies", "none", "--shedders", "shedpart", *SPARK],
     rf"shedder shedpart partitions a windowed aggregation; the live mode runs the operator shedders "
     rf"\({OPERATOR_SHEDDERS}\); `skewbench live-windows` runs the partition strategies' windows on Spark"),
    (["--flink-address", "flinkhost"], r"--flink-address is HOST:PORT of a Flink REST endpoint, got 'flinkhost'"),
    (["--flink-address", "flinkhost:99999", *SPARK], r"--flink-address is HOST:PORT .*, got 'flinkhost:99999'"),
    # the dataset's 300 tuples of 1 s on one worker at a quarter of a tuple per second: 1,200 s
    (["--cost", "dataset", *SPARK], r"{plain}: --cost dataset, but the dataset has no cost column; give a cost in ms"),
]


def _check_one_line_refusal(datasets, tmp_path, args, message, dataset="plain"):
    out = tmp_path / "out"
    code, stdout, stderr = live(str(datasets / dataset), *args, "--out", str(out))
    assert (code, stdout) == (2, ""), (code, stdout, stderr)
    assert len(stderr.splitlines()) == 1, stderr
    assert re.fullmatch("error: " + message.replace("{plain}", re.escape(str(datasets / "plain"))), stderr.strip()), \
        stderr
    assert not out.exists()


@pytest.mark.parametrize("args, message", CLI_BAD, ids=[" ".join(a) for a, _ in CLI_BAD])
def test_cli_refuses_each_bad_value_in_one_line(datasets, tmp_path, args, message):
    _check_one_line_refusal(datasets, tmp_path, args, message)


def test_cli_refuses_a_path_that_is_not_a_dataset(datasets, tmp_path):
    _check_one_line_refusal(datasets, tmp_path, list(SPARK),
                            rf"{re.escape(str(datasets / 'not-a-dataset'))} is not a skewbench dataset "
                            r"\(no _skewbench\.json\)", dataset="not-a-dataset")
    _check_one_line_refusal(datasets, tmp_path, list(SPARK),
                            rf"{re.escape(str(datasets / 'nowhere'))}: neither a dataset directory nor a catalog "
                            r"dataset \(.*\)", dataset="nowhere")


def test_cli_refuses_a_missing_flink_environment(datasets, tmp_path, monkeypatch):
    """Flink is among the engines (the default): one line naming ``make flink-env``; Spark alone
    does not need it (the run then goes as far as the engine)."""
    missing = tmp_path / "no-flink" / "bin" / "python"
    monkeypatch.setenv("SKEWBENCH_FLINK_PYTHON", str(missing))
    _check_one_line_refusal(datasets, tmp_path, [], rf"the Flink environment's interpreter {re.escape(str(missing))} "
                                                    r"does not exist \(SKEWBENCH_FLINK_PYTHON\): install it with "
                                                    r"`make flink-env`")
    with pytest.raises(EngineStarted):
        live(str(datasets / "plain"), *SPARK)


def test_a_refused_run_leaves_earlier_results_as_they_were(datasets, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / RESULTS_FILE).write_text('{"rows": ["earlier"]}')
    code, _, stderr = live(str(datasets / "plain"), *SPARK, "--cost", "dataset", "--out", str(out))
    assert code == 2 and "has no cost column" in stderr
    assert [p.name for p in out.iterdir()] == [RESULTS_FILE]
    assert (out / RESULTS_FILE).read_text() == '{"rows": ["earlier"]}'
