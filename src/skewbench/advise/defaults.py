"""The engines' default partitioners on the user's keys, as the engines compute them.

Every key is hashed once per engine by the engine strategies' own kernels
(:func:`skewbench.grouping.strategies.engines.engine_hashes` for integer keys, as the strategies hash bound
key values; :func:`~skewbench.grouping.strategies.engines.engine_text_hashes` for text keys, a Java
``String``), and the hashes go to workers at each parallelism ``p`` through
:func:`~skewbench.grouping.strategies.engines.engine_workers`, the strategies' own last step:

``kafka``       Kafka's default partitioner with ``p`` partitions (one per consumer);
``flink``       ``keyBy`` at parallelism ``p``: with Flink's default max parallelism for ``p``,
                and (a second row) with the user's own (``--flink-max-parallelism``);
``spark-hash``  Spark RDD's ``HashPartitioner(p)``;
``spark-sql``   Spark SQL's shuffle into ``p`` partitions (``spark.sql.shuffle.partitions``).

``key_format``: ``long`` hashes integer keys as Java ``long`` values (Kafka's ``LongSerializer``,
Spark's ``LongType``), ``string`` hashes every key's text as a Java ``String`` (Kafka's
``StringSerializer``, Spark's ``StringType``); ``auto`` is ``long`` when every key is an
integer, else ``string``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from skewbench.advise.keys import Keys
from skewbench.advise.rows import hottest_fields, load_fields, worker_loads
from skewbench.errors import SkewbenchError
from skewbench.grouping.strategies import engines

ENGINES = ("kafka", "flink", "spark-hash", "spark-sql")
KEY_FORMATS = ("auto", "long", "string")

_LABELS = {"kafka": "partitions = p", "spark-hash": "HashPartitioner(p)", "spark-sql": "shuffle partitions = p"}


def resolve_key_format(keys: Keys, key_format: str) -> str:
    """``long`` or ``string`` for ``key_format`` (``auto``: long when every key is an integer)."""
    if key_format not in KEY_FORMATS:
        raise SkewbenchError(f"--key-format must be one of {', '.join(KEY_FORMATS)}, got {key_format!r}")
    if key_format == "auto":
        return "long" if keys.values is not None else "string"
    if key_format == "long" and keys.values is None:
        raise SkewbenchError(f"{keys.source}: --key-format long needs integer keys (the canonical decimal text of an "
                             "int64, e.g. 42 or -7); these are text: use --key-format string")
    return key_format


def key_hashes(keys: Keys, key_format: str) -> dict[str, np.ndarray]:
    """Each engine's hash of every key id (int64 arrays), in ``key_format`` (long or string)."""
    if keys.values is not None:  # the strategies' own path for bound key values
        return {e: engines.engine_hashes(e, keys.values, key_format) for e in ENGINES}
    buffers = keys.text_buffers()
    return {e: engines.engine_text_hashes(e, buffers) for e in ENGINES}


def flink_groups(P: int, p: int) -> tuple[int, int]:
    """The fewest and most key groups a subtask owns (``floor(P/p)``, ``ceil(P/p)``)."""
    return P // p, -(-P // p)


def engine_row(engine: str, hashes: np.ndarray, keys: Keys, p: int, key_format: str,
               max_parallelism: int = 0, setting: str = "default") -> dict[str, Any]:
    """One engine's row at parallelism ``p`` (``max_parallelism``: Flink's, 0 = its default rule)."""
    workers = engines.engine_workers(engine, hashes, p, max_parallelism)
    loads = worker_loads(workers, keys.counts, p)
    row: dict[str, Any] = {"partitioner": engine, "kind": "engine", "workers": p, "key_format": key_format,
                           "setting": setting}
    if engine == "flink":
        P = int(max_parallelism) or engines.flink_default_max_parallelism(p)
        lo, hi = flink_groups(P, p)
        row.update(max_parallelism=P, key_groups_min=lo, key_groups_max=hi,
                   label=f"max parallelism {P}" + (" (yours)" if setting == "yours" else ""))
    else:
        row["label"] = _LABELS[engine].replace("= p", f"= {p}").replace("(p)", f"({p})")
    row.update(load_fields(loads, keys.tuples))
    busiest = row["busiest_worker"]
    row["hottest_keys"] = hottest_fields(keys.names, workers, keys.counts, busiest, int(loads[busiest]))
    return row


def engine_rows(keys: Keys, hashes: dict[str, np.ndarray], p: int, key_format: str,
                flink_max_parallelism: int | None) -> list[dict[str, Any]]:
    """The engine rows at ``p``: kafka, flink (default, and the user's max parallelism), spark-hash,
    spark-sql."""
    rows = [engine_row("kafka", hashes["kafka"], keys, p, key_format),
            engine_row("flink", hashes["flink"], keys, p, key_format)]
    if flink_max_parallelism:
        rows.append(engine_row("flink", hashes["flink"], keys, p, key_format, flink_max_parallelism, "yours"))
    rows += [engine_row(e, hashes[e], keys, p, key_format) for e in ("spark-hash", "spark-sql")]
    return rows
