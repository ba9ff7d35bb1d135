"""Plain-Python reference of SINGLES, FUSE, TL, TD and STORM-RR (allocation.spec.md 2.0-2.4), used only by
tests to check :mod:`skewbench.allocation.steps` and the heuristics of :mod:`skewbench.allocation.strategies`
on random uniform instances.

Everything here works task by task on lists, following the spec's pseudocode literally: the node "heap"
is a linear scan for the largest free capacity (lowest index on ties), SINGLES places one task at a
time, FUSE relabels every task on the donor, and TD keeps no segments (a group's unplaced tasks are
found by scanning it).  Nothing is shared with the module.  An instance is given as plain lists:
``n`` (tasks per group), ``P`` (group costs), ``edges`` [(i, j, C)], ``caps`` (node capacities).

Capacity rule (the same as the module's): ``need`` fits node k when
``need <= free_k + 1e-9 * max(1, init_k)``.  TL's intra-edge link order is an input (``orders[e]`` lists
link indices a * n_j + b), so that a test can hand both implementations the same shuffle.
"""

from __future__ import annotations

import math

TOL = 1e-9


class State:
    """One invocation's state: node of every task, free capacity of every node."""

    def __init__(self, n, P, caps):
        self.n = list(n)
        self.p = [P[g] / n[g] for g in range(len(n))]
        self.first = []
        s = 0
        for c in n:
            self.first.append(s)
            s += c
        self.m = s
        self.group = [g for g in range(len(n)) for _ in range(n[g])]
        self.cost = [self.p[self.group[t]] for t in range(s)]
        self.init = [float(c) for c in caps]
        self.free = [float(c) for c in caps]
        self.node = [-1] * s

    def ok(self, need, k):
        return need <= self.free[k] + TOL * max(1.0, self.init[k])

    def howmany(self, k, c):
        return max(0, int(math.floor((self.free[k] + TOL * max(1.0, self.init[k])) / c)))

    def top(self):
        best = 0
        for k in range(1, len(self.free)):
            if self.free[k] > self.free[best]:
                best = k
        return best

    def put(self, t, k):
        self.node[t] = k
        self.free[k] -= self.cost[t]


def singles(st, R):
    """Algorithm 3: worst fit, tasks by cost desc then index; False at the first task that does not fit."""
    todo = sorted({t for t in R if st.node[t] == -1}, key=lambda t: (-st.cost[t], t))
    for t in todo:
        k = st.top()
        if not st.ok(st.cost[t], k):
            return False
        st.put(t, k)
    return True


def fuse(st, x, y):
    """FUSE(x, y): receiver = larger initial capacity (x on a tie); move every task of the donor."""
    if st.init[y] > st.init[x]:
        x, y = y, x
    load = st.init[y] - st.free[y]
    if not st.ok(load, x):
        return False
    for t in range(st.m):
        if st.node[t] == y:
            st.node[t] = x
    st.free[x] = st.free[x] - load
    st.free[y] = st.init[y]
    return True


def _edge_sort(edges, keys):
    return sorted(range(len(edges)), key=lambda e: (-keys[e], e))


def _isolated(st, edges):
    used = set()
    for i, j, _ in edges:
        used.add(i)
        used.add(j)
    return [t for t in range(st.m) if st.group[t] not in used]


