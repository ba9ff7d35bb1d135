"""Toy placement: a minimal strategy family (a test fixture of skewbench's family contract).

Every tuple of a dataset goes to one of ``workers`` bins by a strategy's rule; the results are
each cell's largest bin share and, per window, the largest bin's share of the window.  It is one
package and one entry (``toyfam-0.1.dist-info/entry_points.txt``): nothing outside names it.
"""

STRATEGIES = {
    "modulo": "toyfam.strategies:Modulo",
    "hashed": "toyfam.strategies:Hashed",
}
DEFAULT_STRATEGIES = ("modulo", "hashed")
