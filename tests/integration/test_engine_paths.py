"""Engine paths no other test reaches, each on the real component (the real engines and command
line in process, the real job-graph solver, Great Expectations through ``results validate``):

* grouping's windows of dataset time (``--window 2s``): the series cut where the dataset's ``ts``
  column says, computed here from the timestamps;
* the allocation ``grouping_replay`` workload end to end, and the optimum's gating: ``--optimum
  off``, ``--opt-max-tasks`` (instances above it get none, status ``too_large``), a node-limited
  reference (``--opt-node-limit 1``: reported ``time_limit`` with its bound and gap, never
  ``optimal``);
* the ``shedpart-shuffle`` and ``shuffle-only`` shedders end to end, their windows, round-robin loads
  and imbalance computed here from the dataset;
* results replaced atomically when the write fails partway (the previous results intact, no staging
  directory left), and the replay's scratch directory removed when an engine raises.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from skewbench import replay as shared
from skewbench.cli import main
from skewbench.datasets.contract import DatasetWriter
from skewbench.errors import SkewbenchError


def _cli(*args, code=0):
    r = CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)
    assert r.exit_code == code, r.output
    return r


def _validate(out: Path) -> None:
    r = _cli("results", "validate", out)
    assert "all expectations met" in r.output, r.output


def _series(out: Path) -> list[dict]:
    return pq.read_table(out / "series.parquet").to_pylist()


def _summary(out: Path) -> list[dict]:
    return pq.read_table(out / "summary.parquet").to_pylist()


def _hidden(parent: Path) -> list[str]:
    """Staging, scratch and discarded directories left beside a results directory."""
    return sorted(p.name for p in parent.iterdir() if p.name.startswith("."))


# ---------------------------------------------------------------------------------------------
# 2. grouping: windows of dataset time

#: dataset seconds, starting off zero; tuples exactly on a window edge (12.25, 14.25, 20.25),
#: an empty window ([16.25, 18.25)) and a gap of several windows before the last tuples
TS = [10.25, 10.5, 11.0, 12.0, 12.25, 12.25, 13.5, 14.0, 14.25, 15.0, 16.0, 18.5, 19.0, 20.25, 20.5, 27.0, 27.5,
      28.25]


@pytest.fixture(scope="module")
def timed_ds(tmp_path_factory):
    d = tmp_path_factory.mktemp("gw") / "timed"
    ts = np.repeat(np.array(TS), 3)  # three tuples at each instant: 54 tuples
    keys = np.arange(len(ts)) % 5
    with DatasetWriter(d, ["seq", "ts", "key"]) as w:
        w.append({"ts": ts, "key": keys.astype(np.int64)})
        w.commit({"kind": "synthetic", "generator": "test", "params": {}, "seed": 0, "n_keys": 5, "name": "timed"})
    return d, ts.tolist()


def _time_windows(ts: list[float], width: float) -> list[tuple[int, int]]:
    """(first position, one past the last) of each non-empty window [t0 + k w, t0 + (k + 1) w)."""
    out: list[list[int]] = []
    last_k = None
    for i, t in enumerate(ts):
        k = math.floor((t - ts[0]) / width)
        if k != last_k:
            out.append([i, i + 1])
            last_k = k
        else:
            out[-1][1] = i + 1
    return [(a, b) for a, b in out]


def test_grouping_time_windows_cut_at_the_timestamps(timed_ds, tmp_path):
    ds, ts = timed_ds
    out = tmp_path / "r"
    _cli("replay", "grouping", "--dataset", ds, "--strategies", "kg,sg", "--workers", "3", "--sources", "2",
         "--window", "2s", "--out", out)
    want = _time_windows(ts, 2.0)
    # [10.25, 12.25) [12.25, 14.25) [14.25, 16.25) -- [18.25, 20.25) [20.25, 22.25) -- [26.25, 28.25) [28.25, 30.25)
    assert [b - a for a, b in want] == [12, 12, 9, 6, 6, 6, 3]
    rows = _series(out)
    for strategy in ("kg", "sg"):
        got = sorted((r for r in rows if r["strategy"] == strategy), key=lambda r: r["window"])
        assert [r["window"] for r in got] == list(range(len(want)))
        assert [(r["seq_start"], r["seq_end"]) for r in got] == want
        assert [r["tuples"] for r in got] == [b - a for a, b in want]
        assert all(sum(r["worker_tuples_win"]) == r["tuples"] for r in got)
    assert _summary(out)[0]["tuples"] == len(ts)


# ---------------------------------------------------------------------------------------------
# 3. allocation: the grouping_replay workload and the optimum's gating

ALLOC = ("td", "tl", "storm")


@pytest.fixture(scope="module")
def replay_jobs(tmp_path_factory):
    """Job graphs from a grouping replay: kg, sg, pkg on 6 workers fed by 3 sources (9 tasks each)."""
    from skewbench.allocation.workloads import grouping_replay

    out = tmp_path_factory.mktemp("gr") / "jobs"
    params = {"stream": {"alpha": 1.4, "keys": 200, "tuples": 4000}, "strategies": ["kg", "sg", "pkg"], "workers": 6,
              "sources": 3}
    meta = grouping_replay(out, params=params, seed=0)
    return out, meta, params


def _alloc(ds, out, *extra):
    _cli("replay", "allocation", "--dataset", ds, "--strategies", ",".join(ALLOC), "--out", out, *extra)
    return out


#: the allocation replays of the job graphs: name -> extra options
ALLOC_RUNS = {"auto": (), "off": ("--optimum", "off"), "max8": ("--opt-max-tasks", "8"),
              "max9": ("--opt-max-tasks", "9"), "limited": ("--opt-node-limit", "1")}


@pytest.fixture(scope="module")
def alloc_runs(replay_jobs, tmp_path_factory):
    base = tmp_path_factory.mktemp("alloc")
    return {name: _alloc(replay_jobs[0], base / name, *extra) for name, extra in ALLOC_RUNS.items()}


def test_grouping_replay_workload_end_to_end(replay_jobs, alloc_runs):
    """Three instances (one per grouping strategy), each 3 source tasks and 6 worker tasks; their
    links carry the stream's 4,000 tuples at 100 bytes each over 1 s (0.4 MB/s in all) and the
    busiest worker costs 80% of a node (from_grouping's defaults); every strategy's gain is within
    the proven optimum."""
    from skewbench.allocation.store import read_jobs

    ds, meta, params = replay_jobs
    assert meta["job_graph"]["instances"] == 3 and meta["tuples"] == 27
    jobs = read_jobs(ds)
    assert sorted(j.meta["strategy"] for j in jobs) == ["kg", "pkg", "sg"]
    for j in jobs:
        assert list(j.tasks) == [3, 6]
        total_rate = sum(float(np.sum(v)) for v in j.link_rate.values()) if j.link_rate else float(np.sum(j.rate))
        assert total_rate == pytest.approx(4000 * 100 / 1e6, rel=1e-9)
    busiest = max(float(np.max(j.task_cost[3:])) for j in jobs)
    assert busiest == pytest.approx(80.0, rel=1e-9)
    summary, series = _summary(alloc_runs["auto"]), _series(alloc_runs["auto"])
    assert len(series) == 3 * len(ALLOC) and {r["opt_status"] for r in series} == {"optimal"}
    for r in series:
        assert r["opt_gap"] == 0.0 and r["gain"] <= r["opt_gain"] * (1 + 1e-9)
    assert all(r["opt_proven"] == 3 for r in summary)


@pytest.mark.parametrize("run,status", [("off", "off"), ("max8", "too_large")])
def test_optimum_off_and_opt_max_tasks(alloc_runs, run, status):
    """``--optimum off``: status off, no optimum, gap or ratio, in the series and the summary;
    ``--opt-max-tasks`` below the instances' 9 tasks: status too_large, nothing solved; at 9:
    every instance solved."""
    summary, series = _summary(alloc_runs[run]), _series(alloc_runs[run])
    assert len(series) == 3 * len(ALLOC) and {r["opt_status"] for r in series} == {status}
    for r in series:
        assert r["opt_gain"] is None and r["opt_gap"] is None and r["optimality"] is None, r
    for r in summary:
        assert r["opt_instances"] == 0 and r["opt_proven"] == 0 and r["optimality"] is None, r
    assert {r["opt_status"] for r in _series(alloc_runs["max9"])} == {"optimal"}


def test_node_limited_reference_is_not_called_optimal(alloc_runs):
    """One branch-and-bound node: the instances HiGHS cannot prove at the root are reported
    ``time_limit`` with a positive gap, and their ``opt_gain`` is the solver's bound, at or above
    the proven optimum of the unlimited run; none of them is counted as proven."""
    proven = {r["instance"]: r["opt_gain"] for r in _series(alloc_runs["auto"])}
    summary, limited = _summary(alloc_runs["limited"]), _series(alloc_runs["limited"])
    statuses = {r["instance"]: r["opt_status"] for r in limited}
    assert set(statuses.values()) <= {"optimal", "time_limit"}
    cut = [i for i, s in statuses.items() if s == "time_limit"]
    assert cut, "a node limit of 1 must stop at least one of these instances before its proof"
    for r in limited:
        if r["opt_status"] == "time_limit":
            assert r["opt_gap"] > 0 and r["opt_gain"] >= proven[r["instance"]] * (1 - 1e-9), r
        else:
            assert r["opt_gap"] == 0.0 and r["opt_gain"] == pytest.approx(proven[r["instance"]], rel=1e-9)
    assert all(r["opt_proven"] == 3 - len(cut) and r["opt_gap_max"] > 0 for r in summary)


@pytest.mark.slow
def test_allocation_results_pass_validation(alloc_runs):
    """Great Expectations (``skewbench results validate``, about 7-20 s a directory here) accepts
    every gated run: statuses off, too_large and time_limit with their nulls and gaps."""
    for name in ("auto", "off", "max8", "limited"):
        _validate(alloc_runs[name])


# ---------------------------------------------------------------------------------------------
# 4. shedding: shedpart-shuffle and shuffle-only end to end

RANGE, SLIDE, V = 30.0, 15.0, 7


@pytest.fixture(scope="module")
def part_ds(tmp_path_factory):
    d = tmp_path_factory.mktemp("sp") / "part"
    rng = np.random.default_rng(9)
    m = 1500
    ts = np.cumsum(rng.integers(1, 9, size=m)) / 32.0  # dyadic, irregular: 3.4 .. 4.3 tuples per second
    keys = rng.choice(5, size=m, p=[0.55, 0.25, 0.1, 0.07, 0.03]).astype(np.int64)
    values = np.maximum(rng.normal(20.0 + 10.0 * keys, 5.0), 0.5)
    with DatasetWriter(d, ["seq", "ts", "key", "value"]) as w:
        w.append({"ts": ts, "key": keys, "value": values})
        w.commit({"kind": "synthetic", "generator": "test", "params": {}, "seed": 9, "n_keys": 5, "name": "part"})
    return d, ts.tolist()


def _shuffle_windows(ts):
    """Complete windows [k s, k s + r) inside [ts[0], ts[-1]], each with its tuples' round-robin
    loads on V workers (tuple i to worker i mod V) and their imbalance max - mean."""
    out = []
    k = math.ceil(ts[0] / SLIDE)
    while k * SLIDE + RANGE <= ts[-1]:
        lo, hi = k * SLIDE, k * SLIDE + RANGE
        loads = [0] * V
        n = 0
        for i, t in enumerate(ts):
            if lo <= t < hi:
                loads[i % V] += 1
                n += 1
        out.append({"start": lo, "end": hi, "tuples": n, "imbalance_before": max(loads) - n / V})
        k += 1
    return out


def test_shuffle_shedders_end_to_end(part_ds, tmp_path):
    ds, ts = part_ds
    out = tmp_path / "r"
    _cli("replay", "shedding", "--dataset", ds, "--strategies", "shedpart-shuffle,shuffle-only", "--workers", V,
         "--range", RANGE, "--slide", SLIDE, "--seeds", "2", "--out", out)
    want = _shuffle_windows(ts)
    assert len(want) >= 12
    summary, series = _summary(out), _series(out)
    assert sorted((r["strategy"], r["seed"]) for r in summary) == [("shedpart-shuffle", 0), ("shedpart-shuffle", 1),
                                                                     ("shuffle-only", 0), ("shuffle-only", 1)]
    for row in summary:
        assert row["kind"] == "partition" and row["windows"] == len(want) and row["workers"] == V
        got = sorted((s for s in series if s["cell_id"] == row["cell_id"]), key=lambda s: s["window"])
        assert [(s["start"], s["end"], s["tuples"]) for s in got] == [(w["start"], w["end"], w["tuples"]) for w in want]
        for s, w in zip(got, want):
            assert s["imbalance_before"] == pytest.approx(w["imbalance_before"], abs=1e-9)
            # trimming only removes tuples: no worker ends above its round-robin share
            assert 0 <= s["load_max"] <= math.ceil(w["tuples"] / V) and s["imbalance"] >= 0
            shed = s["shed_fraction"] * w["tuples"]
            assert shed == pytest.approx(round(shed), abs=1e-6)
        shed_total = sum(round(s["shed_fraction"] * s["tuples"]) for s in got)
        assert row["shed_fraction"] == pytest.approx(shed_total / sum(w["tuples"] for w in want), rel=1e-12)
        if row["strategy"] == "shuffle-only":  # nothing shed: the aggregation sees the routed loads
            assert row["shed_fraction"] == 0 and row["coverage"] is None
            assert all(s["imbalance"] == s["imbalance_before"] and s["shed_fraction"] == 0 for s in got)
            assert row["imbalance_max"] == pytest.approx(max(w["imbalance_before"] for w in want), abs=1e-9)
        else:  # ShedPart on shuffle grouping is plain load shedding: it ran and shed in every window here
            assert all(s["ran"] == 1 and s["shed_fraction"] > 0 for s in got) and row["skip_rate"] == 0


@pytest.mark.slow
def test_shuffle_shedders_results_pass_validation(part_ds, tmp_path):
    out = tmp_path / "r"
    _cli("replay", "shedding", "--dataset", part_ds[0], "--strategies", "shedpart-shuffle,shuffle-only", "--workers",
         V, "--range", RANGE, "--slide", SLIDE, "--out", out)
    _validate(out)


# ---------------------------------------------------------------------------------------------
# 5. results replaced atomically; scratch removed when an engine raises

@pytest.fixture
def previous(part_ds, tmp_path):
    """A complete shedding results directory (shuffle-only), and its files' bytes."""
    out = tmp_path / "results"
    _cli("replay", "shedding", "--dataset", part_ds[0], "--strategies", "shuffle-only", "--workers", "3",
         "--range", RANGE, "--slide", SLIDE, "--out", out)
    return out, {p.name: p.read_bytes() for p in out.iterdir()}


def _shed_cells():
    from skewbench.shedding import engine

    return engine, engine.grid(["shuffle-only", "fld"], [100], [4], [0])


def test_failed_write_keeps_previous_results(part_ds, previous):
    """The replay ran; its results fail to write partway (summary.parquet already staged, then a
    series value the int64 column refuses): the previous directory is untouched, byte for byte, and
    neither the staging nor the scratch directory remains."""
    out, before = previous
    engine, cells = _shed_cells()
    config = engine.ShedConfig(range_s=RANGE, slide_s=SLIDE)
    staged = []

    def run(scratch: Path) -> shared.Replayed:
        res = engine.replay(str(part_ds[0]), cells, config, shared.local_executor)
        res.series[-1]["tuples"] = 2.5  # the last row of the last table written
        staged.append(scratch)
        return res

    with pytest.raises(SkewbenchError, match=r"results column tuples: 2\.5 is not an integer"):
        shared.replay_to_dir("shedding", part_ds[0], cells, out, run, config, overwrite=True)
    assert staged and not staged[0].exists()
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert _hidden(out.parent) == []
    # the same replay without the bad value replaces the directory
    shared.replay_to_dir("shedding", part_ds[0], cells, out,
                         lambda s: engine.replay(str(part_ds[0]), cells, config, shared.local_executor), config,
                         overwrite=True)
    assert {r["strategy"] for r in _summary(out)} == {"shuffle-only", "fld"} and _hidden(out.parent) == []


def test_scratch_removed_when_the_engine_raises(part_ds, previous, tmp_path):
    """The shedding engine refuses a window range longer than the dataset inside the replay, and
    the grouping engine's tasks fail after writing the key counts into the scratch directory: both
    times the scratch directory is gone, no results are written and the previous ones stay."""
    out, before = previous
    engine, cells = _shed_cells()
    seen = []

    def run(scratch: Path) -> shared.Replayed:
        seen.append(scratch)
        (scratch / "partial.bin").write_bytes(b"x" * 100)
        return engine.replay(str(part_ds[0]), cells, engine.ShedConfig(range_s=1e6, slide_s=10.0),
                             shared.local_executor)

    with pytest.raises(SkewbenchError, match="no complete window of range 1e[+]06 s"):
        shared.replay_to_dir("shedding", part_ds[0], cells, out, run, overwrite=True)
    assert seen and not seen[0].exists() and _hidden(out.parent) == []
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before

    from skewbench.grouping import engine as gengine

    listed = []

    def failing(fn, items, description=""):
        done = shared.local_executor(fn, items, description)  # the real tasks run
        listed.extend(sorted(p.name for d in tmp_path.glob(".skewbench-scratch-*") for p in d.iterdir()))
        raise RuntimeError(f"executor lost {len(done)} task result(s)")

    gout = tmp_path / "grouping"
    gcells = gengine.grid(["kg", "pkg"], [3], [2], [0])
    with pytest.raises(RuntimeError, match=r"executor lost 1 task result\(s\)"):
        gengine.replay_to_dir(part_ds[0], gcells, gout, executor=failing)
    assert "key_counts.npy" in listed  # the engine had written into its scratch directory
    assert not gout.exists() and [n for n in _hidden(tmp_path) if "scratch" in n or "tmp" in n] == []


def test_scratch_on_the_results_storage_when_their_parent_is_missing(part_ds, tmp_path):
    """The nightly's results go to <run>/<dataset>/<family>, whose parents do not exist yet when
    the first replay of a dataset starts. The scratch directory (the grouping engine's key counts,
    read by every Spark task) must still go beside the results, on the storage the executors
    share, never into the driver's temporary directory (which executors on other machines do not
    see: make deploy-test found this on the containerised cluster). When the replay fails, the
    parents it made go again."""
    from skewbench.grouping import engine as gengine

    gcells = gengine.grid(["kg", "pkg"], [3], [2], [0])
    seen: list[Path] = []

    def watching(fn, items, description=""):
        seen.extend(d for d in (tmp_path / "run").rglob(".skewbench-scratch-*") if (d / "key_counts.npy").exists())
        return shared.local_executor(fn, items, description)

    out = tmp_path / "run" / "night" / "tiny" / "grouping"
    gengine.replay_to_dir(part_ds[0], gcells, out, executor=watching)
    assert [d.parent for d in seen] == [out.parent] and not seen[0].exists()
    assert {r["strategy"] for r in _summary(out)} == {"kg", "pkg"}

    def failing(fn, items, description=""):
        seen.extend(d for d in (tmp_path / "run2").rglob(".skewbench-scratch-*"))
        raise RuntimeError("executor lost")

    out2 = tmp_path / "run2" / "night" / "tiny" / "grouping"
    with pytest.raises(RuntimeError, match="executor lost"):
        gengine.replay_to_dir(part_ds[0], gcells, out2, executor=failing)
    assert seen[-1].parent == out2.parent and not (tmp_path / "run2").exists()
