// skewbench partitioners: one source's grouping strategy, deciding at run time. Written for
// skewbench (the Python classes of skewbench.grouping.strategies are the specification, and
// tests/integration/test_java_routers.py checks every router here against its class, tuple for
// tuple); no dependency on Flink or on skewbench's Python side.
package skewbench.partition;

import java.io.Serializable;

/**
 * One source's routing state for one strategy: {@link #route} decides the worker of the source's
 * next tuple, in stream order, from the tuple's key and what this source alone has decided
 * before (its local loads, sketch, pointer). A stream of {@code s} sources gives tuple {@code i}
 * to source {@code i mod s}; each source has its own instance.
 */
public interface Router extends Serializable {
    /**
     * The worker in {@code [0, workers)} of this source's next tuple.
     *
     * @param key the value the strategy hashes: the key's dense id, or for the engines'
     *            partitioners (kafka, spark-hash, spark-sql) the key's value as the engine sees it
     */
    int route(long key);

    /**
     * The worker of this source's next tuple, at position {@code seq} of the whole stream: the
     * routers whose draw depends on it (salt's "random" and "hashed" salts) read it, the others
     * route by {@link #route(long)}.
     */
    default int route(long key, long seq) { return route(key); }

    /** The number of workers this router decides among. */
    int workers();
}
