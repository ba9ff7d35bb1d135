"""The OSG kernels (osg.spec.md 4.8): the discrete-event single pass of OSG's scheduler and
instances over a batch, Full Knowledge's ideal greedy scheduler, and their pieces (the Count-Min
columns and estimates, the heap of pending control messages, the scheduler's S1 and S2).  The
state they read and write is an :class:`~skewbench.grouping.osg_state.OSGState`;
:mod:`skewbench.grouping.osg` describes the model and holds the strategies."""

from __future__ import annotations

import numpy as np
from skewbench.jit import njit

from skewbench.grouping.osg_state import (
    FI_CACT, FI_CHAT, FI_CSUM, FI_FREE, FI_MEAN, FI_RCS, FI_RVAL, F_LAT, F_MU, F_SCALE, H_CC, H_CS, H_EPOCH,
    H_KIND, H_OP, H_SEQ, H_SLOT, H_TIME, H_VAL, II_CCNT, II_CNT, II_EXEC, II_HAVE, II_PHASE, II_REPLIED, I_C,
    I_CONT, I_EXACT, I_INCL, I_K, I_N, I_R, I_STALE, I_WL, L_EXEC, L_OP, L_SEQ, OSGState, PRIME, ROUND_ROBIN,
    RUN, SEND_ALL, SK_F, SK_S, SK_SF, SK_SW, SK_W, STABILIZING, START, S_EABAN, S_EDONE, S_EPOCH, S_ESTART,
    S_HAVE, S_HN, S_LOGN, S_MODE, S_MSGSEQ, S_NEED, S_NREP, S_PERIOD, S_PFN, S_REPL, S_RR, S_RUNIDX, S_SAIDX,
    S_SAPP, S_SDELIV, S_SDROP, S_SEND, S_SHIP, WAIT_ALL,
)
from skewbench.kernel.least import least, least_from

__all__ = ["osg_kernel", "fk_ideal_kernel", "estimate_many"]

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
                op = least_from(fi[FI_CHAT], k, a)
            else:
                op = least(fi[FI_CHAT], k)
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
        op = least_from(free, k, a) if wl else least(chat, k)
        x = cost[t] * factors[p, op]
        chat[op] += x
        fo = free[op]
        free[op] = (fo if fo > a else a) + x
        out[t] = op
    st[0] = p
