package skewbench.partition;

import java.util.Map;

/** kg: key grouping, the worker F_1(key). */
public final class KeyGrouping implements Router {
    private final int n;
    private final long seed1;

    public KeyGrouping(int workers, long seed, Map<String, String> params) {
        new Params("kg", params);
        this.n = workers;
        this.seed1 = Hashing.hashSeeds(seed, 1)[0];
    }

    @Override public int route(long key) { return Hashing.hashChoice(key, seed1, n); }
    @Override public int workers() { return n; }
}
