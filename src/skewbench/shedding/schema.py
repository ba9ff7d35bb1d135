"""The shedding family's results tables (the results contract, `skewbench.results`), computed by
`skewbench.shedding.engine`.

Every row has a `kind`: **operator** rows come from the shedders in front of one FIFO operator
(LAS, Base Line, Straw-Man, Full Knowledge, no shedding; las.spec.md 3) and carry latency and
drop metrics; **partition** rows come from a keyed, windowed aggregation on `workers` workers
(Storm fields grouping with or without ShedPart; shedpart.spec.md 3.2) and carry per-window
imbalance, load, shedding and accuracy metrics.  A metric of the other kind is null.

Operator cells: arrivals are evenly spaced so that the operator's capacity is `provisioning`
percent of the arrival rate (the same P as the grouping family: under-provisioning
u = 1 - P/100, so u = 25% is P = 75 and the offered load is 1/(1-u)); `bound_ms` is the bound tau
on the running average queueing latency; series windows are tumbling windows of arrivals.
Partition cells: sliding windows of `range_s` seconds of dataset time, sliding by `slide_s`,
aligned to multiples of the slide; only complete windows count; imbalance is
`max_j L[j] - mean_j L[j]` in tuples after trimming (the paper's Eq. 1), summarised over
windows by linear-interpolation percentiles.  `data` says where the dataset came from; a
surrogate is never the paper's trace.

Optimality (operator cells, `skewbench.shedding.optimum`): the least drops any shedder could
achieve offline on the same arrivals and costs under the same bound, computed on the stream's first
`opt_window` tuples (the same prefix for every strategy; the exact optimum of the whole stream is
beyond reach).  `opt_goal` is the cell's CHECK goal (avg: every prefix average of the kept tuples'
queueing latency <= tau; max: every kept tuple's own latency <= tau; strategies without a goal
are measured against avg).  `drop_optimality = opt_dropped / window_dropped` compares the
strategy's drops on that same prefix: 1 when it drops no more than the optimum, below 1 when it
drops more; above 1 only when it broke the bound on the prefix (it dropped fewer than any shedder
that meets it).  Where the optimum is not proven (`opt_status` node_limit or time_limit) `opt_dropped` is its
lower bound and the ratio a lower bound; the status names the limit that stopped the solver before its
proof: `node_limit` (the MILP's deterministic branch-and-bound budget) or `time_limit` (its clock).
"""

from __future__ import annotations

from skewbench.results import Column, Metric

#: the grid's axes besides strategy and seed
COORDINATES = ("provisioning", "workers")
#: how a cell's MLflow run is named
RUN_NAME = "{strategy} P={provisioning} n={workers} seed={seed}"

_MS = "ms"
_OP = "kind == 'operator'"
_PART = "kind == 'partition' and windows > 0"

COLUMNS = (
    Column("tuples", "int64", "tuples in the dataset; in the series, the window's tuples", "both", bounds=(0, None)),
    Column("kind", "string", "'operator' (a shedder in front of one operator) or 'partition' (a windowed "
           "aggregation on several workers)", "both", param=True),
    Column("data", "string", "where the dataset came from (generator, trace, or the trace a surrogate imitates)",
           param=True),
    Column("provisioning", "int64", "operator cells: the operator's capacity as a percentage of the arrival rate "
           "(u = 1 - P/100); partition cells: 100 (unused)", "both", bounds=(1, None)),
    Column("workers", "int64", "aggregation workers V (1 for operator cells)", "both", bounds=(1, None)),
    Column("underprovisioning", "float64", "u = 1 - P/100 (operator cells; 0 for partition cells)", param=True),
    Column("bound_ms", "float64", "tau, the bound on the running average queueing latency (ms; operator cells)",
           bounds=(0, None), param=True),
    Column("range_s", "float64", "the window range in dataset seconds (partition cells; 0 otherwise)",
           bounds=(0, None), param=True),
    Column("slide_s", "float64", "the window slide in dataset seconds (partition cells; 0 otherwise)",
           bounds=(0, None), param=True),
    Column("error", "float64", "the relative error budget of ShedPart's sample sizes (partition cells)",
           bounds=(0, None), param=True),
    Column("confidence", "float64", "the confidence of that budget (partition cells)", bounds=(0, 1), param=True),
    Column("opt_goal", "string", "operator cells: the goal of the offline optimum, the cell's CHECK goal (avg: "
           "every prefix average of the kept tuples' queueing latency <= tau; max: every kept latency <= tau)",
           nullable=True, param=True, not_null_if=_OP),
    Column("opt_status", "string", "operator cells: the offline optimum's status: optimal, node_limit or time_limit (the "
           "solver stopped by its node budget or its clock before its proof: opt_dropped is its lower bound), "
           "too_large or error (no optimum)", nullable=True, param=True, not_null_if=_OP),
    Column("stats", "string", "JSON: the strategy's own diagnostics (LAS: matrix pairs, corrections, "
           "warm start; ShedPart: pre-check values)"),
    Column("window", "int64", "the window's index (0, 1, ...)", "series", bounds=(0, None)),
    Column("start", "float64", "the window's start: first arrival index (operator) or dataset second "
           "(partition)", "series"),
    Column("end", "float64", "one past the window's last arrival index (operator) or its end second (partition)",
           "series"),
)

