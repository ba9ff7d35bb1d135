"""Task allocation: placing a job's tasks on nodes (TD, TL, the engines' placements, the optimum).

The allocation family (allocation.spec.md, practice-allocation.spec.md).  A dataset holds
job-graph instances (groups of tasks, all-to-all edges with rates, node capacities;
:mod:`~skewbench.allocation.store`); every strategy allocates every instance and is compared with
the exact optimum.  Its modules, by the
family contract (``docs/extending.md``):

``model``         the job model and the evaluation of an allocation (spec 1, 3)
``algorithms``    NAIVE, TL, TD, Storm's round robin, random fit, FFD; the relaxations (spec 2)
``monitor``       the monitor-and-reallocate loop (spec 2.8)
``opt``           OPT: the exact optimum as a MILP (HiGHS), cross-checked with CP-SAT
``partition``     a METIS graph-partitioning baseline
``storm``         Storm's placements: R-Storm (v1.0.x), RAS and its proximity and round-robin variants (2.x)
``containers``    Flink's slot sharing (pack, spread, fine-grained), kube-scheduler's scoring, Heron's packings
``instances``     the paper's instance generators, user job graphs (JSON), grouping replays
``store``         job graphs on the dataset contract; ``workloads`` the catalog's generators
``engine``, ``schema``, ``expectations``, ``report``, ``cli``, ``params``: as every family

This module is the family's strategy table and is read at DAG parse time: it imports nothing.
"""

_S = "skewbench.allocation.strategies"
STRATEGIES = {
    "td": f"{_S}:TD",
    "td-imc": f"{_S}:TDIMC",
    "tl": f"{_S}:TL",
    "tl-imct": f"{_S}:TLIMCt",
    "tl-rs": f"{_S}:TLRS",
    "naive": f"{_S}:Naive",
    "storm": f"{_S}:StormRR",
    "random": f"{_S}:RandomFit",
    "ffd": f"{_S}:FFD",
    "opt": f"{_S}:OPT",
    "metis": f"{_S}:Metis",
    "rstorm": "skewbench.allocation.storm:RStorm",
    "ras": "skewbench.allocation.storm:RAS",
    "ras-prox": "skewbench.allocation.storm:RASProx",
    "ras-rr": "skewbench.allocation.storm:RASRR",
    "flink-pack": "skewbench.allocation.containers:FlinkPack",
    "flink-spread": "skewbench.allocation.containers:FlinkSpread",
    "flink-fg": "skewbench.allocation.containers:FlinkFG",
    "k8s-least": "skewbench.allocation.containers:K8sLeast",
    "k8s-most": "skewbench.allocation.containers:K8sMost",
    "heron-rr": "skewbench.allocation.containers:HeronRR",
    "heron-ffd": "skewbench.allocation.containers:HeronFFD",
}
#: what ``skewbench replay allocation`` (and the nightly run) runs when no strategies are named: the
#: paper's heuristics, the optimum, and the placements engines ship (Storm's RAS, Flink's default)
DEFAULT_STRATEGIES = ("td", "tl", "storm", "opt", "metis", "ras", "flink-pack")
#: dataset formats this family ingests (``skewbench datasets ingest FORMAT``): format -> "module:function"
INGEST = {"job-graph": "skewbench.allocation.workloads:ingest_job_graph"}
GENERATES = True  # skewbench datasets generate allocation (cli.generate)
#: the nightly run replays only the catalog entries that list this family (job graphs, not streams)
LISTED_ONLY = True
