"""``skewbench advise`` end to end on real trace samples (``../shared/data``).

* Every row type against the strategies' own replays on the same keys, to the tuple: the engine
  rows (Kafka, Flink with its default and a given max parallelism, Spark RDD and SQL; keys hashed
  as longs and as text) and the alternatives (PKG, D-C, W-C, CHWBL, salting, local-global: loads,
  replication, merge partials, delivered records) against ``skewbench.grouping.engine.replay``
  of the Google cluster sample (integer job ids); the floor against the solver's optimum and the
  replay's own ``load_max_best``; the same rows whatever the input's format.
* Text keys (the Apache log's URL paths, plus keys outside ASCII and the BMP) against the
  plain-Python reference and a real SparkSession: SQL ``pmod(hash(k), p)``, ``HashPartitioner``
  of a ``java.lang.String`` and the JVM's ``String.hashCode`` under Flink's key groups.
* The command's outputs: JSON, the console screen, the HTML page in a real Chromium; a process
  that imports neither Spark, Airflow nor MLflow; bad inputs (one line, exit 2, no page written).
"""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from skewbench import registry
from skewbench.advise import advise
from skewbench.advise.limits import MAX_KEY_BYTES, MAX_WORKERS
from skewbench.cli import main
from skewbench.datasets.contract import open_dataset
from skewbench.datasets.traces import ingest
from skewbench.grouping.engine import ReplayConfig, grid, replay
from tests.reference import advise_ref
from tests.reference import engines_ref as eref

PS = [8, 32, 100]
USER_P = 1000
ENGINES = ("kafka", "flink", "spark-hash", "spark-sql")
ALTERNATIVES = ("pkg", "dc", "wc", "chwbl", "salt", "local-global")
CHROMIUM = "/usr/bin/chromium"
#: keys outside ASCII (2-, 3- and 4-byte UTF-8; a surrogate pair in UTF-16) added to the text keys
ODD_KEYS = ["/é", "/日本語/ページ", "/😀", "/a,b", "/\"quoted\"", "/𝄞x"]


def cli(*args):
    r = CliRunner().invoke(main, ["advise", *map(str, args)], catch_exceptions=False)
    return r.exit_code, r.stdout, r.stderr


@pytest.fixture(scope="module")
def gc(shared_data, tmp_path_factory):
    """The Google cluster sample (job ids) as a dataset, and its keys as a key file (one per
    line, in stream order), a Parquet file and key,count pairs."""
    root = tmp_path_factory.mktemp("advise-gc")
    ingest("google-cluster", [shared_data / "google-cluster"], root / "ds", name="google-cluster")
    ds = open_dataset(root / "ds")
    names = ds.key_dictionary().column("name").to_pylist()
    stream = np.concatenate([b["key"] for b in ds.iter_batches(["key"], 1 << 20)])
    lines = [names[k] for k in stream]
    (root / "keys.txt").write_text("\n".join(lines) + "\n")
    pq.write_table(pa.table({"job": pa.array(lines)}), root / "keys.parquet")
    counts = np.bincount(stream, minlength=len(names))
    (root / "pairs.csv").write_text("".join(f"{names[i]},{c}\n" for i, c in enumerate(counts)))
    return {"root": root, "ds": root / "ds", "names": names, "stream": stream, "counts": counts}


@pytest.fixture(scope="module")
def replayed(gc):
    """The engines' and the alternatives' replays of the dataset (balance only), by (strategy,
    workers, key_format, max_parallelism)."""
    params = {e: {"key_format": ["long", "string"]} for e in ENGINES}
    params["flink"]["max_parallelism"] = [0, USER_P]
    cells = grid(list(ENGINES), PS, [1], [0], params) + grid(list(ALTERNATIVES), PS, [5], [0])
    res = replay(gc["ds"], cells, ReplayConfig(latency=False))
    out = {}
    for row in res.summary:
        p = json.loads(row["params"])
        out[row["strategy"], row["workers"], p.get("key_format"), p.get("max_parallelism")] = row
    return out


