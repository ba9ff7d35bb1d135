"""Plain-Python reference of OSG (osg.spec.md), used only by tests.

Literally the spec's Algorithm I (instances), S1-S3 (scheduler), 2.7 (work-left variant) and the
discrete-event driver of 4.8: lists of lists for the sketches, dicts for the scheduler's store
and replies, strings for the states, and an explicit event list of pending control messages
(the next one is found with ``min`` over ``(timestamp, creation order)``).  The Carter-Wegman
parameters are drawn here with the same ``numpy.random.Generator`` calls as the module.
"""

from __future__ import annotations

import numpy as np

P = 2**31 - 1


def draw_hash(seed, rows):
    rng = np.random.default_rng(int(seed) % (1 << 64))
    a = rng.integers(1, P, size=rows, dtype=np.int64)
    b = rng.integers(0, P, size=rows, dtype=np.int64)
    return [int(v) for v in a], [int(v) for v in b]


def period_of(breaks, s):
    p = 0
    for i, b in enumerate(breaks):
        if b <= s:
            p = i
    return p


def zeros(r, c):
    return [[0.0] * c for _ in range(r)]


def ratios(F, W):
    return [[(W[i][j] / F[i][j]) if F[i][j] > 0 else 0.0 for j in range(len(F[0]))]
            for i in range(len(F))]


class Instance:
    def __init__(self, op, r, c):
        self.op = op
        self.F = zeros(r, c)
        self.W = zeros(r, c)
        self.S = zeros(r, c)
        self.phase = "START"
        self.cnt = 0
        self.C_act = 0.0
        self.free = 0.0
        self.executed = 0


