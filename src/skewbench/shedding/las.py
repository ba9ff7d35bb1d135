"""Load-Aware Shedding (las.spec.md): a virtual-time simulation of source -> shedder -> one FIFO
operator, the machinery every operator shedder of :mod:`skewbench.shedding.strategies` runs on.

A shedder plugs in through :class:`OperatorPlan`, which its ``plan`` method returns: the tuples it
drops before any check (``drop``), whether the kept ones go through SHED/CHECK (``check``), and
where CHECK's execution-time estimate comes from: numbers fixed in advance (``estimates``) or the
simulator's one online estimator, LAS's Count-Min sketch fed back by the operator (``online``).
:func:`simulate` validates the stream, asks the shedder for its plan and runs the compiled loop.

Model (las.spec.md 1-2)
-----------------------
Tuple ``i`` carries the integer key ``keys[i]`` (``0 <= key < 2^31``), arrives at ``arrivals[i]``
ms (non-decreasing; ``T0 = arrivals[0]``) and, if kept, runs ``durations[i]`` ms, its true current
duration, on one operator with a FIFO buffer and no preemption: it starts at
``s = max(a, finish of the previous kept tuple)``, its queueing latency is ``s - a`` and its
completion latency ``s + durations[i] - a``.  Completions at or before an arrival are handled
before that arrival (2.6).  The shedder decides at once, from its own state and the arrival time
only, never from the tuple's key:

* a tuple of the plan's ``drop`` is dropped at once (NS drops none; BL drops tuple ``i`` when
  ``coins[i] < max(0, u)``, 2.5.1, A11); without ``check`` every other tuple is kept;
* with ``check`` (SM, FK, LAS) the shedder runs SHED/CHECK (2.3): ``x = a - T0``, ``q^ = max(0,
  C^ - x)``; the look-ahead AVG(tau) check drops when ``(Qsum + q^) / (l + 1) > tau`` (A2), the
  ``goal="max"`` check when ``q^ > tau`` (A18); a kept tuple adds ``q^`` to ``Qsum`` and one to
  ``l`` and moves the clock to ``C^ = max(C^, x) + (1 + infl) * EST(t)``.  ``literal_clock``
  removes both ``max`` clamps (A1).  ``infl`` is the plan's ``inflation``.  EST is the plan's
  ``estimates`` (per tuple, or one number for all) for a static estimator (SM: the constant
  ``wbar``; FK: the exact ``durations[i]``), which starts in RUN (A9, A10); the online estimator
  (LAS) is the Count-Min point query of 2.1, with ``infl = inflation`` (default ``epsilon``,
  A25).
* The online estimator's operator (LAS, 2.2) keeps Count-Min matrices ``Fo`` (counts) and ``Wo``
  (summed measured durations), ``r = ceil(log2(1/delta))`` rows by ``c = round(e/epsilon)``
  columns (A4), rows hashed by Carter-Wegman ``h_i(x) = ((a_i x + b_i) mod (2^31 - 1)) mod c``.
  On the k-th executed tuple it sets its clock ``C`` to the finish time minus ``T0``
  (``literal_clock``: adds the duration), answers a piggy-backed ``(C^, kappa)`` with ``Delta =
  C - C^``, and when ``k mod N == 0`` takes the cell ratios ``R = Wo / Fo`` (0 on empty cells):
  in START it stores them as its snapshot ``S``, in STABILIZING it ships ``(Fo, Wo)`` to the
  shedder when ``sum|S - R| / sum S <= mu`` (``inf`` when ``sum S == 0``) and restarts empty in
  START, else ``S = R``.  Only then is the tuple itself recorded (the listing's order, A16).
* The online estimator's shedder (LAS, 2.3) is NOP (keep, no estimate, no clock) until its first
  matrices, then SEND: the next kept tuple carries ``(C^, kappa)`` and the shedder goes to RUN;
  matrices may arrive in any mode and always put it back in SEND.  A returned ``Delta`` is
  applied as ``corr = Delta - (kappa - kappa_sent)`` (A15; ``literal_sync``: ``corr = Delta``),
  with ``C^ += corr`` and ``kappa += corr``.  Messages travel instantly.
* Warm start (A5): an untimed warm-up sample runs through the operator (cycling through it up to
  64 times) until it ships its first matrices; the shedder starts in SEND with that pair and the
  operator restarts empty in START with ``C = 0``.  Without a sample, or when the sample never
  yields a pair, LAS starts cold in NOP.

Everything after input validation runs in one ``@njit`` loop over flat arrays; pending
completions sit in a ring buffer.  One run is ``O(m r)`` plus ``O(r c)`` per ``N`` executions.
Pending completions are not drained at the end (A17).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from skewbench.jit import njit

from skewbench.errors import SkewbenchError
from skewbench.simulation import fifo_start

PRIME = 2**31 - 1
#: largest number of sketch columns (epsilon = 0 or tiny epsilon would ask for more)
MAX_COLUMNS = 1 << 16
#: largest number of sketch rows (delta >= 2^-20, about 1e-6): LAS keeps every tuple's column in
#: each row (8 bytes per tuple and row; the paper's delta = 0.1 has 4 rows)
MAX_ROWS = 20
#: cap on the passes through a warm-up sample (A5)
WARM_PASSES = 64
_NOP, _SEND, _RUN = 0, 1, 2
_START, _STAB = 0, 1
_COIN_TAG = 0xB1


def sketch_shape(epsilon: float, delta: float) -> tuple[int, int]:
    """Count-Min rows and columns (2.1, A4): ``r = ceil(log2(1/delta))`` and ``c = round(e/epsilon)``
    (nearest integer, halves up), so ``(0.05, 0.1) -> (4, 54)`` and ``(0.7, 0.25) -> (2, 4)``.

    ``c`` is capped at :data:`MAX_COLUMNS` (which ``epsilon = 0`` gets); pass ``columns`` to
    :func:`simulate` for another width.
    """
    if not 0.0 < delta < 1.0:
        raise SkewbenchError(f"las: delta must be in (0, 1), got {delta!r}")
    if not epsilon >= 0.0:
        raise SkewbenchError(f"las: epsilon must be >= 0, got {epsilon!r}")
    r = max(1, int(math.ceil(math.log2(1.0 / delta) - 1e-12)))
    if r > MAX_ROWS:
        raise SkewbenchError(f"las: delta must be >= 2^-{MAX_ROWS} (at most {MAX_ROWS} Count-Min rows: every tuple "
                             f"keeps a column per row), got {delta!r}")
    if epsilon == 0.0 or math.e / epsilon >= MAX_COLUMNS:
        return r, MAX_COLUMNS
    return r, max(1, int(math.floor(math.e / epsilon + 0.5)))


def hash_params(seed: int, rows: int) -> tuple[np.ndarray, np.ndarray]:
    """Carter-Wegman parameters per row, drawn from the run seed: int64 ``a`` in ``[1, p-1]`` and
    ``b`` in ``[0, p-1]`` with ``p = 2^31 - 1``."""
    rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence(int(seed), spawn_key=(0x1A5,))))
    a = rng.integers(1, PRIME, size=rows, dtype=np.int64)
    b = rng.integers(0, PRIME, size=rows, dtype=np.int64)
    return a, b


def bl_coins(seed: int, m: int) -> np.ndarray:
    """The Base Line's default uniforms for a run seed (drop tuple ``i`` if ``coins[i] < max(0, u)``)."""
    rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence(int(seed), spawn_key=(_COIN_TAG,))))
    return rng.random(m)


