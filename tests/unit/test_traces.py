"""Trace ingestion (skewbench.datasets.traces) on the real samples and on small handmade files."""

from __future__ import annotations

import csv
import gzip
import re
from datetime import datetime
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from skewbench.datasets.contract import open_dataset, recompute_fingerprint
from skewbench.datasets.traces import FORMATS, KEYS, ingest, total_input_bytes
from skewbench.errors import SkewbenchError

DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"
SLASHDOT_EDGES = 948_464


@pytest.fixture(scope="module")
def data() -> Path:
    if not DATA.is_dir():
        pytest.skip(f"real trace samples not found at {DATA}")
    return DATA


def check_dataset(out: Path, meta: dict) -> tuple[pa.Table, list[str]]:
    """The invariants every ingested dataset must satisfy; returns its table and dictionary."""
    ds = open_dataset(out)
    assert ds.meta["fingerprint"] == meta["fingerprint"] == recompute_fingerprint(ds)
    table = ds.read_table()
    m = table.num_rows
    ing = meta["ingest"]
    assert m == meta["tuples"] == ing["tuples"] > 0
    assert ing["tuples"] + ing["dropped"] + ing["malformed"] == ing["lines"]
    assert sum(f["lines"] for f in ing["files"]) == ing["lines"]
    assert np.array_equal(table["seq"].to_numpy(), np.arange(m))
    ts = table["ts"].to_numpy()
    assert np.all(np.isfinite(ts)) and np.all(np.diff(ts) >= 0)
    keys = table["key"].to_numpy()
    n = meta["n_keys"]
    assert keys.min() == 0 and keys.max() == n - 1 and len(np.unique(keys)) == n
    _, first = np.unique(keys, return_index=True)
    assert np.all(np.diff(first) > 0), "ids must follow first appearance in the stream"
    names = ds.key_dictionary()
    assert names["key"].to_pylist() == list(range(n))
    assert meta["kind"] == "trace" and meta["seed"] is None
    assert meta["columns"][:3] == ["seq", "ts", "key"]
    return table, names["name"].to_pylist()


# ------------------------------------------------------------------------------------------
# the real samples

def test_slashdot_sample(data, tmp_path):
    path = data / "slashdot" / "soc-Slashdot0902.txt.gz"
    with gzip.open(path, "rt") as f:
        edges = [line.rstrip("\n").split("\t") for line in f if not line.startswith("#")]
    assert len(edges) == SLASHDOT_EDGES
    sources = {e[0] for e in edges}

    meta = ingest("slashdot", [path], tmp_path / "sd", name="slashdot",
                  extra_meta={"catalog_params": {"format": "slashdot"}})
    table, names = check_dataset(tmp_path / "sd", meta)
    assert meta["tuples"] == SLASHDOT_EDGES
    assert meta["n_keys"] == len(sources)
    assert meta["columns"] == ["seq", "ts", "key"]
    assert meta["name"] == "slashdot"
    assert open_dataset(tmp_path / "sd").meta["catalog_params"] == {"format": "slashdot"}
    assert meta["source"] == {"format": "slashdot", "inputs": [str(path)], "key": "source"}
    assert meta["ingest"]["comment_lines"] == 4 and meta["ingest"]["malformed"] == 0
    assert np.array_equal(table["ts"].to_numpy(), np.arange(SLASHDOT_EDGES, dtype=float))
    keys = table["key"].to_numpy()
    for i in (0, 1, 12_345, 500_000, SLASHDOT_EDGES - 1):
        assert names[keys[i]] == edges[i][0]

    meta_t = ingest("slashdot", [path], tmp_path / "sd-t", key="target")
    table_t, names_t = check_dataset(tmp_path / "sd-t", meta_t)
    assert meta_t["n_keys"] == len({e[1] for e in edges})
    keys_t = table_t["key"].to_numpy()
    for i in (0, 777, SLASHDOT_EDGES - 1):
        assert names_t[keys_t[i]] == edges[i][1]