@pytest.fixture(scope="module")
def gc_advice(gc):
    return {kf: advise(gc["ds"], PS, key_format=kf, flink_max_parallelism=USER_P) for kf in ("long", "string")}


# --------------------------------------------------------------------------------------------
# every row type against the strategies' replays

@pytest.mark.parametrize("key_format", ["long", "string"])
def test_engine_rows_equal_the_engines_replays_to_the_tuple(gc_advice, replayed, key_format):
    a = gc_advice[key_format]
    assert a.keys["key_format"] == key_format and a.keys["integer_keys"]
    checked = 0
    for p in PS:
        for e in ENGINES:
            settings = [("default", 0)] + ([("yours", USER_P)] if e == "flink" else [])
            for setting, P in settings:
                row = a.row(e, p, setting)
                rep = replayed[e, p, key_format, (P or eref.default_max_parallelism(p)) if e == "flink" else None]
                assert row["worker_loads"] == rep["worker_tuples"], (e, p, setting)
                assert row["load_max"] == max(rep["worker_tuples"]) and row["load_mean"] == rep["tuples"] / p
                assert row["busiest_over_mean"] == pytest.approx(rep["imbalance_rel"] + 1, rel=1e-12)
                if e == "flink":
                    assert row["max_parallelism"] == json.loads(rep["params"])["max_parallelism"]
                checked += 1
    assert checked == len(PS) * 5


def test_hottest_keys_are_the_busiest_workers_own_by_reference(gc, gc_advice):
    """The busiest worker's hottest keys and their shares, from the reference's partition of
    every key (its own hash, not the kernels')."""
    names, counts = gc["names"], gc["counts"].tolist()
    for p in PS:
        for e in ENGINES:
            row = gc_advice["long"].row(e, p)
            workers = [eref.partition(e, int(n), p, "long") for n in names]
            loads = advise_ref.worker_loads(workers, counts, p)
            b = advise_ref.busiest(loads)
            assert row["busiest_worker"] == b
            top = advise_ref.hottest_on(workers, counts, b)
            assert [(h["key"], h["tuples"]) for h in row["hottest_keys"]] == [(names[k], counts[k]) for k in top]
            assert row["hottest_keys"][0]["share_of_worker"] == counts[top[0]] / loads[b]


def test_alternative_rows_equal_the_strategies_replays(gc_advice, replayed):
    a = gc_advice["long"]
    for p in PS:
        for name in ALTERNATIVES:
            row, rep = a.row(name, p), replayed[name, p, None, None]
            stats = json.loads(rep["stats"])
            assert row["replayed_tuples"] == rep["tuples"] and row["scale"] == 1.0
            assert row["stats"] == stats, name
            if name == "local-global":  # its load: the partial records delivered
                assert sum(row["worker_loads"]) == stats["delivered"]
                assert row["load_max"] / sum(row["worker_loads"]) == pytest.approx(stats["delivered_load_max"])
                continue
            assert row["worker_loads"] == rep["worker_tuples"], (name, p)
            assert (row["replication"], row["replicas_max"]) == (pytest.approx(rep["replication"]), rep["replicas_max"])
            assert row["merge_partials_per_window"] == pytest.approx(rep["merge_partials"]), (name, p)


def test_floor_row_brackets_the_optimum_and_the_replays_best(gc, gc_advice, replayed):
    from skewbench.solver import best_whole_keys

    m = int(gc["counts"].sum())
    for p in PS:
        row = gc_advice["long"].row("best-whole-keys", p)
        opt = best_whole_keys(gc["counts"][gc["counts"] > 0].astype(float), p)
        assert row["load_floor"] <= opt.value <= row["load_max"]
        assert row["load_floor"] <= replayed["kafka", p, "long", None]["load_max_best"] * m + 1e-6
        assert row["basis"] == "optimum" or row["load_floor"] < row["load_max"]
        for e in ENGINES:  # no keyed partitioner beats it
            assert gc_advice["long"].row(e, p)["load_max"] >= row["load_floor"]


@pytest.mark.parametrize("source,fmt", [("keys.txt", "auto"), ("keys.parquet", "auto"), ("pairs.csv", "auto"),
                                        ("ds", "dataset")])