@dataclass(frozen=True)
class LASConfig:
    """Parameters of one simulation; only the ones its shedder uses matter."""

    tau: float                        # ms, the bound on the running average queueing latency
    epsilon: float = 0.05             # Count-Min precision (c = round(e/epsilon)) and LAS's inflation
    delta: float = 0.1                # Count-Min failure probability (r = ceil(log2(1/delta)))
    window: int = 1024                # N, executed tuples between two stability checks
    mu: float = 0.05                  # stability tolerance of the operator's snapshot test
    inflation: float | None = None    # LAS's over-estimate factor 1 + inflation; None -> epsilon (A25)
    literal_clock: bool = False       # A1 ablation: no max() clamps, operator clock = sum of durations
    literal_sync: bool = False        # A15 ablation: apply every Delta in full
    goal: str = "avg"                 # CHECK goal: "avg" (AVG(tau)) or "max" (drop if q^ > tau, A18)
    u: float = 0.0                    # BL drops with probability max(0, u)
    wbar: float = 1.0                 # SM's constant estimate (ms)


@dataclass
class Trace:
    """One run: per-tuple arrays over the ``m`` arrivals plus LAS's diagnostics."""

    dropped: np.ndarray   # bool[m]
    q: np.ndarray         # float64[m] queueing latency, NaN where dropped
    c: np.ndarray         # float64[m] completion latency, NaN where dropped
    qhat: np.ndarray      # float64[m] the shedder's estimate for kept tuples, NaN if dropped / not estimated
    matrices: int         # matrix pairs received by the shedder (LAS, including the warm-start pair)
    nop_tuples: int       # tuples handled in NOP mode
    deltas: np.ndarray    # float64[k] the corrections applied, in order
    belief: float         # Qsum / l at the end (NaN if l == 0)
    warm_started: bool