def test_google_cluster_shards(data, tmp_path):
    shards = [data / "google-cluster" / f"task_event_{i}_10000.csv" for i in (1, 2, 3)]
    rows = [r for s in shards for r in csv.reader(open(s))]
    out_of_trace = sum(1 for r in rows if int(r[0]) in (0, 2**63 - 1))
    kept = [r for r in rows if int(r[0]) not in (0, 2**63 - 1)]

    meta = ingest("google-cluster", shards, tmp_path / "g")
    table, names = check_dataset(tmp_path / "g", meta)
    ing = meta["ingest"]
    assert ing["lines"] == 30_000 and ing["malformed"] == 0
    assert ing["dropped_out_of_trace"] == ing["dropped"] == out_of_trace == 10_000
    assert meta["tuples"] == len(kept)
    assert meta["source"]["inputs"] == [str(s) for s in shards]
    assert meta["n_keys"] == len({r[2] for r in kept})
    # every kept row has a CPU request, so the value column is present
    assert meta["columns"] == ["seq", "ts", "key", "value"] and ing["value_missing"] == 0
    assert table["ts"][0].as_py() == int(kept[0][0]) / 1e6
    assert names[table["key"][0].as_py()] == kept[0][2]
    assert table["value"].to_numpy().sum() == pytest.approx(sum(float(r[9]) for r in kept))

    # a directory stands for its files sorted by name: the same dataset
    meta_dir = ingest("google-cluster", [data / "google-cluster"], tmp_path / "g-dir")
    assert meta_dir["fingerprint"] == meta["fingerprint"]

    meta_sc = ingest("google-cluster", shards[1:], tmp_path / "g-sc", key="scheduling-class")
    _, names_sc = check_dataset(tmp_path / "g-sc", meta_sc)
    assert sorted(names_sc) == sorted({r[7] for r in kept})


def test_google_cluster_edge_rows(tmp_path):
    lines = ["0,,300,0,1,0,u,1,9,,0.1,0.0,0",                      # before the trace window
             "5000000,,100,0,1,0,u,1,9,0.5,0.1,0.0,0",
             "6000000,,100,1,1,0,u,1,9,,0.1,0.0,0",                # no CPU request: fine
             "99999999999999999999,,100,1,1,0,u,1,9,,0.1,0.0,0",   # does not fit int64
             "7000000,,200,0,1,0,u,2,9,abc,0.1,0.0,0",             # bad CPU request
             "7000000,,200,0,1,0,u,2,9,0.25,0.1,0.0",              # 12 fields
             "5500000,,200,0,1,0,u,2,9,0.25,0.1,0.0,0",            # goes back in time
             "9223372036854775807,,400,0,1,0,u,2,9,0.25,0.1,0.0,0"]  # after the window
    f = tmp_path / "te.csv"
    f.write_text("\n".join(lines) + "\n")
    meta = ingest("google-cluster", [f], tmp_path / "g", max_malformed=0.5)
    table, names = check_dataset(tmp_path / "g", meta)
    ing = meta["ingest"]
    counts = (ing["lines"], ing["tuples"], ing["malformed"], ing["dropped_out_of_trace"])
    assert counts == (8, 3, 3, 2)
    assert [e["line"] for e in ing["malformed_examples"]] == [4, 5, 6]
    assert ing["reordered"] == 1
    assert table["ts"].to_pylist() == [5.0, 5.5, 6.0]
    assert names == ["100", "200"] and table["key"].to_pylist() == [0, 1, 0]
    # one kept row has no CPU request, so there is no value column
    assert meta["columns"] == ["seq", "ts", "key"] and ing["value_missing"] == 1


@pytest.mark.parametrize("fname", ["frequent_route_compact_ride_10000.csv",
                                   "profitable_cell_compact_ride_10000.csv"])
