"""Plain-Python reference of FLINK, K8S and HERON (practice-allocation.spec.md 2.4-2.6), used only by tests to
check :mod:`skewbench.allocation.strategies.containers` on random instances.

Everything here follows the spec's pseudocode literally, one task at a time, on lists and dicts; nothing is
shared with the module.  An instance is given as plain lists: ``n`` (tasks per group), ``edges`` [(i, j, ...)],
``cost`` (the cost of every task, group after group, length m), ``caps`` (node capacities).

FLINK builds its shared slots with the literal LocalInputPreferred builder (:func:`essg_builder`: producer
candidates, then the earliest shared slot without this vertex, then a new one) instead of the closed form, and
hands slots out one at a time (SPREAD compares utilisations as exact fractions).  K8S computes scores with
Python integers; its uniforms ``u`` (one per queue position) and, for the random order, the queue itself are
inputs, so a test can hand both implementations the same draws.  HERON-FFD scans nodes by index for the first
fit.  Capacity rule (spec 0): ``need`` fits node k when ``need <= free_k + 1e-9 * max(1, caps[k])``.
"""

from __future__ import annotations

import math
from fractions import Fraction

TOL = 1e-9


def task_list(n):
    """(g, i) of every task, group after group (the global task order)."""
    return [(g, i) for g in range(len(n)) for i in range(n[g])]


def parents_of(G, edges):
    return {g: sorted({e[0] for e in edges if e[1] == g}) for g in range(G)}


def topo_min_index(G, edges):
    """Kahn's algorithm, always taking the lowest-index group whose parents are all listed."""
    par = parents_of(G, edges)
    done, out = set(), []
    while len(out) < G:
        g = min(h for h in range(G) if h not in done and all(p in done for p in par[h]))
        done.add(g)
        out.append(g)
    return out


def essg_builder(n, edges, topo):
    """The LocalInputPreferred builder (spec 2.4) over the job vertices in the topological order ``topo``:
    returns {(g, i): shared slot index, in order of creation}."""
    par = parents_of(len(n), edges)
    holds = []  # holds[e]: the job vertices that shared slot e holds
    where = {}
    candidates = {}  # (consumer, producer) -> the producer's slots not yet consumed, shared by all subtasks
    for g in topo:
        for i in range(n[g]):
            chosen = None
            for p in par[g]:  # (1) a producer's slot without a subtask of g
                if (g, p) not in candidates:
                    lst = []
                    for a in range(n[p]):
                        if where[(p, a)] not in lst:
                            lst.append(where[(p, a)])
                    candidates[(g, p)] = lst
                lst = candidates[(g, p)]
                while lst and chosen is None:
                    e = lst.pop(0)
                    if g not in holds[e]:
                        chosen = e
                if chosen is not None:
                    break
            if chosen is None:  # (2) the earliest slot without g
                for e in range(len(holds)):
                    if g not in holds[e]:
                        chosen = e
                        break
            if chosen is None:  # (3) a new slot
                holds.append(set())
                chosen = len(holds) - 1
            holds[chosen].add(g)
            where[(g, i)] = chosen
    return where


def outcome(n, cost, caps, node, slots_failed=False):
    if slots_failed:
        return "FAIL-SLOTS"
    if any(k == -1 for k in node):
        return "FAIL-CAPACITY"
    load = [0.0] * len(caps)
    for t, k in enumerate(node):
        load[k] += cost[t]
    if any(load[k] > caps[k] + TOL * max(1.0, caps[k]) for k in range(len(caps))):
        return "OK-OVERLOADED"
    return "OK"


def _hand_out(n, edges, slots, mode, util):
    """FLINK lines 1-7 given the slots per TM and, for spread, util(m, used_m)."""
    where = essg_builder(n, edges, topo_min_index(len(n), edges))
    S = max(where.values()) + 1
    tasks = task_list(n)
    if S > sum(slots):
        return [-1] * len(tasks), S, True, [0] * len(slots)
    used = [0] * len(slots)
    tm_of = {}
    for j in range(S):
        avail = [m for m in range(len(slots)) if used[m] < slots[m]]
        if mode == "pack":
            best = avail[0]
        else:
            best = avail[0]
            for m in avail[1:]:
                if util(m, used[m]) < util(best, used[best]):
                    best = m
        used[best] += 1
        tm_of[j] = best
    return [tm_of[where[t]] for t in tasks], S, False, used


def flink(n, edges, cost, caps, mode="pack", slots=0):
    """FLINK-PACK / FLINK-SPREAD: (node list, S, slots failed, used per TM, slots per TM)."""
    k = [slots if slots else max(1, math.floor(c / 100)) for c in caps]
    node, S, failed, used = _hand_out(n, edges, k, mode, lambda m, u: Fraction(u, k[m]))
    return node, S, failed, used, k