METRICS = (
    # ---- operator summary (las.spec.md 3)
    Metric("dropped", "tuples dropped", "tuples", False, (0, None), dtype="int64", not_null_if=_OP),
    Metric("dropped_ratio", "dropped tuples over all tuples (DR)", "", False, (0, 1), headline=True, fmt="f3",
           label="dropped", not_null_if=_OP),
    Metric("bl_dropped", "tuples Base Line drops on the same stream, provisioning and seed", "tuples", None,
           (0, None), dtype="int64", not_null_if=_OP),
    Metric("shed_lambda", "lambda = (dropped - Base Line's dropped) / Base Line's dropped; null when Base Line "
           "drops nothing", "", None, (-1, None), not_null_if=_OP + " and bl_dropped > 0"),
    Metric("queueing_latency_mean", "mean queueing latency of the kept tuples (Q)", _MS, False, (0, None),
           headline=True, fmt="f2", label="Q mean", log_axis=True, not_null_if=_OP + " and dropped < tuples"),
    Metric("queueing_latency_p50", "median queueing latency of the kept tuples", _MS, False, (0, None),
           not_null_if=_OP + " and dropped < tuples"),
    Metric("queueing_latency_p99", "99th percentile of the kept tuples' queueing latency", _MS, False, (0, None),
           not_null_if=_OP + " and dropped < tuples"),
    Metric("queueing_latency_max", "largest queueing latency", _MS, False, (0, None),
           not_null_if=_OP + " and dropped < tuples"),
    Metric("completion_latency_mean", "mean completion latency (queueing + execution) of the kept tuples", _MS,
           False, (0, None), not_null_if=_OP + " and dropped < tuples"),
    Metric("completion_latency_p99", "99th percentile of completion latency", _MS, False, (0, None),
           not_null_if=_OP + " and dropped < tuples"),
    Metric("q_over_bound", "Q mean over tau", "", False, (0, None), headline=True, fmt="f2", label="Q/tau",
           not_null_if=_OP + " and dropped < tuples and bound_ms > 0 and bound_ms < 1e300"),
    Metric("over_bound_share", "share of kept tuples whose own queueing latency exceeds tau", "", False, (0, 1),
           not_null_if=_OP + " and dropped < tuples"),
    Metric("prefix_violation_share", "share of kept positions j whose prefix average Q(j) exceeds tau "
           "(the AVG(tau) constraint)", "", False, (0, 1), not_null_if=_OP + " and dropped < tuples"),
    Metric("prefix_max", "largest prefix average queueing latency max_j Q(j)", _MS, False, (0, None),
           not_null_if=_OP + " and dropped < tuples"),
    Metric("opt_window", "tuples of the stream's prefix on which the offline optimum is computed and the drops "
           "compared (the first min(tuples, 200))", "tuples", None, (0, None), dtype="int64", not_null_if=_OP),
    Metric("opt_dropped", "the least drops any shedder could achieve offline on that prefix under the same bound "
           "and goal (the proven optimum; its lower bound when opt_status is node_limit or time_limit)", "tuples", None, (0, None),
           dtype="int64", not_null_if=_OP + " and opt_status in ['optimal', 'node_limit', 'time_limit']"),
    Metric("opt_gap", "relative gap of the offline optimum: (best drops found - opt_dropped) / kept (0: proven)", "",
           False, (0, None), not_null_if=_OP + " and opt_status in ['optimal', 'node_limit', 'time_limit']"),
    Metric("window_dropped", "tuples the strategy dropped on that prefix", "tuples", False, (0, None),
           dtype="int64", not_null_if=_OP),
    Metric("drop_optimality", "opt_dropped / window_dropped: 1 when the strategy drops no more than the offline "
           "optimum on the prefix (also when both are 0), below 1 when it drops more; above 1 only when it broke the "
           "bound there; null when the optimum is unknown or the strategy dropped nothing where the optimum drops some",
           "", True, (0, None), headline=True, fmt="f3", label="drop opt",
           not_null_if=_OP + " and opt_status in ['optimal', 'node_limit', 'time_limit'] and (window_dropped > 0 or opt_dropped == 0)"),
    Metric("effective_load", "kept work over the arrival span: sum of kept durations / (last - first arrival)",
           "", None, (0, None), not_null_if=_OP + " and tuples > 1"),
    # ---- partition summary (shedpart.spec.md 3.2)
    Metric("windows", "complete windows", "windows", None, (0, None), dtype="int64",
           not_null_if="kind == 'partition'"),
    Metric("imbalance_p50", "median over windows of the imbalance max_j L'[j] - mean_j L'[j]", "tuples", False,
           (0, None), headline=True, fmt="g", label="imb p50", log_axis=True, not_null_if=_PART),
    Metric("imbalance_p75", "75th percentile over windows of the imbalance", "tuples", False, (0, None),
           log_axis=True, not_null_if=_PART),
    Metric("imbalance_p99", "99th percentile over windows of the imbalance", "tuples", False, (0, None),
           log_axis=True, not_null_if=_PART),
    Metric("imbalance_max", "largest imbalance of a window", "tuples", False, (0, None), headline=True, fmt="g",
           label="imb max", log_axis=True, not_null_if=_PART),
    Metric("load_max", "largest worker load of any window, after trimming", "tuples", False, (0, None),
           log_axis=True, not_null_if=_PART),
    Metric("load_max_p50", "median over windows of the largest worker load after trimming", "tuples", False,
           (0, None), log_axis=True, not_null_if=_PART),
    Metric("shed_fraction", "tuples left out of the aggregation over all window tuples", "", False, (0, 1),
           headline=True, fmt="f3", label="shed", not_null_if=_PART),
    Metric("skip_rate", "share of windows where the pre-check skipped Algorithm 1", "", None, (0, 1),
           not_null_if=_PART),
    Metric("groups_mean", "mean distinct groups per window", "groups", None, (0, None), not_null_if=_PART),
    Metric("groups_max", "most distinct groups in a window", "groups", None, (0, None), dtype="int64",
           not_null_if=_PART),
    Metric("error_mean", "mean over windows of the mean relative error of the groups' averages", "", False,
           (0, None), not_null_if=_PART),
    Metric("error_max", "largest relative error of a group's average in any window", "", False, (0, None),
           not_null_if=_PART),
    Metric("trimmed_pairs", "trimmed (group, window) pairs", "pairs", None, (0, None), dtype="int64",
           not_null_if=_PART),
    Metric("coverage", "share of trimmed (group, window) pairs within the error budget; null when none",
           "", True, (0, 1), headline=True, fmt="f3", not_null_if=_PART + " and trimmed_pairs > 0"),
    # ---- timings
    Metric("shedder_seconds", "seconds in the shedder: the LAS simulation, or ShedPart's pre-check and "
           "Algorithm 1 summed over windows", "s", False, (0, None), timing=True),
    Metric("opt_seconds", "seconds to compute the offline optimum (0 when another cell of the process computed it "
           "on the same prefix)", "s", False, (0, None), timing=True, not_null_if=_OP),
    Metric("wall_seconds", "wall-clock seconds of the cell", "s", False, (0, None), timing=True),
    # ---- series
    Metric("dropped_ratio", "dropped tuples of the window over its arrivals", "", False, (0, 1), windowed=True,
           table="series", not_null_if=_OP),
    Metric("queueing_latency_mean", "mean queueing latency of the window's kept tuples", _MS, False, (0, None),
           windowed=True, log_axis=True, table="series", not_null_if=_OP + " and dropped_ratio < 1"),
    Metric("completion_latency_mean", "mean completion latency of the window's kept tuples", _MS, False,
           (0, None), windowed=True, log_axis=True, table="series", not_null_if=_OP + " and dropped_ratio < 1"),
    Metric("over_bound_share", "share of the window's kept tuples waiting longer than tau", "", False, (0, 1),
           table="series", not_null_if=_OP + " and dropped_ratio < 1"),
    Metric("imbalance", "the window's imbalance after trimming", "tuples", False, (0, None), windowed=True,
           log_axis=True, table="series", not_null_if="kind == 'partition'"),
    Metric("imbalance_before", "the window's imbalance of the routed loads, before trimming", "tuples", None,
           (0, None), table="series", not_null_if="kind == 'partition'"),
    Metric("load_max", "the window's largest worker load after trimming", "tuples", False, (0, None),
           windowed=True, log_axis=True, table="series", not_null_if="kind == 'partition'"),
    Metric("shed_fraction", "the window's tuples left out of the aggregation", "", False, (0, 1), windowed=True,
           table="series", not_null_if="kind == 'partition'"),
    Metric("groups", "distinct groups in the window", "groups", None, (0, None), dtype="int64", table="series",
           not_null_if="kind == 'partition'"),
    Metric("precheck", "the pre-check's potential shed percentage P_w", "%", None, (0, 100), table="series",
           not_null_if="kind == 'partition'"),
    Metric("ran", "1 when Algorithm 1 ran in the window, 0 when the pre-check skipped it", "", None, (0, 1),
           dtype="int64", table="series", not_null_if="kind == 'partition'"),
    Metric("error_mean", "mean relative error of the window's group averages", "", False, (0, None),
           windowed=True, table="series", not_null_if="kind == 'partition'"),
    Metric("error_max", "largest relative error of a group average in the window", "", False, (0, None),
           table="series", not_null_if="kind == 'partition'"),
)

