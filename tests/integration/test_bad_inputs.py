"""Bad inputs to every family's replay, through the command line (in process, click's runner):
each is one clear line on stderr and a non-zero exit, nothing is written, and results already at
the output path are left as they were."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from skewbench.cli import main
from skewbench.datasets.contract import METADATA_FILE

FAMILIES = {
    "grouping": ["--strategies", "kg,pkg", "--workers", "5", "--sources", "2"],
    "shedding": ["--strategies", "las,fk", "--skip-inapplicable"],
    "allocation": ["--strategies", "td,storm", "--optimum", "off"],
}


def cli(*args):
    r = CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)
    return r.exit_code, r.stdout, r.stderr


@pytest.fixture(scope="module")
def clean(tmp_path_factory):
    """A good dataset per family, and good results of it."""
    root = tmp_path_factory.mktemp("bad")
    code, _, err = cli("datasets", "generate", "zipf", "--alpha", "1.2", "--keys", "300", "--tuples", "30000",
                       "--seed", "1", "--cost", "levels:4:1:4", "--out", root / "stream")
    assert code == 0, err
    code, _, err = cli("datasets", "generate", "allocation", "e3", "--out", root / "jobs")
    assert code == 0, err
    return root


def _copy(src: Path, dst: Path) -> Path:
    import shutil

    shutil.copytree(src, dst)
    return dst


def truncated(ds: Path) -> str:
    part = sorted(ds.glob("part-*.parquet"))[-1]
    part.write_bytes(part.read_bytes()[: part.stat().st_size // 2])
    return "corrupted or truncated"


def bit_flipped(ds: Path) -> str:
    """A bit flipped every 97 bytes of every data file (stream parts and side tables) but their
    footers, the files' sizes unchanged."""
    meta = json.loads((ds / METADATA_FILE).read_text())
    for name in [f["name"] for f in meta["files"]] + [t["file"] for t in meta.get("tables") or ()]:
        path = ds / name
        data = bytearray(path.read_bytes())
        footer = int.from_bytes(data[-8:-4], "little")  # Parquet: ... footer, its length, "PAR1"
        for i in range(8, len(data) - 8 - footer, 97):
            data[i] ^= 0x04
        path.write_bytes(bytes(data))
    return "cannot read"


def wrong_schema_version(ds: Path) -> str:
    meta = json.loads((ds / METADATA_FILE).read_text())
    meta["schema_version"] = 99
    (ds / METADATA_FILE).write_text(json.dumps(meta))
    return "schema version 99 is not supported"


def no_metadata(ds: Path) -> str:
    (ds / METADATA_FILE).unlink()
    return "is not a skewbench dataset"


def missing_part(ds: Path) -> str:
    sorted(ds.glob("part-*.parquet"))[0].unlink()
    return "is missing"


def missing_side_table(ds: Path) -> str:
    meta = json.loads((ds / METADATA_FILE).read_text())
    assert meta["tables"], "the side-table cases run on the job-graph dataset, which has side tables"
    (ds / meta["tables"][0]["file"]).unlink()
    return "is missing"