# --------------------------------------------------------------------------------------------
# Count-Min pieces shared by operator and shedder

@njit(cache=True)
def _mod_p(key, a, b):
    # (a key + b) mod p with p = 2^31 - 1: fold the high bits (2^31 == 1 mod p) instead of
    # dividing by p; a key + b < 2^62 + 2^31 fits int64
    x = a * key + b
    x = (x & 2147483647) + (x >> 31)
    x = (x & 2147483647) + (x >> 31)
    if x >= 2147483647:
        x -= 2147483647
    return x


@njit(cache=True)
def _col(key, a, b, c):
    # ((a key + b) mod p) mod c
    return _mod_p(key, a, b) % c


@njit(cache=True)
def _col_fast(key, a, b, c, inv_c):
    # _col with the final ``mod c`` by a float reciprocal and one correction step
    # (exact: x < 2^31, so x * inv_c is off by far less than one)
    x = _mod_p(key, a, b)
    y = x - np.int64(x * inv_c) * c
    if y < 0:
        y += c
    elif y >= c:
        y -= c
    return y


@njit(cache=True)
def _record(F, W, key, dur, ha, hb):
    c = F.shape[1]
    for i in range(F.shape[0]):
        j = _col(key, ha[i], hb[i], c)
        F[i, j] += 1.0
        W[i, j] += dur


@njit(cache=True)
def _record_cols(F, W, cols, t, dur):
    for i in range(F.shape[0]):
        j = cols[t, i]
        F[i, j] += 1.0
        W[i, j] += dur


@njit(cache=True)
def _est_cols(F, W, cols, t):
    # EST of tuple t from its precomputed columns cols[t, :]
    best = F[0, cols[t, 0]]
    bw = W[0, cols[t, 0]]
    for i in range(1, F.shape[0]):
        j = cols[t, i]
        if F[i, j] < best:  # strict: ties keep the lowest row (A23)
            best = F[i, j]
            bw = W[i, j]
    if best > 0.0:
        return bw / best
    return _mean0(F, W)


@njit(cache=True)
def _mean0(F, W):
    sf = 0.0
    sw = 0.0
    for j in range(F.shape[1]):
        sf += F[0, j]
        sw += W[0, j]
    if sf > 0.0:
        return sw / sf
    return 0.0


@njit(cache=True)
def _est(F, W, key, ha, hb):
    cols = np.empty((1, F.shape[0]), dtype=np.int64)
    for i in range(F.shape[0]):
        cols[0, i] = _col(key, ha[i], hb[i], F.shape[1])
    return _est_cols(F, W, cols, 0)