def tl(n, P, edges, caps, key, orders):
    """Algorithms 1-2 with the given per-edge link orders; returns (node list, success)."""
    st = State(n, P, caps)
    if key == "imc":
        keys = [c for _, _, c in edges]
    elif key == "imct":
        keys = [c / (n[i] * n[j]) for i, j, c in edges]
    else:
        keys = [c / (P[i] + P[j]) for i, j, c in edges]
    pairs = []
    for e in _edge_sort(edges, keys):
        i, j, _ = edges[e]
        for lk in orders[e]:
            pairs.append((st.first[i] + lk // n[j], st.first[j] + lk % n[j], e))
    R = []
    last_e = None
    last_k = None
    for t, u, e in pairs:
        if st.node[t] != -1 and st.node[u] != -1:
            if st.node[t] != st.node[u]:
                fuse(st, st.node[t], st.node[u])
            continue
        if st.node[t] != -1:
            k = st.node[t]
        elif st.node[u] != -1:
            k = st.node[u]
        elif e != last_e or last_k is None or not st.ok(st.cost[t] + st.cost[u], last_k):
            k = st.top()
        else:
            k = last_k
        last_e, last_k = e, k
        free_ones = [v for v in (t, u) if st.node[v] == -1]
        need = sum(st.cost[v] for v in free_ones)
        if st.ok(need, k):
            st.free[k] -= need
            for v in free_ones:
                st.node[v] = k
        else:
            R.extend(free_ones)
    R.extend(_isolated(st, edges))
    ok = singles(st, R)
    return st.node, ok and all(x >= 0 for x in st.node)


def td(n, P, edges, caps, key="rs", k0="shrink", second="all"):
    """Algorithms 4-5 with the spec's fixes (A5-A11), task by task; returns (node list, success)."""
    st = State(n, P, caps)
    keys = [c / (P[i] + P[j]) for i, j, c in edges] if key == "rs" else [c for _, _, c in edges]

    def unplaced(g):
        return [t for t in range(st.first[g], st.first[g] + n[g]) if st.node[t] == -1]

    def place(g, k, x):
        for t in unplaced(g)[:x]:
            st.put(t, k)

    for e in _edge_sort(edges, keys):
        i, j, c = edges[e]
        ui, uj = len(unplaced(i)), len(unplaced(j))
        if ui > 0 and uj > 0:
            while True:
                k = st.top()
                ui, uj = len(unplaced(i)), len(unplaced(j))
                if st.ok(ui * st.p[i] + uj * st.p[j], k):
                    place(i, k, ui)
                    place(j, k, uj)
                    break
                if ui <= uj:
                    s, l, us, ul = i, j, ui, uj
                else:
                    s, l, us, ul = j, i, uj, ui
                r = ul // us
                sigma = st.p[s] + r * st.p[l]
                q = st.howmany(k, sigma)
                if q >= 1:
                    xs, xl = min(q, us), min(q * r, ul)
                elif k0 == "shrink" and st.ok(st.p[s] + st.p[l], k):
                    xs = 1
                    xl = min(int(math.floor((st.free[k] + TOL * max(1.0, st.init[k]) - st.p[s]) / st.p[l])), ul)
                else:
                    break
                place(s, k, xs)
                place(l, k, xl)
                if len(unplaced(s)) == 0 or len(unplaced(l)) == 0:
                    break
        elif ui > 0 or uj > 0:
            F, Q = (i, j) if ui == 0 else (j, i)
            a = {}
            for t in range(st.first[F], st.first[F] + n[F]):
                a[st.node[t]] = a.get(st.node[t], 0) + 1
            w = c / (n[i] * n[j])
            uq = len(unplaced(Q))
            H = sorted(a, key=lambda k: (-(a[k] * min(uq, st.howmany(k, st.p[Q])) * w), -a[k], k))
            if second == "first":
                H = H[:1]
            for k in H:
                x = min(len(unplaced(Q)), st.howmany(k, st.p[Q]))
                if x > 0:
                    place(Q, k, x)
                if not unplaced(Q):
                    break
        else:
            hi = {st.node[t] for t in range(st.first[i], st.first[i] + n[i])}
            hj = {st.node[t] for t in range(st.first[j], st.first[j] + n[j])}
            if len(hi) == 1 and len(hj) == 1 and hi != hj:
                fuse(st, hj.pop(), hi.pop())
    ok = singles(st, [t for t in range(st.m) if st.node[t] == -1])
    return st.node, ok


def storm_rr(n, P, caps, kuse="load"):
    """Round robin in task order over Kuse nodes; returns (node list, kuse, overloaded)."""
    st = State(n, P, caps)
    K = len(caps)
    total = sum(P)
    if kuse == "load":
        k, acc = K, 0.0
        for h in range(K):
            acc += caps[h]
            if total <= acc + TOL * max(1.0, acc):
                k = h + 1
                break
    elif kuse == "all":
        k = K
    else:
        k = kuse
    while True:
        node = [t % k for t in range(st.m)]
        load = [0.0] * K
        for t in range(st.m):
            load[node[t]] += st.cost[t]
        over = any(load[h] > caps[h] + TOL * max(1.0, caps[h]) for h in range(K))
        if not over or k == K or kuse != "load":
            return node, k, over
        k += 1
