"""The shedding family's strategies, one module per strategy or small group of related ones.

``base``        :class:`Strategy`, and the two kinds a shedder is: :class:`OperatorStrategy` (in
                front of one operator: its ``plan`` supplies the simulator of
                :mod:`skewbench.shedding.las`) and :class:`PartitionStrategy` (a windowed
                aggregation on V workers: its ``route`` feeds the windows of
                :mod:`skewbench.shedding.shedpart`)
``las``         LAS, Load-Aware Shedding
``baselines``   the LAS paper's comparison shedders: Base Line, Straw-Man, Full Knowledge, and No
                shedding
``partition``   the routings without shedding: Storm fields grouping, PKG, shuffle
``shedpart``    ShedPart and its variants, on each of those routings

The family's table, :data:`skewbench.shedding.STRATEGIES`, names each class by module and class;
a shedder from outside is one such class, added by an entry point.  The classes are also
importable from here.
"""

from skewbench.shedding.strategies.base import OperatorStrategy, PartitionStrategy, Strategy
from skewbench.shedding.strategies.baselines import BaseLine, FullKnowledge, NoShedding, StrawMan
from skewbench.shedding.strategies.las import LAS
from skewbench.shedding.strategies.partition import FieldsGrouping, PKGOnly, ShuffleOnly
from skewbench.shedding.strategies.shedpart import ShedPart, ShedPartEE, ShedPartPKG, ShedPartShuffle

__all__ = ["Strategy", "OperatorStrategy", "PartitionStrategy", "LAS", "BaseLine", "StrawMan", "FullKnowledge",
           "NoShedding", "FieldsGrouping", "PKGOnly", "ShuffleOnly", "ShedPart", "ShedPartEE", "ShedPartPKG",
           "ShedPartShuffle"]