@pytest.mark.parametrize("key", [None, "medallion"])
def test_debs2015_samples(data, tmp_path, fname, key):
    path = data / "debs2015" / fname
    rows = list(csv.reader(open(path)))
    meta = ingest("debs2015", [path], tmp_path / "d", key=key)
    table, names = check_dataset(tmp_path / "d", meta)
    t0 = min(int(r[2]) for r in rows)
    assert meta["params"]["t0_epoch"] == t0
    assert meta["tuples"] == len(rows) and meta["ingest"]["malformed"] == 0
    assert meta["ingest"]["reordered"] > 0          # the sample is only roughly time-ordered
    assert meta["columns"] == ["seq", "ts", "key", "value"]
    ts = table["ts"].to_numpy()
    assert ts[0] == 0 and ts[-1] == max(int(r[2]) for r in rows) - t0
    assert table["value"].to_numpy().sum() == pytest.approx(sum(float(r[7]) for r in rows))
    if key is None:
        assert meta["source"]["key"] == "route"
        expected = {f"{int(r[3])}.{int(r[4])}-{int(r[5])}.{int(r[6])}" for r in rows}
    else:
        expected = {r[0] for r in rows}
    assert set(names) == expected and meta["n_keys"] == len(expected)
    # the stable sort: the first tuple is the first line carrying the earliest time
    first = next(r for r in rows if int(r[2]) == t0)
    assert table["value"][0].as_py() == float(first[7])


@pytest.mark.parametrize("key", [None, "client"])
def test_apache_log_sample(data, tmp_path, key):
    path = data / "apache-logs" / "apache_logs"
    lines = path.read_text().splitlines()
    meta = ingest("apache-log", [path], tmp_path / "a", key=key)
    _, names = check_dataset(tmp_path / "a", meta)
    assert meta["tuples"] == len(lines) == 10_000 and meta["ingest"]["malformed"] == 0
    stamps = [datetime.strptime(ln.split("[", 1)[1].split("]", 1)[0], "%d/%b/%Y:%H:%M:%S %z")
              for ln in lines]
    assert meta["params"]["t0_epoch"] == int(min(s.timestamp() for s in stamps))
    if key == "client":
        assert set(names) == {ln.split(" ", 1)[0] for ln in lines}
    else:
        assert meta["source"]["key"] == "path"
        assert set(names) == {ln.split('"')[1].split(" ")[1].split("?")[0] for ln in lines}


def test_gzip_input_gives_the_same_dataset(data, tmp_path):
    src = data / "debs2015" / "frequent_route_compact_ride_10000.csv"
    gz = tmp_path / "rides.csv.gz"
    gz.write_bytes(gzip.compress(src.read_bytes()))
    plain = ingest("debs2015", [src], tmp_path / "plain")
    packed = ingest("debs2015", [gz], tmp_path / "packed")
    assert packed["fingerprint"] == plain["fingerprint"]
    assert packed["ingest"]["lines"] == plain["ingest"]["lines"]


def test_progress_reports_all_input_bytes(data, tmp_path):
    shards = sorted((data / "google-cluster").iterdir())
    seen: list[int] = []
    ingest("google-cluster", shards, tmp_path / "g", progress=seen.append)
    assert seen and all(n > 0 for n in seen)
    assert sum(seen) == total_input_bytes(shards)


# ------------------------------------------------------------------------------------------
# malformed lines

def _slashdot_file(path: Path, good: int, bad_at: set[int]) -> None:
    out = ["# comment"]
    for i in range(good + len(bad_at)):
        out.append(f"{i}\tx{i}" if i in bad_at else f"{i % 7}\t{i}")
    path.write_text("\n".join(out) + "\n")


