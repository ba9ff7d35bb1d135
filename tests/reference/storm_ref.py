"""Plain-Python reference of Storm's placement strategies (practice-allocation.spec.md 2.1-2.3): RSTORM,
RAS with the connection-count and the proximity executor orders, and RAS-RR.  Used only by tests to
check :mod:`skewbench.allocation.strategies.storm`; nothing is shared with it.

Each function restates the spec's pseudocode line by line.  An instance is plain lists: ``n`` (tasks
per group), ``cost`` (the CPU demand p(t) of every task, group after group), ``edges`` [(i, j)] and
``caps`` (the nodes' initial capacities).  A task is the pair (g, i); node state is a dict per node.
Allocations come back as a list over global task indices (group after group), -1 = unplaced.

Conventions: p fits node k when ``p <= free_k + 1e-9 * max(1, init_k)``; ids ascending wherever Storm
iterates a hash map; one rack, no memory.  Choices the module documents and this file restates:
RSTORM's unreached groups (a cycle without a source) go last in ascending task order; RAS-PROX's
topological sort appends the groups it cannot order in ascending index; RAS-RR's pre-check is 10,000.
"""

from __future__ import annotations

import math
from collections import deque

TOL = 1e-9


class Graph:
    """Groups, their tasks and the neighbour relations of one instance."""

    def __init__(self, n, cost, edges):
        self.n = list(n)
        self.G = len(self.n)
        self.kids = {g: [] for g in range(self.G)}
        self.pars = {g: [] for g in range(self.G)}
        for i, j in edges:
            if j not in self.kids[i]:
                self.kids[i].append(j)
            if i not in self.pars[j]:
                self.pars[j].append(i)
        for g in range(self.G):
            self.kids[g].sort()
            self.pars[g].sort()
        self.index = {}
        t = 0
        for g in range(self.G):
            for i in range(self.n[g]):
                self.index[(g, i)] = t
                t += 1
        self.m = t
        self.p = {task: float(cost[t]) for task, t in self.index.items()}


class Nodes:
    def __init__(self, caps):
        self.state = [{"init": float(c), "free": float(c), "cnt": 0} for c in caps]

    def fits(self, p, k):
        s = self.state[k]
        return p <= s["free"] + TOL * max(1.0, s["init"])

    def place(self, p, k):
        self.state[k]["free"] -= p
        self.state[k]["cnt"] += 1

    def unplace(self, p, k):
        self.state[k]["free"] += p
        self.state[k]["cnt"] -= 1


def _result(gr, where):
    out = [-1] * gr.m
    for task, k in where.items():
        out[gr.index[task]] = k
    return out


# ---------------------------------------------------------------------------------------------- RSTORM (2.1)
def rstorm_tasks(n, edges):
    """Lines 1-11: BFS component order from each source, one task per component per round."""
    gr = Graph(n, [1.0] * sum(n), edges)
    order, seen = [], set()
    for s in range(gr.G):
        if gr.pars[s]:
            continue                   # not a source
        if s in seen:
            continue
        seen.add(s)
        q = deque([s])
        while q:
            c = q.popleft()
            order.append(c)
            for u in gr.kids[c] + gr.pars[c]:
                if u not in seen:
                    seen.add(u)
                    q.append(u)
    S = max(gr.n)
    X = []
    for i in range(S):
        for c in order:
            if i < gr.n[c]:
                X.append((c, i))
    for g in range(gr.G):             # groups the walk never reached: after the ranked ones
        if g not in seen:
            X.extend((g, i) for i in range(gr.n[g]))
    return X


def rstorm(n, cost, edges, caps, ties="later"):
    """Lines 12-22: distance best fit.  Returns (node list, outcome)."""
    gr = Graph(n, cost, edges)
    nodes = Nodes(caps)
    where = {}
    ref = None
    failed = False
    for t in rstorm_tasks(n, edges):
        p = gr.p[t]
        cand = [k for k in range(len(caps)) if nodes.fits(p, k)]
        if not cand:
            failed = True
            continue
        dist = {}
        for k in cand:
            mu = nodes.state[k]["free"]
            cpu = (p - mu) / (mu + 1)
            mem = 0.0                    # memory off: (0 - 0) / (0 + 1)
            if ref is None:
                net = 0.0
            elif k == ref:
                net = 0.0
            else:
                net = 0.5                # same rack, another node
            dist[k] = math.sqrt(cpu * cpu + mem * mem + net * net)
        best = None
        for k in cand:
            if best is None:
                best = k
            elif ties == "later" and dist[k] <= dist[best]:
                best = k
            elif ties == "earlier" and dist[k] < dist[best]:
                best = k
        where[t] = best
        nodes.place(p, best)
        ref = best
    return _result(gr, where), ("FAIL-CAPACITY" if failed else "OK")


