"""``engine.block_windows`` (a block's window of each tuple and its window segments, without a
division or a search per tuple) against the per-tuple definition: tuple ``seq`` is in the first
window whose end (one past its last position) is above ``seq``."""

from __future__ import annotations

import numpy as np
from hypothesis import given, strategies as st

from skewbench.grouping.engine import Prepass, block_windows


@st.composite
def blocks(draw):
    m = draw(st.integers(1, 400))
    inner = draw(st.sets(st.integers(1, m - 1), max_size=30)) if m > 1 else set()
    ends = np.array(sorted(inner) + [m], dtype=np.int64)
    first = draw(st.integers(0, m - 1))
    length = draw(st.integers(1, m - first))
    return ends, first, length


@given(blocks())
def test_block_windows_match_the_per_tuple_definition(block):
    ends, first, length = block
    pre = Prepass(int(ends[-1]), 1, None, 1.0, False, ends, 0.0, 0.0)
    widx, cuts = block_windows(first, length, pre)
    seq = np.arange(first, first + length)
    np.testing.assert_array_equal(widx, np.searchsorted(ends, seq, side="right"))
    # segments: every tuple of a segment in one window, consecutive segments in consecutive windows
    assert cuts[0] == 0 and cuts[-1] == length and np.all(np.diff(cuts) > 0)
    for lo, hi in zip(cuts[:-1], cuts[1:]):
        assert len(set(widx[lo:hi])) == 1
    assert np.all(np.diff([widx[c] for c in cuts[:-1]]) == 1)
