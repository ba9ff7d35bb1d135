"""The grouping family's results tables: coordinates, columns and METRICS (the results contract,
`skewbench.results`), each described here once and computed by `skewbench.grouping.engine`.

Imbalance follows dchoices.spec.md 1.2 and 3.1 (`max_w c_w / m - 1/n`); completion times
(queueing + execution, ms), speed-up and gain against round robin follow osg.spec.md 3.3; memory
follows dchoices.spec.md 3.5.  Windows are a fixed number of tuples (default: 100 equal windows)
or of dataset seconds (`--window 3600s`).
"""

from __future__ import annotations

from skewbench.results import Column, Metric

#: the grid's axes besides strategy and seed
COORDINATES = ("workers", "sources")
#: how a cell's MLflow run is named (after the dataset's name)
RUN_NAME = "{strategy} n={workers} s={sources} seed={seed}"

_LAT = "ms"
#: the queue simulation's columns are null in a replay that counts only (``--metrics balance``)
SIMULATED = "metrics == 'all'"
#: the strategy split no key over two workers: the hottest key's limit binds at every n
KEYS_WHOLE = "replicas_max == 1"
_RATE = "tuples/s"

COLUMNS = (
    Column("tuples", "int64", "tuples replayed (the dataset's size); in the series, the window's tuples", "both",
           bounds=(0, None)),
    Column("keys", "int64", "distinct keys seen in the stream", bounds=(1, None)),
    Column("workers", "int64", "downstream workers n", "both", bounds=(1, None)),
    Column("sources", "int64", "upstream sources s (1 for single-scheduler strategies such as OSG)", "both",
           bounds=(1, None)),
    Column("time_mode", "string", "'dataset' (the dataset's arrival times) or 'provisioning' (deterministic "
           "arrivals; the workers' capacity is P% of the arrival rate)", param=True),
    Column("provisioning", "float64", "P of the provisioning time mode: capacity over arrival rate, in percent (0 when unused)", param=True),
    Column("metrics", "string", "what the replay computed: 'all', or 'balance' (routing and counting only, "
           "without the queue simulation: every completion-time metric is null)", "both", param=True),
    Column("best_basis", "string", "how load_max_best was computed: 'whole keys: optimum|lower bound' (KG), 'split over own "
           "2 choices: LP optimum' (PKG and the tails of the head-aware strategies), 'any split over all workers: "
           "m/n' (SG, OSG, FK)"),
    Column("worker_tuples", "list<int64>", "tuples routed to each worker"),
    Column("source_worker_tuples", "list<int64>", "tuples each source routed to each worker, source after source "
           "(sources x workers, row-major): the traffic of every source-worker pair"),
    Column("worker_head_tuples", "list<int64>", "tuples of true-head keys (f_k/m >= 1/(5n)) routed to each worker"),
    Column("latency_cdf", "list<float64>", "101 completion times (ms), at quantiles 0, 0.01, ..., 0.99, 1",
           not_null_if=SIMULATED),
    Column("stats", "string", "JSON: the strategy's own statistics over all its sources (D-C's d and head size "
           "averaged over sources, its head fraction over all messages, OSG's run index, ...); in the series, at "
           "the window's end", "both"),
    Column("busy_ms", "list<float64>", "each worker's busy time, ms: the execution times (the dataset's costs, "
           "1 ms a tuple without a cost column, times the worker's speed factor) of the tuples routed to it"),
    Column("limit_key", "int64", "the hottest key by cost (its dense id), which one worker holds whole when the "
           "strategy splits no key (replicas_max 1); null otherwise", nullable=True, not_null_if=KEYS_WHOLE),
    Column("scaling_workers", "list<int64>", "the capacity curve's worker counts (the replay's scaling grid, by "
           "default 1, 2, 4, ..., 1024 and the replay's own n; empty without a sweep)"),
    Column("scaling_capacity", "list<float64>", "the strategy's capacity at each of scaling_workers, from a "
           "replay of the same strategy, sources, seed and parameters at that n (tuples/s)", steps="scaling_workers"),
    Column("demand_rates", "list<float64>", "the target input rates of the demand (tuples/s)"),
    Column("demand", "list<int64>", "for each of demand_rates, the fewest workers of scaling_workers whose capacity "
           "reaches it (and whose p99 completion time at that rate stays within demand_objective_ms, when "
           "set); 0 when none does"),
    Column("demand_objective_ms", "float64", "the p99 completion-time objective of the demand, ms (0: capacity "
           "alone)", bounds=(0, None), param=True),
    Column("window", "int64", "the metrics window's index (0, 1, ...)", "series", bounds=(0, None)),
    Column("seq_start", "int64", "the window's first stream position", "series", bounds=(0, None)),
    Column("seq_end", "int64", "one past the window's last stream position", "series"),
    Column("worker_tuples_cum", "list<int64>", "tuples per worker up to the window's end", "series"),
    Column("worker_tuples_win", "list<int64>", "tuples per worker within the window", "series"),
)

