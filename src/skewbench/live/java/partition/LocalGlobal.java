package skewbench.partition;

import java.util.Map;

/**
 * local-global: Flink SQL's local-global aggregation routes every tuple where key grouping does,
 * F_1(key); its partial records (one per key and mini-batch of {@code batch} tuples of a source)
 * are the combiner's, which the job aggregating the tuples keeps, not the router.
 */
public final class LocalGlobal implements Router {
    private final int n;
    private final long seed1;

    public LocalGlobal(int workers, long seed, Map<String, String> params) {
        new Params("local-global", params, "batch").longInteger("batch", 5000, 1, 1L << 62);
        this.n = workers;
        this.seed1 = Hashing.hashSeeds(seed, 1)[0];
    }

    @Override public int route(long key) { return Hashing.hashChoice(key, seed1, n); }
    @Override public int workers() { return n; }
}
