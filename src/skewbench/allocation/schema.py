"""The allocation family's results tables (the results contract, `skewbench.results`), computed by
`skewbench.allocation.engine`.

A dataset holds job-graph *instances* (allocation.spec.md 1: groups of parallel tasks, all-to-all
edges with rates in MB/s, node capacities in percent of one core).  A cell is a strategy with its
parameters and a seed; it allocates every instance.  The **series** has one row per cell and
instance (`window` = the instance's index, `instance` its name); the **summary** aggregates a
cell over the dataset's instances.

Gains follow the spec's section 3: phi is the communication kept on-node, each directed task
link counted once; optimality is a ratio of sums over instances, Omega = sum phi_A / sum phi_OPT
(the paper's definition), with per-instance ratios rho = phi_A / phi_OPT (1 when phi_OPT = 0).
The reference optimum is OPT (the exact MILP, `skewbench.allocation.opt`) run with a time limit:
where it is not proven, rho is taken against OPT's upper bound, so it is a lower bound on the
true ratio and never exceeds 1; `opt_status` and `opt_gap` say which.  Times are wall-clock
seconds of one invocation (fresh state, building and prioritising included, spec metric 7).
"""

from __future__ import annotations

from skewbench.results import Column, Metric

#: the grid's axes besides strategy and seed: none (every cell runs every instance)
COORDINATES = ()
#: how a cell's MLflow run is named
RUN_NAME = "{strategy} seed={seed}"

_OPT = "compared > 0"

COLUMNS = (
    Column("instances", "int64", "instances in the dataset (summary); in the series, 1", "summary", bounds=(1, None)),
    Column("instance", "string", "the instance's name (series); in the summary, the first instance's name, "
           "followed by '...' when there are more", "both"),
    Column("window", "int64", "the instance's index in the dataset (0, 1, ...)", "series", bounds=(0, None)),
    Column("instance_meta", "string", "JSON: the generator's parameters of the instance (set, f, mu, ...)", "series"),
    Column("tasks", "int64", "tasks of the instance (summary: of all instances)", "both", bounds=(1, None)),
    Column("groups", "int64", "groups of the instance (summary: of all instances)", "both", bounds=(1, None)),
    Column("nodes", "int64", "nodes of the instance (summary: the largest instance's)", "both", bounds=(1, None)),
    Column("measured", "int64", "1 when the instance's task costs or link rates are measured (not uniform; the "
           "heuristics then run on its skew subgroups, spec 2.7.3)", "series", bounds=(0, 1)),
    Column("opt_status", "string", "the reference optimum's status: optimal, time_limit, infeasible, too_large, "
           "off", "series", nullable=True),
    Column("outcome", "string", "OK (every task placed within capacity), OK-OVERLOADED (every task placed, some "
           "node over capacity), FAIL-CAPACITY (tasks left unplaced), FAIL-SLOTS (a Flink job without enough slots: "
           "nothing placed), FAIL-SEARCH (Storm RAS's state budget spent); practice-allocation.spec.md 3", "series"),
    Column("stats", "string", "JSON: the strategy's own facts (Storm's Kuse, re-granularisation, METIS's moves, "
           "OPT's method, an engine placement's outcome and footprint)", "series"),
)