def test_every_input_format_gives_the_same_engine_and_floor_rows(gc, gc_advice, source, fmt):
    a = advise(gc["root"] / source, PS, fmt=fmt, flink_max_parallelism=USER_P, alternatives=[])
    assert a.keys["tuples"] == int(gc["counts"].sum()) and a.keys["distinct"] == len(gc["names"])
    keep = ("partitioner", "workers", "setting", "worker_loads", "hottest_keys", "load_floor")
    mine = [{k: r.get(k) for k in keep} for r in a.rows]
    assert mine == [{k: r.get(k) for k in keep} for r in gc_advice["long"].rows if r["kind"] != "alternative"]


def test_a_key_file_replays_the_alternatives_as_the_dataset_does(gc, gc_advice):
    a = advise(gc["root"] / "keys.txt", PS[-1:], alternatives=["pkg", "salt"])
    for name in ("pkg", "salt"):
        assert a.row(name, PS[-1])["worker_loads"] == gc_advice["long"].row(name, PS[-1])["worker_loads"]


# --------------------------------------------------------------------------------------------
# text keys

@pytest.fixture(scope="module")
def paths(shared_data, tmp_path_factory):
    """The Apache log's URL paths (a dataset of text keys) and, as a key file, the same stream
    with keys outside ASCII appended."""
    root = tmp_path_factory.mktemp("advise-apache")
    ingest("apache-log", [shared_data / "apache-logs"], root / "ds", name="apache-log")
    ds = open_dataset(root / "ds")
    names = ds.key_dictionary().column("name").to_pylist()
    stream = [names[k] for k in np.concatenate([b["key"] for b in ds.iter_batches(["key"], 1 << 20)])]
    stream += [k for i, k in enumerate(ODD_KEYS) for _ in range(i + 1)]
    (root / "paths.txt").write_text("\n".join(stream) + "\n", encoding="utf-8")
    keys, counts, _ = advise_ref.dictionary(stream)
    return {"root": root, "ds": root / "ds", "file": root / "paths.txt", "keys": keys, "counts": counts}


def test_text_key_rows_equal_the_reference(paths):
    a = advise(paths["file"], PS, flink_max_parallelism=USER_P, alternatives=[])
    assert a.keys["key_format"] == "string" and not a.keys["integer_keys"]
    for p in PS:
        for e in ENGINES:
            for setting, P in [("default", 0)] + ([("yours", USER_P)] if e == "flink" else []):
                workers = [advise_ref.text_partition(e, k, p, P) for k in paths["keys"]]
                assert a.row(e, p, setting)["worker_loads"] == advise_ref.worker_loads(workers, paths["counts"], p)
    ds = open_dataset(paths["ds"])  # a dataset of text keys: their texts are hashed too, not their ids
    names = ds.key_dictionary().column("name").to_pylist()
    counts = np.bincount(np.concatenate([b["key"] for b in ds.iter_batches(["key"], 1 << 20)])).tolist()
    b = advise(paths["ds"], PS, alternatives=[])
    for p in PS:
        for e in ENGINES:
            workers = [advise_ref.text_partition(e, k, p) for k in names]
            assert b.row(e, p)["worker_loads"] == advise_ref.worker_loads(workers, counts, p)