def side_table_changed(ds: Path) -> str:
    """A side table rewritten as a valid Parquet file with one number changed."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    meta = json.loads((ds / METADATA_FILE).read_text())
    assert meta["tables"], "the side-table cases run on the job-graph dataset, which has side tables"
    path = ds / meta["tables"][0]["file"]
    t = pq.read_table(path)
    i = next(i for i, f in enumerate(t.schema) if pa.types.is_floating(f.type) or pa.types.is_integer(f.type))
    col = t.column(i).to_pylist()
    col[0] = col[0] + 1
    pq.write_table(t.set_column(i, t.schema[i], pa.array(col, type=t.schema[i].type)), path)
    return "digest differs"


CORRUPTIONS = [truncated, bit_flipped, wrong_schema_version, no_metadata, missing_part, missing_side_table,
               side_table_changed]
#: damage to a side table; the streams have none, so every family replays the job-graph dataset for
#: these (its rows are a valid stream: seq, ts, key, cost).  A missing or changed side table is refused
#: on opening (open_dataset checks each table's digest), by every family, also by grouping and shedding,
#: which replay the rows alone and never read the tables
SIDE_TABLE_CORRUPTIONS = (missing_side_table, side_table_changed)
DAMAGE = [(f, c) for c in CORRUPTIONS for f in sorted(FAMILIES)]


@pytest.mark.parametrize("family,corrupt", DAMAGE, ids=[f"{c.__name__}-{f}" for f, c in DAMAGE])
def test_a_damaged_dataset_is_one_clear_error_and_earlier_results_stay(clean, tmp_path, family, corrupt):
    src = clean / ("jobs" if family == "allocation" or corrupt in SIDE_TABLE_CORRUPTIONS else "stream")
    assert list(src.glob("part-*.parquet"))  # every case has parts to damage, none is skipped
    out = tmp_path / "results"
    code, _, err = cli("replay", family, "--dataset", src, "--out", out, *FAMILIES[family])
    assert code == 0, err
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    ds = _copy(src, tmp_path / "ds")
    needle = corrupt(ds)
    code, _, err = cli("replay", family, "--dataset", ds, "--out", out, "--overwrite", *FAMILIES[family])
    lines = [ln for ln in err.splitlines() if ln.strip() and not ln.startswith(("replaying", "  replaying"))]
    assert code == 2 and len(lines) == 1 and needle in lines[0], err
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before  # the earlier results, intact
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no staging left


BIG = 100_000  # a 100 KB value in a --param


@pytest.mark.parametrize("family,item,needle", [
    ("grouping", "fixed-d.d=\"" + "z" * BIG + "\"", "fixed-d: d must be an integer in [1, inf], got '\"zzz"),
    ("grouping", "pkg." + "x" * BIG + "=1", "pkg: unknown parameter(s) ['xxx"),
    ("grouping", "y" * BIG + ".d=1", "parameters given for strategies not in the grid: ['yyy"),
    ("grouping", "w" * BIG, "--param takes STRATEGY.PARAM=V1[,V2...], got 'www"),
    ("shedding", "las.epsilon=" + "e" * BIG, "las: parameter epsilon must be"),
    ("allocation", "td." + "k" * BIG + "=1", "td: unknown parameter(s) ['kkk"),
], ids=["value", "parameter", "strategy", "malformed", "shedding-value", "allocation-parameter"])
def test_a_huge_param_gives_a_short_line_naming_its_ends_and_length(clean, tmp_path, family, item, needle):
    """An error repeating a bad value cuts it: its first and last characters and its length, so a
    100 KB --param is one short line, exit 2, nothing written."""
    src = clean / ("jobs" if family == "allocation" else "stream")
    strategies = {"grouping": "fixed-d,pkg", "shedding": "las", "allocation": "td"}[family]
    code, _, err = cli("replay", family, "--dataset", src, "--out", tmp_path / "r", "--strategies", strategies,
                       "--param", item)
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert code == 2 and len(lines) == 1 and len(lines[0]) < 300, (code, len(err), err[:500])
    assert lines[0].startswith("error: ") and needle in lines[0] and "…" in lines[0], lines[0]
    assert f"({BIG + 2:,} characters)" in lines[0] or f"({BIG + 4:,} characters)" in lines[0], lines[0]
    assert not (tmp_path / "r").exists()


def test_a_changed_side_table_fails_validation_and_description_in_one_line(clean, tmp_path):
    """`datasets validate` and `datasets describe` open the dataset too: a side table changed after the
    dataset was written is one line and exit 2 there as well (it said "valid" before)."""
    ds = _copy(clean / "jobs", tmp_path / "ds")
    for verb in ("validate", "describe"):
        assert cli("datasets", verb, ds)[0] == 0
    needle = side_table_changed(ds)
    for verb in ("validate", "describe"):
        code, out, err = cli("datasets", verb, ds)
        lines = [ln for ln in (out + err).splitlines() if ln.strip()]
        assert code == 2 and len(lines) == 1 and needle in lines[0] and lines[0].startswith("error: "), (verb, out, err)


@pytest.mark.parametrize("family", sorted(FAMILIES))
@pytest.mark.parametrize("args,needle", [
    (["--strategies", "nope"], "unknown"),
    (["--seeds", "0"], "--seeds"),
    (["--param", "x"], "--param"),
    (["--seed-base", str(2**64)], "seeds must be integers in [0, 2^63), got 18446744073709551616"),
    (["--seed-base", str(2**63 - 1), "--seeds", "2"], "seeds must be integers in [0, 2^63)"),
])
def test_bad_options_are_one_clear_error(clean, tmp_path, family, args, needle):
    src = clean / ("jobs" if family == "allocation" else "stream")
    code, _, err = cli("replay", family, "--dataset", src, "--out", tmp_path / "r", *FAMILIES[family], *args)
    errors = [ln for ln in err.splitlines() if "error" in ln.lower()]  # click adds its usage lines
    assert code == 2 and len(errors) == 1 and needle in errors[0], err
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize("family", ["grouping", "shedding"])
def test_an_empty_dataset_is_one_clear_error(tmp_path, family):
    from skewbench.datasets.contract import DatasetWriter

    with DatasetWriter(tmp_path / "empty", ["seq", "ts", "key", "cost"]) as w:
        w.commit({"kind": "synthetic", "n_keys": 1})
    code, _, err = cli("replay", family, "--dataset", tmp_path / "empty", "--out", tmp_path / "r")
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert code != 0 and len(lines) == 1 and "empty" in lines[0], err
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize("args,needle", [
    (["--workers", "1000000000"], "workers must be at most 10,000"),
    (["--workers", "0"], "workers"),
    (["--sources", "5000"], "sources must be at most 1,000"),
    (["--provisioning", "1e9"], "provisioning must be a percentage > 0 and at most 100,000, got 1e+09"),
    (["--provisioning", "nan"], "provisioning must be a percentage > 0 and at most 100,000, got nan"),
])
def test_absurd_grid_sizes_are_refused_before_any_work(clean, tmp_path, args, needle):
    """10^9 workers used to end in a MemoryError traceback (7.45 GiB for one array)."""
    code, _, err = cli("replay", "grouping", "--dataset", clean / "stream", "--strategies", "kg",
                       "--out", tmp_path / "r", *args)
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert code == 2 and len(lines) == 1 and needle in lines[0], err
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize("args,needle", [
    (["--workers", "1000000000"], "workers must be at most 1,024"),
    (["--error", "inf"], "--error must be in [0, 10], got inf"),
    (["--range", "1e300"], "no complete window of range 1e+300 s (slide 5e+299 s) fits the dataset's 299.99 s"),
    (["--slide", "1e-300"], "windows over the dataset's 299.99 s; at most 100,000 (use a longer --slide)"),
])
def test_absurd_partition_shedding_settings_are_refused_before_any_work(tmp_path, args, needle):
    """10^9 workers used to end in numpy's MemoryError traceback (373 GiB), a slide of 1e-300 s ran
    for ever, a range with no complete window in the stream wrote results without a single window."""
    src = tmp_path / "v.csv"
    src.write_text("ts,key,value\n" + "".join(f"{i / 100:.2f},k{i % 7},{i % 5}\n" for i in range(30000)))
    code, _, err = cli("datasets", "ingest", "csv", src, "--key-column", "key", "--time-column", "ts",
                       "--value-column", "value", "--out", tmp_path / "ds")
    assert code == 0, err
    code, _, err = cli("replay", "shedding", "--dataset", tmp_path / "ds", "--strategies", "shedpart,fld",
                       "--out", tmp_path / "r", *args)
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert code == 2 and len(lines) == 1 and needle in lines[0], err
    assert not (tmp_path / "r").exists()


def test_a_range_shorter_than_the_stream_with_no_complete_window_is_refused(tmp_path):
    """Windows start at multiples of the slide, so a range shorter than the span can still fit no
    window: a stream over 0.5 .. 300.49 s, range 299.9 s, slide 200 s (the first window starts at 200 s)."""
    from skewbench.datasets.contract import DatasetWriter

    n = 30000
    with DatasetWriter(tmp_path / "ds", ["seq", "ts", "key", "value"]) as w:
        w.append({"seq": np.arange(n, dtype=np.int64), "ts": 0.5 + np.arange(n) / 100,
                  "key": np.arange(n, dtype=np.int64) % 7, "value": (np.arange(n) % 5).astype(np.float64)})
        w.commit({"kind": "synthetic", "n_keys": 7})
    code, _, err = cli("replay", "shedding", "--dataset", tmp_path / "ds", "--strategies", "shedpart",
                       "--range", "299.9", "--slide", "200", "--out", tmp_path / "r")
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert code == 2 and len(lines) == 1, err
    assert "no complete window of range 299.9 s (slide 200 s) fits the dataset's 299.99 s" in lines[0], err
    assert not (tmp_path / "r").exists()


def test_keys_beyond_what_fits_are_refused_before_any_work(tmp_path):
    """A key space of 10^20 (beyond int64) used to end in numpy's "Maximum allowed size
    exceeded" traceback; a trace's key beyond int64 is a malformed line, named."""
    code, _, err = cli("datasets", "generate", "zipf", "--alpha", "1", "--keys", str(10**20), "--tuples", "100",
                       "--seed", "1", "--out", tmp_path / "z")
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert code == 2 and len(lines) == 1 and "keys must be at most 100,000,000" in lines[0], err
    trace = tmp_path / "sd.txt"
    trace.write_text("# FromNodeId ToNodeId\n1\t2\n3\t99999999999999999999999\n4\t5\n")
    code, _, err = cli("datasets", "ingest", "slashdot", trace, "--out", tmp_path / "sd")
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert code != 0 and len(lines) == 1 and "first at line 3" in lines[0], err
    assert not (tmp_path / "z").exists() and not (tmp_path / "sd").exists()


