"""Summary statistics of a dataset (``skewbench datasets describe``)."""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from skewbench.datasets.contract import Dataset, open_dataset


def describe(path_or_ds: Any, top: int = 10, progress: Callable[[int], None] | None = None) -> dict[str, Any]:
    """One pass over the dataset: key frequencies, skew, entropy, time span and cost statistics.

    Fields: ``name``, ``path``, ``kind``, ``tuples``, ``keys`` (size of the key space),
    ``distinct_keys`` (keys seen), ``p1`` (share of the most frequent key), ``expected_p1`` (Zipf),
    ``entropy_bits`` (Shannon entropy of the empirical key distribution, in bits),
    ``top_keys`` (``[{key, count, share, name?}]``), ``ts_first``, ``ts_last``, ``rate`` (tuples per
    second over the span), ``cost`` (``{mean, min, max}`` when present), ``fingerprint``.
    """
    ds: Dataset = path_or_ds if isinstance(path_or_ds, Dataset) else open_dataset(path_or_ds)
    n_keys = ds.n_keys
    counts = np.zeros(n_keys, dtype=np.int64)
    cols = ["ts", "key"] + (["cost"] if "cost" in ds.columns else [])
    m = 0
    ts_first = ts_last = None
    c_sum, c_min, c_max = 0.0, math.inf, -math.inf
    for b in ds.iter_batches(cols):
        k = b["key"]
        if len(k) == 0:
            continue
        counts += np.bincount(k, minlength=n_keys)[:n_keys]
        m += len(k)
        if ts_first is None:
            ts_first = float(b["ts"][0])
        ts_last = float(b["ts"][-1])
        if "cost" in b:
            c = b["cost"]
            c_sum += float(c.sum())
            c_min = min(c_min, float(c.min()))
            c_max = max(c_max, float(c.max()))
        if progress:
            progress(len(k))
    nz = counts[counts > 0]
    shares = nz / m if m else nz.astype(float)
    entropy = float(-(shares * np.log2(shares)).sum()) if m else 0.0
    order = np.argsort(-counts, kind="stable")[: min(top, n_keys)]
    names = _names(ds, order)
    top_keys = []
    for i, k in enumerate(order):
        if counts[k] == 0:
            break
        row: dict[str, Any] = {"key": int(k), "count": int(counts[k]), "share": float(counts[k] / m)}
        if names is not None:
            row["name"] = names[i]
        top_keys.append(row)
    out: dict[str, Any] = {
        "name": ds.name,
        "path": str(ds.path),
        "kind": ds.meta.get("kind"),
        "generator": ds.meta.get("generator") or (ds.meta.get("source") or {}).get("format"),
        "tuples": m,
        "keys": n_keys,
        "distinct_keys": int(len(nz)),
        "p1": float(counts.max() / m) if m else 0.0,
        "entropy_bits": entropy,
        "top_keys": top_keys,
        "ts_first": ts_first,
        "ts_last": ts_last,
        "rate": (m - 1) / (ts_last - ts_first) if m > 1 and ts_last and ts_last > ts_first else None,
        "columns": ds.columns,
        "fingerprint": ds.meta["fingerprint"],
    }
    if "expected_p1" in ds.meta:
        out["expected_p1"] = ds.meta["expected_p1"]
    if "cost" in ds.columns and m:
        out["cost"] = {"mean": c_sum / m, "min": c_min, "max": c_max}
    return out


def _names(ds: Dataset, keys: np.ndarray) -> list[str] | None:
    table = ds.key_dictionary()
    if table is None:
        return None
    names = table.column("name").to_numpy(zero_copy_only=False)
    return [str(names[k]) if k < len(names) else "" for k in keys]


def format_description(d: dict[str, Any]) -> str:
    """Human-readable rendering of :func:`describe`'s result."""
    lines = [
        f"dataset      {d['name']}  ({d['path']})",
        f"kind         {d['kind']} / {d['generator']}",
        f"tuples       {d['tuples']:,}",
        f"keys         {d['keys']:,} in the key space, {d['distinct_keys']:,} seen",
        f"p1           {d['p1']:.6f}" + (f"  (exact finite Zipf: {d['expected_p1']:.6f})" if "expected_p1" in d else ""),
        f"entropy      {d['entropy_bits']:.3f} bits",
    ]
    if d["ts_first"] is not None:
        rate = f", {d['rate']:,.1f} tuples/s" if d.get("rate") else ""
        lines.append(f"time         {d['ts_first']:.3f} .. {d['ts_last']:.3f} s{rate}")
    if "cost" in d:
        c = d["cost"]
        lines.append(f"cost         mean {c['mean']:.4f} ms, min {c['min']:.4f}, max {c['max']:.4f}")
    lines.append(f"fingerprint  {d['fingerprint']}")
    lines.append("top keys     " + ", ".join(
        f"{t['key']}{'=' + repr(t['name'])[:40] if 'name' in t else ''} ({t['share']:.4f})" for t in d["top_keys"][:10]))
    return "\n".join(lines)