@pytest.mark.spark
def test_text_key_rows_equal_a_real_spark_and_the_jvm(spark, paths):
    """Spark SQL's pmod(hash(k), p) of a StringType column; the JVM's own String.hashCode of
    every key (SQL reflect on java.util.Objects.hashCode) through HashPartitioner's rule and
    through Flink's key groups; and HashPartitioner(p).getPartition of a java.lang.String itself
    for the keys outside ASCII and a sample of the others."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import LongType, StringType, StructField, StructType

    keys, counts = paths["keys"], paths["counts"]
    a = advise(paths["file"], PS, alternatives=[])
    schema = StructType([StructField("k", StringType(), False), StructField("c", LongType(), False)])
    code = F.expr("cast(reflect('java.util.Objects', 'hashCode', k) as int)")
    cols = [F.col("k"), code.alias("code")] + [F.pmod(F.hash("k"), F.lit(p)).alias(f"sql{p}") for p in PS] \
        + [F.pmod(code, F.lit(p)).alias(f"rdd{p}") for p in PS]
    got = {r["k"]: r for r in spark.createDataFrame(list(zip(keys, counts)), schema).select(*cols).collect()}
    codes = {k: got[k]["code"] for k in keys}
    assert [codes[k] for k in keys] == [eref.string_hash_code(k) for k in keys]
    sc = spark.sparkContext
    jvm, gateway = sc._jvm, sc._gateway
    arg_types = gateway.new_array(jvm.java.lang.Class, 1)
    arg_types[0] = jvm.java.lang.Class.forName("java.lang.Object")
    get_partition = jvm.java.lang.Class.forName("org.apache.spark.HashPartitioner").getMethod("getPartition", arg_types)
    sample = ODD_KEYS + keys[:: max(1, len(keys) // 60)]
    for p in PS:
        for engine, col in (("spark-sql", f"sql{p}"), ("spark-hash", f"rdd{p}")):
            workers = [got[k][col] for k in keys]
            assert a.row(engine, p)["worker_loads"] == advise_ref.worker_loads(workers, counts, p), engine
        partitioner = jvm.org.apache.spark.HashPartitioner(p)
        for k in sample:  # HashPartitioner's rule on a String is nonNegativeMod(hashCode, p)
            args = gateway.new_array(jvm.java.lang.Object, 1)
            args[0] = k
            assert get_partition.invoke(partitioner, args) == eref.non_negative_mod(codes[k], p), k
        P = eref.default_max_parallelism(p)
        flink = [eref.operator_index(eref.flink_murmur_hash(codes[k] & eref.M32) % P, P, p) for k in keys]
        assert a.row("flink", p)["worker_loads"] == advise_ref.worker_loads(flink, counts, p)


# --------------------------------------------------------------------------------------------
# the command's outputs

def test_json_rows(gc):
    code, out, err = cli(gc["root"] / "keys.txt", "--workers", "8,100", "--json")
    assert code == 0, err
    d = json.loads(out)
    assert d["workers"] == [8, 100] and d["limits"]["max_key_bytes"] == MAX_KEY_BYTES
    names = {r["partitioner"] for r in d["rows"]}
    assert names == {*ENGINES, *ALTERNATIVES, "best-whole-keys"}
    for r in d["rows"]:
        assert {"partitioner", "workers", "load_max", "load_mean", "busiest_over_mean"} <= set(r)
        assert r["busiest_over_mean"] == pytest.approx(r["load_max"] / r["load_mean"])
        if r["partitioner"] != "best-whole-keys":
            registry.get("grouping", r["partitioner"])  # a registry name
    assert len(d["rows"]) == 2 * (len(ENGINES) + len(ALTERNATIVES) + 1)
    assert all({"change", "effect", "rule"} <= set(x) for x in d["advice"])


def test_console_fits_one_screen(gc):
    code, out, err = cli(gc["root"] / "keys.txt", "--flink-max-parallelism", USER_P)
    assert code == 0, err
    lines = out.splitlines()
    assert len(lines) <= 50 and max(map(len, lines)) <= 120, out
    assert lines[0].startswith("skewbench advise: 20,000 tuples, 526 distinct keys")
    for name in (*ENGINES, *ALTERNATIVES, "best-whole-keys"):
        assert any(line.strip().startswith(name) for line in lines), name
    assert any(line.startswith("  flink ") and "max parallelism 1000 (yours)" in line for line in lines), out
    assert "what to change" in out and "rules: [1]" in out
    assert "merges" in out and "workers/key" in out and "delivers" in out


def test_a_hot_key_gets_two_phase_and_split_options():
    keys = ["hot"] * 300 + [f"k{i}" for i in range(700)]  # 30% of the tuples: above 1/p from p = 4
    a = advise(keys, [2, 8])
    hot = [x for x in a.advice if x["engine"] == "any"]
    assert [x["workers"] for x in hot] == [8]
    assert hot[0]["hot_key"] == "hot" and hot[0]["floor_over_mean"] == pytest.approx(2.4)
    assert [o["partitioner"] for o in hot[0]["options"]][0] == "local-global"
    assert a.row("best-whole-keys", 8)["load_floor"] == 300


def test_flink_suggestion_lowers_busiest_over_mean_on_uniform_keys():
    """Many equally frequent keys at p = 100: the default's 256 key groups round (2 or 3 per
    subtask, 1.17 before any skew); 300 does not."""
    a = advise([f"user-{i}" for i in range(60_000)], [100], alternatives=[])
    flink = [x for x in a.advice if x["engine"] == "flink"]
    assert flink and flink[0]["max_parallelism"] == 300
    assert a.row("flink", 100)["busiest_over_mean"] > 1.12 > flink[0]["busiest_over_mean_after"]


@pytest.fixture(scope="module")
def page(gc, tmp_path_factory):
    out = tmp_path_factory.mktemp("advise-page") / "advise.html"
    code, _, err = cli(gc["root"] / "keys.txt", "--workers", "8,32,600", "--html", out)
    assert code == 0 and err.strip() == f"page: {out}", err
    return out


def test_the_page_is_self_contained(page):
    text = page.read_text()
    assert "http://" not in text.replace("http://www.w3.org/2000/svg", "") and "https://" not in text
    assert "src=" not in text


def test_the_page_renders_in_a_browser(page):
    if not Path(CHROMIUM).exists():
        pytest.skip(f"no browser: {CHROMIUM} is missing (apt-get install chromium)")
    playwright = pytest.importorskip("playwright.sync_api")
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True,
                                    args=["--no-sandbox", "--disable-gpu", "--no-first-run",
                                          "--disable-background-networking"])
        try:
            tab = browser.new_page(viewport={"width": 1300, "height": 1000})
            errors: list[str] = []
            tab.on("pageerror", lambda e: errors.append(str(e)))
            tab.on("requestfailed", lambda r: errors.append(r.url))
            tab.goto(page.as_uri(), wait_until="load")
            charts = tab.evaluate("""() => [...document.querySelectorAll('figure.engine-chart')].map(f => ({
                engine: f.dataset.partitioner, workers: +f.dataset.workers, setting: f.dataset.setting,
                width: f.querySelector('svg').getBoundingClientRect().width,
                bars: [...f.querySelectorAll('rect.bar')].map(r => r.getBoundingClientRect().height),
                profile: f.querySelectorAll('polygon.profile').length,
                mean: f.querySelectorAll('line.mean').length}))""")
            rows = tab.evaluate("() => [...document.querySelectorAll('table.summary tr[data-partitioner]')]"
                                ".map(r => r.dataset.partitioner)")
            tab.screenshot(path=str(page.with_suffix(".png")), full_page=True)
        finally:
            browser.close()
    assert errors == []
    assert sorted((c["engine"], c["workers"]) for c in charts) == sorted((e, p) for e in ENGINES for p in (8, 32, 600))
    for c in charts:
        assert c["width"] >= 250 and c["mean"] == 1
        if c["workers"] <= 400:  # a bar per worker, busiest to idlest
            assert len(c["bars"]) == c["workers"] and c["bars"] == sorted(c["bars"], reverse=True)
        else:
            assert c["profile"] == 1
    assert rows == [*ENGINES, *ALTERNATIVES, "best-whole-keys"]
    assert page.with_suffix(".png").stat().st_size > 10_000


def test_a_plain_process_without_spark_airflow_or_mlflow(gc, tmp_path):
    code = ("import sys\nfrom skewbench.cli import main\n"
            f"main(['advise', {str(gc['root'] / 'keys.txt')!r}, '--html', {str(tmp_path / 'p.html')!r}, '--json'],"
            " standalone_mode=False)\n"
            "print(sorted({m.split('.')[0] for m in sys.modules}), file=sys.stderr)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    loaded = set(eval(done.stderr.strip().splitlines()[-1]))  # noqa: S307 - our own child's output
    assert "skewbench" in loaded and "numpy" in loaded
    assert not loaded & {"pyspark", "py4j", "airflow", "mlflow", "great_expectations"}, loaded
    assert json.loads(done.stdout)["rows"]


# --------------------------------------------------------------------------------------------
# other inputs

def test_key_count_pairs(tmp_path):
    f = tmp_path / "pairs.csv"
    f.write_text('key,count\na,5\n"b,c",3\na,2\nz,0\n"say ""hi""",1\n')
    a = advise(f, [2], alternatives=["pkg"])
    assert (a.keys["format"], a.keys["tuples"], a.keys["distinct"]) == ("counts", 11, 3)
    assert a.keys["hottest"] == {"key": "a", "tuples": 7, "share": 7 / 11}
    assert a.keys["alternatives_stream"] == "in a random order: key,count pairs have none"
    assert a.row("pkg", 2)["replayed_tuples"] == 11
    big = tmp_path / "big.csv"
    big.write_text("x,400000\ny,200000\n")
    b = advise(big, [2], alternatives=["pkg"])
    row = b.row("pkg", 2)
    assert row["replayed_tuples"] < 600_000 and row["scale"] == pytest.approx(600_000 / row["replayed_tuples"])
    assert "random sample" in b.keys["alternatives_stream"]