@pytest.mark.parametrize("cost", ["nan", "-1", "inf", "0", "1e400"])
def test_a_trace_with_a_bad_cost_is_refused_with_the_line(tmp_path, cost):
    src = tmp_path / "t.csv"
    src.write_text(f"k,c\na,1\nb,{cost}\nc,2\n")
    code, _, err = cli("datasets", "ingest", "csv", src, "--key-column", "k", "--cost-column", "c",
                       "--out", tmp_path / "ds")
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert code != 0 and len(lines) == 1 and f"line 3: 'b,{cost}'" in lines[0], err
    assert not (tmp_path / "ds").exists() and [p.name for p in tmp_path.iterdir()] == ["t.csv"]


def test_a_trace_of_only_malformed_lines_is_refused(tmp_path):
    src = tmp_path / "t.csv"
    src.write_text("k,c\nzzz\n,,\n")
    code, _, err = cli("datasets", "ingest", "csv", src, "--key-column", "k", "--cost-column", "c",
                       "--out", tmp_path / "ds")
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert code != 0 and len(lines) == 1 and "2 of 2 lines (100%) are malformed" in lines[0], err
    assert not (tmp_path / "ds").exists()


# ---------------------------------------------------------------------------------------------
# sizes a user controls: each is refused before anything of that size is allocated (issue 25)