def test_malformed_lines_are_counted_and_reported(tmp_path):
    f = tmp_path / "edges.txt"
    f.write_bytes(b"# c\n1\t2\n\n1\t3\r\nx\t4\n2\t5\t6\n3\t\xff\n4\t5\n3\r1\t4\n5")
    meta = ingest("slashdot", [f], tmp_path / "ok", max_malformed=0.7)
    check_dataset(tmp_path / "ok", meta)
    ing = meta["ingest"]
    assert (ing["lines"], ing["tuples"], ing["malformed"]) == (8, 3, 5)
    assert ing["blank_lines"] == 1 and ing["comment_lines"] == 1
    assert [e["line"] for e in ing["malformed_examples"]] == [5, 6, 7, 9, 10]
    assert ing["malformed_examples"][0] == {"file": str(f), "line": 5, "text": "x\t4"}
    assert ing["malformed_examples"][2]["text"] == "3\t\\xff"


def test_too_many_malformed_lines_fail_and_leave_nothing(tmp_path):
    f = tmp_path / "edges.txt"
    _slashdot_file(f, good=96, bad_at={10, 20, 30, 40})       # 4 of 100 lines
    out = tmp_path / "out"
    head = f"{f}: 4 of 100 lines (4%) are malformed, above --max-malformed 3%"
    with pytest.raises(SkewbenchError, match=f"^{re.escape(head)}") as err:
        ingest("slashdot", [f], out, max_malformed=0.03)
    msg = str(err.value)
    assert "first at line 12: '10\\tx10'" in msg
    assert "\n" not in msg
    assert not out.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["edges.txt"]   # no scratch left


def test_malformed_at_the_threshold_is_accepted(tmp_path):
    f = tmp_path / "edges.txt"
    _slashdot_file(f, good=96, bad_at={10, 20, 30, 40})
    meta = ingest("slashdot", [f], tmp_path / "out", max_malformed=0.04)
    assert meta["ingest"]["malformed"] == 4 and meta["tuples"] == 96
    assert len(meta["ingest"]["malformed_examples"]) == 4
    check_dataset(tmp_path / "out", meta)
    with pytest.raises(SkewbenchError, match="above --max-malformed 0.1%"):
        ingest("slashdot", [f], tmp_path / "default")


def test_examples_are_limited_and_truncated(tmp_path):
    f = tmp_path / "edges.txt"
    f.write_text("1\t2\n" * 10 + ("y" * 500 + "\n") * 8)
    meta = ingest("slashdot", [f], tmp_path / "out", max_malformed=1)
    ex = meta["ingest"]["malformed_examples"]
    assert len(ex) == 5 and meta["ingest"]["malformed"] == 8
    assert all(len(e["text"]) == 200 for e in ex) and ex[0]["line"] == 11


def test_wrong_format_stops_early(tmp_path):
    f = tmp_path / "not-edges.csv"
    f.write_text("a,b,c\n" * 150_000)
    with pytest.raises(SkewbenchError, match="is --format slashdot right"):
        ingest("slashdot", [f], tmp_path / "out", max_malformed=1)
    assert not (tmp_path / "out").exists()


def test_apache_malformed_lines(tmp_path):
    f = tmp_path / "access.log"
    f.write_text(
        '1.2.3.4 - - [17/May/2015:10:05:03 +0000] "GET /a?x=1 HTTP/1.1" 200 1 "-" "ua \\"q\\""\n'
        '1.2.3.5 - - [17/May/2015:10:05:01 +0200] "GET /b HTTP/1.1" 200 -\n'
        'garbage\n'
        '1.2.3.4 - - [17/May/2015:10:05:03 +0000] "-" 408 0 "-" "-"\n'
        '1.2.3.4 - - [31/Foo/2015:10:05:03 +0000] "GET /c HTTP/1.1" 200 5\n')
    meta = ingest("apache-log", [f], tmp_path / "url", key="url", max_malformed=1)  # an alias
    assert meta["source"]["key"] == "path"
    table, names = check_dataset(tmp_path / "url", meta)
    assert meta["ingest"]["malformed"] == 3
    assert [e["line"] for e in meta["ingest"]["malformed_examples"]] == [3, 4, 5]
    assert names == ["/b", "/a"]                 # 08:05:01 UTC comes first; query stripped
    assert table["ts"].to_pylist() == [0.0, 7202.0]
    meta_c = ingest("apache-log", [f], tmp_path / "client", key="client", max_malformed=1)
    assert meta_c["ingest"]["malformed"] == 2    # "-" requests are fine for the client key


