"""The Spark standalone cluster on loopback (``skewbench.cluster``, ``make cluster``): it comes up
with its workers registered, refuses to start twice, and stops every daemon it started by process
group; an executor killed mid-replay is replaced and the results stay bit-identical.  Replays on it: tests/integration/test_cli_replay.py (every grouping strategy via
spark-submit, identical to local mode and to the in-process engine) and the nightly DAG test
(tests/integration/test_dags.py), whose replays are submitted to it."""

from __future__ import annotations

import http.server
import json
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil
import pyarrow.parquet as pq
import pytest

from skewbench import cluster
from skewbench.datasets.generators import StreamSpec, generate
from skewbench.errors import SkewbenchError
from skewbench.results import schema

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.spark


class _HtmlPage(http.server.BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 (the handler's name is http.server's)
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.end_headers()
        self.wfile.write(b"<!DOCTYPE html><html><body>another page</body></html>")

    def log_message(self, *args):
        pass


def test_the_cluster_has_two_alive_one_core_workers_on_loopback(standalone_cluster):
    st = standalone_cluster.status()
    assert st["status"] == "ALIVE" and st["aliveworkers"] == 2 and st["cores"] == 2
    assert standalone_cluster.master_url.startswith("spark://127.0.0.1:")
    assert all(w["host"] == "127.0.0.1" for w in st["workers"])


def test_start_refuses_a_second_cluster_and_stop_ends_every_daemon(tmp_path):
    """The web UI port asked for is held by another page (as when another cluster's daemon took a
    port picked as free): Spark moves to the next port, and the cluster reads back where it is
    instead of asking the other page for the master's status."""
    page = http.server.HTTPServer(("127.0.0.1", 0), _HtmlPage)
    threading.Thread(target=page.serve_forever, daemon=True).start()
    try:
        cl = cluster.start(tmp_path, workers=1, cores=1, memory="512m", webui_port=page.server_port)
    finally:
        page.shutdown()
        page.server_close()
    assert cl.webui != f"http://127.0.0.1:{page.server_port}"
    assert cl.status()["aliveworkers"] == 1
    with pytest.raises(SkewbenchError, match="already"):
        cluster.start(tmp_path, workers=1)
    assert json.loads((tmp_path / "cluster.json").read_text())["master_url"] == cl.master_url
    assert sorted(cluster.stop(tmp_path)) == ["master", "worker-1"]
    assert not any(cluster._alive(pg) for pg in cl.pgids.values())
    assert not (tmp_path / "cluster.json").exists() and cluster.stop(tmp_path) == []


@pytest.mark.slow  # about 40 s: make slow (make test keeps one standalone-cluster replay, test_cli_replay)
def test_an_executor_killed_mid_replay_is_replaced_and_the_results_are_bit_identical(standalone_cluster,
                                                                                      tmp_path):
    """SIGKILL of an executor (its JVM and Python workers) while it replays: Spark loses the
    task, runs it again (on the other executor or a new one the worker starts), and the results
    equal the in-process replay's, bit for bit."""
    ds = tmp_path / "z"
    generate(StreamSpec.zipf(1.1, 5000, 3_000_000, 4), ds)
    grid = ["grouping", "--dataset", str(ds), "--strategies", "kg,pkg,dc,wc,rr", "--workers", "5,10",
            "--sources", "3"]
    bin_dir = Path(sys.executable).parent
    killed: list[float] = []  # the CPU seconds the executor's Python workers had spent when killed

    def kill_a_busy_executor() -> None:
        """SIGKILL the first executor whose Python worker has spent a second of CPU in a replay
        task (a task takes several), with its Python processes."""
        t0 = time.monotonic()
        while time.monotonic() - t0 < 300:
            for p in psutil.process_iter(["cmdline"]):
                if "CoarseGrainedExecutorBackend" not in " ".join(p.info["cmdline"] or ()):
                    continue
                try:
                    kids = [k for k in p.children(recursive=True) if "python" in k.name()]
                    busy = sum(k.cpu_times().user for k in kids)
                except psutil.NoSuchProcess:
                    continue
                if busy >= 1.0:
                    for q in [p, *kids]:
                        try:
                            q.send_signal(signal.SIGKILL)
                        except psutil.NoSuchProcess:
                            pass
                    killed.append(busy)
                    return
            time.sleep(0.1)

    killer = threading.Thread(target=kill_a_busy_executor)
    killer.start()
    p = subprocess.run([str(bin_dir / "spark-submit"), "--master", standalone_cluster.master_url,
                        str(REPO / "spark_jobs" / "replay.py"), *grid, "--partitions", "2",
                        "--out", str(tmp_path / "cluster")], capture_output=True, text=True, timeout=900)
    killer.join()
    assert killed, "no executor's Python worker got busy"
    assert p.returncode == 0, p.stderr[-3000:]
    assert "Lost executor" in p.stderr, p.stderr[-3000:]  # Spark saw it go (its Lost task lines are WARN, not shown)
    local = subprocess.run([str(bin_dir / "skewbench"), "replay", *grid, "--out", str(tmp_path / "local")],
                           capture_output=True, text=True, timeout=900)
    assert local.returncode == 0, local.stderr
    timing = schema("grouping").timing_columns
    ref = pq.read_table(tmp_path / "local" / "summary.parquet")
    got = pq.read_table(tmp_path / "cluster" / "summary.parquet")
    keep = [c for c in ref.column_names if c not in timing]
    assert got.select(keep).equals(ref.select(keep))
    assert pq.read_table(tmp_path / "cluster" / "series.parquet").equals(
        pq.read_table(tmp_path / "local" / "series.parquet"))
    assert standalone_cluster.status()["aliveworkers"] == 2  # the workers survive their executor