def one_error(code: int, err: str, needle: str) -> None:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert code == 2 and len(lines) == 1 and needle in lines[0], err


def _graph(groups=None, edges=(), nodes=None, name=None):
    g = {"groups": groups or [{"name": "s", "tasks": 1, "cost": 10}], "nodes": nodes or [{"capacity": 100}]}
    if edges:
        g["edges"] = list(edges)
    return {**({"name": name} if name else {}), **g}


def _many(n: int, prefix: str = "g", tasks: int = 1) -> list[dict]:
    return [{"name": f"{prefix}{i}", "tasks": tasks, "cost": 10} for i in range(n)]


#: the issue's three inputs: a node count of 10^9 (grew the process to 24 GB), 10^12 tasks in the
#: fourth instance (a numpy MemoryError traceback), 100,000 nested brackets (a RecursionError one)
ISSUE_GRAPHS = {
    "count": (json.dumps(_graph(nodes=[{"capacity": 100, "count": 1_000_000_000}])),
              "g.json: nodes[0].count: 1,000,000,000 nodes; at most 10,000 per instance"),
    "tasks": (json.dumps({"instances": [_graph(name=f"i{i}") for i in range(3)]
                          + [_graph(groups=[{"name": "s", "tasks": 10**12, "cost": 10}], name="x")]}),
              "g.json: instances[3].groups[0].tasks: 1,000,000,000,000 tasks; at most 10,000 per instance"),
    "nesting": ("[" * 100_000 + "]" * 100_000, "g.json: [0][0][0]...[0][0]: nested more than 64 levels deep; at most 64"),
}