@njit(cache=True)
def _window_check(Fo, Wo, S, phase, mu):
    """The ``k mod N == 0`` step of OP_EXECUTED: returns ``(ship, new phase)``; updates ``S``."""
    r, c = Fo.shape
    if phase == _START:
        for i in range(r):
            for j in range(c):
                S[i, j] = Wo[i, j] / Fo[i, j] if Fo[i, j] > 0.0 else 0.0
        return False, _STAB
    num = 0.0
    den = 0.0
    for i in range(r):
        for j in range(c):
            rv = Wo[i, j] / Fo[i, j] if Fo[i, j] > 0.0 else 0.0
            num += abs(S[i, j] - rv)
            den += S[i, j]
    eta = num / den if den > 0.0 else np.inf
    if eta <= mu:
        return True, _START
    for i in range(r):
        for j in range(c):
            S[i, j] = Wo[i, j] / Fo[i, j] if Fo[i, j] > 0.0 else 0.0
    return False, _STAB


@njit(cache=True)
def _cols_kernel(keys, ha, hb, c):
    out = np.empty((ha.shape[0], keys.shape[0]), dtype=np.int64)
    for i in range(ha.shape[0]):
        for t in range(keys.shape[0]):
            out[i, t] = _col(keys[t], ha[i], hb[i], c)
    return out


@njit(cache=True)
def _sketch_kernel(keys, durs, ha, hb, c):
    F = np.zeros((ha.shape[0], c))
    W = np.zeros((ha.shape[0], c))
    for t in range(keys.shape[0]):
        _record(F, W, keys[t], durs[t], ha, hb)
    return F, W


@njit(cache=True)
def _est_kernel(F, W, keys, ha, hb):
    out = np.empty(keys.shape[0])
    for t in range(keys.shape[0]):
        out[t] = _est(F, W, keys[t], ha, hb)
    return out


def hash_columns(keys, hash_a, hash_b, columns: int) -> np.ndarray:
    """``h_i(key)`` for every row ``i`` and key: int64 ``[r, len(keys)]``, values in ``[0, columns)``."""
    return _cols_kernel(np.ascontiguousarray(keys, dtype=np.int64), np.asarray(hash_a, dtype=np.int64),
                        np.asarray(hash_b, dtype=np.int64), int(columns))


def sketch(keys, durations, hash_a, hash_b, columns: int) -> tuple[np.ndarray, np.ndarray]:
    """The Count-Min pair ``(F, W)`` (float64 ``[r, columns]``) of a sequence of measured tuples."""
    return _sketch_kernel(np.ascontiguousarray(keys, dtype=np.int64),
                          np.ascontiguousarray(durations, dtype=np.float64),
                          np.asarray(hash_a, dtype=np.int64), np.asarray(hash_b, dtype=np.int64), int(columns))


def estimate(F, W, keys, hash_a, hash_b) -> np.ndarray:
    """EST(F, W, t) of 2.1 for each key: the min-count row's ratio (lowest row on ties); the
    sketch-wide mean for a key no row has seen, 0 for an empty sketch (A3)."""
    return _est_kernel(np.asarray(F, dtype=np.float64), np.asarray(W, dtype=np.float64),
                       np.ascontiguousarray(keys, dtype=np.int64),
                       np.asarray(hash_a, dtype=np.int64), np.asarray(hash_b, dtype=np.int64))


# --------------------------------------------------------------------------------------------
# the warm-up (A5) and the simulation loop (2.6)

@njit(cache=True)
def _warm(wkeys, wdurs, ha, hb, c, N, mu, passes):
    """Untimed operator over a cycled warm-up sample until its first shipped pair."""
    r = ha.shape[0]
    Fo = np.zeros((r, c))
    Wo = np.zeros((r, c))
    S = np.zeros((r, c))
    phase = np.int64(_START)  # one type throughout (the ahead-of-time compiler does not widen literals)
    k = 0
    for _ in range(passes):
        for t in range(wkeys.shape[0]):
            k += 1
            if k % N == 0:
                ship, phase = _window_check(Fo, Wo, S, phase, mu)
                if ship:
                    return True, Fo, Wo
            _record(Fo, Wo, wkeys[t], wdurs[t], ha, hb)
    return False, Fo, Wo


