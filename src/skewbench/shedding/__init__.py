"""Load shedding: which tuples to drop (LAS) or which partial results to approximate (ShedPart).

Two kinds of strategies share this family.  *Operator shedders* (las.spec.md) sit in front of
one FIFO operator and drop tuples so that the running average queueing latency stays under a
bound tau; *partition shedders* (shedpart.spec.md) watch a keyed, windowed aggregation on V
workers and down-sample heavy groups of the most loaded workers at each window's end, within a
relative error budget.

Layout: each strategy is a class in :mod:`skewbench.shedding.strategies` (one module per strategy
or small group) that carries its decision rule; the machinery it plugs into sits beside that
package: ``las`` (the operator simulator and its online Count-Min estimator), ``shedpart`` (the
windows and Algorithm 1), ``optimum`` (the offline drop optimum), ``engine`` (the replay's
cells), ``workloads`` (the family's dataset generators), ``schema``, ``report``, ``expectations``,
``params`` and ``cli``.
"""

_S = "skewbench.shedding.strategies"
STRATEGIES = {
    # operator shedders (las.spec.md)
    "las": f"{_S}.las:LAS",
    "bl": f"{_S}.baselines:BaseLine",
    "sm": f"{_S}.baselines:StrawMan",
    "fk": f"{_S}.baselines:FullKnowledge",
    "ns": f"{_S}.baselines:NoShedding",
    # partition shedders (shedpart.spec.md)
    "shedpart": f"{_S}.shedpart:ShedPart",
    "fld": f"{_S}.partition:FieldsGrouping",
    "shedpart-ee": f"{_S}.shedpart:ShedPartEE",
    "shedpart-pkg": f"{_S}.shedpart:ShedPartPKG",
    "pkg-only": f"{_S}.partition:PKGOnly",
    "shedpart-shuffle": f"{_S}.shedpart:ShedPartShuffle",
    "shuffle-only": f"{_S}.partition:ShuffleOnly",
}
#: what ``skewbench replay shedding`` runs when no strategies are named: the papers' strategies
DEFAULT_STRATEGIES = ("las", "bl", "sm", "fk", "shedpart", "fld")
