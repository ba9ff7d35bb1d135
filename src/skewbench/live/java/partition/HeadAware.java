package skewbench.partition;

import java.util.Arrays;
import java.util.Map;

/**
 * The head-aware strategies of D-Choices and W-Choices (Nasir et al., ICDE 2016; skewbench's
 * dchoices.spec.md, Algorithm 1): every tuple is offered to this source's SpaceSaving sketch; a
 * key whose count reaches theta times the source's messages (mode "spec"; (count + err) / m >
 * theta in mode "authors") is head, after the first {@code warmup} messages; the tail goes by
 * PKG on the source's local loads, the head:
 * <ul>
 * <li>dc: the least loaded of F_1..F_d, d from FindOptimalChoices on the sketch's head estimate,
 * recomputed at most every {@code refresh} messages; d >= n scans every worker;</li>
 * <li>wc: the least loaded of all workers (the lowest index on ties);</li>
 * <li>rr: round robin over the workers, a pointer per source advanced by head tuples only;</li>
 * <li>fixed-d: the least loaded of F_1..F_d for the given d (d >= n: all workers).</li>
 * </ul>
 * Ties go to the first candidate in F order.
 */
public final class HeadAware implements Router {
    public enum Variant { DC, WC, RR, FIXED }

    private final Variant variant;
    private final int n, fixedD, refresh, warmup;
    private final double theta, eps;
    private final boolean authors;
    private final long[] seeds;
    private final long[] load;
    private final SpaceSaving ss;
    private final double[] q;
    private long m, last = -1;
    private int d = 2, rr;

    public HeadAware(Variant variant, int workers, long seed, Map<String, String> params) {
        String name = variant == Variant.DC ? "dc" : variant == Variant.WC ? "wc" : variant == Variant.RR ? "rr" : "fixed-d";
        Params p = variant == Variant.FIXED
                ? new Params(name, params, "theta", "eps", "capacity", "refresh", "warmup", "mode", "d")
                : new Params(name, params, "theta", "eps", "capacity", "refresh", "warmup", "mode");
        this.variant = variant;
        this.n = workers;
        this.authors = p.text("mode", "spec", "spec", "authors").equals("authors");
        this.theta = p.number("theta", 1.0 / (5 * workers), 0.0, true);
        this.eps = p.number("eps", 1e-4, 0.0, false);
        this.refresh = p.integer("refresh", 1000, 1);
        this.warmup = p.integer("warmup", 0, 0);
        int capacity = p.integer("capacity", authors ? 100 : (int) Math.max(100, Math.ceil(4.0 / theta)), 1);
        this.fixedD = variant == Variant.FIXED ? p.integer("d", 2, 1) : 0;
        this.seeds = Hashing.hashSeeds(seed, Math.max(2, workers));
        this.load = new long[workers];
        this.ss = new SpaceSaving(capacity);
        this.q = new double[capacity];
    }

    private boolean isHead(long c, long e, long mj) {
        return authors ? (double) (c + e) / mj > theta : c >= theta * mj;
    }

    @Override public int route(long k) {
        long mj = ++m;
        int slot = ss.offer(k);
        boolean head = mj > warmup && isHead(ss.cnt[slot], ss.err[slot], mj);
        int w;
        if (!head) {
            int w1 = Hashing.hashChoice(k, seeds[0], n), w2 = Hashing.hashChoice(k, seeds[1], n);
            w = load[w2] < load[w1] ? w2 : w1;
        } else if (variant == Variant.RR) {
            w = rr;
            rr = w + 1 == n ? 0 : w + 1;
        } else {
            int dj;
            if (variant == Variant.WC) dj = n;
            else if (variant == Variant.FIXED) dj = fixedD;
            else {
                if (last < 0 || mj - last >= refresh) {
                    d = findOptimalChoices(headEstimate(mj));
                    last = mj;
                }
                dj = d;
            }
            if (dj >= n) {
                w = 0;
                for (int o = 1; o < n; o++) if (load[o] < load[w]) w = o;
            } else {
                w = Hashing.hashChoice(k, seeds[0], n);
                long best = load[w];
                for (int c = 1; c < dj; c++) {
                    int w2 = Hashing.hashChoice(k, seeds[c], n);
                    if (load[w2] < best) {
                        best = load[w2];
                        w = w2;
                    }
                }
            }
        }
        load[w]++;
        return w;
    }

    /** The head's estimated frequencies, sorted descending into q; returns |H|. */
    private int headEstimate(long mj) {
        int h = 0;
        for (int s = 0; s < ss.size; s++) {
            long c = ss.cnt[s], e = ss.err[s];
            if (isHead(c, e, mj)) q[h++] = authors ? (double) (c + e) / mj : (double) c / mj;
        }
        Arrays.sort(q, 0, h);
        for (int i = 0, j = h - 1; i < j; i++, j--) {
            double t = q[i];
            q[i] = q[j];
            q[j] = t;
        }
        return h;
    }

    /** FindOptimalChoices (spec 2.6, lines F1-F14; mode "authors": A10's variant) on q[0..H). */
    int findOptimalChoices(int H) {
        if (H == 0) return 2;
        double tot = 0.0;
        for (int i = 0; i < H; i++) tot += q[i];
        double ph = Math.min(1.0, tot), pt = 1.0 - ph;
        int dd = (int) Math.max(2, (long) Math.ceil(q[0] * n));
        double stay = 1.0 - 1.0 / n;
        while (dd < n) {
            boolean feasible = true;
            double qh = 0.0;
            for (int h = 1; h <= H; h++) {
                qh += q[h - 1];
                if (authors && h != 1 && h != H) continue;
                double beta = 1.0 - StrictMath.pow(stay, (double) ((long) h * dd));
                double lhs = qh + StrictMath.pow(beta, (double) dd) * (ph - qh) + beta * beta * pt;
                double rhs = authors ? beta + eps : n * beta * (1.0 / n + eps);
                if (lhs > rhs) {
                    feasible = false;
                    break;
                }
            }
            if (feasible) return dd;
            dd++;
        }
        return n;
    }

    @Override public int workers() { return n; }
}