@njit(cache=True)
def _simulate(keys, arrivals, durations, pre_drop, check, est, est_step, online, tau, goal_max, infl, literal_clock,
              literal_sync, N, mu, ha, hb, c, warm, Fw, Ww):
    m = keys.shape[0]
    r = ha.shape[0]
    nan = np.nan
    dropped = np.zeros(m, dtype=np.bool_)
    q = np.full(m, nan)
    cl = np.full(m, nan)
    qhat = np.full(m, nan)
    deltas = np.empty(m + 1)
    nd = 0
    if m == 0:
        return dropped, q, cl, qhat, 0, 0, deltas[:0], 0.0, 0
    T0 = arrivals[0]
    busy = T0
    # shedder state
    mode = _RUN
    if online:
        mode = _SEND if warm else _NOP
    Chat = 0.0
    Qsum = 0.0
    ell = 0
    kappa = 0.0
    matrices = 1 if (online and warm) else 0
    nop = 0
    Fl = np.zeros((r, c))
    Wl = np.zeros((r, c))
    if online and warm:
        Fl[:, :] = Fw
        Wl[:, :] = Ww
    # operator state (the online estimator only)
    Fo = np.zeros((r, c))
    Wo = np.zeros((r, c))
    S = np.zeros((r, c))
    phase = np.int64(_START)  # one type throughout (the ahead-of-time compiler does not widen literals)
    k = 0
    C = 0.0
    # pending completions: ring buffer (FIFO order == finish order)
    cap = m
    p_fin = np.empty(cap)
    p_idx = np.empty(cap, dtype=np.int64)
    p_dur = np.empty(cap)
    p_has = np.zeros(cap, dtype=np.bool_)
    p_ch = np.empty(cap)
    p_kp = np.empty(cap)
    head = 0
    size = 0
    one_plus = 1.0 + infl
    has_drop = pre_drop.shape[0] > 0
    if online:
        cols = np.empty((m, r), dtype=np.int64)  # each tuple hashed once, for EST and for the operator
        inv_c = 1.0 / c
        for i in range(m):
            for j in range(r):
                cols[i, j] = _col_fast(keys[i], ha[j], hb[j], c, inv_c)
    else:
        cols = np.empty((0, r), dtype=np.int64)
    for i in range(m):
        a = arrivals[i]
        key = keys[i]
        if online:
            while size > 0 and p_fin[head] <= a:
                # OP_EXECUTED
                k += 1
                if literal_clock:
                    C += p_dur[head]
                else:
                    C = p_fin[head] - T0
                if p_has[head]:
                    d = C - p_ch[head]
                    corr = d if literal_sync else d - (kappa - p_kp[head])
                    Chat += corr
                    kappa += corr
                    deltas[nd] = corr
                    nd += 1
                if k % N == 0:
                    ship, phase = _window_check(Fo, Wo, S, phase, mu)
                    if ship:
                        Fl[:, :] = Fo
                        Wl[:, :] = Wo
                        Fo[:, :] = 0.0
                        Wo[:, :] = 0.0
                        mode = _SEND
                        matrices += 1
                _record_cols(Fo, Wo, cols, p_idx[head], p_dur[head])
                head += 1
                if head == cap:
                    head = 0
                size -= 1
        # SHED
        keep = True
        piggy = False
        if has_drop and pre_drop[i]:
            keep = False
        elif check:
            if mode == _NOP:
                nop += 1
            else:
                x = a - T0
                qh = Chat - x
                if not literal_clock and qh < 0.0:
                    qh = 0.0
                if goal_max:
                    keep = not (qh > tau)
                else:
                    keep = not ((Qsum + qh) / (ell + 1) > tau)
                if keep:
                    Qsum += qh
                    ell += 1
                    qhat[i] = qh
                    base = Chat
                    if not literal_clock and x > base:
                        base = x
                    if online:
                        e = _est_cols(Fl, Wl, cols, i)
                    else:
                        if est_step == 2:  # the estimates are the tuples' own durations (Full Knowledge)
                            e = durations[i]
                        else:
                            e = est[i * est_step]  # est_step 0: one estimate for every tuple
                    Chat = base + one_plus * e
                    if mode == _SEND:
                        piggy = True
                        mode = _RUN
        if keep:
            s = fifo_start(a, busy)  # the FIFO rule grouping's worker queues use
            w = durations[i]
            busy = s + w
            q[i] = s - a
            cl[i] = busy - a
            if online:
                tail = head + size
                if tail >= cap:
                    tail -= cap
                p_fin[tail] = busy
                p_idx[tail] = i
                p_dur[tail] = w
                p_has[tail] = piggy
                p_ch[tail] = Chat
                p_kp[tail] = kappa
                size += 1
        else:
            dropped[i] = True
    return dropped, q, cl, qhat, matrices, nop, deltas[:nd], Qsum, ell


