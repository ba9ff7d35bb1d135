"""Task allocation: placing a job's parallel tasks on nodes (TD, TL, baselines, the exact optimum).

The allocation family (allocation.spec.md).  A dataset holds job-graph instances (groups of
tasks, all-to-all edges with rates, node capacities; :mod:`~skewbench.allocation.store`); every
strategy allocates every instance and is compared with the exact optimum.  Its modules, by the
family contract (``docs/extending.md``):

``model``         the job model and the evaluation of an allocation (spec 1, 3)
``algorithms``    NAIVE, TL, TD, Storm's round robin, random fit, FFD; the relaxations (spec 2)
``monitor``       the monitor-and-reallocate loop (spec 2.8)
``opt``           OPT: the exact optimum as a MILP (HiGHS), cross-checked with CP-SAT
``partition``     a METIS graph-partitioning baseline
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
}
#: what ``skewbench replay allocation`` runs when no strategies are named
DEFAULT_STRATEGIES = ("td", "tl", "storm", "opt", "metis")
#: dataset formats this family ingests (``skewbench datasets ingest FORMAT``): format -> "module:function"
INGEST = {"job-graph": "skewbench.allocation.workloads:ingest_job_graph"}
GENERATES = True  # skewbench datasets generate allocation (cli.generate)
#: the nightly run replays only the catalog entries that list this family (job graphs, not streams)
LISTED_ONLY = True
