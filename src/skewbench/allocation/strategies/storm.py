"""Apache Storm's resource-aware placement strategies (practice-allocation.spec.md sections 2.1-2.3):
R-Storm as shipped in Storm v1.0.7 (RSTORM), Storm 2.x ``DefaultResourceAwareStrategy`` with its
connection-count executor order (RAS) or its proximity order (RAS-PROX), and
``RoundRobinResourceAwareStrategy`` (RAS-RR).

None of them reads an edge rate: they see the graph shape, the task counts and the per-task CPU
demands ``job.costs`` (so a measured job is taken as it is, task by task).  A Storm executor is one
task; a component is a group; a supervisor is a node.  Every strategy is a pure function of the job
(the seed is ignored, spec 1.5) and never exceeds a node's capacity (spec 1.2).

Conventions (spec 0), shared with the test reference:

- task t fits node k when ``p(t) <= mu_k + TOL * max(1, mu_k^init)`` (``model.TOL``), mu_k being the
  node's free CPU, updated by subtraction on PLACE and by addition on UNPLACE;
- canonical order: ascending group and node index wherever the engine iterates a hash map (A-S3);
- one rack (no rack map), memory switched off (A-S2): RSTORM's memory term is 0 and its network
  term is 0 on the last-used node, 0.25 (= 0.5 squared) on every other node; RAS sorts nodes by CPU
  only, i.e. by (this job's tasks on the node desc, free CPU desc, index asc) (spec 2.2 NODE_ORDER);
- worker slots: RSTORM never runs out of them (every node offers at least one); RAS offers
  ``slots_per_node`` equivalent slots per fitting node, each one a separate search state.

Choices where the spec leaves room:

- RSTORM ties: the node scanned LATER wins an exact tie of the distance (A-S1, Storm's map keyed by
  distance); ``ties="earlier"`` is the ablation.  The distance is computed as Storm does,
  ``sqrt(x*x + 0 + delta*delta)`` with ``x = (p - mu_k) / (mu_k + 1)``, so ties are exact float ties.
- RSTORM tasks of groups the breadth-first walk from the sources does not reach (only possible on a
  job graph with a cycle and no source into it) are placed after the others in ascending task index,
  as Storm v1.0.7 places its left-over executors after the ranked ones.
- RSTORM keeps going after a task that fits nowhere (spec 2.1 line 17): the outcome is FAIL-CAPACITY
  with the partial placement kept (A-S7).
- RAS re-sort trigger: LITERAL re-sorts the nodes at the first executor, after a failed executor and
  between two consecutive executors of the SAME group (A-S4); ``resort="fresh"`` re-sorts before
  every executor.  Between re-sorts the frozen order is scanned from its start (first fit).
- RAS neighbour order: fewest connections first (A-S5, the comparator, not the comment).
- RAS-PROX: every edge counts as a shuffle grouping (A-S6); Kahn's topological order takes the
  lowest-index ready group; groups on a cycle are appended in ascending index, as Storm does.
- RAS pre-check: m >= max_states fails (FAIL-SEARCH) before anything is placed; the search stops
  with FAIL-SEARCH, keeping its partial state, once more than ``max_states`` placements were tried
  (spec 2.2 lines 2 and 5).  A failure of the first executor is FAIL-CAPACITY; after a full
  backtrack nothing is left placed.  The 60 s scheduling timeout is not modelled.
- RAS-RR: the node order is computed once (free CPU desc, index asc), the pre-check uses Storm's
  default bound 10,000, the scan restarts at the first executor, between two executors of the same
  group and when the previous scan ended at the last node, and there is no wrap-around inside a scan:
  a task that fits none of the remaining nodes ends the run (FAIL-CAPACITY, A-S4).

Outcome codes (spec 3.1): OK, OK-OVERLOADED (all placed, a node over mu^init: never here),
FAIL-CAPACITY, FAIL-SEARCH.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from skewbench.allocation.model import FAIL_CAPACITY, FAIL_SEARCH, OK, TOL, Job
from skewbench.allocation.strategies.base import Outcome, Strategy

__all__ = [
    "RR_MAX_STATES", "neighbours", "rstorm_order", "conn_order", "prox_order", "rstorm", "ras", "ras_rr", "RStorm",
    "RAS", "RASProx", "RASRR",
]

#: the largest state budget a user may give RAS: the search's time grows with it (Storm's own
#: daemon caps topologies at 100,000)
MAX_STATES = 1_000_000
#: Storm's default bound on searched states (topology.ras.max.states 10,000); RAS-RR's pre-check
RR_MAX_STATES = 10_000


# ---------------------------------------------------------------------------------------------- graph
def neighbours(job: Job) -> tuple[list[list[int]], list[list[int]]]:
    """(parents, children) of every group, each list ascending and without repeats."""
    parents: list[set[int]] = [set() for _ in range(job.G)]
    children: list[set[int]] = [set() for _ in range(job.G)]
    for i, j in zip(job.src.tolist(), job.dst.tolist()):
        children[i].add(j)
        parents[j].add(i)
    return [sorted(s) for s in parents], [sorted(s) for s in children]


def _offsets(job: Job) -> tuple[list[int], list[int]]:
    off = job.offset.tolist()
    return off[:-1], off[1:]


# ---------------------------------------------------------------------------------------------- 2.1 RSTORM
def rstorm_order(job: Job) -> list[int]:
    """RSTORM's task order (spec 2.1 lines 1-11): breadth-first components from each source, then
    one task per component per round in that rank order; unreached groups' tasks last, ascending."""
    parents, children = neighbours(job)
    seen = [False] * job.G
    ranked: list[int] = []
    for s in range(job.G):
        if parents[s] or seen[s]:
            continue
        seen[s] = True
        queue = [s]
        head = 0
        while head < len(queue):
            c = queue[head]
            head += 1
            ranked.append(c)
            for u in children[c] + parents[c]:
                if not seen[u]:
                    seen[u] = True
                    queue.append(u)
    n = job.tasks.tolist()
    first, _ = _offsets(job)
    rounds = max((n[c] for c in ranked), default=0)
    order = [first[c] + i for i in range(rounds) for c in ranked if i < n[c]]
    left = [g for g in range(job.G) if not seen[g]]
    for g in left:
        order.extend(range(first[g], first[g] + n[g]))
    return order