@pytest.mark.parametrize("case", sorted(ISSUE_GRAPHS))
def test_the_issues_job_graphs_end_in_one_line_in_bounded_memory(tmp_path, case):
    """The real CLI in its own process, its address space capped at 1 GiB (a 10^9-node list or a
    10^12-task array would fail in a MemoryError traceback instead of the message)."""
    text, needle = ISSUE_GRAPHS[case]
    (tmp_path / "g.json").write_text(text)
    code, err, elapsed = _capped(["datasets", "ingest", "job-graph", "g.json", "--out", "out"], tmp_path)
    one_error(code, err, needle)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.json"]  # nothing written, no staging left
    assert elapsed < 10, elapsed  # start-up included (about 0.5 s alone); the refusal itself is milliseconds


def _capped(args, cwd, limit_s: float = 60):
    """The real CLI in its own process, its address space capped at 1 GiB; (exit code, stderr,
    seconds). A run past ``limit_s`` (the issue's --window 1e-300s ran for ever) fails the test."""
    import resource
    import subprocess
    import sys
    import time

    def cap():
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))

    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "skewbench.cli", *map(str, args)], cwd=cwd, capture_output=True,
                       text=True, timeout=limit_s, preexec_fn=cap)
    return r.returncode, r.stderr, time.perf_counter() - t0


#: the issue's command-line cases: ran for ever, started without a word, or exited 0
ISSUE_CLI = {
    "grouping-window": (["replay", "grouping", "--dataset", "{stream}", "--strategies", "kg", "--window", "1e-300s"],
                        "a window of 1e-300 s makes 3e+301 windows over the dataset's 29.999 s; at most 1,000 (use a "
                        "longer --window)"),
    "zipf-tuples": (["datasets", "generate", "zipf", "--alpha", "1", "--keys", "100", "--seed", "1", "--tuples",
                     "10000000000000", "--engine", "local"],
                    "tuples must be at most 10,000,000,000 (about 60 GB), got 10,000,000,000,000"),
    "seeds": (["replay", "grouping", "--dataset", "{stream}", "--strategies", "kg", "--seeds", "1000000"],
              "--seeds 1,000,000 makes a grid of at least 1,000,000 cells; at most 10,000"),
    "bound": (["replay", "shedding", "--dataset", "{stream}", "--strategies", "las", "--bound", "0"],
              "--bound must be a latency in ms > 0 (inf: no bound), got 0"),
}


@pytest.mark.parametrize("case", sorted(ISSUE_CLI))
def test_the_issues_command_lines_end_in_one_line_in_bounded_memory(clean, tmp_path, case):
    args, needle = ISSUE_CLI[case]
    code, err, elapsed = _capped([a.format(stream=clean / "stream") for a in args] + ["--out", "out"], tmp_path)
    one_error(code, err, needle)
    assert list(tmp_path.iterdir()) == []
    assert elapsed < 10, elapsed  # start-up included; the refusal itself is milliseconds


def _links_graph():
    return _graph(groups=_many(2, tasks=5_000), edges=[{"from": "g0", "to": "g1", "rate": 1}])


