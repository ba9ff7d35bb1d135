package skewbench.partition;

import java.util.Map;

/** sg: shuffle grouping, round robin over the workers from worker 0, per source. */
public final class ShuffleGrouping implements Router {
    private final int n;
    private int next;

    public ShuffleGrouping(int workers, long seed, Map<String, String> params) {
        new Params("sg", params);
        this.n = workers;
    }

    @Override public int route(long key) {
        int w = next;
        next = w + 1 == n ? 0 : w + 1;
        return w;
    }

    @Override public int workers() { return n; }
}
