"""What the balancing strategies would do with the same keys: each replayed by its own strategy
class (:mod:`skewbench.grouping`), with its default parameters, ``sources`` upstream instances
and hash seed ``seed``, on the keys' stream.

The stream: the input's keys in input order (a key file, a table, a dataset), or, for
``key,count`` pairs, which carry no order, their tuples in a random order (seeded).  A stream
longer than :data:`MAX_REPLAY_TUPLES` (pairs: :data:`MAX_PAIRS_REPLAY_TUPLES`) is replayed on a
random sample of that many tuples (a stream's in its order; the pairs' by thinning each count
binomially), and the loads scaled back to the input's tuples (the row says so:
``replayed_tuples``, ``scale``).

Costs, from a replay's own accounting (:func:`skewbench.grouping.engine.count_routes`):
``replication`` (the workers a key reaches, averaged over the keys: the state a split key
needs on each), ``replicas_max``, and ``merge_partials_per_window`` (the partial records a
windowed aggregation downstream must merge, per window of ``window_tuples``: a key that reached
``r >= 2`` workers in a window costs ``r`` records); the strategy's own statistics under
``stats`` (``summary()``).  ``local-global`` routes the partial records of its local
combiners, not tuples: its loads are the records delivered to each worker (``load_unit``), and
its cost the share of the tuples they are (``delivered_fraction``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from skewbench import registry
from skewbench.advise.keys import Keys
from skewbench.advise.rows import load_fields
from skewbench.grouping.base import Batch

ALTERNATIVES = ("pkg", "dc", "wc", "chwbl", "salt", "local-global")
#: what each alternative is, in a few words (the console's and the page's label)
LABELS = {"pkg": "2 choices per key", "dc": "hot keys on d choices", "wc": "hot keys on any worker",
          "chwbl": "bounded loads, 125%", "salt": "hot keys split, merged", "local-global": "two-phase aggregation"}
#: the longest stream replayed; longer ones are sampled to this many tuples
MAX_REPLAY_TUPLES = 1 << 20
#: the most tuples of key,count pairs replayed (a random order of them is a model, and a
#: quarter of a million tuples shows its balance; more are sampled to this many)
MAX_PAIRS_REPLAY_TUPLES = 1 << 18
#: (key, worker) bits a replay's accounting may hold per bit set (2 of them); beyond, the
#: replication comes from sorting the (key, worker) pairs and no merge count is made
MAX_ACCOUNT_WORDS = 1 << 24


def replay_stream(keys: Keys, seed: int) -> tuple[np.ndarray, str]:
    """The key ids to replay and how they were drawn from the input."""
    rng = np.random.default_rng([seed, 0x5EED])
    m = keys.tuples
    if keys.stream is not None:
        if m <= MAX_REPLAY_TUPLES:
            return keys.stream, "the input's order"
        pick = np.sort(rng.choice(m, size=MAX_REPLAY_TUPLES, replace=False))
        return keys.stream[pick], f"a random sample of {MAX_REPLAY_TUPLES:,} tuples in the input's order"
    counts = keys.counts
    note = "in a random order: key,count pairs have none"
    if m > MAX_PAIRS_REPLAY_TUPLES:
        counts = rng.binomial(counts, MAX_PAIRS_REPLAY_TUPLES / m)
        note = f"a random sample of {int(counts.sum()):,} tuples, " + note
    stream = np.repeat(np.arange(counts.size, dtype=np.int64), counts)
    return rng.permutation(stream), note


def by_frequency(stream: np.ndarray) -> tuple[np.ndarray, int]:
    """The stream's keys renamed by rank of frequency (the most frequent 0; ties: the lower id),
    and how many keys it has: the accounting then finds the hot keys' state close together
    (three times faster on 10^6 keys), and the replicas and merge counts do not depend on names."""
    counts = np.bincount(stream)
    order = np.argsort(-counts, kind="stable")
    rank = np.empty(counts.size, dtype=np.int64)
    rank[order] = np.arange(counts.size)
    return rank[stream], int(np.count_nonzero(counts))


def _replicas(out: np.ndarray, ranked: np.ndarray, n_keys: int, p: int, sources: int
              ) -> tuple[np.ndarray, float | None, int | None]:
    """Each key's replicas and the merge partials per window (None when not counted)."""
    from skewbench.grouping.engine import count_routes

    if n_keys * -(-p // 64) <= MAX_ACCOUNT_WORDS:
        rc = count_routes(out, ranked, n_keys, p, sources)
        return rc.replicas, rc.merge_partials, rc.window
    pairs = np.unique(ranked * p + out)
    return np.bincount(pairs // p, minlength=n_keys), None, None


def _route(name: str, stream: np.ndarray, p: int, sources: int, seed: int) -> tuple[Any, np.ndarray]:
    """The strategy at ``p`` workers and the worker of each tuple of ``stream``."""
    m = stream.size
    strat = registry.get("grouping", name)(p, sources, seed)
    return strat, strat.route(Batch(np.arange(m, dtype=np.int64), stream, np.zeros(m), np.ones(m)))


def loads_at(name: str, stream: np.ndarray, p: int, sources: int, seed: int, tuples: int) -> np.ndarray:
    """The strategy's load on each of ``p`` workers, scaled from ``stream`` to the input's
    ``tuples`` (``local-global``: its second stage's partial records)."""
    strat, out = _route(name, stream, p, sources, seed)
    loads = strat.delivered_loads().sum(axis=0) if name == "local-global" else np.bincount(out, minlength=p)
    return loads.astype(np.float64) * (tuples / stream.size)


def alternative_row(name: str, stream: np.ndarray, ranked: tuple[np.ndarray, int], p: int, sources: int, seed: int,
                    tuples: int) -> dict[str, Any]:
    """One strategy's row at ``p`` from a replay of ``stream`` (key ids; ``ranked``: the stream
    :func:`by_frequency`) standing for ``tuples``."""
    m = stream.size
    strat, out = _route(name, stream, p, sources, seed)
    scale = tuples / m
    row: dict[str, Any] = {"partitioner": name, "kind": "alternative", "workers": p, "sources": sources, "seed": seed,
                           "label": LABELS.get(name, name), "params": strat.describe_params(),
                           "replayed_tuples": int(m), "scale": scale}
    if name == "local-global":  # key grouping of the partial records: one worker per key, nothing to merge
        loads = strat.delivered_loads().sum(axis=0)
        delivered = int(loads.sum())
        row.update(load_fields(loads, delivered * scale, scale), load_unit="partial records",
                   delivered_fraction=delivered / m, replication=1.0, replicas_max=1, merge_partials_per_window=0.0,
                   window_tuples=None)
    else:
        replicas, merge, window = _replicas(out, ranked[0], ranked[1], p, sources)
        row.update(load_fields(np.bincount(out, minlength=p), tuples, scale), load_unit="tuples",
                   replication=float(replicas[replicas > 0].mean()), replicas_max=int(replicas.max()),
                   merge_partials_per_window=merge, window_tuples=window)
    row["stats"] = {k: float(v) for k, v in strat.summary().items()}
    row["cost"] = cost_text(row)
    return row


def cost_text(row: dict[str, Any]) -> str:
    """An alternative's cost in words: the records it delivers (local-global), else the workers a
    key reaches and the partial records to merge."""
    if row["partitioner"] == "local-global":
        return f"delivers {row['delivered_fraction']:.1%} of the tuples as partials"
    text = f"{row['replication']:.2f} workers/key"
    if row["merge_partials_per_window"] is not None:
        text += f", merges {row['merge_partials_per_window']:,.0f} per {row['window_tuples']:,} tuples"
    return text