JOB_GRAPHS = [
    ("groups", lambda: _graph(groups=_many(1_001)), "g.json: groups: 1,001 groups; at most 1,000 per instance"),
    ("tasks-summed", lambda: _graph(groups=_many(3, tasks=4_000)),
     "g.json: groups[2].tasks: 4,000 tasks make the instance's 12,000; at most 10,000 per instance"),
    ("edges", lambda: _graph(groups=_many(2), edges=[{"from": "g0", "to": "g1", "rate": 1}] * 10_001),
     "g.json: edges: 10,001 edges; at most 10,000 per instance"),
    ("links", _links_graph, "g.json: edges[0]: the instance's task links (n_i x n_j over its edges) reach 25,000,000 "
                            "here; at most 1,000,000"),
    ("node-entries", lambda: _graph(nodes=[{"capacity": 100}] * 10_001),
     "g.json: nodes: 10,001 node entries; at most 10,000 nodes per instance"),
    ("nodes-summed", lambda: _graph(nodes=[{"capacity": 100, "count": 6_000}] * 2),
     "g.json: nodes[1].count: 6,000 nodes make the instance's 12,000; at most 10,000 per instance"),
    ("tasks-x-nodes", lambda: _graph(groups=_many(1, tasks=2_000), nodes=[{"capacity": 100, "count": 5_001}]),
     "g.json: nodes[0].count: 5,001 nodes x the instance's 2,000 tasks = 10,002,000; at most 10,000,000 (tasks x nodes)"),
    ("instances", lambda: {"instances": [_graph(name=f"i{i}") for i in range(10_001)]},
     "g.json: instances: 10,001 instances; at most 10,000"),
]


@pytest.mark.parametrize("what,make,needle", JOB_GRAPHS, ids=[c[0] for c in JOB_GRAPHS])
def test_a_job_graph_over_a_size_limit_is_one_line_naming_its_json_path(tmp_path, what, make, needle):
    (tmp_path / "g.json").write_text(json.dumps(make()))
    code, _, err = cli("datasets", "ingest", "job-graph", tmp_path / "g.json", "--out", tmp_path / "out")
    one_error(code, err, needle)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.json"]


def test_job_graph_files_too_large_or_over_the_datasets_limits_are_refused(tmp_path):
    big = tmp_path / "big.json"
    with open(big, "wb") as fh:  # a sparse file: 16 MiB + 1 bytes
        fh.truncate((16 << 20) + 1)
    code, _, err = cli("datasets", "ingest", "job-graph", big, "--out", tmp_path / "out")
    one_error(code, err, "big.json: 16,777,217 bytes; a job-graph file has at most 16,777,216")
    # the dataset's totals run over its files: 1,001 instances of 10,000 tasks pass file by file
    one = {"instances": [_graph(groups=_many(1, tasks=10_000), name=f"i{i}") for i in range(1_000)]}
    (tmp_path / "a.json").write_text(json.dumps(one))
    (tmp_path / "b.json").write_text(json.dumps(_graph(groups=_many(1, tasks=10_000), name="last")))
    code, _, err = cli("datasets", "ingest", "job-graph", tmp_path / "a.json", tmp_path / "b.json",
                       "--out", tmp_path / "out")
    one_error(code, err, "b.json: groups[0].tasks: the dataset's tasks reach 10,010,000 here; at most 10,000,000")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.json", "b.json", "big.json"]