# ------------------------------------------------------------------------------------------
# time order

def test_out_of_order_times_are_sorted_stably_and_counted(tmp_path):
    rides = [("m1", 100, 1, 1, 2, 2, 5.0), ("m2", 90, 3, 3, 4, 4, 6.0),
             ("m1", 100, 1, 1, 2, 2, 7.0), ("m3", 95, 5, 5, 6, 6, 8.0),
             ("m2", 90, 3, 3, 4, 4, 9.0), ("m4", 110, 1, 1, 2, 2, 10.0)]
    f = tmp_path / "rides.csv"
    f.write_text("".join(f"{m},1.0,{t},{a},{b},{c},{d},{fare},0.0\n"
                         for m, t, a, b, c, d, fare in rides))
    meta = ingest("debs2015", [f], tmp_path / "out", key="medallion")
    table, names = check_dataset(tmp_path / "out", meta)
    assert meta["ingest"]["reordered"] == 3      # the lines at 90, 95 and 90 come late
    assert meta["params"]["t0_epoch"] == 90
    assert table["ts"].to_pylist() == [0, 0, 5, 10, 10, 20]
    assert table["value"].to_pylist() == [6.0, 9.0, 8.0, 5.0, 7.0, 10.0]   # ties keep input order
    assert names == ["m2", "m3", "m1", "m4"]      # ids follow the sorted stream


def test_reordering_across_blocks(tmp_path, monkeypatch):
    import skewbench.datasets.traces as traces
    from skewbench.datasets.traces import reading

    monkeypatch.setattr(reading, "BLOCK_BYTES", 256)    # many blocks, hence many spill chunks
    rng = np.random.default_rng(5)
    t = np.arange(2000) // 3 + rng.integers(0, 40, 2000)  # locally disordered
    lines = [f"med{k % 37},1.0,{1000 + x},1,2,3,4,{k}.5,0\n" for k, x in enumerate(t)]
    f = tmp_path / "rides.csv"
    f.write_text("".join(lines))
    meta = traces.ingest("debs2015", [f], tmp_path / "out")
    table, _ = check_dataset(tmp_path / "out", meta)
    order = np.argsort(t, kind="stable")
    assert np.array_equal(table["ts"].to_numpy(), (t[order] - t.min()).astype(float))
    assert np.array_equal(table["value"].to_numpy(), order + 0.5)
    assert len(meta["files"]) == 1


# ------------------------------------------------------------------------------------------
# generic csv / Parquet

def test_csv_with_key_time_cost_value(tmp_path):
    f = tmp_path / "events.csv"
    f.write_text('id,"t",cost,v\n"a",10,1,2\nb,5,2,3\n"c,d",12,1,1\nbad,x,1,1\nneg,13,0,1\n'
                 '\nf,15,1.5e0,-7\n')
    meta = ingest("csv", [f], tmp_path / "out", key_column="id", time_column="t",
                  cost_column="cost", value_column="v", time_unit=0.001, max_malformed=0.5)
    table, names = check_dataset(tmp_path / "out", meta)
    assert meta["columns"] == ["seq", "ts", "key", "cost", "value"]
    assert names == ["b", "a", "c,d", "f"]
    assert table["ts"].to_numpy() == pytest.approx([0.0, 0.005, 0.007, 0.010])
    assert table["cost"].to_pylist() == [2.0, 1.0, 1.0, 1.5]
    assert table["value"].to_pylist() == [3.0, 2.0, 1.0, -7.0]
    ing = meta["ingest"]
    assert (ing["lines"], ing["malformed"], ing["header_lines"], ing["blank_lines"]) == (6, 2, 1, 1)
    assert [e["line"] for e in ing["malformed_examples"]] == [5, 6]   # physical line numbers
    assert meta["params"]["t0"] == pytest.approx(0.005)
    assert meta["source"]["key"] == "id" and meta["params"]["time_unit"] == 0.001

    plain = ingest("csv", [f], tmp_path / "keys-only", key_column="id", max_malformed=0.5)
    t2, names2 = check_dataset(tmp_path / "keys-only", plain)
    assert plain["columns"] == ["seq", "ts", "key"] and plain["ingest"]["malformed"] == 0
    assert names2 == ["a", "b", "c,d", "bad", "neg", "f"]
    assert t2["ts"].to_pylist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]


