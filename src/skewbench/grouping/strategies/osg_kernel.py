"""The OSG kernels (osg.spec.md 4.8) and their state: the discrete-event single pass of OSG's
scheduler and instances over a batch, Full Knowledge's ideal greedy scheduler, and their pieces
(the Count-Min columns and estimates, the heap of pending control messages, the scheduler's S1
and S2), with the layout of the state arrays they read and write (the index constants) and the
:class:`OSGState` record holding them.  :mod:`skewbench.grouping.strategies.osg` describes the model and
holds the strategies."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from skewbench.jit import njit

__all__ = ["osg_kernel", "fk_ideal_kernel", "estimate_many", "PRIME", "ROUND_ROBIN", "SEND_ALL",
           "WAIT_ALL", "RUN", "MODE_NAMES", "START", "STABILIZING", "S_MODE", "S_RR", "S_EPOCH",
           "S_SEND", "S_NREP", "S_HAVE", "S_MSGSEQ", "S_HN", "S_PERIOD", "S_RUNIDX", "S_SAIDX",
           "S_SHIP", "S_REPL", "S_EDONE", "S_EABAN", "S_SDROP", "S_SAPP", "S_LOGN", "S_SDELIV",
           "S_ESTART", "S_PFN", "S_NEED", "SI_LEN", "I_K", "I_R", "I_C", "I_N", "I_WL", "I_EXACT",
           "I_INCL", "I_STALE", "I_CONT", "F_MU", "F_LAT", "F_SCALE", "II_PHASE", "II_CNT", "II_EXEC",
           "II_HAVE", "II_REPLIED", "II_CCNT", "FI_CACT", "FI_FREE", "FI_CHAT", "FI_MEAN", "FI_RVAL",
           "FI_RCS", "FI_CSUM", "SK_F", "SK_W", "SK_S", "SK_SF", "SK_SW", "H_TIME", "H_VAL", "H_CS",
           "H_SEQ", "H_KIND", "H_OP", "H_EPOCH", "H_SLOT", "H_CC", "L_OP", "L_EXEC", "L_SEQ",
           "OSGState"]

#: the Carter-Wegman prime ``p = 2^31 - 1``
PRIME = 2147483647

ROUND_ROBIN, SEND_ALL, WAIT_ALL, RUN = 0, 1, 2, 3
MODE_NAMES = ("ROUND_ROBIN", "SEND_ALL", "WAIT_ALL", "RUN")
START, STABILIZING = 0, 1

# int64 scheduler/bookkeeping state vector ``si``
S_MODE, S_RR, S_EPOCH, S_SEND, S_NREP, S_HAVE, S_MSGSEQ, S_HN, S_PERIOD = 0, 1, 2, 3, 4, 5, 6, 7, 8
S_RUNIDX, S_SAIDX, S_SHIP, S_REPL, S_EDONE, S_EABAN, S_SDROP, S_SAPP = 9, 10, 11, 12, 13, 14, 15, 16
S_LOGN, S_SDELIV, S_ESTART, S_PFN, S_NEED = 17, 18, 19, 20, 21
SI_LEN = 24
# int64 parameters ``ip``
I_K, I_R, I_C, I_N, I_WL, I_EXACT, I_INCL, I_STALE, I_CONT = 0, 1, 2, 3, 4, 5, 6, 7, 8
# float64 parameters ``sf``
F_MU, F_LAT, F_SCALE = 0, 1, 2
# per-instance int64 rows ``ii[row, op]``
II_PHASE, II_CNT, II_EXEC, II_HAVE, II_REPLIED, II_CCNT = 0, 1, 2, 3, 4, 5
# per-instance float64 rows ``fi[row, op]``
FI_CACT, FI_FREE, FI_CHAT, FI_MEAN, FI_RVAL, FI_RCS, FI_CSUM = 0, 1, 2, 3, 4, 5, 6
# sketches ``sk[which, op, r, c]``: live F, W, snapshot S, scheduler's stored F, W
SK_F, SK_W, SK_S, SK_SF, SK_SW = 0, 1, 2, 3, 4
# heap rows: floats (timestamp, value, corr_sum at request), ints (creation seq, kind, op,
# epoch, payload slot, correction count at request)
H_TIME, H_VAL, H_CS = 0, 1, 2
H_SEQ, H_KIND, H_OP, H_EPOCH, H_SLOT, H_CC = 0, 1, 2, 3, 4, 5
# shipment log rows (ints): instance, its executed count, seq of the shipping tuple
L_OP, L_EXEC, L_SEQ = 0, 1, 2


class OSGState(NamedTuple):
    """Everything :func:`~skewbench.grouping.strategies.osg_kernel.osg_kernel` reads and writes besides the batch: one record per
    :class:`OSG` object, passed to the kernel as a single argument (numba takes a named tuple of
    arrays and resolves ``st.field`` at compile time).  ``k`` instances, ``r`` rows and ``c``
    columns of Count-Min; ``P`` worker speed periods.  The kernel mutates the arrays in place;
    only the growable buffers (``hf``, ``hi``, ``pool``, ``pool_free``, ``lg``, ``lg_t``) are
    replaced, by :meth:`OSG._grow` between kernel calls (``_replace`` builds the new record)."""

    # -- configuration (set up once; ``sf``, ``hp`` and ``table`` also by the test hooks) --
    #: int64[9], index ``I_*``: ``k``, ``r``, ``c``, window ``N``, 1 for OSG-WL, 1 for exact
    #: estimates (FK-osg), 1 for ``empty_cells="include"``, 1 for ``stale_replies``, 1 for
    #: ``resync_start="continue"``
    ip: np.ndarray
    #: float64[3], index ``F_*``: ``mu``, control-message latency (ms), estimate scale (1.0)
    sf: np.ndarray
    #: int64[2, r]: Carter-Wegman ``a`` (row 0) and ``b`` (row 1) of each sketch row
    hp: np.ndarray
    #: int64[r, n]: explicit hash table ``H[i, key]`` (:meth:`OSG.set_hash_table`); shape
    #: ``(r, 0)`` means "none, compute ``hp``'s hash"
    table: np.ndarray
    #: int64[P]: first stream index of each worker speed period (``breaks[0] == 0``)
    breaks: np.ndarray
    #: float64[P, k]: execution-time factor of each instance in each period
    factors: np.ndarray
    # -- scheduler and instances --
    #: int64[SI_LEN], index ``S_*``: mode, ``rr_ptr``, epoch, SEND_ALL index, replies received,
    #: instances with a stored pair, message creation counter, heap size, current speed period,
    #: RUN / SEND_ALL entry indexes, the message and epoch counters of :meth:`OSG.summary`,
    #: shipment-log length, free pool slots, and the kernel's "grow" request (bits 1 heap,
    #: 2 pool, 4 log); the last two slots are spare
    si: np.ndarray
    #: int64[6, k], row ``II_*``: phase (START / STABILIZING), executions since the last check,
    #: executions in total, scheduler holds a pair, replied in this epoch, corrections applied
    ii: np.ndarray
    #: float64[7, k], row ``FI_*``: true ``C_act``, true free-at time, scheduler's ``Ĉ`` (``E``
    #: under WL), A6 mean of the stored pair, this epoch's reply ``Δ``, correction sum when that
    #: reply's request was sent, correction sum so far
    fi: np.ndarray
    #: float64[5, k, r, c], index ``SK_*``: live ``F``, live ``W``, snapshot ``S = R(F, W)``,
    #: scheduler's stored ``F`` and ``W``
    sk: np.ndarray
    # -- pending control messages and shipments (growable) --
    #: float64[3, hcap], row ``H_TIME/H_VAL/H_CS``: heap of pending messages (first ``si[S_HN]``
    #: columns, a binary heap on (timestamp, creation order))
    hf: np.ndarray
    #: int64[6, hcap], row ``H_SEQ/H_KIND/H_OP/H_EPOCH/H_SLOT/H_CC``: the same heap's int fields
    hi: np.ndarray
    #: float64[pcap, 2, r, c]: payload pool, the ``(F, W)`` copies of shipments in flight
    pool: np.ndarray
    #: int64[pcap]: stack of free pool slots (first ``si[S_PFN]`` entries)
    pool_free: np.ndarray
    #: int64[3, lcap], row ``L_*``: shipment log, instance, its executions, shipping tuple's seq
    #: (first ``si[S_LOGN]`` columns)
    lg: np.ndarray
    #: float64[lcap]: shipment log, finishing time of the shipping tuple
    lg_t: np.ndarray
    # -- scratch --
    #: int64[r]: ``h_i(key)`` of the tuple being routed
    cols: np.ndarray


_SHIP, _REPLY = 1, 0


@njit(cache=True, inline="always")
def _hash_cols(key, hp, table, r, c, cols):
    if table.shape[1] > 0:
        for i in range(r):
            cols[i] = table[i, key]
    else:
        x = key % PRIME
        for i in range(r):
            cols[i] = ((hp[0, i] * x + hp[1, i]) % PRIME) % c


@njit(cache=True, inline="always")
def _estimate(sk, op, cols, r, mean):
    """Spec 2.1.3 on the stored pair of ``op``: ratio in the row of the smallest count."""
    best = sk[SK_SF, op, 0, cols[0]]
    bi = 0
    for i in range(1, r):
        f = sk[SK_SF, op, i, cols[i]]
        if f < best:
            best = f
            bi = i
    if best > 0.0:
        return sk[SK_SW, op, bi, cols[bi]] / best
    return mean


@njit(cache=True)
def estimate_many(Fm, Wm, mean, cols):
    """Spec 2.1.3 for many keys on one pair ``(Fm, Wm)``; ``cols`` is int64[r, m]."""
    r, m = cols.shape
    out = np.empty(m)
    for t in range(m):
        best = Fm[0, cols[0, t]]
        bi = 0
        for i in range(1, r):
            f = Fm[i, cols[i, t]]
            if f < best:
                best = f
                bi = i
        out[t] = Wm[bi, cols[bi, t]] / best if best > 0.0 else mean
    return out


@njit(cache=True)
def _hless(hf, hi, a, b):
    ta = hf[H_TIME, a]
    tb = hf[H_TIME, b]
    if ta < tb:
        return True
    if ta > tb:
        return False
    return hi[H_SEQ, a] < hi[H_SEQ, b]


@njit(cache=True)
def _hswap(hf, hi, a, b):
    for q in range(hf.shape[0]):
        tf = hf[q, a]
        hf[q, a] = hf[q, b]
        hf[q, b] = tf
    for q in range(hi.shape[0]):
        ti = hi[q, a]
        hi[q, a] = hi[q, b]
        hi[q, b] = ti


@njit(cache=True)
def _hpush(hf, hi, si, time, val, cs, kind, op, epoch, slot, cc):
    j = si[S_HN]
    si[S_HN] = j + 1
    hf[H_TIME, j] = time
    hf[H_VAL, j] = val
    hf[H_CS, j] = cs
    hi[H_SEQ, j] = si[S_MSGSEQ]
    si[S_MSGSEQ] += 1
    hi[H_KIND, j] = kind
    hi[H_OP, j] = op
    hi[H_EPOCH, j] = epoch
    hi[H_SLOT, j] = slot
    hi[H_CC, j] = cc
    while j > 0 and _hless(hf, hi, j, (j - 1) // 2):  # sift up
        _hswap(hf, hi, j, (j - 1) // 2)
        j = (j - 1) // 2


@njit(cache=True)
def _hpop(hf, hi, si):
    """Remove the top (read it before calling)."""
    n = si[S_HN] - 1
    si[S_HN] = n
    if n == 0:
        return
    _hswap(hf, hi, 0, n)
    j = 0
    while True:
        left = 2 * j + 1
        if left >= n:
            break
        m = left
        right = left + 1
        if right < n and _hless(hf, hi, right, left):
            m = right
        if _hless(hf, hi, m, j):
            _hswap(hf, hi, j, m)
            j = m
        else:
            break


@njit(cache=True)
def _start_epoch(si, ii, k, cur_seq):
    if si[S_MODE] == SEND_ALL or si[S_MODE] == WAIT_ALL:
        si[S_EABAN] += 1
    si[S_EPOCH] += 1
    si[S_ESTART] += 1
    si[S_SEND] = 0
    si[S_NREP] = 0
    for o in range(k):
        ii[II_REPLIED, o] = 0
    si[S_MODE] = SEND_ALL
    if si[S_SAIDX] < 0:
        si[S_SAIDX] = cur_seq


@njit(cache=True)
def _on_ship(op, slot, mtime, cur_seq, ip, si, ii, fi, sk, pool, pool_free):
    """Algorithm S1 (the arrays are :class:`OSGState` fields)."""
    k = ip[I_K]
    r = ip[I_R]
    c = ip[I_C]
    sw = 0.0
    sfc = 0.0
    for i in range(r):
        for j in range(c):
            sk[SK_SF, op, i, j] = pool[slot, 0, i, j]
            sk[SK_SW, op, i, j] = pool[slot, 1, i, j]
    for j in range(c):
        sw += sk[SK_SW, op, 0, j]
        sfc += sk[SK_SF, op, 0, j]
    fi[FI_MEAN, op] = sw / sfc if sfc > 0.0 else 0.0
    pool_free[si[S_PFN]] = slot
    si[S_PFN] += 1
    si[S_SDELIV] += 1
    if ii[II_HAVE, op] == 0:
        ii[II_HAVE, op] = 1
        si[S_HAVE] += 1
    if si[S_MODE] == ROUND_ROBIN:
        if si[S_HAVE] == k:
            for o in range(k):
                fi[FI_CHAT, o] = mtime if ip[I_WL] != 0 else 0.0
            _start_epoch(si, ii, k, cur_seq)
    else:
        _start_epoch(si, ii, k, cur_seq)


@njit(cache=True)
def _on_reply(op, ep, delta, cs, cc, cur_seq, ip, si, ii, fi):
    """Algorithm S2 (and the optional A7 stale rule; the arrays are :class:`OSGState` fields)."""
    k = ip[I_K]
    if ep != si[S_EPOCH]:
        if ip[I_STALE] != 0 and ii[II_CCNT, op] == cc:
            fi[FI_CHAT, op] += delta
            fi[FI_CSUM, op] += delta
            ii[II_CCNT, op] += 1
            si[S_SAPP] += 1
        else:
            si[S_SDROP] += 1
        return
    if ii[II_REPLIED, op] == 0:
        ii[II_REPLIED, op] = 1
        si[S_NREP] += 1
        fi[FI_RVAL, op] = delta
        fi[FI_RCS, op] = cs
    if si[S_MODE] == WAIT_ALL and si[S_NREP] == k:
        for o in range(k):
            corr = fi[FI_RVAL, o] - (fi[FI_CSUM, o] - fi[FI_RCS, o])
            fi[FI_CHAT, o] += corr
            fi[FI_CSUM, o] += corr
            ii[II_CCNT, o] += 1
        si[S_MODE] = RUN
        si[S_EDONE] += 1
        if si[S_RUNIDX] < 0:
            si[S_RUNIDX] = cur_seq


# _nrt=False: no reference counting in the kernel (it allocates nothing; every array belongs
# to the caller's OSGState or batch for the whole call), so numba emits no incref/decref of the
# state arrays around the helper calls and on unpacking ``st``: about 7% fewer instructions per
# tuple than with it.  The helpers take the few arrays they need, not the record: passing the
# whole record to an out-of-line call costs more than the call itself.
@njit(cache=True, _nrt=False)
def osg_kernel(seq, key, ts, cost, out, modes, start, st):
    """Route tuples ``[start, n)`` of a batch: ``seq``, ``key`` (int64[n]), ``ts``, ``cost``
    (float64[n], ms) in; ``out`` (int64[n], instance) and ``modes`` (int8[n], scheduler mode)
    out; ``st`` the :class:`OSGState`.  Returns the index reached (``< n``: the buffers named by
    ``st.si[S_NEED]`` are full; grow them and call again from there)."""
    # the record's arrays under the short names the body uses (unpacked once per call)
    ip, sf, hp, table, breaks, factors = st.ip, st.sf, st.hp, st.table, st.breaks, st.factors
    si, ii, fi, sk = st.si, st.ii, st.fi, st.sk
    hf, hi, pool, pool_free, lg, lg_t = st.hf, st.hi, st.pool, st.pool_free, st.lg, st.lg_t
    cols = st.cols
    k = ip[I_K]
    r = ip[I_R]
    c = ip[I_C]
    N = ip[I_N]
    wl = ip[I_WL] != 0
    exact = ip[I_EXACT] != 0
    include = ip[I_INCL] != 0
    mu = sf[F_MU]
    lat = sf[F_LAT]
    scale = sf[F_SCALE]
    n = seq.shape[0]
    nper = breaks.shape[0]
    hcap = hf.shape[1]
    lcap = lg_t.shape[0]
    for t in range(start, n):
        a = ts[t]
        s_t = seq[t]
        # 1. deliver pending control messages with timestamp <= a (ties before the tuple)
        while si[S_HN] > 0 and hf[H_TIME, 0] <= a:
            mtime = hf[H_TIME, 0]
            mval = hf[H_VAL, 0]
            mcs = hf[H_CS, 0]
            kind = hi[H_KIND, 0]
            mop = hi[H_OP, 0]
            mep = hi[H_EPOCH, 0]
            slot = hi[H_SLOT, 0]
            mcc = hi[H_CC, 0]
            _hpop(hf, hi, si)
            if kind == _SHIP:
                _on_ship(mop, slot, mtime, s_t, ip, si, ii, fi, sk, pool, pool_free)
            else:
                _on_reply(mop, mep, mval, mcs, mcc, s_t, ip, si, ii, fi)
        # room for one reply and one shipment
        need = 0
        if si[S_HN] + 2 > hcap:
            need |= 1
        if si[S_PFN] < 1:
            need |= 2
        if si[S_LOGN] + 1 > lcap:
            need |= 4
        if need != 0:
            si[S_NEED] = need
            return t
        # worker speed period of this stream index
        p = si[S_PERIOD]
        while p + 1 < nper and breaks[p + 1] <= s_t:
            p += 1
        while p > 0 and breaks[p] > s_t:
            p -= 1
        si[S_PERIOD] = p
        _hash_cols(key[t], hp, table, r, c, cols)
        # 2. scheduler, S3
        mode = si[S_MODE]
        modes[t] = mode
        carrier = False
        req = 0.0
        req_ep = 0
        req_cs = 0.0
        req_cc = 0
        # rr_ptr = number of tuples scheduled before this one (its stream position)
        rr = si[S_RR]
        si[S_RR] = rr + 1
        if mode == ROUND_ROBIN:
            op = rr % k
        else:
            if mode == SEND_ALL:
                # A15 "restart": i-th carrier -> instance i; "continue": where RR would send it
                op = rr % k if ip[I_CONT] != 0 else si[S_SEND]
                si[S_SEND] += 1
            elif wl:
                op = 0
                best = fi[FI_CHAT, 0] if fi[FI_CHAT, 0] > a else a
                for o in range(1, k):
                    v = fi[FI_CHAT, o] if fi[FI_CHAT, o] > a else a
                    if v < best:
                        best = v
                        op = o
            else:
                op = 0
                best = fi[FI_CHAT, 0]
                for o in range(1, k):
                    if fi[FI_CHAT, o] < best:
                        best = fi[FI_CHAT, o]
                        op = o
            if exact:
                west = cost[t] * factors[p, op]
            else:
                west = _estimate(sk, op, cols, r, fi[FI_MEAN, op])
            west = west * scale
            if wl:
                e0 = fi[FI_CHAT, op]
                fi[FI_CHAT, op] = (e0 if e0 > a else a) + west
            else:
                fi[FI_CHAT, op] += west
            if mode == SEND_ALL:
                carrier = True
                req = fi[FI_CHAT, op]
                req_ep = si[S_EPOCH]
                req_cs = fi[FI_CSUM, op]
                req_cc = ii[II_CCNT, op]
                if si[S_SEND] == k:
                    si[S_MODE] = WAIT_ALL
        out[t] = op
        # 3. the instance executes the tuple eagerly (FIFO), Algorithm I
        x = cost[t] * factors[p, op]
        fo = fi[FI_FREE, op]
        e = (fo if fo > a else a) + x
        fi[FI_FREE, op] = e
        fi[FI_CACT, op] += x
        for i in range(r):
            sk[SK_F, op, i, cols[i]] += 1.0
            sk[SK_W, op, i, cols[i]] += x
        if carrier:
            delta = (e - req) if wl else (fi[FI_CACT, op] - req)
            _hpush(hf, hi, si, e + lat, delta, req_cs, _REPLY, op, req_ep, -1, req_cc)
            si[S_REPL] += 1
        ii[II_EXEC, op] += 1
        ii[II_CNT, op] += 1
        if ii[II_CNT, op] >= N:
            ii[II_CNT, op] = 0
            if ii[II_PHASE, op] == START:
                for i in range(r):
                    for j in range(c):
                        f = sk[SK_F, op, i, j]
                        sk[SK_S, op, i, j] = sk[SK_W, op, i, j] / f if f > 0.0 else 0.0
                ii[II_PHASE, op] = STABILIZING
            else:
                num = 0.0
                den = 0.0
                for i in range(r):
                    for j in range(c):
                        s = sk[SK_S, op, i, j]
                        f = sk[SK_F, op, i, j]
                        rr = sk[SK_W, op, i, j] / f if f > 0.0 else 0.0
                        if include or s > 0.0:
                            num += abs(s - rr)
                        den += s
                if den > 0.0 and num / den <= mu:
                    si[S_PFN] -= 1
                    slot = pool_free[si[S_PFN]]
                    for i in range(r):
                        for j in range(c):
                            pool[slot, 0, i, j] = sk[SK_F, op, i, j]
                            pool[slot, 1, i, j] = sk[SK_W, op, i, j]
                            sk[SK_F, op, i, j] = 0.0
                            sk[SK_W, op, i, j] = 0.0
                    _hpush(hf, hi, si, e + lat, 0.0, 0.0, _SHIP, op, 0, slot, 0)
                    si[S_SHIP] += 1
                    ln = si[S_LOGN]
                    lg[L_OP, ln] = op
                    lg[L_EXEC, ln] = ii[II_EXEC, op]
                    lg[L_SEQ, ln] = s_t
                    lg_t[ln] = e
                    si[S_LOGN] = ln + 1
                    ii[II_PHASE, op] = START
                else:
                    for i in range(r):
                        for j in range(c):
                            f = sk[SK_F, op, i, j]
                            sk[SK_S, op, i, j] = sk[SK_W, op, i, j] / f if f > 0.0 else 0.0
    return n


@njit(cache=True)
def fk_ideal_kernel(seq, ts, cost, out, k, wl, breaks, factors, st, chat, free):
    """FK-ideal: greedy argmin with true costs from the first tuple (spec 2.6)."""
    n = seq.shape[0]
    nper = breaks.shape[0]
    p = st[0]
    for t in range(n):
        a = ts[t]
        s_t = seq[t]
        while p + 1 < nper and breaks[p + 1] <= s_t:
            p += 1
        while p > 0 and breaks[p] > s_t:
            p -= 1
        op = 0
        if wl:
            best = free[0] if free[0] > a else a
            for o in range(1, k):
                v = free[o] if free[o] > a else a
                if v < best:
                    best = v
                    op = o
        else:
            best = chat[0]
            for o in range(1, k):
                if chat[o] < best:
                    best = chat[o]
                    op = o
        x = cost[t] * factors[p, op]
        chat[op] += x
        fo = free[op]
        free[op] = (fo if fo > a else a) + x
        out[t] = op
    st[0] = p
