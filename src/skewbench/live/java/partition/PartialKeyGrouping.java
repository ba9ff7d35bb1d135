package skewbench.partition;

import java.util.Map;

/**
 * pkg: partial key grouping, the key's two choices F_1 and F_2, the one this source has sent
 * fewer tuples to so far (F_1 on a tie).
 */
public final class PartialKeyGrouping implements Router {
    private final int n;
    private final long seed1, seed2;
    private final long[] load;

    public PartialKeyGrouping(int workers, long seed, Map<String, String> params) {
        new Params("pkg", params);
        this.n = workers;
        long[] s = Hashing.hashSeeds(seed, 2);
        this.seed1 = s[0];
        this.seed2 = s[1];
        this.load = new long[workers];
    }

    @Override public int route(long key) {
        int w1 = Hashing.hashChoice(key, seed1, n), w2 = Hashing.hashChoice(key, seed2, n);
        int w = load[w2] < load[w1] ? w2 : w1;
        load[w]++;
        return w;
    }

    @Override public int workers() { return n; }
}
