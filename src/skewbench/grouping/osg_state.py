"""The state of the OSG kernel (:mod:`skewbench.grouping.osg_kernel`) and its Count-Min
sketches' parameters: the layout of the scheduler's and the instances' state arrays (the index
constants), the :class:`OSGState` record holding them, and the sketch dimensions and hash
parameters (osg.spec.md A2, A3).  :mod:`skewbench.grouping.osg` describes the model."""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from skewbench.grouping.base import check_number

__all__ = ["PRIME", "ROUND_ROBIN", "SEND_ALL", "WAIT_ALL", "RUN", "MODE_NAMES", "START",
           "STABILIZING", "S_MODE", "S_RR", "S_EPOCH", "S_SEND", "S_NREP", "S_HAVE", "S_MSGSEQ",
           "S_HN", "S_PERIOD", "S_RUNIDX", "S_SAIDX", "S_SHIP", "S_REPL", "S_EDONE", "S_EABAN",
           "S_SDROP", "S_SAPP", "S_LOGN", "S_SDELIV", "S_ESTART", "S_PFN", "S_NEED", "SI_LEN",
           "I_K", "I_R", "I_C", "I_N", "I_WL", "I_EXACT", "I_INCL", "I_STALE", "I_CONT", "F_MU",
           "F_LAT", "F_SCALE", "II_PHASE", "II_CNT", "II_EXEC", "II_HAVE", "II_REPLIED", "II_CCNT",
           "FI_CACT", "FI_FREE", "FI_CHAT", "FI_MEAN", "FI_RVAL", "FI_RCS", "FI_CSUM", "SK_F",
           "SK_W", "SK_S", "SK_SF", "SK_SW", "H_TIME", "H_VAL", "H_CS", "H_SEQ", "H_KIND", "H_OP",
           "H_EPOCH", "H_SLOT", "H_CC", "L_OP", "L_EXEC", "L_SEQ", "OSGState", "cm_columns",
           "cm_rows", "draw_hash"]

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
    """Everything :func:`~skewbench.grouping.osg_kernel.osg_kernel` reads and writes besides the batch: one record per
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



# --------------------------------------------------------------------------------------------
# public helpers

def cm_rows(delta: float) -> int:
    """Count-Min rows ``r = ceil(log2(1/δ))`` (A2: base 2; ``δ = 0.1 -> 4``, ``0.25 -> 2``)."""
    check_number("delta", delta, 0.0, 1.0, low_open=True)
    if delta >= 1.0:
        return 1
    return max(1, math.ceil(math.log2(1.0 / float(delta)) - 1e-12))


def cm_columns(eps: float) -> int:
    """Count-Min columns ``c = max(1, floor(e/ε))`` (A3; ``0.05 -> 54``, ``0.001 -> 2718``) and
    ``c = 1`` for ``ε >= 1`` (the paper: "a single entry per row" at ``ε = 1.0``)."""
    check_number("eps", eps, 0.0, None, low_open=True)
    if eps >= 1.0:
        return 1
    return max(1, math.floor(math.e / float(eps)))


def draw_hash(seed: int, rows: int) -> tuple[np.ndarray, np.ndarray]:
    """The Carter-Wegman parameters ``(a, b)`` (int64[rows] each) of hash seed ``seed``."""
    rng = np.random.default_rng(int(seed) % (1 << 64))
    a = rng.integers(1, PRIME, size=rows, dtype=np.int64)
    b = rng.integers(0, PRIME, size=rows, dtype=np.int64)
    return a, b
