"""``skewbench advise KEYS --fail-over X [--baseline OLD_KEYS]``: advise as a check in a user's CI
(issue 43, point 4).  Pure functions over the rows :func:`skewbench.advise.core.advise` computes.

* **--fail-over X**: every engine default's row (Kafka's partitioner, Flink's keyBy with its
  default max parallelism and with yours, Spark's HashPartitioner and SQL shuffle) at every
  ``--workers`` must have its busiest worker at most X times the mean; each row over it is a
  failure naming the engine, the setting, the parallelism and the busiest worker's hottest key.
* **--baseline OLD_KEYS** (a key change: a new partition key, a new key format): the same rows
  computed on the old keys; a row whose busiest/mean is worse than the old one's by more than
  ``--margin`` (relative, default 10%) is a failure naming both numbers.

The command prints its table (or JSON, with a ``check`` object) as usual, then the failures, one
line each on standard error, and exits 1 when there is any.
"""

from __future__ import annotations

from typing import Any, Sequence

#: the default relative margin of --baseline: the new spread may be this much worse
DEFAULT_MARGIN = 0.10


def _name(r: dict[str, Any]) -> str:
    setting = r.get("setting", "default")
    return f"{r['partitioner']}" + ("" if setting in ("default", "") else f" ({setting} setting)")


def _hot(r: dict[str, Any]) -> str:
    keys = r.get("hottest_keys") or []
    if not keys:
        return ""
    k = keys[0]
    return f"; its hottest key {k['key']!r} is {k['share_of_worker']:.1%} of that worker"


def engine_rows(rows: Sequence[dict[str, Any]]) -> dict[tuple[str, str, int], dict[str, Any]]:
    """The engine defaults' rows by (partitioner, setting, workers)."""
    return {(r["partitioner"], r.get("setting", "default"), int(r["workers"])): r for r in rows if r["kind"] == "engine"}


def check(rows: Sequence[dict[str, Any]], fail_over: float | None = None,
          baseline: Sequence[dict[str, Any]] | None = None, margin: float = DEFAULT_MARGIN) -> dict[str, Any]:
    """The check's verdict: ``{"passed", "fail_over", "margin", "failures": [{"partitioner",
    "setting", "workers", "busiest_over_mean", "limit", "baseline", "reason"}]}``, failures in the
    rows' order."""
    now = engine_rows(rows)
    old = engine_rows(baseline) if baseline is not None else {}
    failures = []
    for key, r in now.items():
        ratio = float(r["busiest_over_mean"])
        where = f"{_name(r)} at p = {r['workers']}"
        if fail_over is not None and ratio > fail_over:
            failures.append({"partitioner": key[0], "setting": key[1], "workers": key[2], "busiest_over_mean": ratio,
                             "limit": fail_over, "baseline": None,
                             "reason": f"{where}: busiest worker {ratio:.2f}x the mean, over {fail_over:g}{_hot(r)}"})
        if key in old:
            before = float(old[key]["busiest_over_mean"])
            if ratio > before * (1.0 + margin):
                failures.append({"partitioner": key[0], "setting": key[1], "workers": key[2],
                                 "busiest_over_mean": ratio, "limit": before * (1.0 + margin), "baseline": before,
                                 "reason": f"{where}: busiest worker {ratio:.2f}x the mean with the new keys against "
                                           f"{before:.2f}x with the baseline's, worse by more than {margin:.0%}"
                                           f"{_hot(r)}"})
    return {"passed": not failures, "fail_over": fail_over, "margin": margin if baseline is not None else None,
            "failures": failures}
