package skewbench.partition;

import java.util.HashMap;
import java.util.Map;

/**
 * salt: hot keys split into S sub-keys (practice.spec.md 2.5, SA1-SA4'). A key is hot when it is
 * in the head of this source's SpaceSaving sketch (selector "hh": count >= theta m, capacity
 * max(100, ceil(4/theta))), always ("all") or never ("none"); a cold key goes to F(k) =
 * F_1(key), a hot one gets a salt sigma in [0, S) (draw "random": fastrange(mix64(seq XOR
 * seed_rand), S); "hashed": fastrange(mix64(seed_salt XOR seq), S); "rr": a round robin per key
 * at this source) and goes to its sub-key's worker (place "hash": fastrange(mix64(mix64(key XOR
 * seed_F) XOR (sigma + 1) 0x9E3779B97F4A7C15), n); "offset": (F(k) + sigma) mod n). S = 0 means
 * n; S = 1 salts nothing. The merge of the sub-keys' partials (merge_window, beta) is the
 * aggregating job's; the router accepts those parameters and does not use them.
 */
public final class Salt implements Router {
    private final int n, salts;
    private final boolean hh, all, salting, rr, hashed, offset;
    private final double theta;
    private final long seedF, seedSalt, seedRand;
    private final SpaceSaving ss;
    private final HashMap<Long, int[]> next = new HashMap<>();
    private long m, count;

    public Salt(int workers, long seed, Map<String, String> params) {
        Params p = new Params("salt", params, "salts", "selector", "theta", "draw", "place", "merge_window", "beta");
        long s = p.longInteger("salts", 0, 0, 1L << 31);
        this.salts = s == 0 ? workers : (int) Math.min(s, Integer.MAX_VALUE);
        String selector = p.text("selector", "hh", "hh", "all", "none");
        String draw = p.text("draw", "random", "random", "rr", "hashed");
        this.offset = p.text("place", "hash", "hash", "offset").equals("offset");
        this.theta = p.number("theta", 1.0 / (5 * workers), 1e-5, false);
        p.longInteger("merge_window", 100_000, 1, 1L << 62);
        p.number("beta", 1.0, 0.0, false);
        this.n = workers;
        this.hh = selector.equals("hh");
        this.all = selector.equals("all");
        this.salting = salts > 1 && !selector.equals("none");
        this.rr = draw.equals("rr");
        this.hashed = draw.equals("hashed");
        long[] seeds = Hashing.hashSeeds(seed, 3);
        this.seedF = seeds[0];
        this.seedSalt = seeds[1];
        this.seedRand = seeds[2];
        this.ss = hh ? new SpaceSaving((int) Math.max(100, Math.ceil(4.0 / theta))) : null;
    }

    private static int fastrange(long h, int r) { return (int) (((h >>> 32) * (long) r) >>> 32); }

    @Override public int route(long key) { return route(key, count); }

    @Override public int route(long key, long seq) {
        count++;
        long hf = Hashing.mix64(key ^ seedF);
        int f = fastrange(hf, n);
        long mj = ++m;
        boolean hot = all;
        if (hh) {
            int slot = ss.offer(key);
            hot = ss.cnt[slot] >= theta * mj;
        }
        if (!(salting && hot)) return f;
        int sigma;
        if (rr) {
            int[] c = next.computeIfAbsent(key, k -> new int[1]);
            sigma = c[0];
            c[0] = sigma + 1 == salts ? 0 : sigma + 1;
        } else if (hashed) sigma = fastrange(Hashing.mix64(seedSalt ^ seq), salts);
        else sigma = fastrange(Hashing.mix64(seq ^ seedRand), salts);
        if (offset) return (int) ((f + (long) sigma) % n);
        return fastrange(Hashing.mix64(hf ^ ((sigma + 1L) * Hashing.GOLDEN)), n);
    }

    @Override public int workers() { return n; }
}
