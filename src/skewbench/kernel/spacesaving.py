"""The SpaceSaving sketch (Metwally, Agrawal, El Abbadi, 2005) as a stream summary, one per
source, and its head test (dchoices.spec.md 2.4, lines SS1-SS9).

Each source's sketch holds at most ``C`` entries (its capacity) in arrays, every update O(1):

* ``ent[j, slot, :]`` = key, count, err, bucket, previous and next entry of its bucket
  (columns :data:`KEY`, :data:`CNT`, :data:`ERR`, then private ones);
* ``bk[j, b, :]`` = count, first and last entry, previous and next bucket, and a last column
  holding the stack of free bucket ids: buckets of equal counts in ascending count order from
  the first (minimum-count) bucket; inside a bucket, entries in the order they reached that
  count;
* ``table[j]``: a :mod:`skewbench.kernel.table` from key to slot (at most half full);
* ``st[j, :]``: the source's state row, whose first :data:`STATE_COLS` columns are the sketch's
  (:data:`SIZE`, the entries in use, then the first bucket and the free-bucket stack's height);
  a strategy puts its own per-source columns after them.

The first entry of the first bucket is the minimum of (count, last update): the entry SS5
evicts ("any tie" in the pseudocode; deterministic here, so a plain-Python reference
reproduces it with ``min`` over ``(count, last update)``).  ``ESTIMATE(x) = count`` (an upper
bound, SS8); with ``C >= |K|`` the counts are exact.
"""

from __future__ import annotations

import numpy as np

from skewbench.jit import njit
from skewbench.kernel.table import new_table, table_find, table_insert, table_remove

__all__ = ["KEY", "CNT", "ERR", "SIZE", "STATE_COLS", "new_sketches", "ss_offer", "is_head", "sketch_entries",
           "head_sizes"]

#: entry columns
KEY, CNT, ERR, _EBKT, _EPREV, _ENEXT = 0, 1, 2, 3, 4, 5
# bucket columns
_BCNT, _BFIRST, _BLAST, _BPREV, _BNEXT, _BFREE = 0, 1, 2, 3, 4, 5
#: the sketch's columns of a source's state row: entries in use; first bucket (-1: none) and
#: free buckets on the stack (private)
SIZE, _MINB, _BTOP = 0, 1, 2
STATE_COLS = 3
# the table's hash salt
_SALT = np.uint64(0xD6E8FEB86659FD93)


def new_sketches(sources: int, capacity: int, state_cols: int
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.int64]:
    """Empty sketches of ``capacity`` entries for ``sources`` sources: ``(st, ent, bk, table,
    shift)``, ``st`` with ``state_cols >= STATE_COLS`` columns (those after the sketch's zero)."""
    st = np.zeros((sources, state_cols), dtype=np.int64)
    st[:, _MINB] = -1
    st[:, _BTOP] = capacity
    ent = np.zeros((sources, capacity, 6), dtype=np.int64)
    bk = np.zeros((sources, capacity, 6), dtype=np.int64)
    bk[:, :, _BFREE] = np.arange(capacity)[::-1]
    table, shift = new_table(sources, capacity)
    return st, ent, bk, table, shift


def sketch_entries(st: np.ndarray, ent: np.ndarray, source: int) -> dict[int, tuple[int, int]]:
    """Source ``source``'s summary: ``{key: (count, err)}``."""
    e = ent[source, :int(st[source, SIZE])]
    return {int(k): (int(c), int(r)) for k, c, r in zip(e[:, KEY], e[:, CNT], e[:, ERR])}


def head_sizes(st: np.ndarray, ent: np.ndarray, messages: np.ndarray, theta: float, authors: bool) -> np.ndarray:
    """``|H_j|`` per source: entries passing :func:`is_head` with ``m_j = messages[j]`` (0 for a
    source without messages)."""
    m = np.asarray(messages)[:, None]
    used = np.arange(ent.shape[1])[None, :] < st[:, SIZE][:, None]
    cnt = ent[:, :, CNT]
    if authors:
        with np.errstate(divide="ignore", invalid="ignore"):
            test = (cnt + ent[:, :, ERR]) / np.where(m > 0, m, 1) > theta
    else:
        test = cnt >= theta * m
    return np.sum(used & test & (m > 0), axis=1)


@njit(inline="always", cache=True)
def is_head(c, e, mj, theta, authors):
    """The head test of an entry of count ``c`` and error ``e`` after ``mj`` messages: ``c >=
    theta mj``, or with ``authors`` (the D-Choices authors' simulator) ``(c + e) / mj > theta``."""
    if authors:
        return (c + e) / mj > theta
    return c >= theta * mj