METRICS = (
    # ---- summary: balance
    Metric("imbalance", "largest worker load as a fraction of the tuples, minus 1/n", "", False, (0, 1),
           log_axis=True, headline=True, fmt="g"),
    Metric("imbalance_rel", "(largest load - mean load) / mean load", "", False, (0, None)),
    Metric("imbalance_abs", "largest load minus the mean load, in tuples", "tuples", False, (0, None)),
    Metric("imbalance_avg", "mean over windows of the cumulative imbalance", "", False, (0, 1), log_axis=True),
    Metric("load_max", "largest worker load as a fraction of the tuples", "", False, (0, 1)),
    Metric("load_max_best", "the least largest worker load (fraction of the tuples) the strategy's constraint allows "
           "on this stream, computed offline (best_basis says which constraint, optimum or bound; "
           "skewbench.grouping.optimum)", "", None, (0, 1)),
    Metric("balance_optimality", "load_max_best / load_max: 1 when the strategy is as balanced as its own choices "
           "allow (e.g. PKG against the best split over its two hash choices)", "", True, (0, 1), headline=True,
           fmt="f3", label="vs best"),
    Metric("load_min", "smallest worker load as a fraction of the tuples", "", True, (0, 1)),
    # ---- summary: completion times (queueing + execution)
    Metric("latency_mean", "mean completion time (queueing + execution)", _LAT, False, (0, None), (True, False),
           label="latency mean", headline=True, fmt="f2", not_null_if=SIMULATED),
    Metric("latency_p50", "median completion time (within 0.01%)", _LAT, False, (0, None), not_null_if=SIMULATED),
    Metric("latency_p95", "95th percentile of completion time (within 0.01%)", _LAT, False, (0, None),
           not_null_if=SIMULATED),
    Metric("latency_p99", "99th percentile of completion time (within 0.01%)", _LAT, False, (0, None),
           label="latency p99", headline=True, fmt="f2", not_null_if=SIMULATED),
    Metric("latency_max", "largest completion time", _LAT, False, (0, None), not_null_if=SIMULATED),
    Metric("latency_min", "smallest completion time", _LAT, False, (0, None), (True, False), not_null_if=SIMULATED),
    Metric("latency_worker_mean_max", "the largest per-worker mean completion time", _LAT, False, (0, None),
           not_null_if=SIMULATED),
    Metric("exec_mean", "mean execution time", _LAT, None, (0, None), (True, False), not_null_if=SIMULATED),
    Metric("queue_delay_mean", "mean wait before execution", _LAT, False, (0, None), not_null_if=SIMULATED),
    Metric("throughput", "tuples per second: m / (last completion - first arrival)", "tuples/s", True,
           (0, None), (True, False), not_null_if=SIMULATED),
    Metric("latency_mean_rr", "mean completion time of round robin on the same arrivals and costs", _LAT, None,
           (0, None), (True, False), not_null_if=SIMULATED),
    Metric("speedup_vs_rr", "total completion time of round robin over the strategy's", "", True, (0, None),
           (True, False), label="speedup vs RR", headline=True, fmt="f3", not_null_if=SIMULATED),
    Metric("gain_vs_rr", "1 - mean completion time / round robin's", "", True, (None, 1), (False, True),
           not_null_if=SIMULATED),
    # ---- summary: memory
    Metric("pairs", "distinct (key, worker) pairs", "pairs", False, (0, None), dtype="int64"),
    Metric("replication", "(key, worker) pairs per distinct key", "", False, (1, None), headline=True, fmt="f2"),
    Metric("replicas_max", "largest number of workers one key went to", "workers", False, (1, None),
           dtype="int64"),
    Metric("replicas_head_mean", "mean number of workers per true-head key", "workers", False, (0, None)),
    Metric("head_keys_true", "keys with f_k/m >= 1/(5n)", "keys", None, (0, None), dtype="int64"),
    # ---- summary: aggregation cost (practice.spec.md 3), per metrics window
    Metric("merge_partials", "partial records a windowed aggregation must merge, per window (mean): the keys "
           "that reached two or more workers in the window, one record per worker (0 for key grouping)",
           "records", False, (0, None), label="merge/window", headline=True, fmt="g"),
    Metric("window_replication", "(key, worker) pairs per distinct key within a window, mean over windows (1 "
           "for key grouping): the partial aggregates a windowed aggregation keeps", "", False, (1, None)),
    Metric("cardinality_imbalance", "mean over windows of (largest - mean) / mean of the distinct keys each "
           "worker received in the window", "", False, (0, None)),
    # ---- summary: capacity (issue 42; skewbench.grouping.capacity)
    Metric("capacity", "the largest input rate at which the busiest worker keeps up: 1000 x tuples / max busy_ms",
           _RATE, True, (0, None), (True, False), headline=True, fmt="g"),
    Metric("capacity_window", "the least of the windows' capacities (the window's tuples over its busiest "
           "worker's busy time): what a drifting stream sustains throughout", _RATE, True, (0, None),
           (True, False)),
    Metric("capacity_balanced", "the capacity of the same work spread evenly: 1000 x tuples / mean busy_ms (what "
           "a rate taken from the workers' average busy time claims)", _RATE, None, (0, None), (True, False)),
    Metric("key_limit", "the rate beyond which the hottest key (limit_key) alone overloads the worker holding "
           "it: 1000 x tuples / its busy ms; the strategy's capacity at any n when it splits no key", _RATE, None,
           (0, None), (True, False), not_null_if=KEYS_WHOLE, nullable=True),
    Metric("ceiling_workers", "the skew ceiling: the first n of scaling_workers from which on capacity grows by "
           "less than 5% per doubling (null: still growing at the grid's end, or no sweep)", "workers", False,
           (1, None), dtype="int64", nullable=True),
    Metric("ceiling_capacity", "the capacity at the skew ceiling", _RATE, True, (0, None), (True, False),
           nullable=True),
    # ---- summary: timings
    Metric("route_seconds", "seconds spent in the strategy's routing calls, summed over sources", "s", False,
           (0, None), timing=True),
    Metric("sim_tuples_per_s", "tuples routed per second of routing", "tuples/s", True, (0, None), timing=True),
    Metric("wall_seconds", "wall-clock seconds of the whole replay", "s", False, (0, None), timing=True),
    # ---- series (per cell and window)
    Metric("imbalance_cum", "imbalance of the loads up to the window's end", "", False, (0, 1), windowed=True,
           log_axis=True, table="series"),
    Metric("imbalance_win", "imbalance of the window's own tuples", "", False, (0, 1), windowed=True,
           log_axis=True, table="series"),
    Metric("merge_partials", "partial records to merge in the window: keys that reached two or more workers "
           "in it, one record per worker", "records", False, (0, None), table="series", dtype="int64"),
    Metric("cardinality_imbalance", "(largest - mean) / mean of the distinct keys each worker received in the "
           "window", "", False, (0, None), table="series", not_null_if="tuples > 0"),
    Metric("capacity", "the window's capacity: its tuples over its busiest worker's busy time", _RATE, True,
           (0, None), (True, False), windowed=True, table="series", not_null_if="tuples > 0", nullable=True),
    Metric("latency_mean", "mean completion time of the window's tuples", _LAT, False, (0, None), (True, False),
           windowed=True, table="series", not_null_if="tuples > 0 and " + SIMULATED),
    Metric("latency_p50", "median completion time of the window's tuples (within 1%)", _LAT, False, (0, None),
           table="series", not_null_if="tuples > 0 and " + SIMULATED),
    Metric("latency_p95", "95th percentile in the window (within 1%)", _LAT, False, table="series",
           not_null_if="tuples > 0 and " + SIMULATED),
    Metric("latency_p99", "99th percentile in the window (within 1%)", _LAT, False, windowed=True,
           table="series", not_null_if="tuples > 0 and " + SIMULATED),
    Metric("latency_max", "largest completion time in the window", _LAT, False, table="series",
           not_null_if="tuples > 0 and " + SIMULATED),
)

