"""The grouping family's strategies, one module per strategy or small group of related ones
(the list is in :mod:`skewbench.grouping`'s docstring).  Each class subclasses
:class:`skewbench.grouping.base.Strategy`; the family's table, :data:`skewbench.grouping.STRATEGIES`,
names it by module and class.  This package imports nothing: a strategy's module is loaded when
the table's row is."""