def run_osg(seqs, keys, ts, costs, k, seed=0, breaks=(0,), factors=None, window=1024, mu=0.05,
            rows=4, cols=54, latency=0.0, variant="wl", empty_cells="exclude",
            stale_replies=False, exact=False, hash_ab=None, resync_start="restart",
            _perturb=None):
    """Route the whole stream; returns (assignments, stats dict)."""
    r, c, N = rows, cols, window
    wl = variant == "wl"
    if factors is None:
        factors = [[1.0] * k]
    ha, hb = hash_ab if hash_ab is not None else draw_hash(seed, r)

    def h(i, v):
        return ((ha[i] * (v % P) + hb[i]) % P) % c

    insts = [Instance(op, r, c) for op in range(k)]
    # scheduler
    sched = {"mode": "ROUND_ROBIN", "rr_ptr": 0, "C": [0.0] * k, "store": {}, "epoch": 0,
             "send_idx": 0, "replies": {}, "corr_cnt": [0] * k, "corr_sum": [0.0] * k}
    stats = {"shipments": 0, "replies": 0, "epochs_completed": 0, "epochs_abandoned": 0,
             "run_index": -1, "send_all_index": -1, "ship_log": []}
    events = []  # pending control messages
    order = [0]

    def emit(time, msg):
        msg["time"] = time
        msg["order"] = order[0]
        order[0] += 1
        events.append(msg)

    def estimate(op, v):
        Fm, Wm = sched["store"][op]
        best_i = 0
        for i in range(1, r):
            if Fm[i][h(i, v)] < Fm[best_i][h(best_i, v)]:
                best_i = i
        f = Fm[best_i][h(best_i, v)]
        if f > 0:
            return Wm[best_i][h(best_i, v)] / f
        sw = 0.0
        sf = 0.0
        for j in range(c):
            sw += Wm[0][j]
            sf += Fm[0][j]
        return sw / sf if sf > 0 else 0.0

    def start_epoch(cur_seq):
        if sched["mode"] in ("SEND_ALL", "WAIT_ALL"):
            stats["epochs_abandoned"] += 1
        sched["epoch"] += 1
        sched["send_idx"] = 0
        sched["replies"] = {}
        sched["mode"] = "SEND_ALL"
        if stats["send_all_index"] < 0:
            stats["send_all_index"] = cur_seq

    def on_matrices(msg, cur_seq):  # S1
        sched["store"][msg["op"]] = (msg["F"], msg["W"])
        if sched["mode"] == "ROUND_ROBIN":
            if len(sched["store"]) == k:
                sched["C"] = [msg["time"] if wl else 0.0 for _ in range(k)]
                start_epoch(cur_seq)
        else:
            start_epoch(cur_seq)

    def on_reply(msg, cur_seq):  # S2
        op = msg["op"]
        if msg["epoch"] != sched["epoch"]:
            if stale_replies and sched["corr_cnt"][op] == msg["cc"]:
                sched["C"][op] += msg["delta"]
                sched["corr_sum"][op] += msg["delta"]
                sched["corr_cnt"][op] += 1
            return
        if op not in sched["replies"]:
            sched["replies"][op] = (msg["delta"], msg["cs"])
        if sched["mode"] == "WAIT_ALL" and len(sched["replies"]) == k:
            for o in range(k):
                d, cs = sched["replies"][o]
                corr = d - (sched["corr_sum"][o] - cs)
                sched["C"][o] += corr
                sched["corr_sum"][o] += corr
                sched["corr_cnt"][o] += 1
            sched["mode"] = "RUN"
            stats["epochs_completed"] += 1
            if stats["run_index"] < 0:
                stats["run_index"] = cur_seq

    def execute(inst, v, x, a, request, s_t):  # Algorithm I, eagerly at assignment time
        start = max(a, inst.free)
        e = start + x
        inst.free = e
        inst.C_act += x
        for i in range(r):
            inst.F[i][h(i, v)] += 1.0
            inst.W[i][h(i, v)] += x
        if request is not None:
            ep, value, cs, cc = request
            delta = (e - value) if wl else (inst.C_act - value)
            emit(e + latency, {"kind": "reply", "op": inst.op, "epoch": ep, "delta": delta,
                               "cs": cs, "cc": cc})
            stats["replies"] += 1
        inst.executed += 1
        inst.cnt += 1
        if inst.cnt < N:
            return
        inst.cnt = 0
        R = ratios(inst.F, inst.W)
        if inst.phase == "START":
            inst.S = R
            inst.phase = "STABILIZING"
            return
        num = 0.0
        den = 0.0
        for i in range(r):
            for j in range(c):
                if empty_cells == "include" or inst.S[i][j] > 0:
                    num += abs(inst.S[i][j] - R[i][j])
                den += inst.S[i][j]
        if den > 0 and num / den <= mu:
            emit(e + latency, {"kind": "matrices", "op": inst.op,
                               "F": [row[:] for row in inst.F], "W": [row[:] for row in inst.W]})
            stats["shipments"] += 1
            stats["ship_log"].append((inst.op, inst.executed, s_t))
            inst.F = zeros(r, c)
            inst.W = zeros(r, c)
            inst.phase = "START"
        else:
            inst.S = R

    out = []
    for t in range(len(seqs)):
        a, v, s_t = ts[t], keys[t], seqs[t]
        # deliver control messages with timestamp <= a, in (timestamp, order) order
        while events:
            nxt = min(events, key=lambda m: (m["time"], m["order"]))
            if _perturb == "ties_after":
                if not nxt["time"] < a:
                    break
            elif not nxt["time"] <= a:
                break
            events.remove(nxt)
            if nxt["kind"] == "matrices":
                on_matrices(nxt, s_t)
            else:
                on_reply(nxt, s_t)
        p = period_of(breaks, s_t)
        request = None
        mode = sched["mode"]
        pos = sched["rr_ptr"]  # tuples scheduled before this one, in every mode
        sched["rr_ptr"] += 1
        if mode == "ROUND_ROBIN":  # S3.1
            op = pos % k
        else:
            if mode == "SEND_ALL":  # S3.2 (A15 "restart") or the continued rotation
                op = pos % k if resync_start == "continue" else sched["send_idx"]
                sched["send_idx"] += 1
            elif wl:  # 2.7 item 2
                op = min(range(k), key=lambda o: (max(sched["C"][o], a), o))
            else:  # S3.3
                op = min(range(k), key=lambda o: (sched["C"][o], o))
            w_hat = costs[t] * factors[p][op] if exact else estimate(op, v)
            if wl:
                sched["C"][op] = max(sched["C"][op], a) + w_hat
            else:
                sched["C"][op] += w_hat
            if mode == "SEND_ALL":
                request = (sched["epoch"], sched["C"][op], sched["corr_sum"][op],
                           sched["corr_cnt"][op])
                if sched["send_idx"] == k:
                    sched["mode"] = "WAIT_ALL"
        out.append(op)
        execute(insts[op], v, costs[t] * factors[p][op], a, request, s_t)
    stats["C"] = list(sched["C"])
    stats["C_act"] = [i.C_act for i in insts]
    stats["free"] = [i.free for i in insts]
    stats["mode"] = sched["mode"]
    return out, stats


def run_fk_ideal(seqs, ts, costs, k, breaks=(0,), factors=None, semantics="wl"):
    """FK-ideal (spec 2.6): greedy with true costs from the first tuple."""
    if factors is None:
        factors = [[1.0] * k]
    C = [0.0] * k
    free = [0.0] * k
    out = []
    for t in range(len(seqs)):
        a = ts[t]
        p = period_of(breaks, seqs[t])
        if semantics == "wl":
            op = min(range(k), key=lambda o: (max(free[o], a), o))
        else:
            op = min(range(k), key=lambda o: (C[o], o))
        x = costs[t] * factors[p][op]
        C[op] += x
        free[op] = max(free[op], a) + x
        out.append(op)
    return out