# ---------------------------------------------------------------------------------------------- executor orders (2.2)
def conn_tasks(n, edges):
    """EXEC_ORDER by connection count."""
    gr = Graph(n, [1.0] * sum(n), edges)
    left = {g: deque((g, i) for i in range(gr.n[g])) for g in range(gr.G)}
    near = {g: sorted(set(gr.pars[g]) | set(gr.kids[g])) for g in range(gr.G)}
    conn = {c: sum(gr.n[u] * gr.n[c] for u in near[c]) for c in range(gr.G)}
    comps = sorted(range(gr.G), key=lambda c: (-conn[c], c))
    X = []
    for c in comps:
        N = sorted(near[c], key=lambda u: (gr.n[u] * gr.n[c], u))
        while True:
            progressed = False
            if left[c]:
                X.append(left[c].popleft())
                progressed = True
            for u in N:
                if left[u]:
                    X.append(left[u].popleft())
                    progressed = True
            if not progressed:
                break
    return X


def prox_tasks(n, edges):
    """EXEC_ORDER_PROX: Kahn (lowest index), then TAKE per group, recursively."""
    gr = Graph(n, [1.0] * sum(n), edges)
    indeg = {g: len([i for i, j in edges if j == g]) for g in range(gr.G)}
    visited = set()
    topo = []
    while True:
        ready = [g for g in range(gr.G) if g not in visited and indeg[g] == 0]
        if not ready:
            break
        g = ready[0]
        visited.add(g)
        topo.append(g)
        for ch in gr.kids[g]:
            indeg[ch] -= 1
    topo += [g for g in range(gr.G) if g not in visited]
    left = {g: deque((g, i) for i in range(gr.n[g])) for g in range(gr.G)}

    def take(c):
        if not left[c]:
            return []
        u = len(left[c])
        out = [left[c].popleft()]
        for ch in gr.kids[c]:
            if not left[ch]:
                continue
            reps = max(1, len(left[ch]) // u)
            for _ in range(reps):
                out = out + take(ch)
        return out

    X = []
    for c in topo:
        for _ in range(len(left[c])):
            X += take(c)
    return X


# ---------------------------------------------------------------------------------------------- RAS (2.2)
def ras(n, cost, edges, caps, order="conn", resort="literal", slots_per_node=4, max_states=10000):
    """Bounded-backtracking placement.  Returns (node list, outcome, states searched)."""
    gr = Graph(n, cost, edges)
    X = conn_tasks(n, edges) if order == "conn" else prox_tasks(n, edges)
    m = len(X)
    K = len(caps)
    nodes = Nodes(caps)
    where = {}
    if m == 0:
        return _result(gr, where), "OK", 0
    if m >= max_states:
        return _result(gr, where), "FAIL-SEARCH", 0

    def node_order():
        s = nodes.state
        return sorted(range(K), key=lambda k: (-s[k]["cnt"], -s[k]["free"], k))

    def resort_now(i):
        if resort == "fresh":
            return True
        return i == 0 or X[i][0] == X[i - 1][0]

    i = 0
    states = 0
    seq = None
    pos = -1
    tried = [-1] * m
    host = [None] * m
    while True:
        if states > max_states:
            return _result(gr, where), "FAIL-SEARCH", states
        t = X[i]
        if seq is None or resort_now(i):
            seq = node_order()
            pos = -1
        advanced = False
        for k in seq:
            if not nodes.fits(gr.p[t], k):
                continue
            for s in range(slots_per_node):
                pos = pos + 1
                if pos <= tried[i]:
                    continue
                tried[i] = tried[i] + 1
                states = states + 1
                nodes.place(gr.p[t], k)
                where[t] = k
                host[i] = k
                if i == m - 1:
                    return _result(gr, where), "OK", states
                i = i + 1
                advanced = True
                break
            if advanced:
                break
        if advanced:
            continue
        seq = None
        if i == 0:
            return _result(gr, where), "FAIL-CAPACITY", states
        tried[i] = -1
        i = i - 1
        prev = X[i]
        nodes.unplace(gr.p[prev], host[i])
        del where[prev]


# ---------------------------------------------------------------------------------------------- RAS-RR (2.3)
def ras_rr(n, cost, edges, caps):
    """Round robin over one node order.  Returns (node list, outcome, 1-based failed executor or 0)."""
    gr = Graph(n, cost, edges)
    X = conn_tasks(n, edges)
    K = len(caps)
    nodes = Nodes(caps)
    where = {}
    if len(X) >= 10000:
        return _result(gr, where), "FAIL-SEARCH", 0
    N = sorted(range(K), key=lambda k: (-nodes.state[k]["free"], k))
    cur = 0
    for i, t in enumerate(X):
        if i == 0 or t[0] == X[i - 1][0] or cur == K:
            cur = 0
        done = False
        while cur < K:
            k = N[cur]
            cur += 1
            if nodes.fits(gr.p[t], k):
                nodes.place(gr.p[t], k)
                where[t] = k
                done = True
                break
        if not done:
            return _result(gr, where), "FAIL-CAPACITY", i + 1
    return _result(gr, where), "OK", 0