def _as_1d(x, dtype, name: str) -> np.ndarray:
    arr = np.ascontiguousarray(x, dtype=dtype)
    if arr.ndim != 1:
        raise SkewbenchError(f"las: {name} must be one-dimensional, got shape {arr.shape}")
    return arr


def _check_keys(keys: np.ndarray, name: str) -> None:
    if len(keys) and keys.min() < 0:
        raise SkewbenchError(f"las: {name} must be >= 0, got {int(keys.min())}")
    if len(keys) and keys.max() >= 2**31:
        raise SkewbenchError(f"las: {name} must be < 2^31, got {int(keys.max())}")


def _check_durations(d: np.ndarray, name: str) -> None:
    if len(d) and not (np.all(d > 0) and np.all(np.isfinite(d))):
        bad = d[~((d > 0) & np.isfinite(d))][0]
        raise SkewbenchError(f"las: {name} must be finite and > 0, got {float(bad)!r}")


@dataclass(frozen=True)
class OperatorPlan:
    """What an operator shedder supplies to :func:`simulate` for one stream (its ``plan`` method).

    ``drop`` (bool, one per tuple; None: none) marks the tuples dropped before any check;
    ``check`` sends every other tuple through SHED/CHECK (2.3), whose estimate of a tuple's
    execution time is ``estimates`` (finite and >= 0: one per tuple, or one number for every
    tuple) for a static estimator, or the simulator's online estimator (LAS's Count-Min sketch
    with operator feedback) when ``online``.
    ``inflation`` is the ``infl`` of the clock update ``C^ = ... + (1 + infl) EST``.
    """

    drop: np.ndarray | None = None
    check: bool = False
    estimates: np.ndarray | float | None = None
    online: bool = False
    inflation: float = 0.0


def _check_stream(keys, arrivals, durations) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    keys = _as_1d(keys, np.int64, "keys")
    arrivals = _as_1d(arrivals, np.float64, "arrivals")
    durations = _as_1d(durations, np.float64, "durations")
    m = len(keys)
    if len(arrivals) != m or len(durations) != m:
        raise SkewbenchError(f"las: keys, arrivals and durations must have the same length, got "
                             f"{m}, {len(arrivals)} and {len(durations)}")
    _check_keys(keys, "keys")
    _check_durations(durations, "durations")
    if m and not np.all(np.isfinite(arrivals)):
        raise SkewbenchError("las: arrivals must be finite")
    if m > 1 and np.any(np.diff(arrivals) < 0):
        raise SkewbenchError("las: arrivals must be non-decreasing")
    return keys, arrivals, durations


def _check_config(cfg: LASConfig) -> None:
    if not (cfg.tau >= 0):
        raise SkewbenchError(f"las: tau must be >= 0, got {cfg.tau!r}")
    if not (cfg.epsilon >= 0):
        raise SkewbenchError(f"las: epsilon must be >= 0, got {cfg.epsilon!r}")
    if not (0 < cfg.delta < 1):
        raise SkewbenchError(f"las: delta must be in (0, 1), got {cfg.delta!r}")
    if int(cfg.window) != cfg.window or cfg.window < 1:
        raise SkewbenchError(f"las: window must be an integer >= 1, got {cfg.window!r}")
    if math.isnan(cfg.mu):
        raise SkewbenchError("las: mu must be a number, got nan")
    if cfg.goal not in ("avg", "max"):
        raise SkewbenchError(f"las: goal must be 'avg' or 'max', got {cfg.goal!r}")
    infl = cfg.epsilon if cfg.inflation is None else float(cfg.inflation)
    if not (infl >= 0):
        raise SkewbenchError(f"las: inflation must be >= 0, got {cfg.inflation!r}")