def flink_fg(n, edges, cost, caps, mode="pack"):
    """FLINK-FG: (node list, S, slots failed, used per TM, slots per TM, D)."""
    where = essg_builder(n, edges, topo_min_index(len(n), edges))
    S = max(where.values()) + 1
    tasks = task_list(n)
    demand = []
    for j in range(S):
        d = 0.0
        for g in range(len(n)):  # summed in group order
            for t, (h, i) in enumerate(tasks):
                if h == g and where[(h, i)] == j:
                    d += cost[t]
        demand.append(d)
    D = max(demand)
    k = []
    for c in caps:
        room = c + TOL * max(1.0, c)
        s = 0
        while (s + 1) * D <= room:
            s += 1
        k.append(s)
    node, S2, failed, used = _hand_out(n, edges, k, mode, lambda m, u: D * u / caps[m])
    return node, S2, failed, used, k, D


def request_millicores(x):
    """A request rounded up to whole millicores (float noise of 1e-12 relative forgiven)."""
    return math.ceil(10.0 * x * (1 - 1e-12))


def allocatable_millicores(x):
    """An allocatable rounded down to whole millicores."""
    return math.floor(10.0 * x * (1 + 1e-12))


def pod_order(n, order, perm=None):
    """Queue positions -> task (global index): contiguous, interleaved, or the given permutation."""
    first = [sum(n[:g]) for g in range(len(n))]
    if order == "contiguous":
        return list(range(sum(n)))
    if order == "interleaved":
        out = []
        for i in range(max(n)):
            for g in range(len(n)):
                if i < n[g]:
                    out.append(first[g] + i)
        return out
    return list(perm)


def k8s(cost, caps, strategy, queue, u, max_pods=0):
    """K8S-LEAST / K8S-MOST (spec 2.5): node list, -1 for Pending pods; ``u[i]`` is the i-th pod's uniform."""
    K = len(caps)
    A = [allocatable_millicores(c) for c in caps]
    R = [0] * K
    Z = [0] * K
    cnt = [0] * K
    node = [-1] * len(cost)
    for i, t in enumerate(queue):
        r = request_millicores(cost[t])
        r2 = r if r > 0 else 100
        F = [k for k in range(K) if r <= A[k] - R[k] and (max_pods == 0 or cnt[k] < max_pods)]
        if not F:
            continue
        score = {}
        for k in F:
            q = Z[k] + r2
            if A[k] == 0:
                score[k] = 0
            elif strategy == "least":
                score[k] = (A[k] - q) * 100 // A[k] if q <= A[k] else 0
            else:
                score[k] = min(q, A[k]) * 100 // A[k]
        best = max(score.values())
        T = [k for k in F if score[k] == best]
        k = T[math.floor(u[i] * len(T))]
        node[t] = k
        R[k] += r
        Z[k] += r2
        cnt[k] += 1
    return node


def heron_c(cost, caps, containers=0):
    if containers == "all":
        return len(caps)
    if containers:
        return containers
    total, low = math.fsum(cost), min(caps)
    c = 1
    while total > c * low * (1 + TOL):
        c += 1
    return min(len(caps), c)


def heron_rr(n, cost, caps, containers=0):
    """RoundRobinPacking: (node list, C)."""
    C = heron_c(cost, caps, containers)
    node, c = [], 0
    for g in range(len(n)):  # declared RAM all equal: group index order
        for _ in range(n[g]):
            node.append(c % C)
            c += 1
    return node, C


def heron_ffd(n, cost, caps, padding=0.0, max_instances=0):
    """FirstFitDecreasingPacking: (node list, task order)."""
    tasks = task_list(n)
    declared = [max(cost[t] for t, (h, _) in enumerate(tasks) if h == g) for g in range(len(n))]
    groups = sorted(range(len(n)), key=lambda g: (-declared[g], g))
    pad = [max(100.0, 0.1 * c) if padding == "literal" else float(padding) for c in caps]
    free = [float(c) for c in caps]
    cnt = [0] * len(caps)
    node = [-1] * len(tasks)
    order = [t for g in groups for t, (h, _) in enumerate(tasks) if h == g]
    for t in order:
        k = next((k for k in range(len(caps))
                  if cost[t] + pad[k] <= free[k] + TOL * max(1.0, caps[k])
                  and (max_instances == 0 or cnt[k] + 1 <= max_instances)), None)
        if k is None:
            break
        node[t] = k
        free[k] -= cost[t]
        cnt[k] += 1
    return node, order


def min_bins(sizes, cap):
    """The fewest bins of capacity ``cap`` holding ``sizes`` (exhaustive: every item into every open bin or a
    new one, pruned by the best count found)."""
    items = sorted(sizes, reverse=True)
    best = [len(items)]

    def go(i, bins):
        if len(bins) >= best[0]:
            return
        if i == len(items):
            best[0] = len(bins)
            return
        seen = set()
        for b in range(len(bins)):
            if bins[b] in seen:
                continue
            seen.add(bins[b])
            if bins[b] + items[i] <= cap + TOL * max(1.0, cap):
                bins[b] += items[i]
                go(i + 1, bins)
                bins[b] -= items[i]
        bins.append(items[i])
        go(i + 1, bins)
        bins.pop()

    go(0, [])
    return best[0]
