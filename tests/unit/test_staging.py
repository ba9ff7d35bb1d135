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


def _generate(out, tuples: int) -> subprocess.Popen:
    """`skewbench datasets generate zipf` in its own process (the command a user runs)."""
    return subprocess.Popen([sys.executable, "-m", "skewbench.cli", "datasets", "generate", "zipf", "--alpha", "1",
                             "--keys", "1000", "--tuples", str(tuples), "--seed", "1", "--engine", "local",
                             "--out", str(out)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def _wait_for_a_part(parent, name: str, proc: subprocess.Popen):
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        staged = sorted(parent.glob(f".{name}.tmp-*"))
        if staged and any(p.name.startswith("part-") for p in staged[0].iterdir()):
            return staged[0]
        assert proc.poll() is None, proc.stderr.read().decode()[-2000:]
        time.sleep(0.02)
    raise AssertionError("the generation wrote no part in 120 s")


def test_a_generation_killed_by_a_signal_leaves_staging_that_the_next_run_removes(tmp_path):
    """SIGKILL (no handler runs) leaves the staging directory with its parts; the next generation of
    the same output removes it before staging its own, and leaves only the dataset."""
    import signal

    from skewbench.datasets.contract import open_dataset

    out = tmp_path / "z"
    proc = _generate(out, 30_000_000)
    staged = _wait_for_a_part(tmp_path, "z", proc)
    proc.send_signal(signal.SIGKILL)
    assert proc.wait(30) == -signal.SIGKILL
    assert staged.is_dir() and not out.exists()  # what the killed run left
    again = _generate(out, 10_000)
    assert again.wait(120) == 0, again.stderr.read().decode()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["z"]  # the left-over staging is gone
    ds = open_dataset(out)
    assert ds.tuples == 10_000 and not (out / ".skewbench-staging.lock").exists()


def test_a_live_generations_staging_is_left_alone(tmp_path):
    """Another process still writing its staging directory holds its lock: cleaning skips it."""
    from skewbench.datasets.contract import clean_stale_staging

    out = tmp_path / "z"
    proc = _generate(out, 30_000_000)
    try:
        staged = _wait_for_a_part(tmp_path, "z", proc)
        assert clean_stale_staging(out) == [] and staged.is_dir()
    finally:
        proc.kill()
        proc.wait(30)
    assert clean_stale_staging(out) == [staged] and not staged.exists()  # now its writer is gone