def _hashes(cfg: LASConfig, seed: int, hash_a, hash_b, columns) -> tuple[np.ndarray, np.ndarray, int]:
    """The Count-Min rows' hash parameters and the sketch width."""
    r, c = sketch_shape(cfg.epsilon, cfg.delta)
    if columns is not None:
        if int(columns) != columns or columns < 1:
            raise SkewbenchError(f"las: columns must be an integer >= 1, got {columns!r}")
        c = int(columns)
    if (hash_a is None) != (hash_b is None):
        raise SkewbenchError("las: give both hash_a and hash_b, or neither")
    if hash_a is None:
        ha, hb = hash_params(seed, r)
    else:
        ha = _as_1d(hash_a, np.int64, "hash_a")
        hb = _as_1d(hash_b, np.int64, "hash_b")
        if len(ha) != r or len(hb) != r:
            raise SkewbenchError(f"las: hash_a and hash_b need {r} entries (one per row), got {len(ha)} and {len(hb)}")
        if np.any(ha < 0) or np.any(ha >= PRIME) or np.any(hb < 0) or np.any(hb >= PRIME):
            raise SkewbenchError("las: hash parameters must lie in [0, 2^31 - 1)")
    return ha, hb, c


def _check_plan(plan: Any, durations: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """The plan's drop and estimate arrays as the kernel takes them (an empty ``drop``: none;
    the estimates' step: 0 when one number serves every tuple, 2 when they are the durations)."""
    m = len(durations)
    if not isinstance(plan, OperatorPlan):
        raise SkewbenchError(f"las: a shedder's plan must be an OperatorPlan, got {type(plan).__name__}")
    drop = np.zeros(0, dtype=np.bool_) if plan.drop is None else np.ascontiguousarray(plan.drop, dtype=np.bool_)
    if plan.drop is not None and drop.shape != (m,):
        raise SkewbenchError(f"las: the plan's drop needs one entry per tuple ({m}), got shape {drop.shape}")
    if not (plan.inflation >= 0 and math.isfinite(plan.inflation)):
        raise SkewbenchError(f"las: the plan's inflation must be finite and >= 0, got {plan.inflation!r}")
    if not plan.check or plan.online:
        return drop, np.zeros(1), 0
    if plan.estimates is None:
        raise SkewbenchError("las: a plan that checks needs estimates or the online estimator")
    est = np.ascontiguousarray(np.atleast_1d(plan.estimates), dtype=np.float64)
    one = np.ndim(plan.estimates) == 0
    if not one and est.shape != (m,):
        raise SkewbenchError(f"las: the plan's estimates need one entry per tuple ({m}) or one number, got shape "
                             f"{est.shape}")
    if m and est is not durations and not (est.min() >= 0 and est.max() < math.inf):  # nan fails the first
        raise SkewbenchError("las: the plan's estimates must be finite and >= 0")
    return drop, est, 0 if one else (2 if est is durations else 1)


def _warm_sample(warm_keys, warm_durations) -> tuple[np.ndarray, np.ndarray] | None:
    if (warm_keys is None) != (warm_durations is None):
        raise SkewbenchError("las: give both warm_keys and warm_durations, or neither")
    if warm_keys is None:
        return None
    wk = _as_1d(warm_keys, np.int64, "warm_keys")
    wd = _as_1d(warm_durations, np.float64, "warm_durations")
    if len(wk) != len(wd):
        raise SkewbenchError(f"las: warm_keys and warm_durations must have the same length, got "
                             f"{len(wk)} and {len(wd)}")
    _check_keys(wk, "warm_keys")
    _check_durations(wd, "warm_durations")
    return wk, wd


def simulate(shedder: Any, keys, arrivals, durations, config: LASConfig, seed: int = 0, *,
             coins: np.ndarray | None = None,
             warm_keys: np.ndarray | None = None, warm_durations: np.ndarray | None = None,
             hash_a: np.ndarray | None = None, hash_b: np.ndarray | None = None,
             columns: int | None = None) -> Trace:
    """Run one operator shedder over a stream (las.spec.md 2.6) and return its :class:`Trace`.

    ``shedder`` has a method ``plan(keys, arrivals, durations, config, seed, coins)`` returning an
    :class:`OperatorPlan` (the operator strategies of :mod:`skewbench.shedding.strategies`).
    ``keys`` (int, ``0 <= key < 2^31``), ``arrivals`` (ms, non-decreasing) and ``durations`` (ms,
    > 0: the true duration of each tuple, which FK uses as its estimate and LAS's operator
    measures) have one entry per tuple.  ``seed`` draws the Count-Min hash parameters when they
    are not given, and the shedder draws from it what it needs (BL: its ``coins``, when not
    given).  ``warm_keys`` and ``warm_durations`` give the online estimator's warm-up sample (A5;
    ``None`` starts cold).  ``columns`` overrides the sketch width ``round(e/epsilon)``, e.g. for
    an injective test hash.
    """
    if not callable(getattr(shedder, "plan", None)):
        raise SkewbenchError(f"las: the shedder must have a plan method, got {type(shedder).__name__}")
    keys, arrivals, durations = _check_stream(keys, arrivals, durations)
    m = len(keys)
    cfg = config
    _check_config(cfg)
    ha, hb, c = _hashes(cfg, seed, hash_a, hash_b, columns)
    if coins is not None:
        coins = _as_1d(coins, np.float64, "coins")
        if len(coins) != m:
            raise SkewbenchError(f"las: coins must have one entry per tuple ({m}), got {len(coins)}")
    sample = _warm_sample(warm_keys, warm_durations)
    plan = shedder.plan(keys, arrivals, durations, cfg, seed, coins)
    drop, est, est_step = _check_plan(plan, durations)  # FK's estimates are the checked durations
    N = int(cfg.window)
    warm = False
    Fw = np.zeros((len(ha), c))
    Ww = np.zeros((len(ha), c))
    if plan.online and sample is not None and len(sample[0]) > 0:
        warm, Fw, Ww = _warm(sample[0], sample[1], ha, hb, c, N, float(cfg.mu), WARM_PASSES)
        warm = bool(warm)
    res = _simulate(keys, arrivals, durations, drop, bool(plan.check), est, est_step, bool(plan.online),
                    float(cfg.tau), cfg.goal == "max", float(plan.inflation), bool(cfg.literal_clock),
                    bool(cfg.literal_sync), N, float(cfg.mu), ha, hb, c, warm, Fw, Ww)
    dropped, q, cl, qhat, matrices, nop, deltas, qsum, ell = res
    return Trace(dropped=dropped, q=q, c=cl, qhat=qhat, matrices=int(matrices), nop_tuples=int(nop),
                 deltas=np.array(deltas, dtype=np.float64), belief=float(qsum / ell) if ell > 0 else math.nan,
                 warm_started=warm)


def prefix_violations(q, dropped, tau: float) -> tuple[float, float]:
    """Prefix means ``Qbar(j)`` over the kept tuples (3): the share of kept ``j`` with
    ``Qbar(j) > tau + 1e-9`` and ``max_j Qbar(j)`` (``(0.0, nan)`` when nothing is kept)."""
    q = np.asarray(q, dtype=np.float64)
    kept = ~np.asarray(dropped, dtype=bool)
    if len(q) != len(kept):
        raise SkewbenchError(f"las: q and dropped must have the same length, got {len(q)} and {len(kept)}")
    qk = q[kept]
    if len(qk) == 0:
        return 0.0, math.nan
    pm = np.cumsum(qk) / np.arange(1, len(qk) + 1)
    return float(np.mean(pm > tau + 1e-9)), float(pm.max())
