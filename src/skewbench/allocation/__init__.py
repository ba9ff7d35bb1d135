"""Task allocation: placing a job's tasks on nodes (TD, TL, the engines' placements, the optimum).

The allocation family (allocation.spec.md, practice-allocation.spec.md).  A dataset holds
job-graph instances (groups of tasks, all-to-all edges with rates, node capacities;
:mod:`~skewbench.allocation.store`); every strategy allocates every instance and is compared with
the exact optimum.  Its modules, by the
family contract (``docs/extending.md``):

``strategies/``   the strategies, one module per strategy or small related group: TD, TL, NAIVE,
                  Storm's round robin, random fit and FFD (spec 2), OPT, METIS, Storm's resource-aware
                  placements, Flink's, kube-scheduler's and Heron's (each class with its settings)
``model``         the job model and the evaluation of an allocation (spec 1, 3)
``steps``         the heuristics' shared steps: the node heap, SINGLES, FUSE, link orders (spec 2.0)
``relax``         the relaxations: re-granularisation, heterogeneous capacities, skew subgroups (spec 2.7)
``monitor``       the monitor-and-reallocate loop (spec 2.8)
``opt``           the exact optimum as a MILP (HiGHS), cross-checked with CP-SAT
``partition``     the METIS graph partitioning and its capacity repair
``instances``     the paper's instance generators, user job graphs (JSON), grouping replays
``store``         job graphs on the dataset contract; ``workloads`` the catalog's generators
``engine``, ``schema``, ``expectations``, ``report``, ``cli``, ``params``: as every family

This module is the family's strategy table and is read at DAG parse time: it imports nothing.
"""

_S = "skewbench.allocation.strategies"
STRATEGIES = {
    "td": f"{_S}.td:TD",
    "td-imc": f"{_S}.td:TDIMC",
    "tl": f"{_S}.tl:TL",
    "tl-imct": f"{_S}.tl:TLIMCt",
    "tl-rs": f"{_S}.tl:TLRS",
    "naive": f"{_S}.naive:Naive",
    "storm": f"{_S}.stormrr:StormRR",
    "random": f"{_S}.baselines:RandomFit",
    "ffd": f"{_S}.baselines:FFD",
    "opt": f"{_S}.optimum:OPT",
    "metis": f"{_S}.metis:Metis",
    "rstorm": f"{_S}.storm:RStorm",
    "ras": f"{_S}.storm:RAS",
    "ras-prox": f"{_S}.storm:RASProx",
    "ras-rr": f"{_S}.storm:RASRR",
    "flink-pack": f"{_S}.containers:FlinkPack",
    "flink-spread": f"{_S}.containers:FlinkSpread",
    "flink-fg": f"{_S}.containers:FlinkFG",
    "k8s-least": f"{_S}.containers:K8sLeast",
    "k8s-most": f"{_S}.containers:K8sMost",
    "heron-rr": f"{_S}.containers:HeronRR",
    "heron-ffd": f"{_S}.containers:HeronFFD",
}
#: what ``skewbench replay allocation`` (and the nightly run) runs when no strategies are named: the
#: paper's heuristics, the optimum, and the placements engines ship (Storm's RAS, Flink's default)
DEFAULT_STRATEGIES = ("td", "tl", "storm", "opt", "metis", "ras", "flink-pack")
#: dataset formats this family ingests (``skewbench datasets ingest FORMAT``): format -> "module:function"
INGEST = {"job-graph": "skewbench.allocation.workloads:ingest_job_graph"}
GENERATES = True  # skewbench datasets generate allocation (cli.generate)
#: the nightly run replays only the catalog entries that list this family (job graphs, not streams)
LISTED_ONLY = True
