"""Stream partitioning: KG, SG, PKG, D-Choices, W-Choices, RR heavy hitters, fixed-d, OSG, FK.

The grouping family (dchoices.spec.md, osg.spec.md).  Its modules, by the family contract
(``docs/extending.md``):

``base``          the strategy interface (:class:`~skewbench.grouping.base.Strategy`), batches,
                  the seeded hash family
``dchoices``      KG, SG, PKG, D-Choices, W-Choices, RR, fixed-d
``osg``           OSG and Full Knowledge
``engine``        the replay engine: replay tasks (one read per task), the metrics
``schema``        the results tables and their METRICS
``expectations``  the Great Expectations rules of its results
``report``        its report figures
``cli``           ``skewbench replay grouping``
``params``        its section of the nightly Params

This module is the family's strategy table and is read at DAG parse time: it imports nothing.
"""

#: name -> "module:Class" (the only list of the family's strategies)
STRATEGIES = {
    "kg": "skewbench.grouping.dchoices:KG",
    "sg": "skewbench.grouping.dchoices:SG",
    "pkg": "skewbench.grouping.dchoices:PKG",
    "dc": "skewbench.grouping.dchoices:DC",
    "wc": "skewbench.grouping.dchoices:WC",
    "rr": "skewbench.grouping.dchoices:RR",
    "fixed-d": "skewbench.grouping.dchoices:FixedD",
    "osg": "skewbench.grouping.osg:OSG",
    "fk": "skewbench.grouping.osg:FK",
}

#: what a replay runs when no strategies are named
DEFAULT_STRATEGIES = ("kg", "sg", "pkg", "dc", "wc", "rr", "osg")
