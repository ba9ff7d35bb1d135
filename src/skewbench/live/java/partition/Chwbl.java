package skewbench.partition;

import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;

/**
 * chwbl: consistent hashing with bounded loads (Mirrokni, Thorup, Zadimoghaddam, SODA 2018;
 * skewbench's practice.spec.md 2.1). Worker w owns {@code vnodes} points
 * mix64(seed_ring XOR (w * 2^32 + v)) on a ring of unsigned 64-bit positions, sorted by (position,
 * w, v); a key sits at mix64(seed_key XOR key) and goes to the first worker met clockwise from
 * its successor point whose load is below cap = ((T + 1) F + 100 n - 1) div (100 n), F the
 * balance factor in percent (at most 100 n: above it every load is below the cap). What the
 * source counts as load and T (accounting): "request", the tuples it sent to each worker;
 * "window", its last W - 1 decisions (W = window, 0: 100 n); "key", the keys it has placed on
 * each worker, a known key staying on its worker (window > 0: tumbling windows of W tuples, at
 * each window's end the keys not seen in it or the one before leave).
 */
public final class Chwbl implements Router {
    private enum Accounting { REQUEST, WINDOW, KEY }

    private final int n;
    private final long f, div, seedKey;
    private final long[] pos;
    private final int[] wk;
    private final Accounting accounting;
    private final long[] acc;
    private long total;  // T: tuples (request), decisions held (window), live keys (key)
    // window: the ring buffer of the last W - 1 decisions
    private final int held;
    private final int[] buf;
    private int head;
    // key: the source's key map (key -> {worker, window last seen}) and its per-worker key counts
    // by the parity of the window they were last seen in
    private final int window;
    private long tuples;
    private final HashMap<Long, long[]> keys = new HashMap<>();
    private final long[][] byWindow;
    private final int[] mark;
    private int epoch;

    public Chwbl(int workers, long seed, Map<String, String> params) {
        Params p = new Params("chwbl", params, "factor", "vnodes", "accounting", "window");
        long factor = p.longInteger("factor", 125, 100, 1_000_000_000_000_000_000L);
        int vnodes = p.integer("vnodes", 100, 1);
        if (vnodes > 10_000) throw new IllegalArgumentException("chwbl: vnodes must be an integer from 1 to 10000, got " + vnodes);
        if ((long) vnodes * workers > 1_000_000)
            throw new IllegalArgumentException("chwbl: vnodes x workers must be at most 1,000,000 ring nodes, got " + vnodes
                    + " x " + workers);
        String a = p.text("accounting", "request", "request", "window", "key");
        this.accounting = a.equals("request") ? Accounting.REQUEST : a.equals("window") ? Accounting.WINDOW : Accounting.KEY;
        int w = p.integer("window", 0, 0);
        if (w > 10_000_000) throw new IllegalArgumentException("chwbl: window must be an integer from 0 to 10000000, got " + w);
        if (accounting == Accounting.WINDOW && w == 0) w = 100 * workers;
        this.window = w;
        this.n = workers;
        this.div = 100L * workers;
        this.f = Math.min(factor, div);
        long[] seeds = Hashing.hashSeeds(seed, 2);
        this.seedKey = seeds[1];
        // the ring, sorted by (position unsigned, worker, virtual node)
        int nodes = workers * vnodes;
        long[] p0 = new long[nodes];
        Integer[] order = new Integer[nodes];
        for (int x = 0; x < workers; x++)
            for (int v = 0; v < vnodes; v++) {
                int i = x * vnodes + v;
                p0[i] = Hashing.mix64(seeds[0] ^ (((long) x << 32) + v));
                order[i] = i;
            }
        Arrays.sort(order, (i, j) -> {
            int c = Long.compareUnsigned(p0[i], p0[j]);
            return c != 0 ? c : Integer.compare(i, j);  // i = w * vnodes + v: (w, v) order
        });
        this.pos = new long[nodes];
        this.wk = new int[nodes];
        for (int i = 0; i < nodes; i++) {
            pos[i] = p0[order[i]];
            wk[i] = order[i] / vnodes;
        }
        this.acc = new long[workers];
        this.held = accounting == Accounting.WINDOW ? Math.max(window - 1, 0) : 0;
        this.buf = new int[Math.max(held, 1)];
        this.byWindow = new long[2][workers];
        this.mark = new int[workers];
    }

    /** The first ring point at or after the key's position (wrapping to 0). */
    private int successor(long key) {
        long kp = Hashing.mix64(seedKey ^ key);
        int lo = 0, hi = pos.length;
        while (lo < hi) {
            int mid = (lo + hi) >>> 1;
            if (Long.compareUnsigned(pos[mid], kp) < 0) lo = mid + 1;
            else hi = mid;
        }
        return lo == pos.length ? 0 : lo;
    }

    /** The first worker clockwise from the key's successor whose load is below cap. */
    private int bounded(long key, long cap) {
        int node = successor(key);
        int w = wk[node];
        if (acc[w] < cap) return w;
        if (++epoch == Integer.MAX_VALUE) {
            Arrays.fill(mark, 0);
            epoch = 1;
        }
        for (int step = 0; step < pos.length; step++, node = node + 1 == pos.length ? 0 : node + 1) {
            w = wk[node];
            if (mark[w] == epoch) continue;
            mark[w] = epoch;
            if (acc[w] < cap) return w;
        }
        return wk[successor(key)];  // not reached: the loads sum to T < n cap
    }

    private long cap() { return ((total + 1) * f + div - 1) / div; }

    @Override public int route(long key) {
        switch (accounting) {
            case REQUEST: {
                int w = bounded(key, cap());
                acc[w]++;
                total++;
                return w;
            }
            case WINDOW: {
                int w = bounded(key, cap());
                if (held > 0) {
                    acc[w]++;
                    if (total == held) {  // full: the oldest decision leaves, this one takes its place
                        acc[buf[head]]--;
                        buf[head] = w;
                        head = head + 1 == held ? 0 : head + 1;
                    } else buf[(int) total++] = w;
                }
                return w;
            }
            default: {
                long cur = 0;
                if (window > 0) {
                    cur = tuples / window;
                    if (tuples > 0 && tuples % window == 0) {  // window cur starts: keys last seen in cur - 2 leave
                        long[] gone = byWindow[(int) (cur & 1)];
                        for (int x = 0; x < n; x++) {
                            acc[x] -= gone[x];
                            total -= gone[x];
                            gone[x] = 0;
                        }
                    }
                }
                tuples++;
                long[] e = keys.get(key);
                if (e != null && (window == 0 || e[1] >= cur - 1)) {  // a known, live key
                    int w = (int) e[0];
                    if (window > 0 && e[1] != cur) {
                        byWindow[(int) (e[1] & 1)][w]--;
                        byWindow[(int) (cur & 1)][w]++;
                        e[1] = cur;
                    }
                    return w;
                }
                int w = bounded(key, cap());
                acc[w]++;
                total++;
                if (window > 0) byWindow[(int) (cur & 1)][w]++;
                if (e == null) keys.put(key, new long[] {w, cur});
                else {
                    e[0] = w;
                    e[1] = cur;
                }
                return w;
            }
        }
    }

    @Override public int workers() { return n; }
}