METRICS = (
    # ---- summary (over the dataset's instances)
    Metric("gain_total", "summed IMC gain phi over instances", "MB/s", True, (0, None), headline=True, fmt="f2",
           label="gain"),
    Metric("imc_total", "summed total IMC of the instances", "MB/s", None, (0, None)),
    Metric("local_fraction", "network traffic saved: summed gain over summed IMC (share kept on-node)", "", True,
           (0, 1), headline=True, fmt="f3", label="local"),
    Metric("opt_instances", "instances with a reference optimum (proven, or OPT's bound under its time limit)",
           "instances", None, (0, None), dtype="int64"),
    Metric("compared", "instances compared with the optimum: with a reference and an allocation of outcome OK (an "
           "allocation that overloads a node or leaves tasks unplaced is not comparable: the optimum places every "
           "task within capacity)", "instances", None, (0, None), dtype="int64"),
    Metric("opt_proven", "instances whose optimum OPT proved (gap 0)", "instances", None, (0, None), dtype="int64"),
    Metric("opt_gain_total", "summed reference optimum over the compared instances", "MB/s", None, (0, None),
           not_null_if=_OPT),
    Metric("optimality", "Omega = summed gain / summed optimum over the compared instances", "", True, (0, 1),
           headline=True, fmt="f3", label="Omega", not_null_if=_OPT),
    Metric("optimality_mean", "mean per-instance ratio rho = gain / optimum", "", True, (0, 1), not_null_if=_OPT),
    Metric("optimality_median", "median per-instance rho", "", True, (0, 1), not_null_if=_OPT),
    Metric("optimality_min", "smallest per-instance rho", "", True, (0, 1), not_null_if=_OPT),
    Metric("optimal_share", "share of instances with rho = 1 (within 1e-9)", "", True, (0, 1), not_null_if=_OPT),
    Metric("cost_ratio", "summed network load (IMC_tot - gain) over the optimum's, when every instance has a "
           "reference; null otherwise or when the optimum's load is 0", "", False, (1 - 1e-9, None),
           not_null_if="compared == instances and opt_gain_total < imc_total * (1 - 1e-9)"),
    Metric("opt_gap_max", "largest relative MIP gap of the reference optimum (0: all proven)", "", False, (0, None),
           not_null_if=_OPT),
    Metric("success_rate", "share of instances where every task was placed", "", True, (0, 1), headline=True,
           fmt="f3", label="success"),
    Metric("ok_rate", "share of instances of outcome OK: every task placed and no node over capacity", "", True,
           (0, 1)),
    Metric("overload_excess", "mean over instances of the load above capacity summed over nodes, over the "
           "instance's total load (V_excess; 0 for a strategy that respects capacity)", "", False, (0, None)),
    Metric("unplaced", "tasks left unplaced, summed over instances", "tasks", False, (0, None), dtype="int64"),
    Metric("violations", "nodes over capacity, summed over instances (0 for every capacity-respecting strategy)",
           "nodes", False, (0, None), dtype="int64", headline=True, fmt="f0", label="violations"),
    Metric("max_utilisation", "largest load / capacity of any node of any instance", "", None, (0, None)),
    Metric("nodes_used_mean", "mean nodes hosting at least one task", "nodes", None, (0, None)),
    Metric("seconds_total", "allocation time summed over instances (one invocation each)", "s", False, (0, None),
           timing=True),
    Metric("seconds_median", "median allocation time of one instance", "s", False, (0, None), timing=True,
           headline=True, fmt="f6", label="median s"),
    Metric("seconds_p95", "95th percentile of one instance's allocation time", "s", False, (0, None), timing=True),
    Metric("allocations_per_s", "successful allocations per second of allocation time (spec metric 7)", "1/s",
           True, (0, None), timing=True),
    Metric("wall_seconds", "wall-clock seconds of the cell, reference optimum excluded", "s", False, (0, None),
           timing=True),
    # ---- series (one row per instance)
    Metric("imc_total", "the instance's total IMC", "MB/s", None, (0, None), table="series"),
    Metric("gain", "IMC gain phi: communication kept on-node", "MB/s", True, (0, None), windowed=True,
           table="series"),
    Metric("local_fraction", "gain / IMC_tot", "", True, (0, 1), windowed=True, table="series"),
    Metric("opt_gain", "the reference optimum (OPT's value if proven, else its upper bound)", "MB/s", None,
           (0, None), table="series", not_null_if="opt_status in ['optimal', 'time_limit']"),
    Metric("opt_gap", "OPT's relative MIP gap (0 when proven)", "", None, (0, None), table="series",
           not_null_if="opt_status in ['optimal', 'time_limit']"),
    Metric("optimality", "rho = gain / reference optimum (1 when the optimum is 0); null when the allocation "
           "overloads a node or leaves tasks unplaced (outcome not OK)", "", True, (0, 1), windowed=True, table="series",
           not_null_if="opt_status in ['optimal', 'time_limit'] and outcome == 'OK'"),
    Metric("success", "1 when every task was placed", "", True, (0, 1), dtype="int64", table="series"),
    Metric("unplaced", "tasks left unplaced", "tasks", False, (0, None), dtype="int64", table="series"),
    Metric("violations", "nodes over capacity", "nodes", False, (0, None), dtype="int64", table="series"),
    Metric("max_utilisation", "largest load / capacity of a node", "", None, (0, None), table="series"),
    Metric("overload_excess", "load above capacity summed over nodes, over the total load (V_excess)", "", False,
           (0, None), table="series"),
    Metric("nodes_used", "nodes hosting at least one task", "nodes", None, (0, None), dtype="int64",
           table="series"),
    Metric("seconds", "allocation time of one invocation", "s", False, (0, None), table="series", timing=True),
)

SUMMARY = (
    "cell_id", "dataset", "dataset_fingerprint", "strategy", "seed", "params", "instances", "instance", "tasks",
    "groups", "nodes", "gain_total", "imc_total", "local_fraction", "opt_instances", "compared", "opt_proven",
    "opt_gain_total", "optimality", "optimality_mean", "optimality_median", "optimality_min", "optimal_share",
    "cost_ratio", "opt_gap_max", "success_rate", "ok_rate", "unplaced", "overload_excess", "violations",
    "max_utilisation", "nodes_used_mean",
    "seconds_total", "seconds_median", "seconds_p95", "allocations_per_s", "wall_seconds",
)

SERIES = (
    "cell_id", "strategy", "seed", "window", "instance", "instance_meta", "tasks", "groups", "nodes", "measured",
    "imc_total", "gain", "local_fraction", "opt_status", "opt_gain", "opt_gap", "optimality", "success",
    "unplaced", "violations", "max_utilisation", "overload_excess", "nodes_used", "outcome", "seconds", "stats",
)