def rstorm(job: Job, ties: str = "later") -> tuple[np.ndarray, dict[str, Any]]:
    """RSTORM (spec 2.1): each task in :func:`rstorm_order` goes to the fitting node of least
    distance ``sqrt(((p - mu_k) / (mu_k + 1))^2 + delta(ref, k)^2)``; ``ties`` "later" (A-S1) or
    "earlier".  Returns the node array and the facts (outcome, unplaced)."""
    later = ties == "later"
    cost = job.costs.tolist()
    free = job.capacity.astype(float).tolist()
    slack = [TOL * max(1.0, c) for c in free]
    K = len(free)
    node = [-1] * job.m
    ref = -1
    unplaced = 0
    first_failed = 0
    for pos, t in enumerate(rstorm_order(job)):
        p = cost[t]
        best, best_d = -1, 0.0
        for k in range(K):
            mu = free[k]
            if not p <= mu + slack[k]:
                continue
            x = (p - mu) / (mu + 1.0)
            net = 0.0 if ref < 0 or k == ref else 0.25
            d = math.sqrt(x * x + 0.0 + net)
            if best < 0 or d < best_d or (later and d == best_d):
                best, best_d = k, d
        if best < 0:
            unplaced += 1
            first_failed = first_failed or pos + 1
            continue
        node[t] = best
        free[best] -= p
        ref = best
    info = {"outcome": OK if unplaced == 0 else FAIL_CAPACITY, "unplaced": unplaced,
            "failed_executor": first_failed}
    return np.asarray(node, dtype=np.int64), info


# ---------------------------------------------------------------------------------------------- 2.2 orders
def conn_order(job: Job) -> list[int]:
    """EXEC_ORDER by connection count (spec 2.2): components by conn desc (index asc); from each, one
    task of it and then one of each neighbour (fewest connections first, A-S5) per round."""
    parents, children = neighbours(job)
    n = job.tasks.tolist()
    first, end = _offsets(job)
    nxt = list(first)
    nbrs = [sorted(set(parents[c]) | set(children[c])) for c in range(job.G)]
    conn = [sum(n[u] * n[c] for u in nbrs[c]) for c in range(job.G)]
    order: list[int] = []
    for c in sorted(range(job.G), key=lambda g: (-conn[g], g)):
        near = sorted(nbrs[c], key=lambda u: (n[u] * n[c], u))
        progressed = True
        while progressed:
            progressed = False
            for g in [c] + near:
                if nxt[g] < end[g]:
                    order.append(nxt[g])
                    nxt[g] += 1
                    progressed = True
    return order