#: the queue simulation's columns (those not null only when SIMULATED), null when the replay
#: counts only (``metrics`` 'balance')
LATENCY_SUMMARY = tuple(f.name for f in (*COLUMNS, *METRICS)
                        if f.table == "summary" and f.not_null_if == SIMULATED)
LATENCY_SERIES = tuple(f.name for f in METRICS if f.table == "series" and SIMULATED in (f.not_null_if or ""))


SUMMARY = (
    "cell_id", "dataset", "dataset_fingerprint", "tuples", "keys",
    "strategy", "workers", "sources", "seed", "params",
    "time_mode", "provisioning", "metrics",
    "imbalance", "imbalance_rel", "imbalance_abs", "imbalance_avg",
    "load_max", "load_max_best", "balance_optimality", "best_basis", "load_min", "worker_tuples",
    "source_worker_tuples", "worker_head_tuples",
    "latency_mean", "latency_p50", "latency_p95", "latency_p99", "latency_max", "latency_min", "latency_cdf",
    "latency_worker_mean_max", "exec_mean", "queue_delay_mean", "throughput",
    "latency_mean_rr", "speedup_vs_rr", "gain_vs_rr",
    "pairs", "replication", "replicas_max", "replicas_head_mean", "head_keys_true",
    "merge_partials", "window_replication", "cardinality_imbalance", "stats",
    "busy_ms", "capacity", "capacity_window", "capacity_balanced", "key_limit", "limit_key",
    "scaling_workers", "scaling_capacity", "ceiling_workers", "ceiling_capacity",
    "demand_rates", "demand", "demand_objective_ms",
    "route_seconds", "sim_tuples_per_s", "wall_seconds",
)

SERIES = (
    "cell_id", "strategy", "workers", "sources", "seed", "metrics",
    "window", "seq_start", "seq_end", "tuples",
    "imbalance_cum", "imbalance_win", "worker_tuples_cum", "worker_tuples_win",
    "merge_partials", "cardinality_imbalance", "capacity", "latency_mean", "latency_p50", "latency_p95", "latency_p99", "latency_max", "stats",
)
