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
    if not meta.get("tables"):
        pytest.skip("no side tables in this family's dataset")
    (ds / meta["tables"][0]["file"]).unlink()
    return "is missing"


def side_table_changed(ds: Path) -> str:
    """A side table rewritten as a valid Parquet file with one number changed."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    meta = json.loads((ds / METADATA_FILE).read_text())
    if not meta.get("tables"):
        pytest.skip("no side tables in this family's dataset")
    path = ds / meta["tables"][0]["file"]
    t = pq.read_table(path)
    i = next(i for i, f in enumerate(t.schema) if pa.types.is_floating(f.type) or pa.types.is_integer(f.type))
    col = t.column(i).to_pylist()
    col[0] = col[0] + 1
    pq.write_table(t.set_column(i, t.schema[i], pa.array(col, type=t.schema[i].type)), path)
    return "digest differs"


CORRUPTIONS = [truncated, bit_flipped, wrong_schema_version, no_metadata, missing_part, missing_side_table,
               side_table_changed]


@pytest.mark.parametrize("family", sorted(FAMILIES))
@pytest.mark.parametrize("corrupt", CORRUPTIONS, ids=lambda f: f.__name__)
def test_a_damaged_dataset_is_one_clear_error_and_earlier_results_stay(clean, tmp_path, family, corrupt):
    src = clean / ("jobs" if family == "allocation" else "stream")
    if corrupt in (truncated, bit_flipped, missing_part) and not list(src.glob("part-*.parquet")):
        pytest.skip("this family's dataset has no stream parts")
    out = tmp_path / "results"
    code, _, err = cli("replay", family, "--dataset", src, "--out", out, *FAMILIES[family])
    assert code == 0, err
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    ds = _copy(src, tmp_path / "ds")
    needle = corrupt(ds)
    code, _, err = cli("replay", family, "--dataset", ds, "--out", out, "--overwrite", *FAMILIES[family])
    lines = [ln for ln in err.splitlines() if ln.strip() and not ln.startswith(("replaying", "  replaying"))]
    assert code != 0 and len(lines) == 1 and needle in lines[0], err
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before  # the earlier results, intact
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no staging left


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
