"""Plain-Python references of the shared kernel pieces (``skewbench.kernel``), used only by tests.

Written from the pieces' definitions with ints, lists and dicts; nothing here imports
``skewbench``.  :func:`mix64` is splitmix64's output function (tests/unit/test_hashing.py pins it
to known answers).
"""

from __future__ import annotations

MASK = (1 << 64) - 1


def mix64(x):
    """splitmix64's output function on the state x, every step modulo 2^64."""
    z = (x + 0x9E3779B97F4A7C15) & MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)


def sources_of(seq, sources):
    """The source of every tuple: its stream position modulo the number of sources."""
    return [t % sources for t in seq]


class Table:
    """Linear probing over ``2**bits`` cells with backward-shift deletion, from the textbook
    rule: a lookup walks from the key's home cell to the first empty cell; removing a key
    empties its cell, then every following entry up to the next empty cell is re-inserted."""

    def __init__(self, bits, salt):
        self.bits = bits
        self.salt = salt
        self.cells = [-1] * (1 << bits)
        self.keys = {}  # slot -> key

    def home(self, k):
        return mix64((k & MASK) ^ self.salt) >> (64 - self.bits)

    def find(self, k):
        i = self.home(k)
        while self.cells[i] >= 0:
            if self.keys[self.cells[i]] == k:
                return self.cells[i]
            i = (i + 1) % len(self.cells)
        return -1

    def insert(self, k, slot):
        self.keys[slot] = k
        i = self.home(k)
        while self.cells[i] >= 0:
            i = (i + 1) % len(self.cells)
        self.cells[i] = slot

    def remove(self, k):
        size = len(self.cells)
        i = self.home(k)
        while self.keys[self.cells[i]] != k:
            i = (i + 1) % size
        self.cells[i] = -1
        run = []
        g = (i + 1) % size
        while self.cells[g] >= 0:
            run.append(self.cells[g])
            self.cells[g] = -1
            g = (g + 1) % size
        for slot in run:  # re-inserting the run in order yields the backward shift's layout
            j = self.home(self.keys[slot])
            while self.cells[j] >= 0:
                j = (j + 1) % size
            self.cells[j] = slot


class SpaceSaving:
    """SS1-SS7 with dicts: a monitored key's count grows by one; a new key takes a free counter
    (count 1, err 0) or replaces the entry of minimum (count, last update) with count c + 1 and
    err c."""

    def __init__(self, capacity):
        self.capacity = capacity
        self.count, self.err, self.last = {}, {}, {}
        self.now = 0

    def offer(self, x):
        self.now += 1
        if x in self.count:
            self.count[x] += 1
        elif len(self.count) < self.capacity:
            self.count[x], self.err[x] = 1, 0
        else:
            y = min(self.count, key=lambda e: (self.count[e], self.last[e]))
            c = self.count.pop(y)
            del self.err[y], self.last[y]
            self.count[x], self.err[x] = c + 1, c
        self.last[x] = self.now

    def entries(self):
        return {k: (self.count[k], self.err[k]) for k in self.count}


def is_head(c, e, m, theta, authors):
    """count >= theta m; in the D-Choices authors' mode (count + err) / m > theta."""
    return (c + e) / m > theta if authors else c >= theta * m


def two_choices(loads, w1, w2):
    """The first candidate unless the second has strictly less load."""
    return w2 if loads[w2] < loads[w1] else w1


def modulo_candidates(keys, workers, hash_seed):
    """(mix64(k XOR s1) mod n, mix64(k XOR s2) mod n), s1 = mix64(2 seed), s2 = mix64(2 seed + 1)."""
    s1 = mix64((2 * hash_seed) & MASK)
    s2 = mix64((2 * hash_seed + 1) & MASK)
    return [(mix64((k & MASK) ^ s1) % workers, mix64((k & MASK) ^ s2) % workers) for k in keys]


def route_candidates(gid, cand, workers):
    """Each tuple to two_choices of its key's candidates on the counts routed so far."""
    loads = [0] * workers
    out = []
    for g in gid:
        w = two_choices(loads, cand[g][0], cand[g][1])
        loads[w] += 1
        out.append(w)
    return out


def least(values):
    """The first index of the smallest value."""
    return values.index(min(values))

