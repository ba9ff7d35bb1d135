"""CI's guard on skipped tests: every skip is printed with its full reason (tests/skip_report.py),
and .ci/check_skips.py fails a stage whose skips are not on the reviewed list .ci/allowed-skips.txt
(a missing JDK, browser, Flink environment or data set is a failure in CI, never an allowed skip).
Real pytest runs in subprocesses produce the logs the script reads, as .ci/run saves them."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CHECK = REPO / ".ci" / "check_skips.py"
ALLOWED = REPO / ".ci" / "allowed-skips.txt"

TESTS = '''
import pytest

def test_runs():
    pass

@pytest.mark.parametrize("i", [1, 2])
def test_skipped(i):
    pytest.skip(REASON)
'''

#: the reasons the project's tests give when the machine lacks what they need (each test file's own
#: words): none may be allowed in any stage
MUST_FAIL = [
    "no javac/java on PATH: the JVM's own hash codes cannot be computed",
    "needs javac (make java)",
    "no browser: /usr/bin/chromium is missing (apt-get install chromium)",
    "no browser: /usr/bin/chromium is missing (apt-get install chromium) - the UI test needs it",
    "playwright is not installed (make install installs it)",
    "needs the Flink environment (make flink-env)",
    "real trace samples not found at /x/shared/data",
    "real sample absent: /x/shared/data/debs2015/a.csv (set SKEWBENCH_SHARED_DATA)",
    "the surrogates' input samples are absent from /x: ['debs2015']",
    "no ahead-of-time build: run `python -m skewbench.aot` (make install does)",
]


def pytest_log(tmp_path: Path, reason: str) -> Path:
    """A real pytest run (with the project's skip report) whose two tests skip with ``reason``."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "test_x.py").write_text(f"REASON = {reason!r}\n" + TESTS)
    p = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "tests.skip_report",
                        "--rootdir", str(tmp_path), str(tmp_path / "test_x.py")],
                       capture_output=True, text=True, cwd=REPO, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    log = tmp_path / "stage.log"
    log.write_text(p.stdout)
    return log


def check(stage: str, log: Path, allowed: Path = ALLOWED) -> subprocess.CompletedProcess:
    return subprocess.run(["python3", str(CHECK), stage, str(log), str(allowed)], capture_output=True, text=True,
                          timeout=60)


def test_every_skip_is_printed_with_its_full_reason(tmp_path):
    reason = "deploy: run with make deploy-test (needs Docker, about 11 min) " + "and a long tail " * 12
    text = pytest_log(tmp_path, reason).read_text()
    lines = [ln for ln in text.splitlines() if ln.startswith("SKIP ")]
    assert lines == [f"SKIP test_x.py::test_skipped[{i}] :: {reason.strip()}" for i in (1, 2)], text
    assert re.search(r"=+ skipped tests \(2\), each with its reason =+", text), text


def test_an_allowed_skip_passes_and_is_listed(tmp_path):
    log = pytest_log(tmp_path, "slow: run with make slow (SKEWBENCH_REPRODUCE=full)")
    p = check("make-test", log)
    assert p.returncode == 0, p.stdout + p.stderr
    assert p.stdout.splitlines()[0] == "make-test: 2 skipped test(s)"
    assert "  allowed      test_x.py::test_skipped[1] :: slow: run with make slow" in p.stdout
    # the same skip in make slow, make reproduce or CI's make reproduce-slow, which run the slow
    # tests, is a failure
    for stage in ("slow", "reproduce", "reproduce+slow"):
        p = check(stage, log)
        assert p.returncode == 1 and "  NOT ALLOWED  test_x.py::test_skipped[2] :: slow: " in p.stdout, p.stdout


@pytest.mark.parametrize("reason", MUST_FAIL)
def test_a_missing_tool_or_data_set_fails_every_stage(tmp_path, reason):
    log = pytest_log(tmp_path, reason)
    for stage in ("make-test", "reproduce", "slow", "reproduce+slow", "deploy-test"):
        p = check(stage, log)
        assert p.returncode == 1, (stage, p.stdout)
        assert f"  NOT ALLOWED  test_x.py::test_skipped[1] :: {reason}" in p.stdout
        assert "is a failure in CI" in p.stdout.splitlines()[-1]


def test_a_log_whose_skip_list_is_missing_fails(tmp_path):
    """pytest counted skips the section does not list (the plugin not loaded, or output cut)."""
    log = pytest_log(tmp_path, "deploy: run with make deploy-test (needs Docker, about 11 min)")
    cut = tmp_path / "cut.log"
    cut.write_text("\n".join(ln for ln in log.read_text().splitlines() if not ln.startswith("SKIP ")) + "\n")
    p = check("make-test", cut)
    assert p.returncode == 1 and "pytest counted 2 skipped but 0 are listed" in p.stdout, p.stdout


def test_a_stage_of_two_pytest_runs_sums_their_skips(tmp_path):
    """make reproduce runs pytest twice (the timing checks alone after the rest): the skips of both
    runs are listed and counted; one run's list cut is still caught."""
    one = pytest_log(tmp_path / "a", "deploy: run with make deploy-test (needs Docker, about 11 min)").read_text()
    two = pytest_log(tmp_path / "b", "deploy: run with make deploy-test (needs Docker, about 11 min)").read_text()
    both = tmp_path / "both.log"
    both.write_text(one + "the timing checks alone\n" + two)
    p = check("reproduce", both)
    assert p.returncode == 0 and p.stdout.splitlines()[0] == "reproduce: 4 skipped test(s)", p.stdout
    both.write_text(one + "\n".join(ln for ln in two.splitlines() if not ln.startswith("SKIP ")) + "\n")
    p = check("reproduce", both)
    assert p.returncode == 1 and "pytest counted 4 skipped but 2 are listed" in p.stdout, p.stdout


def test_the_reviewed_list_is_short_and_says_why():
    rules = [ln for ln in ALLOWED.read_text().splitlines() if ln.strip() and not ln.startswith("#")]
    assert 0 < len(rules) <= 5
    assert all("  # " in ln and ln.split("  # ", 1)[1].strip() for ln in rules), rules


def test_ci_checks_the_skips_after_each_pytest_stage():
    run = (REPO / ".ci" / "run").read_text()
    for stage in ("make test", "reproduce+slow", "deploy-test"):
        assert re.search(rf'\n\s*skips "{re.escape(stage)}"\n', run), stage
    assert run.index('stage "make test" make test') < run.index('skips "make test"')
    assert run.index('stage "reproduce+slow" make reproduce-slow') < run.index('skips "reproduce+slow"')
    assert "python3 .ci/check_skips.py" in run and '*.skips' in run  # listed again in the summary at the end
