"""Removing a staging directory that a failed job's surviving tasks are still writing into."""
from __future__ import annotations

import subprocess
import sys
import time

from skewbench.datasets.contract import discard_dir

# A separate process, as a Spark task's Python worker is: it creates parts by path as fast as it
# can and exits 3 when an open fails because the directory is gone.
_WRITER = """
import sys
d = sys.argv[1]
n = 0
try:
    while True:
        with open(f"{d}/part-{n:07d}.parquet", "wb") as f:
            f.write(b"x" * 512)
        n += 1
except FileNotFoundError:
    sys.exit(3)
"""


def test_discard_dir_leaves_nothing_while_a_writer_keeps_creating_files(tmp_path):
    """After discard_dir nothing is left beside, although a writer kept creating files in the
    directory all along, and the writer's next open fails.  (A plain rmtree left the directory
    with the parts created after it had listed them.)"""
    d = tmp_path / ".out.tmp-x"
    d.mkdir()
    w = subprocess.Popen([sys.executable, "-c", _WRITER, str(d)])
    try:
        deadline = time.monotonic() + 60
        while sum(1 for _ in d.iterdir()) < 2000 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert w.poll() is None, "the writer stopped before the directory was discarded"
        discard_dir(d)
        assert w.wait(10) == 3
    finally:
        w.kill()
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_discard_dir_of_a_missing_directory_is_a_no_op(tmp_path):
    discard_dir(tmp_path / "never-made")
    assert list(tmp_path.iterdir()) == []
