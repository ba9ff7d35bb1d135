"""The shared kernel pieces (skewbench.kernel) on generated inputs equal their plain-Python
references (tests/reference/kernel_ref.py): the source step from any start, the hash table under
any sequence of inserts and removals, SpaceSaving on any stream and capacity, the least loaded
worker and PKG's choice."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from skewbench.kernel import least, pkg, sources, spacesaving, table
from tests.reference import kernel_ref as ref


@settings(max_examples=60)
@given(st.lists(st.integers(0, 3), min_size=1, max_size=60), st.integers(0, 2**40), st.integers(1, 9),
       st.data())
def test_source_step(gaps, first, s, data):
    seq = np.cumsum([first] + gaps).astype(np.int64)
    start = data.draw(st.integers(0, seq.size - 1))
    t, j = sources.source_start()
    got = []
    for i in range(start, seq.size):
        t, j = sources.source_step(seq, i, t, j, np.int64(s))
        assert t == seq[i]
        got.append(int(j))
    assert got == ref.sources_of(seq.tolist(), s)[start:]


@settings(max_examples=40)
@given(st.lists(st.integers(-30, 30), min_size=1, max_size=200), st.integers(2, 6), st.integers(0, 2**64 - 1))
def test_table_toggles(keys, bits, salt):
    """Each key toggles: inserted when absent (while a slot is free), removed when present."""
    salt = np.uint64(salt)
    slots = 1 << (bits - 1)
    cells = np.full((1, 1 << bits), -1, dtype=np.int64)
    shift, mask = np.int64(64 - bits), np.int64((1 << bits) - 1)
    held = np.zeros((1, slots), dtype=np.int64)
    r = ref.Table(bits, int(salt))
    free = list(range(slots))
    for k in keys:
        slot = int(table.table_find(cells, 0, held, np.int64(k), salt, shift, mask))
        assert slot == r.find(k)
        if slot < 0 and free:
            slot = free.pop()
            held[0, slot] = k
            table.table_insert(cells, 0, np.int64(k), np.int64(slot), salt, shift, mask)
            r.insert(k, slot)
        elif slot >= 0:
            table.table_remove(cells, 0, held, np.int64(k), salt, shift, mask)
            r.remove(k)
            del r.keys[slot]
            free.append(slot)
        assert cells[0].tolist() == r.cells


@settings(max_examples=40)
@given(st.lists(st.integers(-5, 25), max_size=300), st.integers(1, 12))
def test_spacesaving(stream, capacity):
    sk = spacesaving.new_sketches(1, capacity, spacesaving.STATE_COLS)
    r = ref.SpaceSaving(capacity)
    for k in stream:
        spacesaving.ss_offer(np.int64(0), np.int64(k), *sk)
        r.offer(k)
    assert spacesaving.sketch_entries(sk[0], sk[1], 0) == r.entries()


@settings(max_examples=60)
@given(st.lists(st.integers(0, 6), min_size=1, max_size=12), st.data())
def test_least_and_two_choices(loads, data):
    arr = np.array(loads, dtype=np.int64)
    assert least.least(arr, np.int64(arr.size)) == ref.least(loads)
    assert least.least(arr.astype(np.float64), np.int64(arr.size)) == ref.least(loads)
    w1 = data.draw(st.integers(0, arr.size - 1))
    w2 = data.draw(st.integers(0, arr.size - 1))
    assert pkg.two_choices(arr[None, :], np.int64(0), np.int64(w1), np.int64(w2)) == ref.two_choices(loads, w1, w2)
