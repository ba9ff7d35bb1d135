// skewbench benchmark: one strategy's router over a whole stream, timed (benchmarks/bench_partitioners.py).
// Loaded by RouterBench once per strategy, each time in a class loader of its own, so that the
// loop's call to Router.route sees one router class only (as in a Flink job, whose user classes a
// TaskManager loads per job) and the JIT inlines it; no Flink.
package skewbench.bench;

import java.util.Map;

import skewbench.partition.Router;
import skewbench.partition.Routers;

public final class RouterLoop {
    private RouterLoop() {}

    /** Keeps the routed workers live (the JIT cannot drop the loop). */
    public static volatile long sink;

    /**
     * Nanoseconds to route {@code keys} in stream order through a fresh router of {@code name}
     * over {@code workers} (seed 0, default parameters): {@code route(key, seq)}, as the
     * conformance driver calls it; the router's creation is not timed.
     */
    public static long time(String name, int workers, long[] keys) {
        Router r = Routers.create(name, workers, 0L, Map.of());
        long acc = 0;
        long t0 = System.nanoTime();
        for (int i = 0; i < keys.length; i++) {
            acc += r.route(keys[i], i);
        }
        long t1 = System.nanoTime();
        sink += acc;
        return t1 - t0;
    }
}
