"""The console of `make run` (skewbench.present.console, scripts/run_nightly.py): the progress line on a
terminal and on a plain stream, and the summary after a realistic nightly (the default catalog's
task instances, one replay failed) with real picks from small replays through the command line."""

from __future__ import annotations

import dataclasses
import io
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from skewbench import nightly
from skewbench.cli import main
from skewbench.present.console import Progress, pick_lines, progress_line, state_lines, summary_text
from skewbench.datasets.catalog import load_catalog
from skewbench.datasets.generators import StreamSpec, generate
from skewbench.present.picks import night_picks

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "scripts"))
import run_nightly  # noqa: E402


def cli(*args):
    """The command line in this process (click's runner: the real commands, without a process start each)."""
    r = CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)
    assert r.exit_code == 0, r.output


@pytest.fixture(scope="module")
def run_root(tmp_path_factory):
    """A run directory as the nightly lays it out (<dataset>/<family>/), from real small replays:
    grouping on two Zipf streams, shedding on one, allocation on the paper's Example 2."""
    data = tmp_path_factory.mktemp("data")
    root = tmp_path_factory.mktemp("run")
    for name, alpha in (("zipf-1.4", 1.4), ("zipf-0.8", 0.8)):
        generate(StreamSpec.zipf(alpha, 500, 8000, 3, cost={"model": "levels", "levels": 4, "low": 1, "high": 4}),
                 data / name, name=name)
        cli("replay", "grouping", "--dataset", data / name, "--strategies", "kg,pkg,dc,flink", "--workers", "5,10",
            "--sources", "3", "--out", root / name / "grouping")
    cli("replay", "shedding", "--dataset", data / "zipf-1.4", "--strategies", "las,bl,fk", "--out",
        root / "zipf-1.4" / "shedding")
    cli("datasets", "generate", "allocation", "e1", "--out", data / "alloc-example2", "--name", "alloc-example2")
    cli("replay", "allocation", "--dataset", data / "alloc-example2", "--strategies", "td,tl,storm,ras", "--out",
        root / "alloc-example2" / "allocation")
    (root / "SUMMARY.md").write_text("the full tables\n")
    return root


def nightly_states(failed_item: int = 3) -> dict[str, str]:
    """The task instances of the default nightly (as the DAG maps them over the default catalog),
    all succeeded but one replay (its validation then upstream_failed, its family's mark_failed ran)."""
    conf = nightly.check_params({})
    entries = load_catalog().select(conf["datasets"])
    items = nightly.plan_replays(conf, [{"name": e.name, "path": "", "fingerprint": "", "families": e.families}
                                        for e in entries], "/x")
    states = {t: "success" for t in ("check_params", "dataset_names", "open_tracking", "report", "check_trend",
                                     "prune_runs", "site")}
    states.update({f"prepare_dataset[{i}]": "success" for i in range(len(conf["datasets"]))})
    for fam in conf["families"]:
        mine = [it for it in items if it["family"] == fam]
        states.update({f"{fam}.plan": "success", f"{fam}.spark_kwargs": "success", f"{fam}.log_to_mlflow": "success",
                       f"{fam}.mark_failed": "skipped"})
        states.update({f"{fam}.replay[{i}]": "success" for i in range(len(nightly.replay_jobs(mine)))})
        states.update({f"{fam}.validate[{i}]": "success" for i in range(len(mine))})
    fam = items[failed_item]["family"]
    states[f"{fam}.replay[0]"] = "failed"
    states[f"{fam}.validate[0]"] = "upstream_failed"
    states[f"{fam}.log_to_mlflow"] = "upstream_failed"
    states[f"{fam}.mark_failed"] = "success"
    assert len(states) == run_nightly.expected_tasks({})
    return states


