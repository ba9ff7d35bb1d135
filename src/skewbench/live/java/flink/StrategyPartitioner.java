// skewbench partitioners for a Flink user's own job: a grouping strategy of skewbench.partition
// (Routers.names(): kg, sg, pkg, dc, wc, rr, fixed-d, chwbl, local-global, salt, kafka,
// spark-hash, spark-sql) as Flink's Partitioner, for DataStream#partitionCustom. Written for
// skewbench; compiled by skewbench.live.partitioners (make flink-partitioners) with the routers
// into one jar against Flink 2.3's jars. No dependency on skewbench's Python side. docs/flink.md.
package skewbench.flink;

import java.nio.charset.StandardCharsets;
import java.util.Collections;
import java.util.HashMap;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;

import org.apache.flink.api.common.functions.Partitioner;

import skewbench.partition.Hashing;
import skewbench.partition.Router;
import skewbench.partition.Routers;

/**
 * One grouping strategy deciding, for each record a sending subtask emits, the receiving subtask
 * ({@code partition(key, numPartitions)}: {@code numPartitions} is the receiving operator's
 * parallelism, the strategy's workers). Use it with {@code partitionCustom(partitioner,
 * keySelector)}; a strategy that splits a key over several subtasks (sg, pkg, dc, wc, rr,
 * fixed-d, salt, chwbl when it spills) needs a merge step after it: {@link KeySplitting}.
 *
 * <p><b>One router per sending subtask.</b> The partitioner holds the strategy's name, seed and
 * parameters; its {@link Router} (the strategy's per-source state: local loads, sketch, ring) is
 * transient and created on the first {@link #partition} call. Each sending subtask gets its own
 * deserialized copy of the partitioner. That is decided in Flink's StreamTask.createRecordWriter
 * (flink-streaming-java, org/apache/flink/streaming/runtime/tasks/StreamTask.java; in Flink 2.3.0's
 * flink-dist jar too, read with javap): for every non-chained output of every task it clones the
 * edge's StreamPartitioner (here the CustomPartitionerWrapper holding this object) with
 * InstantiationUtil.clone, a Java serialization round trip, so that no two edges or tasks share
 * one partitioner object (FLINK-14087), also when the tasks run in one JVM. So every
 * sending subtask routes with its own state, as each source does in the strategy's definition
 * (one source = one sending subtask), and calls it from its task thread only. The router's state
 * is not checkpointed: after a restart a sending subtask starts again from empty state, so its
 * decisions from then on differ from an unbroken run's.
 *
 * <p><b>Keys.</b> The routers hash a long ({@link #keyOf}): a {@code Long} key is its value; an
 * {@code Integer}, {@code Short} or {@code Byte} its value as a long; a {@code String} the 64-bit
 * hash {@link #stringKey} of its UTF-8 bytes; any other key the {@link #stringKey} of its
 * {@code toString()}, which must then be the same text in every JVM (boxed numbers, Flink's
 * tuples of such values and enums are; arrays and classes without their own {@code toString()}
 * are not). With keys that are not the replay's dense ids the decisions are the strategy's, on
 * those values, not the Python replay's decisions for the same stream (which hashes dense ids);
 * the engines' partitioners (kafka, spark-hash, spark-sql) hash the long, not the String's own
 * bytes, so a String key does not go where Kafka or Spark would send that String.
 */
public final class StrategyPartitioner<K> implements Partitioner<K> {
    private static final long serialVersionUID = 1L;

    private final String strategy;
    private final long seed;
    private final HashMap<String, String> params;
    /** This copy's router (one per sending subtask: see the class comment), created on first use. */
    private transient Router router;

    /** Strategy {@code strategy} with hash seed 0 and its default parameters. */
    public StrategyPartitioner(String strategy) {
        this(strategy, 0L, Collections.emptyMap());
    }

    /**
     * Strategy {@code strategy} with hash seed 0 and {@code params}: name to value as text, such as
     * {@code Map.of("theta", "0.02")}.
     */
    public StrategyPartitioner(String strategy, Map<String, String> params) {
        this(strategy, 0L, params);
    }

    /**
     * Strategy {@code strategy} with hash seed {@code seed} (the same at every sending subtask,
     * since they all copy this object) and {@code params}. The name and the parameters are checked
     * here, on the client: IllegalArgumentException naming the strategies, or the strategy's
     * parameters, for a bad one (a check that depends on the parallelism, such as chwbl's ring
     * size, can only fail on the first record).
     */
    public StrategyPartitioner(String strategy, long seed, Map<String, String> params) {
        this.strategy = Objects.requireNonNull(strategy, "strategy");
        this.seed = seed;
        this.params = new HashMap<>(Objects.requireNonNull(params, "params"));
        Routers.create(strategy, 1, seed, this.params);
    }

    @Override
    public int partition(K key, int numPartitions) {
        Router r = router;
        if (r == null) {
            r = router = Routers.create(strategy, numPartitions, seed, params);
        } else if (r.workers() != numPartitions) {
            throw new IllegalStateException(this + ": created for " + r.workers() + " partitions, called with "
                    + numPartitions);
        }
        return r.route(keyOf(key));
    }

    /** The long the router hashes for {@code key} (see the class comment). */
    public static long keyOf(Object key) {
        if (key instanceof Long) return (Long) key;
        if (key instanceof Integer || key instanceof Short || key instanceof Byte) return ((Number) key).longValue();
        if (key == null) throw new NullPointerException("StrategyPartitioner: a null key");
        return stringKey(key instanceof String ? (String) key : key.toString());
    }

    /**
     * A String's long: its UTF-8 bytes b, h = b.length, then for each 8 bytes of b in order (the
     * last group padded with zero bytes), read as a little-endian long w: h = mix64(h XOR w)
     * (splitmix64's finaliser, {@link Hashing#mix64}); the result is h. The empty string is 0.
     */
    public static long stringKey(String s) {
        byte[] b = s.getBytes(StandardCharsets.UTF_8);
        long h = b.length;
        for (int o = 0; o < b.length; o += 8) {
            long w = 0;
            for (int i = Math.min(8, b.length - o) - 1; i >= 0; i--) w = (w << 8) | (b[o + i] & 0xffL);
            h = Hashing.mix64(h ^ w);
        }
        return h;
    }

    public String strategy() { return strategy; }

    @Override
    public String toString() {
        return "StrategyPartitioner(" + strategy + ", seed " + seed
                + (params.isEmpty() ? "" : ", " + new TreeMap<>(params)) + ")";
    }
}