def test_csv_tsv_gzip_and_mappings(tmp_path):
    (tmp_path / "t.csv").write_text("user,amount\nu1,3\nu2,4\nu1,5\n")
    (tmp_path / "t.tsv").write_text("user\tn\nu1\t2\nu2\t1\n")
    (tmp_path / "k.gz").write_bytes(gzip.compress(b"u1\nu2\r\nu1\n\n"))
    assert advise(tmp_path / "t.csv", [2], key_column="user", alternatives=[]).keys["tuples"] == 3
    t = advise(tmp_path / "t.tsv", [2], key_column="user", count_column="n", alternatives=[])
    assert (t.keys["tuples"], t.keys["format"]) == (3, "csv")
    g = advise(tmp_path / "k.gz", [2], alternatives=[])
    assert (g.keys["tuples"], g.keys["distinct"], g.keys["format"]) == (3, 2, "lines")
    m = advise({"u1": 2, "u2": 1}, [2], alternatives=[])
    assert m.row("kafka", 2)["worker_loads"] == g.row("kafka", 2)["worker_loads"]


def test_a_catalog_dataset_by_name(gc, monkeypatch, tmp_path):
    import shutil

    monkeypatch.setenv("SKEWBENCH_DATA_ROOT", str(tmp_path))
    code, _, err = cli("google-cluster", "--workers", "8")
    assert code == 2 and "catalog dataset 'google-cluster' is not materialised under" in err
    shutil.copytree(gc["ds"], tmp_path / "google-cluster")
    code, out, err = cli("google-cluster", "--workers", "8", "--alternatives", "none")
    assert code == 0 and "20,000 tuples, 526 distinct keys" in out, err


