"""Load-Aware Shedding (las.spec.md): a virtual-time simulation of source -> shedder -> one FIFO
operator, for LAS and its comparison strategies.

Model (las.spec.md 1-2)
-----------------------
Tuple ``i`` arrives at ``arrivals[i]`` ms (``T0 = arrivals[0]``) and, if kept, runs
``durations[i]`` ms on the operator, a FIFO queue without preemption: it starts at
``s = max(a, finish of the previous kept tuple)``; its queueing latency is ``s - a`` and its
completion latency ``s + durations[i] - a``.  Completions at or before an arrival are handled
before it (2.6).  The shedder decides from its own state only (never the tuple's key):

* ``ns``: keeps everything; ``bl``: drops with probability ``max(0, u)`` (coins given or drawn
  from the seed);
* ``sm``, ``fk``, ``las``: the SHED/CHECK rule of 2.3 with the look-ahead AVG(tau) check (A2)
  (``goal="max"``: drop when the estimate exceeds tau, A18), the clamped clock of A1
  (``q^ = max(0, C^ - x)``, ``C^ = max(C^, x) + estimate``; ``literal_clock`` drops both
  clamps), estimates ``wbar`` (SM), the exact duration (FK), or the Count-Min estimate times
  ``1 + inflation`` (LAS; ``inflation`` defaults to ``epsilon``, A25).
* LAS's operator (2.2) records counts and durations of executed tuples in Count-Min matrices
  ``r = ceil(log2(1/delta))`` x ``c = round(e/epsilon)`` with Carter-Wegman hashes
  ``((a x + b) mod (2^31 - 1)) mod c``; every ``N`` executions it compares the cell ratios with
  its snapshot and ships the matrices when they moved by at most ``mu`` (relative L1), then
  starts over.  The shedder is NOP until the first matrices (keeps everything), then SEND (the
  next kept tuple carries ``(C^, kappa)``), then RUN.  When the operator executes the carrying
  tuple it returns ``Delta = C - C^_sent``; the shedder applies ``Delta - (kappa - kappa_sent)``
  (the A15 guard; ``literal_sync`` applies ``Delta``).  ``C`` is the executed tuple's finish time
  minus ``T0`` (A1); with ``literal_clock`` it is the running sum of executed durations.
* Warm start (A5): an untimed warm-up sample runs through the operator until it ships its first
  matrices (cycling through the sample up to 64 times); the shedder starts in SEND with them and
  the operator restarts empty.  Without a sample, or when it never ships, LAS starts cold (NOP).

Everything runs in one ``@njit`` loop over flat arrays; one run is ``O(m r)``.  The operator's
FIFO rule is :func:`skewbench.simulation.fifo_start`, shared with the grouping family's worker
queues.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numba import njit

from skewbench.errors import SkewbenchError
from skewbench.simulation import fifo_start

KINDS = ("ns", "bl", "sm", "fk", "las")
PRIME = 2**31 - 1
_NOP, _SEND, _RUN = 0, 1, 2
_WARM_PASSES = 64


def sketch_shape(epsilon: float, delta: float) -> tuple[int, int]:
    """Count-Min rows and columns: ``r = ceil(log2(1/delta))``, ``c = round(e/epsilon)`` (A4)."""
    r = max(1, int(math.ceil(math.log2(1.0 / delta) - 1e-12)))
    c = max(1, int(round(math.e / epsilon))) if epsilon > 0 else 1 << 16
    return r, c


def hash_params(seed: int, rows: int) -> tuple[np.ndarray, np.ndarray]:
    """Carter-Wegman ``(a, b)`` per row, drawn from the run seed."""
    rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence(seed, spawn_key=(0x1A5,))))
    a = rng.integers(1, PRIME, size=rows, dtype=np.int64)
    b = rng.integers(0, PRIME, size=rows, dtype=np.int64)
    return a, b


@dataclass(frozen=True)
class LASConfig:
    tau: float
    epsilon: float = 0.05
    delta: float = 0.1
    window: int = 1024
    mu: float = 0.05
    inflation: float | None = None
    literal_clock: bool = False
    literal_sync: bool = False
    goal: str = "avg"
    u: float = 0.0
    wbar: float = 1.0


@dataclass
class Trace:
    dropped: np.ndarray
    q: np.ndarray
    c: np.ndarray
    qhat: np.ndarray
    matrices: int
    nop_tuples: int
    deltas: np.ndarray
    belief: float
    warm_started: bool


@njit(cache=True)
def _col(key, a, b, c):
    return ((a * key + b) % 2147483647) % c


@njit(cache=True)
def _estimate(F, W, key, ha, hb):
    r, c = F.shape
    best = -1
    bf = 0.0
    for i in range(r):
        f = F[i, _col(key, ha[i], hb[i], c)]
        if best < 0 or f < bf:
            best, bf = i, f
    if bf > 0:
        return W[best, _col(key, ha[best], hb[best], c)] / bf
    sf = 0.0
    sw = 0.0
    for j in range(c):
        sf += F[0, j]
        sw += W[0, j]
    return sw / sf if sf > 0 else 0.0


@njit(cache=True)
def _op_check(Fo, Wo, S, phase, mu):
    """The stability check every N executions; returns (send, new phase)."""
    r, c = Fo.shape
    if phase == 0:
        for i in range(r):
            for j in range(c):
                S[i, j] = Wo[i, j] / Fo[i, j] if Fo[i, j] > 0 else 0.0
        return False, 1
    num = 0.0
    den = 0.0
    for i in range(r):
        for j in range(c):
            rr = Wo[i, j] / Fo[i, j] if Fo[i, j] > 0 else 0.0
            num += abs(S[i, j] - rr)
            den += S[i, j]
    eta = num / den if den > 0 else np.inf
    if eta <= mu:
        return True, 0
    for i in range(r):
        for j in range(c):
            S[i, j] = Wo[i, j] / Fo[i, j] if Fo[i, j] > 0 else 0.0
    return False, 1


@njit(cache=True)
def _record(Fo, Wo, key, dur, ha, hb):
    r, c = Fo.shape
    for i in range(r):
        j = _col(key, ha[i], hb[i], c)
        Fo[i, j] += 1.0
        Wo[i, j] += dur


@njit(cache=True)
def _warm(wk, wd, N, mu, ha, hb, r, c, passes):
    """Run the warm-up sample through a fresh operator until it ships; (shipped, F, W)."""
    Fo = np.zeros((r, c))
    Wo = np.zeros((r, c))
    S = np.zeros((r, c))
    phase = 0
    k = 0
    for _ in range(passes):
        for i in range(wk.shape[0]):
            k += 1
            if k % N == 0:
                send, phase = _op_check(Fo, Wo, S, phase, mu)
                if send:
                    return True, Fo.copy(), Wo.copy()
            _record(Fo, Wo, wk[i], wd[i], ha, hb)
    return False, Fo, Wo


@njit(cache=True)
def _simulate(kind, keys, arr, dur, coins, tau, u, wbar, infl, goal_max, N, mu, literal_clock, literal_sync,
              ha, hb, r, c, warm, F0, W0):
    m = keys.shape[0]
    dropped = np.zeros(m, dtype=np.bool_)
    q = np.full(m, np.nan)
    cl = np.full(m, np.nan)
    qhat = np.full(m, np.nan)
    deltas = np.empty(m)
    nd = 0
    # pending completions (FIFO ring; at most m)
    pf = np.empty(m)
    pk = np.empty(m, dtype=np.int64)
    pd = np.empty(m)
    pp = np.zeros(m, dtype=np.bool_)
    pc = np.empty(m)
    pkap = np.empty(m)
    head = 0
    tail = 0
    busy = -np.inf
    T0 = arr[0] if m > 0 else 0.0
    # operator (LAS only)
    Fo = np.zeros((r, c))
    Wo = np.zeros((r, c))
    S = np.zeros((r, c))
    phase = 0
    k = 0
    C = 0.0
    # shedder
    mode = _NOP if kind == 4 else _RUN
    Fl = np.zeros((r, c))
    Wl = np.zeros((r, c))
    matrices = 0
    if kind == 4 and warm:
        Fl[:, :] = F0
        Wl[:, :] = W0
        mode = _SEND
        matrices = 1
    chat = 0.0
    qsum = 0.0
    ell = 0
    kappa = 0.0
    nop = 0
    pu = u if u > 0 else 0.0
    for i in range(m):
        a = arr[i]
        if kind == 4:
            while head < tail and pf[head] <= a:
                k += 1
                if literal_clock:
                    C += pd[head]
                else:
                    C = pf[head] - T0
                if pp[head]:
                    delta = C - pc[head]
                    corr = delta if literal_sync else delta - (kappa - pkap[head])
                    chat += corr
                    kappa += corr
                    deltas[nd] = delta
                    nd += 1
                if k % N == 0:
                    send, phase = _op_check(Fo, Wo, S, phase, mu)
                    if send:
                        Fl[:, :] = Fo
                        Wl[:, :] = Wo
                        mode = _SEND
                        matrices += 1
                        Fo[:, :] = 0.0
                        Wo[:, :] = 0.0
                _record(Fo, Wo, pk[head], pd[head], ha, hb)
                head += 1
        keep = True
        carry = False
        if kind == 1:
            keep = not (coins[i] < pu)
        elif kind >= 2:
            if kind == 4 and mode == _NOP:
                nop += 1
            else:
                x = a - T0
                qh = chat - x
                if not literal_clock and qh < 0.0:
                    qh = 0.0
                if goal_max:
                    keep = not (qh > tau)
                    if keep:
                        qsum += qh
                        ell += 1
                else:
                    if (qsum + qh) / (ell + 1) > tau:
                        keep = False
                    else:
                        qsum += qh
                        ell += 1
                if keep:
                    qhat[i] = qh
                    base = chat
                    if not literal_clock and x > base:
                        base = x
                    if kind == 2:
                        est = wbar
                    elif kind == 3:
                        est = dur[i]
                    else:
                        est = _estimate(Fl, Wl, keys[i], ha, hb) * (1.0 + infl)
                    chat = base + est
                    if kind == 4 and mode == _SEND:
                        carry = True
                        mode = _RUN
        if keep:
            s = fifo_start(a, busy)
            busy = s + dur[i]
            q[i] = s - a
            cl[i] = busy - a
            if kind == 4:
                pf[tail] = busy
                pk[tail] = keys[i]
                pd[tail] = dur[i]
                pp[tail] = carry
                pc[tail] = chat
                pkap[tail] = kappa
                tail += 1
        else:
            dropped[i] = True
    belief = qsum / ell if ell > 0 else np.nan
    return dropped, q, cl, qhat, matrices, nop, deltas[:nd].copy(), belief


def simulate(kind: str, keys, arrivals, durations, config: LASConfig, seed: int = 0, *, coins=None,
             warm_keys=None, warm_durations=None, hash_a=None, hash_b=None) -> Trace:
    """Run one strategy over one stream (see the module docstring); returns its :class:`Trace`."""
    if kind not in KINDS:
        raise SkewbenchError(f"unknown shedding strategy kind '{kind}' ({', '.join(KINDS)})")
    keys = np.ascontiguousarray(keys, dtype=np.int64)
    arr = np.ascontiguousarray(arrivals, dtype=np.float64)
    dur = np.ascontiguousarray(durations, dtype=np.float64)
    m = len(keys)
    if len(arr) != m or len(dur) != m:
        raise SkewbenchError(f"keys, arrivals and durations differ in length ({m}, {len(arr)}, {len(dur)})")
    if m and (keys.min() < 0 or keys.max() >= PRIME):
        raise SkewbenchError("keys must be integers in [0, 2^31 - 1)")
    if m and not np.all(dur > 0):
        raise SkewbenchError("durations must be > 0 ms")
    if m > 1 and np.any(np.diff(arr) < 0):
        raise SkewbenchError("arrivals must be non-decreasing")
    cfg = config
    if not cfg.tau >= 0:
        raise SkewbenchError(f"tau must be >= 0 ms, got {cfg.tau}")
    if not cfg.epsilon >= 0:
        raise SkewbenchError(f"epsilon must be >= 0, got {cfg.epsilon}")
    if not 0 < cfg.delta < 1:
        raise SkewbenchError(f"delta must be in (0, 1), got {cfg.delta}")
    if cfg.window < 1:
        raise SkewbenchError(f"the operator window N must be >= 1, got {cfg.window}")
    if cfg.goal not in ("avg", "max"):
        raise SkewbenchError(f"goal must be avg or max, got {cfg.goal!r}")
    r, c = sketch_shape(cfg.epsilon, cfg.delta)
    if hash_a is None or hash_b is None:
        hash_a, hash_b = hash_params(seed, r)
    ha = np.ascontiguousarray(hash_a, dtype=np.int64)
    hb = np.ascontiguousarray(hash_b, dtype=np.int64)
    if len(ha) != r or len(hb) != r:
        raise SkewbenchError(f"hash parameters need {r} rows")
    if coins is None:
        coins = np.random.Generator(np.random.PCG64(np.random.SeedSequence(seed, spawn_key=(0xB1,)))).random(m)
    coins = np.ascontiguousarray(coins, dtype=np.float64)
    infl = cfg.epsilon if cfg.inflation is None else float(cfg.inflation)
    warm, F0, W0 = False, np.zeros((r, c)), np.zeros((r, c))
    if kind == "las" and warm_keys is not None and len(warm_keys):
        wk = np.ascontiguousarray(warm_keys, dtype=np.int64)
        wd = np.ascontiguousarray(warm_durations, dtype=np.float64)
        warm, F0, W0 = _warm(wk, wd, int(cfg.window), float(cfg.mu), ha, hb, r, c, _WARM_PASSES)
    d, q, cl, qh, mats, nop, deltas, belief = _simulate(
        KINDS.index(kind), keys, arr, dur, coins, float(cfg.tau), float(cfg.u), float(cfg.wbar), infl,
        cfg.goal == "max", int(cfg.window), float(cfg.mu), bool(cfg.literal_clock), bool(cfg.literal_sync),
        ha, hb, r, c, bool(warm), F0, W0)
    return Trace(d, q, cl, qh, int(mats), int(nop), deltas, float(belief), bool(warm))


def prefix_violations(q: np.ndarray, dropped: np.ndarray, tau: float) -> tuple[float, float]:
    """(share of kept positions j whose prefix mean queueing latency exceeds tau, the largest
    prefix mean)."""
    kept = ~np.asarray(dropped)
    qk = np.asarray(q)[kept]
    if len(qk) == 0:
        return 0.0, 0.0
    pm = np.cumsum(qk) / np.arange(1, len(qk) + 1)
    return float(np.mean(pm > tau + 1e-9)), float(pm.max())
