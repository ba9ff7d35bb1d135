"""The shared kernel pieces (skewbench.kernel) against their plain-Python references
(tests/reference/kernel_ref.py), each tested once here rather than in every strategy using it."""

from __future__ import annotations

import numpy as np
import pytest

from skewbench.kernel import pkg, sources, spacesaving, table
from tests.reference import kernel_ref as ref


def test_source_step_is_the_position_modulo_the_sources_from_any_start():
    rng = np.random.default_rng(4)
    seq = np.cumsum(rng.integers(1, 4, 400)).astype(np.int64)  # gaps: some steps divide
    seq[:150] = np.arange(150)  # a contiguous run: steps without division
    for s in (1, 2, 3, 7):
        want = ref.sources_of(seq.tolist(), s)
        for start in (0, 1, 149, 150, 399):
            t, j = sources.source_start()
            got = []
            for i in range(start, seq.size):
                t, j = sources.source_step(seq, i, t, j, np.int64(s))
                assert t == seq[i]
                got.append(int(j))
            assert got == want[start:]


def test_table_insert_find_remove_match_linear_probing_with_backward_shift():
    rng = np.random.default_rng(5)
    salt = np.uint64(0x1234567890ABCDEF)
    bits = 6
    cells, shift = table.new_table(2, 1 << (bits - 1))
    assert cells.shape == (2, 1 << bits) and shift == 64 - bits and np.all(cells == -1)
    mask = np.int64(cells.shape[1] - 1)
    keys = np.zeros((2, 32), dtype=np.int64)
    r = ref.Table(bits, int(salt))
    j = 1  # row 0 must stay untouched
    free = list(range(32))
    held = {}
    for _ in range(3000):
        k = int(rng.integers(-40, 40))
        slot = int(table.table_find(cells, j, keys, np.int64(k), salt, shift, mask))
        assert slot == r.find(k) == held.get(k, -1)
        if slot < 0 and free:
            slot = free.pop()
            keys[j, slot] = k
            table.table_insert(cells, j, np.int64(k), np.int64(slot), salt, shift, mask)
            r.insert(k, slot)
            held[k] = slot
        elif slot >= 0:
            table.table_remove(cells, j, keys, np.int64(k), salt, shift, mask)
            r.remove(k)
            del r.keys[slot], held[k]
            free.append(slot)
        assert cells[j].tolist() == r.cells
    assert np.all(cells[0] == -1)


def test_table_bits_keep_the_table_at_most_half_full():
    for entries in (1, 2, 3, 100, 128, 129):
        bits = table.table_bits(entries)
        assert (1 << bits) >= 2 * entries and bits >= 2 and (bits == 2 or (1 << (bits - 1)) < 2 * entries)


@pytest.mark.parametrize("capacity", [1, 5, 40])
def test_spacesaving_matches_the_reference_update_by_update(capacity):
    rng = np.random.default_rng(capacity)
    p = np.arange(1, 61, dtype=float) ** -1.2
    stream = rng.choice(60, size=2500, p=p / p.sum()) - 20  # negative keys too
    st, ent, bk, tbl, shift = spacesaving.new_sketches(3, capacity, spacesaving.STATE_COLS + 2)
    assert st.shape == (3, spacesaving.STATE_COLS + 2)
    refs = [ref.SpaceSaving(capacity) for _ in range(3)]
    for t, k in enumerate(stream.tolist()):
        j = t % 3
        slot = spacesaving.ss_offer(np.int64(j), np.int64(k), st, ent, bk, tbl, shift)
        refs[j].offer(k)
        assert ent[j, slot, spacesaving.KEY] == k
        if t % 97 == 0 or t == stream.size - 1:
            for q in range(3):
                assert spacesaving.sketch_entries(st, ent, q) == refs[q].entries()
    assert np.all(st[:, spacesaving.STATE_COLS:] == 0)  # the strategy's own columns


@pytest.mark.parametrize("authors", [False, True])
def test_head_test_and_head_sizes(authors):
    st, ent, bk, tbl, shift = spacesaving.new_sketches(2, 8, spacesaving.STATE_COLS)
    stream = [1, 1, 2, 1, 3, 4, 5, 6, 7, 8, 9, 9, 9, 1]
    m = np.zeros(2, dtype=np.int64)
    r = ref.SpaceSaving(8)
    for k in stream:
        spacesaving.ss_offer(np.int64(0), np.int64(k), st, ent, bk, tbl, shift)
        r.offer(k)
        m[0] += 1
    for theta in (0.05, 0.1, 0.2, 0.3, 1.5):
        want = sum(ref.is_head(c, e, len(stream), theta, authors) for c, e in r.entries().values())
        assert spacesaving.head_sizes(st, ent, m, theta, authors).tolist() == [want, 0]
        for c, e in r.entries().values():
            assert spacesaving.is_head(np.int64(c), np.int64(e), np.int64(len(stream)), theta, authors) == \
                ref.is_head(c, e, len(stream), theta, authors)


def test_two_choices_prefers_the_first_candidate_on_ties():
    load = np.array([[3, 1, 1, 5]], dtype=np.int64)
    for w1 in range(4):
        for w2 in range(4):
            assert pkg.two_choices(load, np.int64(0), np.int64(w1), np.int64(w2)) == \
                ref.two_choices(load[0].tolist(), w1, w2)


def test_modulo_candidates_and_routing_match_the_reference():
    rng = np.random.default_rng(9)
    keys = np.unique(rng.integers(-2**62, 2**62, 300))
    for workers, seed in ((1, 0), (4, 7), (13, 2**63 + 5)):
        cand = pkg.modulo_candidates(keys, np.int64(workers), np.uint64(seed & ((1 << 64) - 1)))
        want = ref.modulo_candidates(keys.tolist(), workers, seed & ((1 << 64) - 1))
        assert [tuple(c) for c in cand.tolist()] == want
        gid = rng.integers(0, keys.size, 2000).astype(np.int64)
        assert pkg.route_candidates(gid, cand, np.int64(workers)).tolist() == \
            ref.route_candidates(gid.tolist(), want, workers)
