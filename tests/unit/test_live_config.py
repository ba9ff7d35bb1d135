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
BAD = [
    ({"workers": 0}, between("workers", "[1", "64]", "0")),
    ({"workers": 65}, between("workers", "[1", "64]", "65")),
    ({"workers": True}, between("workers", "[1", "64]", "True")),
    ({"workers": 2.0}, between("workers", "[1", "64]", "2.0")),
    ({"tuples": 0}, between("tuples", "[1", "200,000]", "0")),
    ({"tuples": 200_001}, between("tuples", "[1", "200,000]", "200001")),
    ({"sources": 0}, between("sources", "[1", "1,000]", "0")),
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


@pytest.mark.parametrize("change", [{"workers": 1}, {"workers": 64}, {"tuples": 1}, {"tuples": 200_000},
                                    {"rate": 0.0}, {"rate": 200_000.0}, {"cost": 1000.0}, {"cost": 1e-6},
                                    {"cost": "dataset"}, {"grouping": (), "shedding": ("las", "bl", "sm", "fk", "ns")},
                                    {"flink_address": "localhost:8081"}, {"flink_address": "10.0.0.7:1"}])
def test_check_takes_the_limits_themselves(change):
    LiveConfig(**{**GOOD, **change}).check()


# --------------------------------------------------------------------------------------------
# check_work

def test_check_work_allows_the_limit_and_refuses_past_it():
    limit = int(MAX_SECONDS_PER_STRATEGY * 1000)  # tuples of 1 ms on one worker
    LiveConfig(**{**GOOD, "workers": 1, "tuples": limit}).check_work(1.0)
    with pytest.raises(SkewbenchError, match=r"^120,001 tuples of 1 ms on 1 workers take at least 120 s per strategy "
                                             r"and engine; at most 120: fewer --tuples$"):
        LiveConfig(**{**GOOD, "workers": 1, "tuples": limit + 1}).check_work(1.0)
    with pytest.raises(SkewbenchError, match=r"^200,000 tuples of 10 ms on 8 workers take at least 250 s "):
        LiveConfig(**{**GOOD, "workers": 8, "tuples": 200_000}).check_work(10.0)


def test_check_work_counts_the_time_the_rate_takes():
    with pytest.raises(SkewbenchError, match=r"^10,000 tuples of 0.1 ms on 8 workers at 50/s take at least 200 s "):
        LiveConfig(**{**GOOD, "workers": 8, "tuples": 10_000, "rate": 50.0}).check_work(0.1)
    LiveConfig(**{**GOOD, "workers": 8, "tuples": 6000, "rate": 50.0}).check_work(0.1)


def test_check_work_counts_the_streams_tuples_not_the_asked_for():
    cfg = LiveConfig(**{**GOOD, "workers": 1, "tuples": 200_000})
    cfg.check_work(10.0, tuples=2000)  # 20 s: the dataset has 2,000
    with pytest.raises(SkewbenchError, match=r"^20,000 tuples of 10 ms on 1 workers take at least 200 s "):
        cfg.check_work(10.0, tuples=20_000)


def test_a_run_checks_the_work_of_the_tuples_it_has(datasets, tmp_path):
    """50 tuples of 500 ms on one worker (25 s) pass though 200,000 were asked for; at 0.1 tuple
    per second (500 s) they are refused before any engine starts."""
    cfg = LiveConfig(**{**GOOD, "workers": 1, "tuples": 200_000, "cost": "dataset"})
    with pytest.raises(EngineStarted):
        run.live_rows(str(datasets / "costed"), cfg, tmp_path / "work", state=tmp_path / "state")
    cfg.rate = 0.1
    with pytest.raises(SkewbenchError, match=r"^50 tuples of 500 ms on 1 workers at 0.1/s take at least 500 s "):
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
    (["--tuples", "0", *SPARK], r"--tuples is an integer in \[1, 200,000\], got 0"),
    (["--tuples", "200001", *SPARK], r"--tuples is an integer in \[1, 200,000\], got 200001"),
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
    (["--tuples", "200000", "--cost", "1000", "--workers", "1", *SPARK],
     rf"{TUPLES} tuples of 1e\+03 ms on 1 workers take at least {TUPLES} s per strategy and engine; at most 120: "
     r"fewer --tuples"),
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