def prox_order(job: Job) -> list[int]:
    """EXEC_ORDER_PROX (spec 2.2): Kahn's topological order (lowest ready index; groups left on a
    cycle appended ascending), then per group as many TAKE calls as it had unlisted tasks."""
    _, children = neighbours(job)
    G = job.G
    indeg = [0] * G
    for c in range(G):
        for ch in children[c]:
            indeg[ch] += 1
    done = [False] * G
    topo: list[int] = []
    for _ in range(G):
        ready = next((g for g in range(G) if indeg[g] == 0 and not done[g]), -1)
        if ready < 0:
            break
        done[ready] = True
        topo.append(ready)
        for ch in children[ready]:
            indeg[ch] -= 1
    topo.extend(g for g in range(G) if not done[g])

    first, end = _offsets(job)
    nxt = list(first)
    order: list[int] = []

    def take(c: int) -> None:
        # TAKE(c) without recursion: a frame is [group, u, child position, repeats left]
        if nxt[c] == end[c]:
            return
        stack = [[c, end[c] - nxt[c], -1, 0]]
        order.append(nxt[c])
        nxt[c] += 1
        while stack:
            f = stack[-1]
            if f[3] > 0:
                f[3] -= 1
                ch = children[f[0]][f[2]]
                if nxt[ch] < end[ch]:
                    stack.append([ch, end[ch] - nxt[ch], -1, 0])
                    order.append(nxt[ch])
                    nxt[ch] += 1
                continue
            f[2] += 1
            if f[2] >= len(children[f[0]]):
                stack.pop()
                continue
            ch = children[f[0]][f[2]]
            if nxt[ch] < end[ch]:
                f[3] = max(1, (end[ch] - nxt[ch]) // f[1])

    for c in topo:
        for _ in range(end[c] - nxt[c]):
            take(c)
    return order


# ---------------------------------------------------------------------------------------------- 2.2 RAS
def ras(job: Job, order: list[int], resort: str = "literal", slots_per_node: int = 4,
        max_states: int = 10_000) -> tuple[np.ndarray, dict[str, Any]]:
    """RAS placement with bounded backtracking (spec 2.2) over the executor ``order`` (task indices).

    Returns the node array (the state at termination) and the facts: outcome, states (placements
    tried), backtracks, sorts (node orders computed)."""
    m = len(order)
    node = [-1] * job.m
    info: dict[str, Any] = {"outcome": OK, "states": 0, "backtracks": 0, "sorts": 0}
    if m == 0:
        return np.asarray(node, dtype=np.int64), info
    if m >= max_states:
        info["outcome"] = FAIL_SEARCH
        return np.asarray(node, dtype=np.int64), info
    fresh = resort == "fresh"
    group = job.group_of.tolist()
    cost = job.costs.tolist()
    free = job.capacity.astype(float).tolist()
    slack = [TOL * max(1.0, c) for c in free]
    K = len(free)
    cnt = [0] * K
    tried = [-1] * m
    host = [-1] * m
    i = states = backtracks = sorts = 0
    seq: list[int] | None = None
    pos = -1
    while True:
        if states > max_states:
            outcome = FAIL_SEARCH
            break
        t = order[i]
        p = cost[t]
        if seq is None or fresh or i == 0 or group[t] == group[order[i - 1]]:
            seq = sorted(range(K), key=lambda k: (-cnt[k], -free[k], k))
            sorts += 1
            pos = -1
        chosen = -1
        for k in seq:
            if not p <= free[k] + slack[k]:
                continue
            for _ in range(slots_per_node):
                pos += 1
                if pos <= tried[i]:
                    continue
                tried[i] += 1
                chosen = k
                break
            if chosen >= 0:
                break
        if chosen >= 0:
            states += 1
            node[t] = chosen
            free[chosen] -= p
            cnt[chosen] += 1
            host[i] = chosen
            if i == m - 1:
                outcome = OK
                break
            i += 1
            continue
        seq = None
        if i == 0:
            outcome = FAIL_CAPACITY
            break
        tried[i] = -1
        i -= 1
        back = order[i]
        k = host[i]
        node[back] = -1
        free[k] += cost[back]
        cnt[k] -= 1
        backtracks += 1
    info.update(outcome=outcome, states=states, backtracks=backtracks, sorts=sorts)
    return np.asarray(node, dtype=np.int64), info


# ---------------------------------------------------------------------------------------------- 2.3 RAS-RR
def ras_rr(job: Job, order: list[int], max_states: int = RR_MAX_STATES) -> tuple[np.ndarray, dict[str, Any]]:
    """RAS-RR (spec 2.3) over the executor ``order``: one node order fixed before any placement,
    scanned round robin without wrap-around.  Facts: outcome, states (placements), failed_executor
    (1-based position in ``order`` of the executor that fit nowhere, 0 if none)."""
    m = len(order)
    node = [-1] * job.m
    info: dict[str, Any] = {"outcome": OK, "states": 0, "failed_executor": 0}
    if m == 0:
        return np.asarray(node, dtype=np.int64), info
    if m >= max_states:
        info["outcome"] = FAIL_SEARCH
        return np.asarray(node, dtype=np.int64), info
    group = job.group_of.tolist()
    cost = job.costs.tolist()
    free = job.capacity.astype(float).tolist()
    slack = [TOL * max(1.0, c) for c in free]
    K = len(free)
    ring = sorted(range(K), key=lambda k: (-free[k], k))
    cur = 0
    states = 0
    for i, t in enumerate(order):
        if i == 0 or group[t] == group[order[i - 1]] or cur == K:
            cur = 0
        p = cost[t]
        while cur < K:
            k = ring[cur]
            cur += 1
            if p <= free[k] + slack[k]:
                node[t] = k
                free[k] -= p
                states += 1
                break
        else:
            info.update(outcome=FAIL_CAPACITY, states=states, failed_executor=i + 1)
            return np.asarray(node, dtype=np.int64), info
    info["states"] = states
    return np.asarray(node, dtype=np.int64), info


# ---------------------------------------------------------------------------------------------- classes
class RStorm(Strategy):
    name = "rstorm"
    description = "R-Storm as shipped in Storm v1.0.7: breadth-first executor order, distance-based best fit"
    defaults = {"ties": "later"}
    param_docs = {"ties": "Exact distance ties: later (the node scanned later wins, as Storm v1.0.7; A-S1) "
                          "or earlier (the ablation)."}

    def _check(self) -> None:
        self._choice("ties", ("later", "earlier"))

    def allocate(self, job: Job, seed: int) -> Outcome:
        node, info = rstorm(job, ties=self.params["ties"])
        return Outcome(node, job, info)


class RAS(Strategy):
    name = "ras"
    description = "Storm 2.x resource-aware scheduling: connection-count executor order, backtracking first fit"
    defaults = {"max_states": 10_000, "slots_per_node": 4, "resort": "literal"}
    param_docs = {
        "max_states": "Placements the search may try before it fails (topology.ras.max.states, at most "
                      "10^6 here; also the executor-count pre-check).",
        "slots_per_node": "Worker slots offered by every node (supervisor.slots.ports); each slot is one search state.",
        "resort": "When nodes are re-sorted: literal (first executor, after a failure, same group as the "
                  "previous; A-S4) or fresh (every executor).",
    }

    def _check(self) -> None:
        self._number("max_states", lo=1, hi=MAX_STATES, integer=True)
        self._number("slots_per_node", lo=1, integer=True)
        self._choice("resort", ("literal", "fresh"))

    def order(self, job: Job) -> list[int]:
        return conn_order(job)

    def allocate(self, job: Job, seed: int) -> Outcome:
        node, info = ras(job, self.order(job), resort=self.params["resort"],
                         slots_per_node=int(self.params["slots_per_node"]),
                         max_states=int(self.params["max_states"]))
        return Outcome(node, job, info)


class RASProx(RAS):
    name = "ras-prox"
    description = "Storm 2.x resource-aware scheduling with the proximity (topological TAKE) executor order"

    def order(self, job: Job) -> list[int]:
        return prox_order(job)


class RASRR(Strategy):
    name = "ras-rr"
    description = "Storm 2.x round-robin resource-aware strategy: fixed node order, one scan per executor run"

    def allocate(self, job: Job, seed: int) -> Outcome:
        node, info = ras_rr(job, conn_order(job))
        return Outcome(node, job, info)