SUMMARY = (
    "cell_id", "dataset", "dataset_fingerprint", "data", "tuples", "strategy", "kind", "provisioning", "workers",
    "seed", "params", "underprovisioning", "bound_ms", "range_s", "slide_s", "error", "confidence",
    "dropped", "dropped_ratio", "bl_dropped", "shed_lambda",
    "queueing_latency_mean", "queueing_latency_p50", "queueing_latency_p99", "queueing_latency_max",
    "completion_latency_mean", "completion_latency_p99", "q_over_bound", "over_bound_share",
    "prefix_violation_share", "prefix_max", "opt_goal", "opt_status", "opt_window", "opt_dropped", "opt_gap",
    "window_dropped", "drop_optimality", "effective_load",
    "windows", "imbalance_p50", "imbalance_p75", "imbalance_p99", "imbalance_max", "load_max", "load_max_p50",
    "shed_fraction", "skip_rate", "groups_mean", "groups_max", "error_mean", "error_max", "trimmed_pairs",
    "coverage", "stats", "shedder_seconds", "opt_seconds", "wall_seconds",
)

SERIES = (
    "cell_id", "strategy", "kind", "provisioning", "workers", "seed", "window", "start", "end", "tuples",
    "dropped_ratio", "queueing_latency_mean", "completion_latency_mean", "over_bound_share",
    "imbalance", "imbalance_before", "load_max", "shed_fraction", "groups", "precheck", "ran", "error_mean",
    "error_max",
)
