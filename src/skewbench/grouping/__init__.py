"""Stream partitioning: the papers' PKG, D-Choices, W-Choices and OSG, and what engines and practitioners run.

The grouping family (dchoices.spec.md, osg.spec.md, practice.spec.md).  Its modules, by the family contract
(``docs/extending.md``):

``base``          the strategy interface (:class:`~skewbench.grouping.base.Strategy`), batches,
                  the seeded hash family
``strategies/``   the strategies, one module per strategy or small group of related ones:

                  ``routed``       the common part of strategies routing with one kernel call
                                   per batch and one local load vector per source
                  ``dchoices``     KG, SG, PKG, D-Choices, W-Choices, RR, fixed-d
                  ``osg``          OSG and Full Knowledge (their kernels and the kernels' state
                                   layout in ``osg_kernel``)
                  ``engines``      the engines' default partitioners: Kafka, Flink (key groups),
                                   Spark (RDD and SQL)
                  ``chwbl``        consistent hashing with bounded loads
                  ``twophase``     Flink SQL's local-global aggregation, hot-key salting with a
                                   merge step
                  ``dkg``          Distribution-aware Key Grouping
                  ``cardinality``  CM, AM, cAM: cardinality-aware partitioning

The family's machinery, beside them:

``optimum``       the offline best balance each strategy's constraint allows
``engine``        the replay engine: replay tasks (one read per task), the metrics
``schema``        the results tables and their METRICS
``expectations``  the Great Expectations rules of its results
``report``        its report figures
``cli``           ``skewbench replay grouping``
``params``        its section of the nightly Params

Pieces its kernels share with other families' (the source loop, hash table, SpaceSaving, PKG's
two choices) are in :mod:`skewbench.kernel`.

This module is the family's strategy table and is read at DAG parse time: it imports nothing.
"""

#: name -> "module:Class" (the only list of the family's strategies)
STRATEGIES = {
    "kg": "skewbench.grouping.strategies.dchoices:KG",
    "sg": "skewbench.grouping.strategies.dchoices:SG",
    "pkg": "skewbench.grouping.strategies.dchoices:PKG",
    "dc": "skewbench.grouping.strategies.dchoices:DC",
    "wc": "skewbench.grouping.strategies.dchoices:WC",
    "rr": "skewbench.grouping.strategies.dchoices:RR",
    "fixed-d": "skewbench.grouping.strategies.dchoices:FixedD",
    "osg": "skewbench.grouping.strategies.osg:OSG",
    "fk": "skewbench.grouping.strategies.osg:FK",
    "kafka": "skewbench.grouping.strategies.engines:Kafka",
    "flink": "skewbench.grouping.strategies.engines:Flink",
    "spark-hash": "skewbench.grouping.strategies.engines:SparkHash",
    "spark-sql": "skewbench.grouping.strategies.engines:SparkSQL",
    "chwbl": "skewbench.grouping.strategies.chwbl:CHWBL",
    "local-global": "skewbench.grouping.strategies.twophase:LocalGlobal",
    "salt": "skewbench.grouping.strategies.twophase:Salt",
    "dkg": "skewbench.grouping.strategies.dkg:DKG",
    "cm": "skewbench.grouping.strategies.cardinality:CM",
    "am": "skewbench.grouping.strategies.cardinality:AM",
    "cam": "skewbench.grouping.strategies.cardinality:CAM",
}

#: what a replay (and the nightly run) runs when no strategies are named: the papers' strategies
#: and the defaults of the engines people run (Flink's keyBy, Kafka's default partitioner)
DEFAULT_STRATEGIES = ("kg", "sg", "pkg", "dc", "wc", "rr", "osg", "flink", "kafka")
