"""Compiled pieces that several strategies' kernels share, below every family.

A strategy's kernel (any family's) builds on these instead of keeping its own copy.  Each piece
is a kernel declared with :func:`skewbench.jit.njit`, most of them ``inline="always"`` so that a
kernel calling one per tuple compiles as if the piece were written out in its loop.  A piece is
tested once (``tests/unit/test_kernel_*.py``, against the plain-Python references in
``tests/reference``), not in every strategy that uses it.

``sources``      the per-tuple source loop: which source a tuple of a batch belongs to
``table``        an open-addressing hash table from int64 keys to slots (linear probing,
                 backward-shift deletion), one row per source
``spacesaving``  the SpaceSaving sketch as a stream summary (O(1) updates), one per source,
                 and its head test
``pkg``          PKG's two choices: the less loaded of two candidate workers
``least``        the least loaded of all workers (first index of the minimum)

This package imports nothing from the families (the import contracts in ``pyproject.toml``
place it below them); its modules import :mod:`skewbench.jit` and :mod:`skewbench.hashing` only.
"""