def test_csv_gzip_and_several_files(tmp_path):
    a = tmp_path / "a.csv.gz"
    a.write_bytes(gzip.compress(b"k,x\nu,1\nv,2\n"))
    b = tmp_path / "b.csv"
    b.write_text("x,k\n3,w\n4,u\n")                 # each file has its own header
    meta = ingest("csv", [a, b], tmp_path / "out", key_column="k", time_column="x")
    table, names = check_dataset(tmp_path / "out", meta)
    assert names == ["u", "v", "w"]
    assert table["key"].to_pylist() == [0, 1, 2, 0]
    assert table["ts"].to_pylist() == [0.0, 1.0, 2.0, 3.0]


def test_parquet_input(tmp_path):
    f = tmp_path / "events.parquet"
    pq.write_table(pa.table({"user": [3, 1, 3, None, 2, 1],
                             "time": [1.5, 1.0, 2.0, 3.0, float("nan"), 4.0],
                             "val": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]}), f)
    meta = ingest("csv", [f], tmp_path / "out", key_column="user", time_column="time",
                  value_column="val", max_malformed=0.5)
    table, names = check_dataset(tmp_path / "out", meta)
    assert names == ["1", "3"]
    assert table["ts"].to_pylist() == [0.0, 0.5, 1.0, 3.0]
    assert table["value"].to_pylist() == [2.0, 1.0, 3.0, 6.0]
    ing = meta["ingest"]
    assert (ing["lines"], ing["malformed"]) == (6, 2)
    assert [e["line"] for e in ing["malformed_examples"]] == [4, 5]
    with pytest.raises(SkewbenchError,
                       match="'nope' is not in the header; columns are: user, time, val"):
        ingest("csv", [f], tmp_path / "bad", key_column="nope")


def test_csv_key_column_errors(tmp_path):
    f = tmp_path / "events.csv"
    f.write_text("id,t\na,1\n")
    with pytest.raises(SkewbenchError, match="needs --key-column"):
        ingest("csv", [f], tmp_path / "o1")
    with pytest.raises(SkewbenchError,
                       match="key column 'user' is not in the header; columns are: id, t"):
        ingest("csv", [f], tmp_path / "o2", key_column="user")
    with pytest.raises(SkewbenchError, match=r"time column 'time' is not in the header"):
        ingest("csv", [f], tmp_path / "o3", key_column="id", time_column="time")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["events.csv"]


# ------------------------------------------------------------------------------------------
# inputs and options

def test_missing_input_names_the_path(tmp_path):
    missing = tmp_path / "nope" / "edges.txt.gz"
    with pytest.raises(SkewbenchError, match=f"input {missing} does not exist"):
        ingest("slashdot", [missing], tmp_path / "out")
    with pytest.raises(SkewbenchError, match="does not exist"):
        ingest("csv", [tmp_path / "x.parquet"], tmp_path / "out", key_column="k")
    assert not (tmp_path / "out").exists()


def test_empty_input_fails(tmp_path):
    f = tmp_path / "edges.txt"
    f.write_text("# only a comment\n\n")
    with pytest.raises(SkewbenchError, match="no tuples"):
        ingest("slashdot", [f], tmp_path / "out")
    g = tmp_path / "e.csv"
    g.write_text("")
    with pytest.raises(SkewbenchError, match="no tuples"):
        ingest("csv", [g], tmp_path / "out", key_column="k")
    assert not (tmp_path / "out").exists()


