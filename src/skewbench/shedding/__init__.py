"""Load shedding: which tuples to drop (LAS) or which partial results to approximate (ShedPart).

Two kinds of strategies share this family.  *Operator shedders* (las.spec.md) sit in front of
one FIFO operator and drop tuples so that the running average queueing latency stays under a
bound tau; *partition shedders* (shedpart.spec.md) watch a keyed, windowed aggregation on V
workers and down-sample heavy groups of the most loaded workers at each window's end, within a
relative error budget.
"""

_S = "skewbench.shedding.strategies"
STRATEGIES = {
    # operator shedders (las.spec.md)
    "las": f"{_S}:LAS",
    "bl": f"{_S}:BaseLine",
    "sm": f"{_S}:StrawMan",
    "fk": f"{_S}:FullKnowledge",
    "ns": f"{_S}:NoShedding",
    # partition shedders (shedpart.spec.md)
    "shedpart": f"{_S}:ShedPart",
    "fld": f"{_S}:FieldsGrouping",
    "shedpart-ee": f"{_S}:ShedPartEE",
    "shedpart-pkg": f"{_S}:ShedPartPKG",
    "pkg-only": f"{_S}:PKGOnly",
    "shedpart-shuffle": f"{_S}:ShedPartShuffle",
    "shuffle-only": f"{_S}:ShuffleOnly",
}
#: what ``skewbench replay shedding`` runs when no strategies are named: the papers' strategies
DEFAULT_STRATEGIES = ("las", "bl", "sm", "fk", "shedpart", "fld")
