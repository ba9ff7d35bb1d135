"""The grouping family: key grouping, shuffle, PKG, D-Choices, W-Choices, RR heavy hitters, OSG.

Strategies share one interface (:class:`skewbench.grouping.base.Strategy`) and are looked up by
name in :func:`skewbench.grouping.registry.get`.
"""