def test_existing_output_needs_overwrite(tmp_path):
    f = tmp_path / "edges.txt"
    f.write_text("1\t2\n2\t3\n")
    ingest("slashdot", [f], tmp_path / "out")
    with pytest.raises(SkewbenchError, match="already exists"):
        ingest("slashdot", [f], tmp_path / "out")
    meta = ingest("slashdot", [f], tmp_path / "out", key="target", overwrite=True)
    assert open_dataset(tmp_path / "out").meta["source"]["key"] == meta["source"]["key"] == "target"


def test_option_errors(tmp_path):
    f = tmp_path / "edges.txt"
    f.write_text("1\t2\n")
    assert set(KEYS) | {"csv"} == set(FORMATS)
    with pytest.raises(SkewbenchError, match="unknown trace format"):
        ingest("netflow", [f], tmp_path / "o")
    with pytest.raises(SkewbenchError, match="choose one of source, target"):
        ingest("slashdot", [f], tmp_path / "o", key="medallion")
    with pytest.raises(SkewbenchError, match="only for --format csv"):
        ingest("slashdot", [f], tmp_path / "o", time_column="t")
    with pytest.raises(SkewbenchError, match="max-malformed"):
        ingest("slashdot", [f], tmp_path / "o", max_malformed=2)
    with pytest.raises(ValueError, match="extra_meta may not set"):
        ingest("slashdot", [f], tmp_path / "o", extra_meta={"n_keys": 3})
    with pytest.raises(SkewbenchError, match="time-unit"):
        ingest("csv", [f], tmp_path / "o", key_column="k", time_column="t", time_unit=0)
    assert not (tmp_path / "o").exists()


# ------------------------------------------------------------------------------------------
# key values: what an engine's partitioner hashes (Dataset.key_values)

def _csv_keys(path: Path, keys: list[str]) -> Path:
    path.write_text("key\n" + "".join(f"{k}\n" for k in keys))
    return path


def test_numeric_trace_keys_are_its_key_values(tmp_path):
    """A trace whose keys are all decimal int64 texts gives their values by dense id: negative ones,
    ones beyond 2^32 and the int64 extremes included."""
    keys = ["-5", "4294967297", "0", "-9223372036854775808", "9223372036854775807", "-5", "17", "4294967297"]
    ingest("csv", [_csv_keys(tmp_path / "k.csv", keys)], tmp_path / "d", key_column="key")
    ds = open_dataset(tmp_path / "d")
    values = ds.key_values()
    assert values is not None and values.dtype == np.int64
    assert values.tolist() == [-5, 4294967297, 0, -2**63, 2**63 - 1, 17]  # ids in order of first appearance
    ids = ds.read_keys()
    assert [int(values[i]) for i in ids] == [int(k) for k in keys]


@pytest.mark.parametrize("bad", ["007", "-0", "+3", "1e3", "9223372036854775808", "-9223372036854775809", "a1",
                                 " 5"])
def test_keys_that_are_not_canonical_int64_text_keep_the_dense_ids(tmp_path, bad):
    """One key that is not the canonical decimal text of an int64 (a leading zero or sign, an
    exponent, beyond int64, a letter, a space) and the dense ids are the values: an engine would
    hash that key's text, not a number."""
    ingest("csv", [_csv_keys(tmp_path / "k.csv", ["1", "2", bad, "3"])], tmp_path / "d", key_column="key")
    ds = open_dataset(tmp_path / "d")
    assert ds.key_dictionary()["name"].to_pylist() == ["1", "2", bad, "3"]
    assert ds.key_values() is None


def test_a_synthetic_stream_has_no_key_values(tmp_path):
    from skewbench.datasets.generators import StreamSpec, generate

    generate(StreamSpec.zipf(1.0, 50, 500, seed=1), tmp_path / "z")
    assert open_dataset(tmp_path / "z").key_values() is None
