// skewbench partitioners for a Flink user's own job: the merge step of the strategies that split
// a key over several subtasks. Written for skewbench; built with StrategyPartitioner into one jar
// (make flink-partitioners). docs/flink.md.
package skewbench.flink;

import java.util.HashMap;
import java.util.Map;

import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.functions.Partitioner;
import org.apache.flink.api.common.functions.ReduceFunction;
import org.apache.flink.api.common.functions.RichMapPartitionFunction;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.api.java.functions.KeySelector;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.datastream.SingleOutputStreamOperator;
import org.apache.flink.util.Collector;

/**
 * Per-key results equal to {@code keyBy(key)}'s when a partitioner may send one key's records to
 * several subtasks (PKG, D-Choices, W-Choices, ...), for a bounded input and an aggregation given
 * as a {@link ReduceFunction} that is associative and commutative (a count, a sum, a min, a max;
 * the partitioner decides the order in which a key's records meet):
 * <ol>
 * <li>{@link #partials}: {@code partitionCustom(partitioner, key)}, then in every receiving
 * subtask the records of each key folded into one partial record with the reduce function
 * ({@code fullWindowPartition().mapPartition}: emitted when the input ends);</li>
 * <li>{@link #merge}: {@code keyBy(key)}, the partials of each key reduced into one record
 * ({@code fullWindowPartition().reduce}: one record per key, when the input ends).</li>
 * </ol>
 * {@link #reduce} is the two in one. A word count of {@code Tuple2<String, Long>} records:
 * <pre>{@code
 * KeySplitting.reduce(ones, t -> t.f0, new StrategyPartitioner<>("pkg"), (a, b) -> Tuple2.of(a.f0, a.f1 + b.f1))
 * }</pre>
 * The partial step runs at the stream environment's parallelism unless set on the operator
 * {@link #partials} returns; that parallelism is the partitioner's number of partitions. The
 * merge step takes one record per (key, subtask holding the key): at most 2 per key with PKG,
 * d with D-Choices, the parallelism with W-Choices. Works in BATCH and STREAMING runtime mode on a
 * bounded input (both steps emit at the end of the input); the result has one record per key.
 */
public final class KeySplitting {
    private KeySplitting() {}

    /** {@code in} routed by {@code partitioner} on {@code key}; per receiving subtask, one partial record per key. */
    public static <T, K> SingleOutputStreamOperator<T> partials(DataStream<T> in, KeySelector<T, K> key,
                                                               Partitioner<K> partitioner, ReduceFunction<T> reduce) {
        return in.partitionCustom(partitioner, key).fullWindowPartition()
                .mapPartition(new Fold<>(in.getType(), key, reduce)).returns(in.getType())
                .name("partials " + partitioner);
    }

    /** The partial records of {@link #partials} merged per key: one record per key. */
    public static <T, K> SingleOutputStreamOperator<T> merge(DataStream<T> partials, KeySelector<T, K> key,
                                                            ReduceFunction<T> reduce) {
        return partials.keyBy(key).fullWindowPartition().reduce(reduce).name("merge");
    }

    /** {@link #merge} of {@link #partials}: per key, {@code reduce} over all its records, wherever they went. */
    public static <T, K> SingleOutputStreamOperator<T> reduce(DataStream<T> in, KeySelector<T, K> key,
                                                             Partitioner<K> partitioner, ReduceFunction<T> reduce) {
        return merge(partials(in, key, partitioner, reduce), key, reduce);
    }

    /** One subtask's records folded per key (the first record of a key copied: safe with object reuse). */
    static final class Fold<T, K> extends RichMapPartitionFunction<T, T> {
        private static final long serialVersionUID = 1L;
        private final TypeInformation<T> type;
        private final KeySelector<T, K> key;
        private final ReduceFunction<T> reduce;
        private transient TypeSerializer<T> serializer;

        Fold(TypeInformation<T> type, KeySelector<T, K> key, ReduceFunction<T> reduce) {
            this.type = type;
            this.key = key;
            this.reduce = reduce;
        }

        @Override
        public void open(OpenContext ctx) throws Exception {
            serializer = getRuntimeContext().createSerializer(type);
        }

        @Override
        public void mapPartition(Iterable<T> records, Collector<T> out) throws Exception {
            Map<K, T> acc = new HashMap<>();
            for (T r : records) {
                K k = key.getKey(r);
                T a = acc.get(k);
                T next = a == null ? r : reduce.reduce(a, r);
                acc.put(k, next == r ? serializer.copy(r) : next);
            }
            for (T a : acc.values()) out.collect(a);
        }
    }
}
