"""What to change, stated with its effect on the user's keys and the rule it comes from
(:mod:`skewbench.advise.rules`).  Each suggestion is a dict: ``engine``, ``workers`` (the
parallelism it is for; None: all of them), ``change``, ``effect`` and ``rule``."""

from __future__ import annotations

from typing import Any

import numpy as np

from skewbench.advise import rules
from skewbench.advise.defaults import engine_row
from skewbench.advise.keys import Keys

FLINK_RULE = ("Flink sends key group murmurHash(hashCode) mod P to subtask group x p div P "
              "(KeyGroupRangeAssignment): when p does not divide P some subtasks own ceil(P/p) groups and the "
              "rest floor(P/p), so busiest/mean is ceil(P/p)/(P/p) before any skew (FLINK-21695); P defaults to "
              "min(max(roundUpPow2(p + p/2), 128), 32768). A multiple of p gives every subtask P/p groups. "
              "P is kept in savepoints: changing it needs a fresh start or a state migration.")
KAFKA_RULE = ("Kafka's default partitioner sends a keyed record to toPositive(murmur2(key bytes)) mod q; p consumers "
              "under the default RangeAssignor read q/p adjacent partitions each when p divides q. Tried: q = p, "
              "2p, ..., 8p on these keys, the least busiest consumer kept (ties: fewer partitions). New partitions "
              "move keys: per-key order holds only among records written after the change.")
HOT_RULE = ("A keyed partitioner sends all of a key's tuples to one worker, so a key with more than 1/p of the "
            "tuples makes its worker busier than the mean whatever the hash: busiest/mean >= its share x p. Only "
            "splitting the key helps: two-phase aggregation (local-global: each source pre-aggregates its "
            "mini-batches) or spreading its tuples over several workers (pkg, dc, wc, chwbl, salt), whose partial "
            "results a downstream step must merge.")
FLINK_SHORT = "key group g goes to subtask g p div P: p must divide P for even key groups (FLINK-21695)"
KAFKA_SHORT = "partition = toPositive(murmur2(key)) mod q; RangeAssignor: q/p adjacent partitions per consumer"
HOT_SHORT = "all of a key's tuples go to one worker: a key above 1/p of the tuples beats any keyed partitioner"
#: a change is suggested when it lowers busiest/mean by at least this much (relative)
GAIN = 0.01


def _ratio(row: dict[str, Any]) -> float:
    return float(row["busiest_over_mean"])


def flink_advice(keys: Keys, hashes: np.ndarray, p: int, P: int, current: float, key_format: str,
                 setting: str) -> dict[str, Any] | None:
    """The max parallelism (or parallelism) without key-group rounding at ``p``, when ``P`` rounds
    and the change lowers busiest/mean on these keys."""
    if P % p == 0:
        return None
    better = rules.suggested_max_parallelism(p, P)
    after = _ratio(engine_row("flink", hashes, keys, p, key_format, better))
    d = rules.divisor_parallelism(P, p)
    at_d = _ratio(engine_row("flink", hashes, keys, d, key_format, P)) if d != p else None
    changes, effects = [], []
    whose = "the default" if setting == "default" else "yours"
    if after <= current * (1 - GAIN):
        changes.append(f"max parallelism {better} instead of {P} ({whose})")
        effects.append(f"{better // p} key groups per subtask (now {P // p} or {-(-P // p)}): {current:.2f} -> "
                       f"{after:.2f}")
    if at_d is not None and at_d <= current * (1 - GAIN):
        changes.append(f"parallelism {d} with max parallelism {P} ({whose})")
        effects.append(f"{P // d} key groups per subtask at parallelism {d}: {current:.2f} -> {at_d:.2f}")
    if not changes:
        return None
    return {"engine": "flink", "workers": p, "change": " or ".join(changes),
            "effect": "busiest/mean on these keys: " + "; ".join(effects)
                      + f" (the rounding alone: {rules.rounding(P, p):.2f} -> 1.00)",
            "rule": FLINK_RULE, "rule_short": FLINK_SHORT, "max_parallelism": better,
            "busiest_over_mean_after": after, "divisor_parallelism": d, "busiest_over_mean_at_divisor": at_d}


