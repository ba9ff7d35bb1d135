"""The allocation family's strategies, one module per strategy or small related group; the rows of
the family's table (``skewbench.allocation.STRATEGIES``) name their classes.

``base``        :class:`~.base.Strategy` (what every strategy is) and :class:`~.base.Heuristic`
                (split into skew subgroups, retry, map back: the shell of section 2's heuristics)
``td``          TD and TD-IMC (spec 2.3)
``tl``          TL, TL-IMCt and TL-RS (spec 2.2)
``naive``       NAIVE (spec 2.1)
``stormrr``     Storm's default round robin (spec 2.4)
``baselines``   random fit and FFD (spec 2.6)
``optimum``     OPT, the exact optimum (the MILP itself is :mod:`skewbench.allocation.opt`)
``metis``       the METIS baseline (the partitioner is :mod:`skewbench.allocation.partition`)
``storm``       Storm's resource-aware placements: R-Storm, RAS, RAS-PROX, RAS-RR
``containers``  Flink's slot sharing, kube-scheduler's scoring, Heron's packings

The machinery they share sits beside this package: the job model (``model``), the heuristics'
steps (``steps``) and relaxations (``relax``).  Like the family's ``__init__``, this module
imports nothing.
"""