@njit(inline="always", cache=True)
def _bkt_new(j, c, after, st, bk):
    """A bucket of count ``c`` linked after bucket ``after`` (-1: first bucket)."""
    top = st[j, _BTOP] - 1
    st[j, _BTOP] = top
    b = bk[j, top, _BFREE]
    bk[j, b, _BCNT] = c
    bk[j, b, _BFIRST] = -1
    bk[j, b, _BLAST] = -1
    if after < 0:
        nxt = st[j, _MINB]
        st[j, _MINB] = b
    else:
        nxt = bk[j, after, _BNEXT]
        bk[j, after, _BNEXT] = b
    bk[j, b, _BPREV] = after
    bk[j, b, _BNEXT] = nxt
    if nxt >= 0:
        bk[j, nxt, _BPREV] = b
    return b


@njit(inline="always", cache=True)
def _bkt_append(j, b, x, ent, bk):
    last = bk[j, b, _BLAST]
    ent[j, x, _EPREV] = last
    ent[j, x, _ENEXT] = -1
    if last >= 0:
        ent[j, last, _ENEXT] = x
    else:
        bk[j, b, _BFIRST] = x
    bk[j, b, _BLAST] = x
    ent[j, x, _EBKT] = b


@njit(inline="always", cache=True)
def _ss_increment(j, x, st, ent, bk):
    """count[x] += 1 and move ``x`` to the end of the bucket of its new count."""
    b = ent[j, x, _EBKT]
    c = bk[j, b, _BCNT]
    nb = bk[j, b, _BNEXT]
    ent[j, x, CNT] = c + 1
    if nb >= 0 and bk[j, nb, _BCNT] == c + 1:
        target = nb
    elif bk[j, b, _BFIRST] == x and bk[j, b, _BLAST] == x:
        bk[j, b, _BCNT] = c + 1  # alone in its bucket: the bucket moves up
        return
    else:
        target = _bkt_new(j, c + 1, b, st, bk)
    p = ent[j, x, _EPREV]
    q = ent[j, x, _ENEXT]
    if p >= 0:
        ent[j, p, _ENEXT] = q
    else:
        bk[j, b, _BFIRST] = q
    if q >= 0:
        ent[j, q, _EPREV] = p
    else:
        bk[j, b, _BLAST] = p
    if bk[j, b, _BFIRST] < 0:  # b is empty: unlink and free it
        bp = bk[j, b, _BPREV]
        bn = bk[j, b, _BNEXT]
        if bp >= 0:
            bk[j, bp, _BNEXT] = bn
        else:
            st[j, _MINB] = bn
        if bn >= 0:
            bk[j, bn, _BPREV] = bp
        bk[j, st[j, _BTOP], _BFREE] = b
        st[j, _BTOP] += 1
    _bkt_append(j, target, x, ent, bk)


@njit(inline="always", cache=True)
def ss_offer(j, k, st, ent, bk, table, shift):
    """SS1-SS7: offer key ``k`` to source ``j``'s sketch; returns the key's slot."""
    cap = ent.shape[1]
    mask = table.shape[1] - 1
    keys = ent[:, :, KEY]
    slot = table_find(table, j, keys, k, _SALT, shift, mask)
    if slot >= 0:  # SS2
        _ss_increment(j, slot, st, ent, bk)
        return slot
    size = st[j, SIZE]
    if size < cap:  # SS3
        slot = size
        st[j, SIZE] = size + 1
        ent[j, slot, KEY] = k
        ent[j, slot, CNT] = 1
        ent[j, slot, ERR] = 0
        table_insert(table, j, k, slot, _SALT, shift, mask)
        h = st[j, _MINB]
        if h >= 0 and bk[j, h, _BCNT] == 1:
            target = h
        else:
            target = _bkt_new(j, 1, -1, st, bk)
        _bkt_append(j, target, slot, ent, bk)
        return slot
    # SS4-SS7: the oldest entry of the minimum count takes the new key with count c + 1, err c
    slot = bk[j, st[j, _MINB], _BFIRST]
    c = ent[j, slot, CNT]
    table_remove(table, j, keys, ent[j, slot, KEY], _SALT, shift, mask)
    ent[j, slot, KEY] = k
    ent[j, slot, ERR] = c
    table_insert(table, j, k, slot, _SALT, shift, mask)
    _ss_increment(j, slot, st, ent, bk)
    return slot