@pytest.mark.parametrize("args,needle", [
    (["e5", "--param", "count=1000000000"], "random_graphs: count must be at most 10,000, got 1,000,000,000"),
    (["e5", "--param", "count=2000", "--param", "tasks=5001"],
     "random_graphs: count x tasks = 10,002,000 tasks and count x nodes = 16,000 nodes; a dataset holds at most "
     "10,000,000 tasks and 1,000,000 nodes"),
    (["e4", "--param", "tasks_per_group=1000000000000"],
     "pipeline: tasks_per_group must be at most 10,000, got 1,000,000,000,000"),
    (["e4", "--param", "tasks_per_group=5000", "--param", "groups=3"],
     "pipeline: tasks_per_group x groups = 15,000 tasks; at most 10,000 per instance"),
    (["e3", "--param", "fs=[1e9]"], "asymmetry: 10 f = 1e+10 tasks; at most 10,000 per instance"),
    (["e6-twitter", "--param", "nodes=1000000000"], "twitter: nodes must be at most 10,000, got 1,000,000,000"),
    (["e6-stock", "--param", "capacities=[" + ",".join(["100"] * 10_001) + "]"],
     "stock: 10,001 capacities x 100 nodes; a dataset holds at most 10,000 instances and 1,000,000 nodes"),
    (["e5", "--param", "count=" + "[" * 100_000 + "]" * 100_000], "--param count: its JSON value nests too deeply"),
], ids=["count", "count-x-tasks", "tasks-per-group", "pipeline-tasks", "asymmetry", "nodes", "capacities", "nesting"])
def test_allocation_generator_sizes_are_refused_before_any_work(tmp_path, args, needle):
    code, _, err = cli("datasets", "generate", "allocation", *args, "--out", tmp_path / "out")
    one_error(code, err, needle)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_a_million_seeds_are_refused_before_the_grid_is_made(clean, tmp_path, family):
    src = clean / ("jobs" if family == "allocation" else "stream")
    code, _, err = cli("replay", family, "--dataset", src, "--out", tmp_path / "r", *FAMILIES[family],
                       "--seeds", "1000000")
    one_error(code, err, "--seeds 1,000,000 makes a grid of at least 1,000,000 cells; at most 10,000")
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize("family,args,needle", [
    ("grouping", ["--strategies", "kg", "--workers", "5,6", "--seeds", "5001"],
     "the grid has more than 10,000 cells (strategies x parameter values x coordinates x seeds); at most 10,000"),
    ("grouping", ["--strategies", "kg", "--window", "10"],
     "a window of 10 tuples makes 3,000 windows over the dataset's 30,000 tuples; at most 1,000 (use a longer "
     "--window)"),
    ("grouping", ["--strategies", "kg", "--window", "100", "--workers", "10000"],
     "a window of 100 tuples makes 300 windows over the dataset's 30,000 tuples; at most 100 (use a longer --window, "
     "or fewer workers)"),
    ("shedding", ["--strategies", "las", "--bound", "nan"],
     "--bound must be a latency in ms > 0 (inf: no bound), got nan"),
    ("shedding", ["--strategies", "las", "--provisioning", "1e300"],
     "--provisioning takes whole percentages in [1, 10,000] (u = 1 - P/100), got 1e+300"),
    ("shedding", ["--strategies", "las", "--window", "1", "--seeds", "34"],
     "30,000 windows x 34 cells make 1,020,000 series rows; at most 1,000,000 (use a longer --window, or fewer cells)"),
    ("shedding", ["--strategies", "las", "--param", "las.delta=1e-300"],
     "las: delta must be >= 2^-20 (at most 20 Count-Min rows: every tuple keeps a column per row), got 1e-300"),
    ("shedding", ["--strategies", "las", "--param", "las.window=1000000000"],
     "las: parameter window must be an integer in [1, 1000000], got 1000000000"),
    ("allocation", ["--strategies", "td", "--min-time", "1e9"], "--min-time must be in [0, 10] seconds, got 1000000000.0"),
], ids=["grid", "tuple-window", "window-x-workers", "bound-nan", "provisioning",
        "series-rows", "las-delta", "las-window", "min-time"])
def test_replay_sizes_are_refused_before_any_work(clean, tmp_path, family, args, needle):
    src = clean / ("jobs" if family == "allocation" else "stream")
    code, _, err = cli("replay", family, "--dataset", src, "--out", tmp_path / "r", *args)
    one_error(code, err, needle)
    assert not (tmp_path / "r").exists()


def _free_fs(tmp_path: Path) -> tuple[Path, int]:
    """A directory on the file system (of the test's own and /dev/shm) with the least free space."""
    import shutil

    dirs = [tmp_path] + ([Path("/dev/shm")] if Path("/dev/shm").is_dir() else [])
    return min(((d, shutil.disk_usage(d).free) for d in dirs), key=lambda x: x[1])


