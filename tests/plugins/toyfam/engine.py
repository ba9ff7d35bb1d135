"""Toy engine: one task per cell, on the shared executors."""

from __future__ import annotations

import json
import time
from typing import Any

import numpy as np

from skewbench import registry
from skewbench.datasets.contract import open_dataset
from skewbench.replay import Cell, Replayed

WINDOWS = 4


def make(cell: Cell) -> Any:
    return registry.get("toy", cell.strategy)(cell.workers, cell.seed, **cell.param_dict)


def run_cell(ds_path: str, cell: Cell) -> tuple[dict, list[dict]]:
    ds = open_dataset(ds_path)
    keys = np.concatenate([b["key"] for b in ds.iter_batches(["key"], 1 << 20)])
    bins = make(cell).assign(keys)
    n, m = cell.workers, len(keys)
    row = {"cell_id": cell.cell_id, "dataset": ds.name, "dataset_fingerprint": ds.meta["fingerprint"],
           "tuples": m, "strategy": cell.strategy, "workers": n, "seed": cell.seed,
           "params": json.dumps(make(cell).params, sort_keys=True), "max_share": float(np.bincount(bins, minlength=n).max() / m)}
    series = []
    for w, part in enumerate(np.array_split(bins, WINDOWS)):
        share = float(np.bincount(part, minlength=n).max() / max(1, len(part)))
        series.append({"cell_id": cell.cell_id, "strategy": cell.strategy, "workers": n, "seed": cell.seed,
                       "window": w, "window_max_share": share})
    return row, series


def replay(ds_path: str, cells: list[Cell], executor) -> Replayed:
    t0 = time.perf_counter()
    done = executor(lambda c: run_cell(ds_path, c), cells, "toy")
    return Replayed([r for r, _ in done], [s for _, ser in done for s in ser], time.perf_counter() - t0)