def test_the_summary_of_a_nightly_is_short_names_the_failure_and_a_pick_per_dataset_and_family(run_root):
    states = nightly_states()
    assert sum("[" in t for t in states) >= 40  # 18 datasets, 20 validations, a replay job per family
    dirs = run_nightly.results_dirs(run_root)
    assert [d.relative_to(run_root).as_posix() for d in dirs] == [
        "alloc-example2/allocation", "zipf-0.8/grouping", "zipf-1.4/grouping", "zipf-1.4/shedding"]
    picks = night_picks(dirs)
    text = summary_text("manual__2026-01-01", "failed", 331, states, picks, summary_md=run_root / "SUMMARY.md",
                        overview=run_root / "overview.html", extra=["task log: /tmp/nightly.log"])
    lines = text.splitlines()
    assert len(lines) < 60, text
    failed = [t for t, s in states.items() if s == "failed"]
    assert len(failed) == 1 and f"failed: {failed[0]}" in lines
    # the two other families' mark_failed were skipped
    assert lines[1] == f"tasks: {len(states)} ({len(states) - 5} success, 1 failed, 2 upstream_failed, 2 skipped)"
    for family, ds in (("grouping", "zipf-1.4"), ("grouping", "zipf-0.8"), ("shedding", "zipf-1.4"),
                       ("allocation", "alloc-example2")):
        at = lines.index(next(ln for ln in lines if ln.startswith(f"{family}: ")))
        mine = [ln for ln in lines[at + 1:] if ln.startswith(f"  {ds}")]
        assert mine and " pick " in mine[0] or "; " in mine[0], (family, ds, text)
    # the same rule is written once per family, the numbers once per dataset
    # (grouping: one rule per kind of operator, each with its constraint)
    assert sum(ln.startswith("grouping: keyed aggregation: lowest imbalance") for ln in lines) == 1
    assert sum(ln.startswith("grouping: stateless operator: lowest mean completion time") for ln in lines) == 1
    assert all("(constraint: " in ln for ln in lines if ln.startswith(("grouping: ", "shedding: ", "allocation: ")))
    zipf = next(ln for ln in lines if ln.startswith("  zipf-1.4: ") and "n=5" in ln)
    at = {p.coords["workers"]: p.strategy for p in picks
          if (p.family, p.dataset, p.rule.kind) == ("grouping", "zipf-1.4", "keyed aggregation")}
    if at[5] == at[10]:
        assert f": {at[5]} at n=5,10 | at n=10: pick {at[10]} (" in zipf, zipf
    else:
        assert f": {at[5]} at n=5; {at[10]} at n=10 | at n=10: pick {at[10]} (" in zipf, zipf
    # picks at several values of one coordinate, merged where the strategy is the same
    zpick = next(p for p in picks if (p.family, p.dataset) == ("grouping", "zipf-1.4"))
    merged = pick_lines([dataclasses.replace(zpick, coords={"workers": n}, strategy=s)
                         for n, s in ((5, "dc"), (10, "dc"), (50, "wc"))])
    assert merged[1].startswith("  zipf-1.4: dc at n=5,10; wc at n=50 | at n=50: pick wc ("), merged
    assert "imbalance" in zipf and "vs flink" in zipf
    # the overview is named only when it exists; the full tables' place always
    assert "overview:" not in text and f"full tables: {run_root / 'SUMMARY.md'}" in lines
    (run_root / "overview.html").write_text("<html></html>")
    try:
        again = summary_text("r", "success", 5, states, picks, summary_md=run_root / "SUMMARY.md",
                             overview=run_root / "overview.html")
        assert f"overview: {run_root / 'overview.html'}" in again.splitlines()
    finally:
        (run_root / "overview.html").unlink()


def test_a_full_night_of_picks_stays_under_60_lines(run_root):
    """Every (dataset, family) of the default nightly with real picks (those of the small replays
    under the nightly's dataset names): still under 60 lines, one line per dataset and rule."""
    conf = nightly.check_params({})
    entries = load_catalog().select(conf["datasets"])
    items = nightly.plan_replays(conf, [{"name": e.name, "path": "", "fingerprint": "", "families": e.families}
                                        for e in entries], "/x")
    real = night_picks(run_nightly.results_dirs(run_root))
    by_family = {}
    for p in real:
        by_family.setdefault(p.family, []).append(p)
    picks = [dataclasses.replace(p, dataset=it["dataset"]) for it in items
             for p in by_family[it["family"]] if p.dataset == by_family[it["family"]][0].dataset]
    text = summary_text("r", "success", 331, nightly_states(), picks, summary_md=run_root / "SUMMARY.md")
    assert len(text.splitlines()) < 60, text
    body = pick_lines(picks)
    rules = {fam: len({p.rule for p in ps}) for fam, ps in by_family.items()}  # grouping: a rule per operator kind
    assert rules["grouping"] == 2
    assert len([ln for ln in body if ln.startswith("  ")]) == sum(rules[it["family"]] for it in items)


def test_state_lines_name_at_most_a_few_failures():
    states = {f"grouping.replay[{i}]": "failed" for i in range(12)} | {"report": "success"}
    lines = state_lines(states, show_failed=3)
    assert lines == ["tasks: 13 (1 success, 12 failed)",
                     "failed: grouping.replay[0], grouping.replay[1], grouping.replay[2] and 9 more"]