def test_a_stream_larger_than_the_free_disk_is_refused_before_writing(tmp_path):
    """About 6 bytes per tuple (seq, ts, key at constant arrivals): 1.5x the free space of the
    emptier file system is asked for, and refused before a part is written (in a capped process:
    without the check it would start writing, and be stopped after 20 s)."""
    import shutil

    from skewbench.datasets.generators import BYTES_PER_TUPLE, MAX_TUPLES

    where, free = _free_fs(tmp_path)
    tuples = int(1.5 * free / BYTES_PER_TUPLE) + 1
    assert tuples <= MAX_TUPLES, f"{where} has {free:,} bytes free: no stream within the limits overflows it"
    out = where / f"skewbench-{tmp_path.name}"
    try:
        code, err, _ = _capped(["datasets", "generate", "zipf", "--alpha", "1", "--keys", "100", "--tuples", tuples,
                                "--seed", "1", "--out", out, "--engine", "local"], tmp_path, limit_s=20)
    finally:
        staged = list(where.glob(f".{out.name}.tmp-*"))
        for d in staged + ([out] if out.exists() else []):
            shutil.rmtree(d)
    one_error(code, err, f"{tuples:,} tuples take about {tuples * BYTES_PER_TUPLE / 1e9:,.3g} GB on disk; ")
    assert "GB are free on" in err
    assert staged == [] and list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("args,needle", [
    (["--tuples", "1000", "--cost", "levels:1000000000:1:4"],
     "cost levels must be at most 1,000,000 (they are listed in memory), got 1,000,000,000"),
    (["--tuples", "1000", "--rate", "1e-320"], "tuples last longer than any time a float holds; use a larger rate"),
], ids=["cost-levels", "rate"])
def test_zipf_sizes_are_refused_before_any_work(tmp_path, args, needle):
    code, _, err = cli("datasets", "generate", "zipf", "--alpha", "1", "--keys", "100", "--seed", "1",
                       "--out", tmp_path / "z", "--engine", "local", *args)
    one_error(code, err, needle)
    assert list(tmp_path.iterdir()) == []


def test_a_trace_without_newlines_is_refused_at_its_line_limit(tmp_path):
    src = tmp_path / "sd.txt"
    src.write_bytes(b"1\t" * (9 << 20))  # 18 MiB, no newline
    code, _, err = cli("datasets", "ingest", "slashdot", src, "--out", tmp_path / "sd")
    one_error(code, err, "sd.txt: line 1 is longer than 16,777,216 bytes; a trace's lines are at most that long")
    assert [p.name for p in tmp_path.iterdir()] == ["sd.txt"]


CATALOGS = [
    ("tuples", "datasets:\n  - name: z\n    sets: [s]\n    generator: zipf\n    alpha: 1\n    keys: 10\n"
               "    tuples: 100000000000000\n    seed: 1\n",
     "dataset 'z': tuples must be at most 10,000,000,000 (about 60 GB), got 100,000,000,000,000"),
    ("matrix", "datasets:\n  - name: z\n    sets: [s]\n    generator: zipf\n    seed: 1\n    matrix:\n"
               "      alpha: [" + ",".join(["1"] * 1000) + "]\n      keys: [" + ",".join(map(str, range(1, 1001)))
               + "]\n      tuples: [10]\n",
     "dataset 'z': 'matrix' makes 1,000,000 datasets; a catalog names at most 10,000"),
    ("aliases", "a: &a [1,1,1,1,1,1,1,1,1]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\ndatasets: []\n",
     "line 3: aliases (*a) are not allowed in a catalog"),
    ("nesting", "x: " + "[" * 1000 + "]" * 1000 + "\ndatasets: []\n",
     "line 2: nested more than 64 levels deep; at most 64"),
]


@pytest.mark.parametrize("what,text,needle", CATALOGS, ids=[c[0] for c in CATALOGS])
def test_a_catalog_over_a_size_limit_is_refused(tmp_path, what, text, needle):
    (tmp_path / "c.yaml").write_text("version: 1\n" + text)
    code, _, err = cli("datasets", "catalog", "--catalog", tmp_path / "c.yaml")
    one_error(code, err, f"c.yaml: {needle}")
    code, _, err = cli("datasets", "generate", "catalog", "--catalog", tmp_path / "c.yaml", "--root", tmp_path / "r")
    one_error(code, err, f"c.yaml: {needle}")
    assert [p.name for p in tmp_path.iterdir()] == ["c.yaml"]


def test_a_catalog_file_too_large_is_refused(tmp_path):
    with open(tmp_path / "c.yaml", "wb") as fh:
        fh.truncate((16 << 20) + 1)
    code, _, err = cli("datasets", "catalog", "--catalog", tmp_path / "c.yaml")
    one_error(code, err, "c.yaml: 16,777,217 bytes; a catalog has at most 16,777,216")