def common_flink_advice(keys: Keys, hashes: np.ndarray, ps: list[int], rows: list[dict[str, Any]],
                        key_format: str) -> dict[str, Any] | None:
    """One max parallelism without rounding at every parallelism (a job rescaled between them),
    with its busiest/mean at each on these keys: when it is better at one and worse at none."""
    P = rules.common_max_parallelism(ps) if len(ps) > 1 else None
    if P is None:
        return None
    now = {r["workers"]: _ratio(r) for r in rows if r["partitioner"] == "flink" and r["setting"] == "default"}
    after = {p: _ratio(engine_row("flink", hashes, keys, p, key_format, P)) for p in ps}
    if any(after[p] > now[p] * (1 + GAIN) for p in ps) or all(after[p] > now[p] * (1 - GAIN) for p in ps):
        return None  # worse somewhere, or better nowhere, on these keys
    groups = ", ".join(f"{P // p}" for p in ps)
    return {"engine": "flink", "workers": None, "change": f"max parallelism {P} for a job rescaled between "
            f"{', '.join(map(str, ps))} ({groups} key groups per subtask)",
            "effect": "busiest/mean on these keys " + ", ".join(f"{now[p]:.2f} -> {after[p]:.2f}" for p in ps),
            "rule": FLINK_RULE, "rule_short": FLINK_SHORT, "max_parallelism": P, "busiest_over_mean_after": after}


def kafka_advice(keys: Keys, hashes: np.ndarray, p: int, current: dict[str, Any]) -> dict[str, Any] | None:
    """The partition count that spreads these keys best over ``p`` consumers, when it helps."""
    q, top = rules.kafka_partitions(hashes, keys.counts, p)
    after = top / (keys.tuples / p)
    if q == p or after > _ratio(current) * (1 - GAIN):
        return None
    return {"engine": "kafka", "workers": p, "change": f"{q} partitions instead of {p} ({q // p} per consumer)",
            "effect": f"busiest consumer / mean on these keys {_ratio(current):.2f} -> {after:.2f}",
            "rule": KAFKA_RULE, "rule_short": KAFKA_SHORT, "partitions": q, "busiest_over_mean_after": after}


def hot_key_advice(keys: Keys, p: int, rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    """Two-phase or split options at ``p`` when one key alone exceeds ``1/p`` of the tuples: local-global,
    and the split alternative with the least busiest/mean (then the least replication)."""
    top = int(np.argmax(keys.counts))
    share = int(keys.counts[top]) / keys.tuples
    if not rules.hopeless(int(keys.counts[top]), keys.tuples, p):
        return None
    alts = [r for r in rows if r["kind"] == "alternative"]
    picked = [r for r in alts if r["partitioner"] == "local-global"]
    split = [r for r in alts if r["partitioner"] != "local-global"]
    if split:
        picked.append(min(split, key=lambda r: (_ratio(r), r["replication"])))
    options = [{"partitioner": r["partitioner"], "busiest_over_mean": _ratio(r), "cost": r["cost"]} for r in picked]
    effect = (f"key {keys.name(top)!r} carries {share:.1%} of the tuples, {share * p:.2f}x a worker's mean: no keyed "
              f"partitioner goes below busiest/mean {share * p:.2f}")
    if options:
        effect += "; " + "; ".join(f"{o['partitioner']} {o['busiest_over_mean']:.2f} ({o['cost']})" for o in options)
    return {"engine": "any", "workers": p, "change": "split the hot key: two-phase aggregation or a split partitioner",
            "effect": effect, "rule": HOT_RULE, "rule_short": HOT_SHORT, "hot_key": keys.name(top),
            "hot_key_share": share, "floor_over_mean": share * p, "options": options}


def build_advice(keys: Keys, hashes: dict[str, np.ndarray], rows: list[dict[str, Any]], ps: list[int],
                 key_format: str, flink_max_parallelism: int | None) -> list[dict[str, Any]]:
    """Every suggestion, parallelism by parallelism, then the one for all of them."""
    out: list[dict[str, Any] | None] = []
    for p in ps:
        at = [r for r in rows if r["workers"] == p]
        for r in at:
            if r["partitioner"] == "flink":
                out.append(flink_advice(keys, hashes["flink"], p, r["max_parallelism"], _ratio(r), key_format,
                                        r["setting"]))
        kafka = next(r for r in at if r["partitioner"] == "kafka")
        out.append(kafka_advice(keys, hashes["kafka"], p, kafka))
        out.append(hot_key_advice(keys, p, at))
    if any(a is not None and a["engine"] == "flink" for a in out):
        out.append(common_flink_advice(keys, hashes["flink"], ps, rows, key_format))
    return [a for a in out if a is not None]