def test_progress_on_a_terminal_is_one_line_rewritten_in_place():
    out = io.StringIO()
    clock = iter(range(0, 10_000, 7)).__next__
    bar = Progress(out, total=93, width=60, tty=True, clock=clock)
    running = ["grouping.replay[3]", "shedding.validate[12]", "allocation.log_to_mlflow"]
    for done in range(0, 94, 3):
        bar.update(done, running)
    bar.finish(93)
    text = out.getvalue()
    frames = text.split("\r")[1:]
    assert text.startswith("\r") and text.endswith("\n") and text.count("\n") == 1 and len(frames) == 33
    assert all(len(f.rstrip("\n")) <= 59 for f in frames), frames
    assert frames[-1].startswith("[" + "#" * 14 + "] 100% 93/93 tasks")
    mid = frames[10]
    assert "30/93 tasks" in mid and mid.rstrip().endswith("| 3 running"), mid  # no room for names at 60
    wide = progress_line(30, 93, running, 77, width=100)
    assert wide.endswith("30/93 tasks 1:17 | grouping.replay[3], shedding.validate… +1") and len(wide) <= 100, wide
    assert len(progress_line(5, 93, ["allocation.log_to_mlflow"], 75, width=20)) == 20
    assert progress_line(5, 93, ["allocation.log_to_mlflow"], 75, width=200).endswith(
        "5/93 tasks 1:15 | allocation.log_to…")


def test_progress_on_a_plain_stream_writes_a_line_per_tenth():
    out = io.StringIO()
    bar = Progress(out, total=93, tty=False, clock=iter(range(10_000)).__next__)
    for done in range(94):
        bar.update(done, ["grouping.replay[0]"])
    bar.finish(93)
    lines = out.getvalue().splitlines()
    assert "\r" not in out.getvalue() and len(lines) == 11, lines
    assert lines[0].startswith("[") and " 0/93 tasks" in lines[0] and lines[-1].split("] ")[1].startswith("100% 93/93")
    # an unknown total: a line per ten tasks, no bar
    out = io.StringIO()
    bar = Progress(out, total=None, tty=False)
    for done in range(25):
        bar.update(done)
    bar.finish(25)
    assert out.getvalue().splitlines() == ["0 tasks done 0 s", "10 tasks done 0 s", "20 tasks done 0 s",
                                           "25 tasks done 0 s"]


def test_slowest_lines_name_the_five_slowest_tasks_with_their_share():
    from skewbench.present.console import slowest_lines

    seconds = {"grouping.log_to_mlflow": 100.0, "grouping.replay": 74.0, "shedding.replay": 73.0,
               "allocation.replay": 68.0, "grouping.validate[0]": 67.0, "site": 56.0, "report": 35.0}
    assert slowest_lines(seconds, 629.0) == [
        "slowest steps (382 s of 629 s, 61%): grouping.log_to_mlflow 100 s (16%), grouping.replay 74 s (12%), "
        "shedding.replay 73 s (12%), allocation.replay 68 s (11%), grouping.validate[0] 67 s (11%)"]
    assert slowest_lines({}, 10.0) == [] and slowest_lines(seconds, 0.0) == []
    text = summary_text("r", "success", 629.0, {"t": "success"}, [], slowest=slowest_lines(seconds, 629.0))
    assert text.splitlines()[2].startswith("slowest steps (382 s of 629 s, 61%)")


def test_the_progress_follows_the_task_states_the_run_prints(tmp_path):
    """make run's progress reads the states skewbench.dagrun prints every second (``TASKS {...}``):
    the finished ones (whatever their end) and the running ones, from the newest whole line; a line
    cut short, or anything else in the log, changes nothing."""
    log = tmp_path / "nightly.log"
    log.write_text('noise [DAG TEST] starting task_id=x map_index=-1\n'
                   'TASKS {"check_params": "success", "prepare_dataset[0]": "running", "prepare_dataset[1]": "queued"}\n')
    follow = run_nightly.Follow(log)
    follow.poll()
    assert (follow.done, list(follow.running)) == ({"check_params"}, ["prepare_dataset[0]"])
    with open(log, "a") as f:
        f.write('TASKS {"check_params": "success", "prepare_dataset[0]": "failed", "prepare_dataset[1]": "running", '
                '"grouping.plan": "upstream_failed", "grouping.mark_failed": "skipped"}\nTASKS {"check_params": "runn')
    follow.poll()
    assert follow.done == {"check_params", "prepare_dataset[0]", "grouping.plan", "grouping.mark_failed"}
    assert list(follow.running) == ["prepare_dataset[1]"]
    assert run_nightly.FINISHED == {"success", "failed", "skipped", "upstream_failed", "removed"}


@pytest.mark.parametrize("value", ["0", "-1", "two", ""])
def test_a_bad_parallelism_is_one_line(value, monkeypatch):
    monkeypatch.setenv("SKEWBENCH_RUN_PARALLELISM", value)
    with pytest.raises(SystemExit, match=rf"^SKEWBENCH_RUN_PARALLELISM is a positive integer \(tasks at once\), got {value!r}$"):
        run_nightly.parallelism()