# --------------------------------------------------------------------------------------------
# bad input: one line, exit status 2, nothing written

def _write(tmp_path: Path, name: str, data: bytes) -> Path:
    p = tmp_path / name
    p.write_bytes(data)
    return p


BAD = {
    "empty file": (lambda t: [_write(t, "e.txt", b"")], "is empty: no keys"),
    "blank lines only": (lambda t: [_write(t, "b.txt", b"\n \n\n".replace(b" ", b""))], "only blank lines"),
    "no key column": (lambda t: [_write(t, "c.csv", b"user,amount\nu,1\n")],
                      "no key column: no column 'key' among the columns user, amount"),
    "named column absent": (lambda t: [_write(t, "c.csv", b"user,amount\nu,1\n"), "--key-column", "id"],
                            "no key column: column 'id' is not among"),
    "parquet without a key column": (
        lambda t: [pq.write_table(pa.table({"a": [1], "b": [2]}), t / "x.parquet") or t / "x.parquet"],
        "no key column"),
    "binary garbage": (lambda t: [_write(t, "g.bin", bytes(np.random.default_rng(1).integers(0, 256, 5000,
                                                                                          dtype=np.uint8)))],
                       "is binary data"),
    "NUL bytes in UTF-8 text": (lambda t: [_write(t, "z.txt", b"a\n\x00b\n")],
                                "is binary data, not keys (a NUL byte at offset 2)"),
    "not UTF-8": (lambda t: [_write(t, "l.txt", b"caf\xe9\n")], "not UTF-8 text (byte 0xe9 at offset 3)"),
    "damaged gzip": (lambda t: [_write(t, "d.gz", b"\x1f\x8b\x08\x00garbage")], "a damaged gzip file"),
    "key too long": (lambda t: [_write(t, "k.txt", b"a\n" + b"x" * (MAX_KEY_BYTES + 1) + b"\n")],
                     f"line 2 holds a key of 4,097 bytes; keys are at most {MAX_KEY_BYTES:,} bytes"),
    "parallelism 0": (lambda t: [_write(t, "ok.txt", b"a\n"), "--workers", "0"],
                      f"a parallelism is an integer in [1, {MAX_WORKERS:,}], got 0"),
    "parallelism above the limit": (lambda t: [_write(t, "ok.txt", b"a\n"), "--workers", "8,10001"],
                                    "got 10001"),
    "parallelism not a number": (lambda t: [_write(t, "ok.txt", b"a\n"), "--workers", "8,x"],
                                 "--workers takes comma-separated parallelisms"),
    "too many parallelisms": (lambda t: [_write(t, "ok.txt", b"a\n"), "--workers", "1,2,3,4,5,6,7,8,9"],
                              "at most 8 parallelisms at a time, got 9"),
    "max parallelism below p": (lambda t: [_write(t, "ok.txt", b"a\n"), "--flink-max-parallelism", "64"],
                                "--flink-max-parallelism 64 is below parallelism 100"),
    "negative count": (lambda t: [_write(t, "n.csv", b"a,3\nb,-1\n")], "pair 2 has count -1"),
    "long format on text": (lambda t: [_write(t, "ok.txt", b"a\n"), "--key-format", "long"],
                            "--key-format long needs integer keys"),
    "unknown alternative": (lambda t: [_write(t, "ok.txt", b"a\n"), "--alternatives", "pkg,nope"],
                            "--alternatives: unknown nope"),
    "missing file": (lambda t: [t / "nope.txt"], "no such file, dataset directory or catalog dataset"),
    "a directory that is not a dataset": (lambda t: [t], "is not a skewbench dataset"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_input_is_one_line_and_exit_2(case, tmp_path):
    make, message = BAD[case]
    args = make(tmp_path)
    out = tmp_path / "out" / "advise.html"
    code, stdout, stderr = cli(*args, "--html", out)
    assert code == 2, (stdout, stderr)
    assert stderr.count("\n") == 1 and stderr.startswith("error: ") and message in stderr, stderr
    assert stdout == "" and not out.exists() and not (tmp_path / "out").exists()


def test_a_failed_run_leaves_an_earlier_page_as_it_was(tmp_path):
    good = _write(tmp_path, "ok.txt", b"a\nb\na\n")
    out = tmp_path / "p.html"
    assert cli(good, "--workers", "2", "--html", out)[0] == 0
    before = out.read_bytes()
    code, _, err = cli(_write(tmp_path, "e.txt", b""), "--workers", "2", "--html", out)
    assert code == 2 and out.read_bytes() == before and list(tmp_path.glob(".p.html*")) == []
    code, _, err = cli(good, "--html", tmp_path)
    assert code == 2 and "is a directory: name a file" in err


def test_a_bad_input_in_a_fresh_process(tmp_path):
    """The installed command's behaviour: one line on stderr, status 2 (and no traceback)."""
    empty = _write(tmp_path, "e.txt", b"")
    done = subprocess.run([sys.executable, "-m", "skewbench.cli", "advise", str(empty)], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == f"error: {empty} is empty: no keys\n"
