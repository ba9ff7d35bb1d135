"""An open-addressing hash table from int64 keys to slots, one row per source.

``table[j]`` is source ``j``'s table: ``2**bits`` cells holding a slot (``>= 0``) of the caller's
own arrays or ``-1`` (empty), kept at most half full by the caller.  The table stores no keys:
``keys[j, slot]`` is the key held by ``slot`` (a 2-d view of whichever array holds them).  A key's
home cell is the top ``bits`` bits of ``mix64(key XOR salt)`` (``shift = 64 - bits``, ``mask =
2**bits - 1``); collisions probe linearly and deletion shifts entries back (no tombstones), so a
lookup stops at the first empty cell.  Every caller passes its own constant ``salt``: tables with
different salts are independent of each other and of the strategies' hash families.
"""

from __future__ import annotations

import numpy as np

from skewbench.hashing import mix64
from skewbench.jit import njit

__all__ = ["table_bits", "new_table", "table_home", "table_find", "table_insert", "table_remove"]


def table_bits(entries: int) -> int:
    """Bits of a table with room for ``entries`` at most half full (at least 2)."""
    return max(2, int(2 * entries - 1).bit_length())


def new_table(sources: int, entries: int) -> tuple[np.ndarray, np.int64]:
    """Empty tables for ``sources`` sources of up to ``entries`` slots each, and their ``shift``."""
    bits = table_bits(entries)
    return np.full((sources, 1 << bits), -1, dtype=np.int64), np.int64(64 - bits)


@njit(inline="always", cache=True)
def table_home(k, salt, shift):
    """The home cell of key ``k``."""
    return np.int64(mix64(np.uint64(k) ^ salt) >> np.uint64(shift))


@njit(inline="always", cache=True)
def table_find(table, j, keys, k, salt, shift, mask):
    """The slot holding key ``k`` at source ``j``, or -1."""
    i = table_home(k, salt, shift)
    while True:
        sl = table[j, i]
        if sl < 0 or keys[j, sl] == k:
            return sl
        i = (i + 1) & mask


@njit(inline="always", cache=True)
def table_insert(table, j, k, slot, salt, shift, mask):
    """Record that ``slot`` holds key ``k`` (absent) at source ``j``."""
    i = table_home(k, salt, shift)
    while table[j, i] >= 0:
        i = (i + 1) & mask
    table[j, i] = slot


@njit(inline="always", cache=True)
def table_remove(table, j, keys, k, salt, shift, mask):
    """Remove key ``k`` (present, still in ``keys``) at source ``j`` by backward-shift deletion."""
    i = table_home(k, salt, shift)
    while keys[j, table[j, i]] != k:
        i = (i + 1) & mask
    g = i
    while True:
        g = (g + 1) & mask
        sl = table[j, g]
        if sl < 0:
            break
        h = table_home(keys[j, sl], salt, shift)
        if i <= g:  # the entry at g stays when its home lies cyclically in (i, g]
            stays = i < h <= g
        else:
            stays = h > i or h <= g
        if not stays:
            table[j, i] = sl
            i = g
    table[j, i] = -1
