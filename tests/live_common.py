"""What the live-mode tests share (``tests/property/test_live_property.py``,
``tests/unit/test_live_config.py``, ``tests/integration/test_live_spark.py`` and
``test_live_flink.py``): small datasets written from arrays or generated, the ``skewbench live``
command line in this process or in a subprocess (run again when its calibration refused a busy
machine), and the checks every engine's rows must pass."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Sequence

import numpy as np

#: the columns every row of ``skewbench live`` carries, whatever the engine: what ran, its records
#: per worker against the decisions, the median throughput over the repetitions with its range,
#: the prediction, and both calibrations
ROW_FIELDS = ("engine", "strategy", "family", "workers", "routing", "job", "repeat", "tuples_executed",
              "subtask_records", "decided_records", "routing_exact", "throughput_measured", "throughput_measured_min",
              "throughput_measured_max", "throughput_predicted", "throughput_ratio", "latency_p99_measured_ms",
              "latency_p99_predicted_ms", "calibration_before", "calibration_after", "overhead_ms")


def write_dataset(path: Path, keys: Sequence[int], *, ts: Sequence[float] | None = None,
                  cost: Sequence[float] | None = None, names: Sequence[str] | None = None,
                  n_keys: int | None = None) -> Path:
    """A dataset at ``path`` holding exactly these tuples: dense key ids ``keys`` over ``n_keys``
    keys (default: ``len(names)`` when ``names`` is given, its key dictionary, so numeric names
    become the keys' values; else the largest id plus one), arrival times ``ts`` (seconds; default
    ``i / 1000``) and costs (ms) if given."""
    from skewbench.datasets.contract import finalize, staging_dir, write_key_dictionary, write_part

    keys = np.asarray(keys, dtype=np.int64)
    m = keys.size
    cols = {"seq": np.arange(m, dtype=np.int64), "key": keys,
            "ts": np.arange(m, dtype=np.float64) / 1000.0 if ts is None else np.asarray(ts, dtype=np.float64)}
    if cost is not None:
        cols["cost"] = np.asarray(cost, dtype=np.float64)
    columns = [c for c in ("seq", "ts", "key", "cost") if c in cols]
    tmp = staging_dir(path)
    parts = [write_part(tmp, 0, cols, columns)] if m else []
    if n_keys is None:
        n_keys = len(names) if names is not None else int(keys.max()) + 1 if m else 1
    if names is not None:
        write_key_dictionary(tmp, list(names))
    finalize(tmp, path, parts, {"name": path.name, "n_keys": n_keys, "columns": columns})
    return path


#: the timing part's grouping run (tests/conftest.py ``live_grouping_run``): 8 workers, a Zipf stream at z = 1.8
#: over 10^4 keys, 5 s phases (25,000 tuples at 62.5% of the workers' capacity), every phase twice
LIVE_RUN = {"workers": 8, "z": 1.8, "keys": 10_000, "duration_s": 5.0, "tuples": 25_000, "repeat": 2,
            "strategies": ("kg", "pkg", "dc", "sg", "flink")}


def zipf_dataset(path: Path, alpha: float, keys: int, tuples: int, seed: int, rate: float = 1000.0,
                 cost: dict[str, Any] | None = None) -> Path:
    """A generated finite-Zipf stream (constant arrivals at ``rate``), once per path."""
    from skewbench.datasets.generators import StreamSpec, generate

    if not (path / "_skewbench.json").exists():
        generate(StreamSpec.zipf(alpha, keys, tuples, seed=seed, rate=rate, cost=cost), path, name=path.name)
    return path


def live_subprocess(args: Sequence[Any], env: dict[str, str] | None = None, timeout: float = 600
                    ) -> subprocess.CompletedProcess:
    """``skewbench live ARGS`` in a process of its own (its own Spark session or Flink JVM), with
    this interpreter and this checkout first on the path."""
    src = str(Path(__file__).resolve().parents[1] / "src")
    full = {**os.environ, **(env or {})}
    full["PYTHONPATH"] = os.pathsep.join([src, full.get("PYTHONPATH", "")])
    return subprocess.run([sys.executable, "-c", "from skewbench.cli import main; main()", "live",
                           *map(str, args)], capture_output=True, text=True, env=full, timeout=timeout)


#: how a run the calibration refused ends (skewbench.live.calibrate.ImplausibleCalibration): the
#: machine was too busy to measure, not a fault of what the tests check
REFUSED = "error: implausible calibration"


def live_measured(args: Sequence[Any], env: dict[str, str] | None = None, attempts: int = 3,
                  timeout: float = 600) -> tuple[subprocess.CompletedProcess, list[str]]:
    """``skewbench live ARGS`` (:func:`live_subprocess`) run again, up to ``attempts`` times in all,
    while its calibration refuses it (:data:`REFUSED`: a pytest-xdist worker or anything else
    beside it on the cores disturbed the calibration); the last run and each refusal's line.
    Any other failure ends at once."""
    refusals: list[str] = []
    for _ in range(attempts):
        done = live_subprocess(args, env=env, timeout=timeout)
        refused = [line for line in done.stderr.splitlines() if line.startswith(REFUSED)]
        if done.returncode == 0 or not refused:
            break
        refusals.append(refused[-1])
    return done, refusals


def live_json(done: subprocess.CompletedProcess) -> dict[str, Any]:
    """The JSON object a successful ``skewbench live --json`` printed (else its error line)."""
    errors = [line for line in done.stderr.splitlines() if line.startswith("error: ")]
    assert done.returncode == 0, errors[-1] if errors else done.stderr[-3000:]
    return json.loads(done.stdout)


def rows_by(result: dict[str, Any] | list[dict[str, Any]], engine: str, routing: str = "routed") -> dict[str, dict]:
    rows = result["rows"] if isinstance(result, dict) else result
    return {r["strategy"]: r for r in rows if r["engine"] == engine and r["routing"] == routing}


def replay_loads(dataset: Path, strategy: str, workers: int, sources: int = 5, seed: int = 0,
                 **params: Any) -> list[int]:
    """The strategy's per-worker loads as the replay computes them on the whole dataset
    (``skewbench.grouping.engine.replay``, balance metrics; one source for a single-source strategy)."""
    from skewbench import registry
    from skewbench.grouping.engine import ReplayConfig, cell, replay

    single = registry.get("grouping", strategy).single_source
    c = cell(strategy, workers, 1 if single else sources, seed, tuple(sorted(params.items())))
    return list(replay(dataset, [c], ReplayConfig(latency=False)).summary[0]["worker_tuples"])


def assert_ratios(rows: list[dict[str, Any]], column: str, median_band: tuple[float, float],
                  each_band: tuple[float, float], context: Any = None) -> None:
    """Measured over predicted (``column``, a ratio column of the rows): their median over the
    phases within ``median_band`` (a bias every phase shares: the model, the calibration) and
    every phase's within ``each_band`` (one phase's own error, or a phase a loaded machine
    stalled)."""
    ratios = {f"{r['strategy']}{'' if r['routing'] == 'routed' else ' (native)'}": r[column] for r in rows}
    median = float(np.median(list(ratios.values())))
    assert median_band[0] <= median <= median_band[1], (column, "median", median, ratios, context)
    bad = {k: v for k, v in ratios.items() if not each_band[0] <= v <= each_band[1]}
    assert not bad, (column, bad, ratios, context)
