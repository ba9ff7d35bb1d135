// skewbench live: one Flink DataStream job per phase, run one after another by this client on a
// Flink cluster (a standalone cluster's JobManager over REST, or a mini-cluster in this JVM).
// Written for skewbench; compiled by skewbench.live.flink with javac against the Flink
// environment's jars (flink-dist). Usage: LiveJob WORKDIR [JOBFILE] (default WORKDIR/job.json).
//
// A phase's job (job "agg", the default):
//   source (s subtasks: the numbers 0..s*L-1, one contiguous split each) -> pace (number r of
//   slice j = r / L is tuple i = j + (r % L) * s, the replay's "seq % s" sources, emitted when due;
//   event time = its due time in microseconds from the phase's start) -> route -> work (p
//   subtasks: spends the tuple's cost, adds it to the count and sum of its key's tumbling window
//   in Flink keyed state, emits the key's partial aggregate when the window closes) -> [merge
//   (keyBy the key, pm subtasks: sums the partials of a key's window, emits the final aggregate
//   when the window closes)] -> sink (writes each final aggregate, with when it arrived).
// Routing "routed": the strategy's decision for each tuple, through keyBy on a Long whose key
// group lies in the decided subtask's key-group range (Flink's own KeyGroupRangeAssignment,
// inverted), so that work's state is ordinary keyed state; "native": keyBy on the tuple's key
// (Long, or its decimal String), Flink's own routing; "engine": the strategy's router
// (skewbench.partition, one per slice, its state in Flink's operator state) decides each tuple's
// worker in its pace subtask, then as "routed" (route_key.i64: the values it hashes; route-<j>-<a>.i64:
// per slice its tuples and the nanoseconds its router took). Job "map": the stateless worker (it only
// spends the cost), routed by a custom partitioner or keyBy, no windows, no merge.
//
// Inputs (little-endian, in the phase's directory): due_us.i64 (when each tuple is due, from the
// phase's start), cost_ns.i64, worker.i32 (routed), key.i64 (the value an engine hashes),
// dense.i64 (the key's dense id, < 2^31), value.i64. Outputs, per subtask and attempt:
// out-<w>-<a>.i64 (work: index, due, start, end; epoch microseconds), emit-<j>-<a>.i64 (pace:
// index, emitted), slices-<j>-<a>.i64 (pace subtask j: the slices it emitted, with their
// tuples), merge-<m>-<a>.i64 (merge: window, key, start, end), agg-<k>-<a>.i64 (sink:
// key, window, count, sum, arrived); and phase.json: the job's id, its start, its status changes,
// the failures it recovered from, the placement of its subtasks and Flink's own per-subtask
// metrics sampled about every second.
package skewbench.live;

import java.io.*;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.*;
import java.time.Duration;
import java.time.Instant;
import java.util.*;
import java.util.concurrent.locks.LockSupport;

import org.apache.flink.api.common.JobExecutionResult;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.functions.Partitioner;
import org.apache.flink.api.common.functions.RichFlatMapFunction;
import org.apache.flink.api.common.functions.RichMapFunction;
import org.apache.flink.api.common.state.ListState;
import org.apache.flink.api.common.state.ListStateDescriptor;
import org.apache.flink.api.common.state.MapState;
import org.apache.flink.api.common.state.MapStateDescriptor;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.connector.source.lib.NumberSequenceSource;
import org.apache.flink.api.java.functions.KeySelector;
import org.apache.flink.api.java.tuple.Tuple4;
import org.apache.flink.api.java.tuple.Tuple5;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.RestOptions;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.runtime.state.FunctionInitializationContext;
import org.apache.flink.runtime.state.FunctionSnapshotContext;
import org.apache.flink.runtime.state.KeyGroupRange;
import org.apache.flink.streaming.api.checkpoint.CheckpointedFunction;
import org.apache.flink.runtime.state.KeyGroupRangeAssignment;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.node.ArrayNode;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.datastream.KeyedStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink;
import org.apache.flink.util.Collector;

public class LiveJob {
    static final ObjectMapper JSON = new ObjectMapper();
    /** Flink's accumulated per-subtask metrics, sampled over REST while a job runs. */
    static final String[] METRICS = {"numRecordsIn", "numRecordsOut", "accumulateBusyTimeMs", "accumulateIdleTimeMs",
            "accumulateBackPressuredTimeMs"};

    static long nowUs() {
        Instant t = Instant.now();
        return t.getEpochSecond() * 1_000_000L + t.getNano() / 1_000;
    }

    static ByteBuffer read(Path p) throws IOException {
        try (FileChannel ch = FileChannel.open(p)) {
            ByteBuffer b = ByteBuffer.allocate((int) ch.size()).order(ByteOrder.LITTLE_ENDIAN);
            while (b.hasRemaining() && ch.read(b) >= 0) { }
            b.flip();
            return b;
        }
    }

    static long[] longs(Path p) throws IOException {
        ByteBuffer b = read(p);
        long[] out = new long[b.remaining() / 8];
        b.asLongBuffer().get(out);
        return out;
    }

    static int[] ints(Path p) throws IOException {
        ByteBuffer b = read(p);
        int[] out = new int[b.remaining() / 4];
        b.asIntBuffer().get(out);
        return out;
    }

    /** Writes the first n values of rows to dir/name atomically. */
    static void writeLongs(String dir, String name, long[] rows, int n) throws IOException {
        ByteBuffer b = ByteBuffer.allocate(8 * n).order(ByteOrder.LITTLE_ENDIAN);
        b.asLongBuffer().put(rows, 0, n);
        Path tmp = Paths.get(dir, name + ".tmp");
        Files.write(tmp, b.array());
        Files.move(tmp, Paths.get(dir, name), StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
    }

    /** A growable array of longs, rows of a fixed width. */
    static final class Rows implements Serializable {
        long[] a = new long[4096];
        int n;

        void add(long x, long y) { grow(2); a[n++] = x; a[n++] = y; }
        void add(long x, long y, long z, long w) { grow(4); a[n++] = x; a[n++] = y; a[n++] = z; a[n++] = w; }
        void grow(int k) { if (n + k > a.length) a = Arrays.copyOf(a, a.length * 2); }
    }

    /**
     * The phase's start (epoch microseconds), which the client writes to the phase's file "go" once
     * every task of the job runs: the sources wait for it, so that no tuple is due while the job is
     * still being deployed.
     */
    static long awaitStart(String dir) {
        Path go = Paths.get(dir, "go");
        while (true) {
            try {
                return Long.parseLong(Files.readString(go).trim());
            } catch (IOException | NumberFormatException e) {
                LockSupport.parkNanos(2_000_000L);
            }
        }
    }

    /** Spends cost nanoseconds: sleeping (a worker with a core of its own) or busy. */
    static void spend(long costNs, boolean cpu) {
        long deadline = System.nanoTime() + costNs;
        if (cpu) {
            while (System.nanoTime() < deadline) { }
        } else {
            long left;
            while ((left = deadline - System.nanoTime()) > 0) {
                LockSupport.parkNanos(left);
            }
        }
    }

    /**
     * Keys that Flink's own keyBy sends to a chosen subtask: for each key group, ints whose
     * murmur hash (KeyGroupRangeAssignment.assignToKeyGroup) falls into it; a tuple of dense key d
     * decided for worker w gets the Long whose high word is d and whose hashCode is one of those
     * ints for a key group of w, so Flink's KeyGroupStreamPartitioner sends it to w and its keyed
     * state lives in w's key-group range.
     */
    static final class Router implements Serializable {
        static final int PER_GROUP = 1024;
        final int[][] hashes;
        final int[] first;
        final int[] count;

        Router(int parallelism, int maxParallelism) {
            hashes = new int[maxParallelism][PER_GROUP];
            int[] filled = new int[maxParallelism];
            int done = 0;
            for (int h = 0; done < maxParallelism; h++) {
                int g = KeyGroupRangeAssignment.assignToKeyGroup(h, maxParallelism);
                if (filled[g] < PER_GROUP) {
                    hashes[g][filled[g]++] = h;
                    if (filled[g] == PER_GROUP) done++;
                }
            }
            first = new int[parallelism];
            count = new int[parallelism];
            for (int w = 0; w < parallelism; w++) {
                KeyGroupRange r = KeyGroupRangeAssignment.computeKeyGroupRangeForOperatorIndex(maxParallelism, parallelism, w);
                first[w] = r.getStartKeyGroup();
                count[w] = r.getNumberOfKeyGroups();
            }
        }

        long key(long dense, int worker) {
            int d = (int) dense;
            int g = first[worker] + Math.floorMod(d, count[worker]);
            int h = hashes[g][Math.floorMod(d / count[worker], PER_GROUP)];
            return ((long) d << 32) | ((h ^ d) & 0xffffffffL);
        }
    }

    /** A phase's settings (the phase object of job.json). */
    static final class Spec implements Serializable {
        String dir, name, routing, keyType, job, router, routerParams;
        long routerSeed;
        int n, sources, workers, merge, maxParallelism;
        long windowUs, mergeCostNs;
        boolean cpu;

        Spec(JsonNode ph, Path work) {
            dir = work.resolve(ph.path("dir").asText()).toString();
            name = ph.path("name").asText();
            routing = ph.path("routing").asText("routed");
            router = ph.path("router").asText("");
            routerParams = ph.path("router_params").asText("");
            routerSeed = ph.path("router_seed").asLong(0);
            keyType = ph.path("key").asText("long");
            job = ph.path("job").asText("agg");
            n = ph.path("n").asInt();
            sources = ph.path("sources").asInt(1);
            workers = ph.path("workers").asInt();
            merge = ph.path("merge").asInt(0);
            maxParallelism = ph.path("max_parallelism").asInt(0);
            windowUs = ph.path("window_us").asLong(1_000_000L);
            mergeCostNs = ph.path("merge_cost_ns").asLong(0);
            cpu = ph.path("work").asText("sleep").equals("cpu");
        }

        /** Routed by a worker per tuple: decided before the run, or by the strategy's router here. */
        boolean decided() { return routing.equals("routed") || routing.equals("engine"); }

        int effectiveMaxParallelism() {
            return maxParallelism > 0 ? maxParallelism : KeyGroupRangeAssignment.computeDefaultMaxParallelism(workers);
        }

        int attempt(org.apache.flink.api.common.functions.RuntimeContext ctx) {
            return ctx.getTaskInfo().getAttemptNumber();
        }
    }

    /** (index, due from the phase's start in µs = event time, route key, dense key, value). */
    static final TypeInformation<Tuple5<Integer, Long, Long, Long, Long>> REC =
            Types.TUPLE(Types.INT, Types.LONG, Types.LONG, Types.LONG, Types.LONG);
    /** (dense key, window, count, sum). */
    static final TypeInformation<Tuple4<Long, Long, Long, Long>> PART = Types.TUPLE(Types.LONG, Types.LONG, Types.LONG, Types.LONG);

    @SuppressWarnings("unchecked")
    static final TypeInformation<long[]> LONGS = (TypeInformation<long[]>) (TypeInformation<?>) Types.PRIMITIVE_ARRAY(Types.LONG);

    /** Number r of the source's sequence -> tuple i of slice j, emitted when it is due. */
    public static class Pace extends RichFlatMapFunction<Long, Tuple5<Integer, Long, Long, Long, Long>>
            implements CheckpointedFunction {
        final Spec spec; final long slice;
        transient long[] due, key, dense, value, routeKey; transient int[] worker; transient Router router;
        transient Map<Integer, Rows> emitted; transient long startUs;
        /** routing "engine": each slice's router (restored from a checkpoint after a restart) and its time. */
        transient Map<Integer, skewbench.partition.Router> routers;
        transient Map<Integer, Long> routed;  // per slice, the tuples its router has routed (across restarts)
        transient Map<Integer, long[]> routeNs;
        transient ListState<byte[]> routerState;

        Pace(Spec spec, long slice) { this.spec = spec; this.slice = slice; }

        @Override
        public void initializeState(FunctionInitializationContext ctx) throws Exception {
            routers = new HashMap<>();
            routed = new HashMap<>();
            if (!spec.routing.equals("engine")) {
                return;
            }
            // union state: every subtask gets every copy of every slice's router; the copy that had
            // routed the most tuples is the slice's own (the others are copies a subtask kept unused)
            routerState = ctx.getOperatorStateStore().getUnionListState(new ListStateDescriptor<>("routers", byte[].class));
            if (ctx.isRestored()) {
                for (byte[] b : routerState.get()) {
                    try (ObjectInputStream in = new ObjectInputStream(new ByteArrayInputStream(b))) {
                        int j = in.readInt();
                        long count = in.readLong();
                        skewbench.partition.Router r = (skewbench.partition.Router) in.readObject();
                        if (!routed.containsKey(j) || routed.get(j) < count) {
                            routers.put(j, r);
                            routed.put(j, count);
                        }
                    }
                }
            }
        }

        @Override
        public void snapshotState(FunctionSnapshotContext ctx) throws Exception {
            if (routerState == null) {
                return;
            }
            List<byte[]> out = new ArrayList<>();
            for (Map.Entry<Integer, skewbench.partition.Router> e : routers.entrySet()) {
                ByteArrayOutputStream b = new ByteArrayOutputStream();
                try (ObjectOutputStream o = new ObjectOutputStream(b)) {
                    o.writeInt(e.getKey());
                    o.writeLong(routed.getOrDefault(e.getKey(), 0L));
                    o.writeObject(e.getValue());
                }
                out.add(b.toByteArray());
            }
            routerState.update(out);
        }

        @Override
        public void open(OpenContext ctx) throws Exception {
            Path d = Paths.get(spec.dir);
            due = longs(d.resolve("due_us.i64"));
            dense = longs(d.resolve("dense.i64"));
            value = longs(d.resolve("value.i64"));
            if (spec.decided()) {
                if (spec.routing.equals("engine")) {
                    routeKey = longs(d.resolve("route_key.i64"));
                    skewbench.partition.Routers.create(spec.router, spec.workers, spec.routerSeed,
                            skewbench.partition.Conform.params(spec.routerParams));  // a bad setting fails the job here
                } else {
                    worker = ints(d.resolve("worker.i32"));
                }
                if (spec.job.equals("agg")) {
                    router = new Router(spec.workers, spec.effectiveMaxParallelism());
                }
            } else {
                key = longs(d.resolve("key.i64"));
            }
            emitted = new HashMap<>();
            routeNs = new HashMap<>();
            startUs = -1;
        }

        /** The worker of tuple i of slice j: decided, or by the slice's router (timed). */
        int workerOf(int j, int i) {
            if (routeKey == null) {
                return worker[i];
            }
            skewbench.partition.Router r = routers.get(j);
            if (r == null) {
                r = skewbench.partition.Routers.create(spec.router, spec.workers, spec.routerSeed,
                        skewbench.partition.Conform.params(spec.routerParams));
                routers.put(j, r);
            }
            long t0 = System.nanoTime();
            int w = r.route(routeKey[i], i);
            long dt = System.nanoTime() - t0;
            routed.merge(j, 1L, Long::sum);
            long[] ns = routeNs.computeIfAbsent(j, x -> new long[2]);
            ns[0] += dt;
            ns[1]++;
            return w;
        }

        @Override
        public void flatMap(Long r, Collector<Tuple5<Integer, Long, Long, Long, Long>> out) {
            int j = (int) (r / slice);
            int i = (int) (j + (r % slice) * spec.sources);
            if (i >= spec.n) {
                return;
            }
            if (startUs < 0) {
                startUs = awaitStart(spec.dir);
            }
            long at = startUs + due[i];
            long wait = at - nowUs();
            while (wait > 0) {
                LockSupport.parkNanos(wait * 1000L);
                wait = at - nowUs();
            }
            long route;
            if (!spec.decided()) {
                route = key[i];
            } else {
                int w = workerOf(j, i);
                route = router == null ? w : router.key(dense[i], w);
            }
            out.collect(new Tuple5<>(i, due[i], route, dense[i], value[i]));
            emitted.computeIfAbsent(j, x -> new Rows()).add(i, nowUs());
        }

        @Override
        public void close() throws Exception {
            if (emitted == null) {  // cancelled before open (a restart): nothing to write
                return;
            }
            int a = spec.attempt(getRuntimeContext());
            Rows slices = new Rows();
            for (Map.Entry<Integer, Rows> e : emitted.entrySet()) {
                writeLongs(spec.dir, "emit-" + e.getKey() + "-" + a + ".i64", e.getValue().a, e.getValue().n);
                slices.add(e.getKey(), e.getValue().n / 2);
            }
            writeLongs(spec.dir, "slices-" + getRuntimeContext().getTaskInfo().getIndexOfThisSubtask() + "-" + a + ".i64",
                    slices.a, slices.n);
            if (routeKey != null) {
                Rows ns = new Rows();
                for (Map.Entry<Integer, long[]> e : routeNs.entrySet()) {
                    ns.add(e.getKey(), e.getValue()[1], e.getValue()[0], 0);
                }
                writeLongs(spec.dir, "route-" + getRuntimeContext().getTaskInfo().getIndexOfThisSubtask() + "-" + a + ".i64",
                        ns.a, ns.n);
            }
        }
    }

    /** The worker of job "agg": spends the cost, counts and sums the key's window in keyed state. */
    public static class Aggregate<K> extends KeyedProcessFunction<K, Tuple5<Integer, Long, Long, Long, Long>, Tuple4<Long, Long, Long, Long>> {
        final Spec spec;
        transient long[] cost; transient Rows rows, fires; transient MapState<Long, long[]> windows;

        Aggregate(Spec spec) { this.spec = spec; }

        @Override
        public void open(OpenContext ctx) throws Exception {
            cost = longs(Paths.get(spec.dir, "cost_ns.i64"));
            rows = new Rows();
            fires = new Rows();
            windows = getRuntimeContext().getMapState(new MapStateDescriptor<Long, long[]>("windows", Types.LONG, LONGS));
        }

        @Override
        public void processElement(Tuple5<Integer, Long, Long, Long, Long> t, Context ctx,
                                   Collector<Tuple4<Long, Long, Long, Long>> out) throws Exception {
            long s = nowUs();
            spend(cost[t.f0], spec.cpu);
            long w = t.f1 / spec.windowUs;
            long[] acc = windows.get(w);
            if (acc == null) {
                acc = new long[] {t.f3, 0L, 0L};
                ctx.timerService().registerEventTimeTimer((w + 1) * spec.windowUs - 1);
            }
            acc[1] += 1;
            acc[2] += t.f4;
            windows.put(w, acc);
            rows.add(t.f0, t.f1, s, nowUs());
        }

        @Override
        public void onTimer(long ts, OnTimerContext ctx, Collector<Tuple4<Long, Long, Long, Long>> out) throws Exception {
            long s = nowUs();
            long w = (ts + 1) / spec.windowUs - 1;
            long[] acc = windows.get(w);
            if (acc != null) {
                out.collect(new Tuple4<>(acc[0], w, acc[1], acc[2]));
                windows.remove(w);
                fires.add(w, acc[0], s, nowUs());
            }
        }

        @Override
        public void close() throws Exception {
            if (rows == null) {  // cancelled before open (a restart): an exception here would kill the TaskManager
                return;
            }
            String suffix = getRuntimeContext().getTaskInfo().getIndexOfThisSubtask() + "-" + spec.attempt(getRuntimeContext()) + ".i64";
            writeLongs(spec.dir, "out-" + suffix, rows.a, rows.n);
            writeLongs(spec.dir, "fires-" + suffix, fires.a, fires.n);
        }
    }

    /** The merge stage: sums the partial aggregates of a key's window, emits it when it closes. */
    public static class Merge extends KeyedProcessFunction<Long, Tuple4<Long, Long, Long, Long>, Tuple4<Long, Long, Long, Long>> {
        final Spec spec;
        transient Rows rows; transient MapState<Long, long[]> windows;

        Merge(Spec spec) { this.spec = spec; }

        @Override
        public void open(OpenContext ctx) throws Exception {
            rows = new Rows();
            windows = getRuntimeContext().getMapState(new MapStateDescriptor<Long, long[]>("partials", Types.LONG, LONGS));
        }

        @Override
        public void processElement(Tuple4<Long, Long, Long, Long> p, Context ctx,
                                   Collector<Tuple4<Long, Long, Long, Long>> out) throws Exception {
            long s = nowUs();
            spend(spec.mergeCostNs, spec.cpu);
            long[] acc = windows.get(p.f1);
            if (acc == null) {
                acc = new long[2];
                ctx.timerService().registerEventTimeTimer((p.f1 + 1) * spec.windowUs - 1);
            }
            acc[0] += p.f2;
            acc[1] += p.f3;
            windows.put(p.f1, acc);
            rows.add(p.f1, p.f0, s, nowUs());
        }

        @Override
        public void onTimer(long ts, OnTimerContext ctx, Collector<Tuple4<Long, Long, Long, Long>> out) throws Exception {
            long w = (ts + 1) / spec.windowUs - 1;
            long[] acc = windows.get(w);
            if (acc != null) {
                out.collect(new Tuple4<>(ctx.getCurrentKey(), w, acc[0], acc[1]));
                windows.remove(w);
            }
        }

        @Override
        public void close() throws Exception {
            if (rows == null) {
                return;
            }
            writeLongs(spec.dir, "merge-" + getRuntimeContext().getTaskInfo().getIndexOfThisSubtask() + "-"
                    + spec.attempt(getRuntimeContext()) + ".i64", rows.a, rows.n);
        }
    }

    /** The sink: every final aggregate written at once (it survives the process being killed). */
    public static class Sink extends RichMapFunction<Tuple4<Long, Long, Long, Long>, Integer> {
        final Spec spec;
        transient FileChannel ch; transient ByteBuffer buf;

        Sink(Spec spec) { this.spec = spec; }

        @Override
        public void open(OpenContext ctx) throws Exception {
            Path p = Paths.get(spec.dir, "agg-" + getRuntimeContext().getTaskInfo().getIndexOfThisSubtask() + "-"
                    + spec.attempt(getRuntimeContext()) + ".i64");
            ch = FileChannel.open(p, StandardOpenOption.CREATE, StandardOpenOption.WRITE, StandardOpenOption.TRUNCATE_EXISTING);
            buf = ByteBuffer.allocate(40).order(ByteOrder.LITTLE_ENDIAN);
        }

        @Override
        public Integer map(Tuple4<Long, Long, Long, Long> a) throws Exception {
            buf.clear();
            buf.putLong(a.f0).putLong(a.f1).putLong(a.f2).putLong(a.f3).putLong(nowUs());
            buf.flip();
            while (buf.hasRemaining()) {
                ch.write(buf);
            }
            return 0;
        }

        @Override
        public void close() throws Exception {
            if (ch != null) {
                ch.close();
            }
        }
    }

    /** The worker of job "map": spends the cost, keeps nothing. */
    public static class Work<K> extends RichMapFunction<Tuple5<Integer, Long, Long, Long, Long>, Integer> {
        final Spec spec;
        transient long[] cost; transient Rows rows;

        Work(Spec spec) { this.spec = spec; }

        @Override
        public void open(OpenContext ctx) throws Exception {
            cost = longs(Paths.get(spec.dir, "cost_ns.i64"));
            rows = new Rows();
        }

        @Override
        public Integer map(Tuple5<Integer, Long, Long, Long, Long> t) {
            long s = nowUs();
            spend(cost[t.f0], spec.cpu);
            rows.add(t.f0, t.f1, s, nowUs());
            return 0;
        }

        @Override
        public void close() throws Exception {
            if (rows == null) {
                return;
            }
            writeLongs(spec.dir, "out-" + getRuntimeContext().getTaskInfo().getIndexOfThisSubtask() + "-"
                    + spec.attempt(getRuntimeContext()) + ".i64", rows.a, rows.n);
        }
    }

    /** Samples the running job over Flink's REST API about every second until it ends. */
    static class Poller extends Thread {
        final String base; final String jobId; final long periodMs;
        final HttpClient http = HttpClient.newHttpClient();
        final ArrayNode samples = JSON.createArrayNode();
        final ArrayNode states = JSON.createArrayNode();
        final ObjectNode placement = JSON.createObjectNode();
        volatile boolean done;

        Poller(String base, String jobId, long periodMs) {
            this.base = base; this.jobId = jobId; this.periodMs = periodMs; setDaemon(true);
        }

        JsonNode get(String path) throws Exception {
            HttpRequest r = HttpRequest.newBuilder(URI.create(base + path)).timeout(Duration.ofSeconds(3)).build();
            return JSON.readTree(http.send(r, HttpResponse.BodyHandlers.ofString()).body());
        }

        void sample() throws Exception {
            JsonNode job = get("/jobs/" + jobId);
            long t = nowUs();
            String state = job.path("state").asText();
            synchronized (this) {
                if (states.isEmpty() || !states.get(states.size() - 1).path("state").asText().equals(state)) {
                    ObjectNode s = states.addObject();
                    s.put("state", state);
                    s.put("us", t);
                }
            }
            if (!state.equals("RUNNING")) {
                return;
            }
            String want = String.join(",", METRICS);
            ObjectNode sample = JSON.createObjectNode();
            sample.put("us", t);
            ObjectNode vs = sample.putObject("vertices");
            boolean running = true;
            for (JsonNode v : job.path("vertices")) {
                String vid = v.path("id").asText();
                String name = v.path("name").asText();
                int p = v.path("parallelism").asInt();
                running &= v.path("status").asText().equals("RUNNING");
                ArrayNode subs = vs.putArray(name);
                for (int i = 0; i < p; i++) {
                    ObjectNode m = subs.addObject();
                    for (JsonNode x : get("/jobs/" + jobId + "/vertices/" + vid + "/subtasks/" + i + "/metrics?get=" + want)) {
                        m.put(x.path("id").asText(), x.path("value").asText());
                    }
                }
                if (!placement.has(name)) {
                    ArrayNode where = JSON.createArrayNode();
                    for (JsonNode st : get("/jobs/" + jobId + "/vertices/" + vid).path("subtasks")) {
                        where.add(st.path("taskmanager-id").asText(st.path("endpoint").asText("")));
                    }
                    if (where.size() == p && !where.get(0).asText().isEmpty()) {
                        synchronized (this) { placement.set(name, where); }
                    }
                }
            }
            sample.put("all_running", running);
            sample.put("sampled_us", nowUs());
            synchronized (this) { samples.add(sample); }
        }

        @Override
        public void run() {
            while (!done) {
                long t0 = System.nanoTime();
                try {
                    sample();
                } catch (Exception ignored) {
                    // the job may end or restart between two calls: that sample is dropped
                }
                long left = periodMs - (System.nanoTime() - t0) / 1_000_000L;
                try { Thread.sleep(Math.max(10, left)); } catch (InterruptedException e) { return; }
            }
        }
    }

    /** Waits until every vertex of the job runs (its time, epoch µs); fails after timeoutMs. */
    static long awaitRunning(Poller poller, long timeoutMs) throws Exception {
        long until = System.nanoTime() + timeoutMs * 1_000_000L;
        while (System.nanoTime() < until) {
            try {
                JsonNode job = poller.get("/jobs/" + poller.jobId);
                boolean all = job.path("vertices").size() > 0;
                for (JsonNode v : job.path("vertices")) {
                    all &= v.path("status").asText().equals("RUNNING");
                }
                if (all) {
                    return nowUs();
                }
                String state = job.path("state").asText();
                if (state.equals("FAILED") || state.equals("CANCELED")) {
                    throw new IllegalStateException("the job " + state.toLowerCase() + " while it was deployed");
                }
            } catch (IOException e) {
                // the REST endpoint may not know the job yet
            }
            Thread.sleep(50);
        }
        throw new IllegalStateException("the job's tasks did not all run within " + timeoutMs / 1000 + " s");
    }

    static StreamExecutionEnvironment environment(JsonNode job, JsonNode ph, Spec spec, int slots) {
        String remote = job.path("remote").asText("");
        Configuration conf = new Configuration();
        long checkpointMs = ph.path("checkpoint_ms").asLong(0);
        if (checkpointMs > 0) {
            conf.setString("restart-strategy.type", "fixed-delay");
            conf.setString("restart-strategy.fixed-delay.attempts", String.valueOf(ph.path("restarts").asInt(3)));
            conf.setString("restart-strategy.fixed-delay.delay", ph.path("restart_delay_ms").asLong(1000) + " ms");
            conf.setString("execution.checkpointing.dir", Paths.get(spec.dir, "checkpoints").toUri().toString());
            conf.setString("execution.checkpointing.storage", "filesystem");
        } else {
            conf.setString("restart-strategy.type", "none");
        }
        conf.setString("state.backend.type", ph.path("state_backend").asText("hashmap"));
        conf.setString("pipeline.auto-watermark-interval", ph.path("watermark_ms").asLong(50) + " ms");
        StreamExecutionEnvironment env;
        if (!remote.isEmpty()) {
            String[] hp = remote.split(":");
            env = StreamExecutionEnvironment.createRemoteEnvironment(hp[0], Integer.parseInt(hp[1]), conf,
                    job.path("jar").asText());
        } else {
            int port = job.path("rest_port").asInt(0);
            if (port > 0) {
                conf.set(RestOptions.PORT, port);
                conf.set(RestOptions.BIND_ADDRESS, "127.0.0.1");
                conf.set(RestOptions.ADDRESS, "127.0.0.1");
            }
            conf.setString("metrics.fetcher.update-interval", "500");
            conf.setString("web.refresh-interval", "100");  // see flinkcluster.configuration
            conf.setString("taskmanager.numberOfTaskSlots", String.valueOf(slots));
            for (Iterator<Map.Entry<String, JsonNode>> it = job.path("mini_cluster").fields(); it.hasNext(); ) {
                Map.Entry<String, JsonNode> e = it.next();
                conf.setString(e.getKey(), e.getValue().asText());
            }
            env = StreamExecutionEnvironment.createLocalEnvironment(slots, conf);
        }
        if (checkpointMs > 0) {
            env.enableCheckpointing(checkpointMs);
        }
        env.setParallelism(spec.workers);
        if (spec.maxParallelism > 0) {
            env.setMaxParallelism(spec.maxParallelism);
        }
        env.getConfig().setAutoWatermarkInterval(ph.path("watermark_ms").asLong(50));
        env.setBufferTimeout(ph.path("buffer_timeout_ms").asLong(0));
        return env;
    }

    static void phase(JsonNode job, JsonNode ph, Path work) throws Exception {
        Spec spec = new Spec(ph, work);
        int s = spec.sources;
        long slice = (spec.n + s - 1) / s;
        int slots = Math.max(Math.max(s, spec.workers), spec.merge);
        StreamExecutionEnvironment env = environment(job, ph, spec, slots);
        DataStream<Tuple5<Integer, Long, Long, Long, Long>> paced = env
                .fromSource(new NumberSequenceSource(0, slice * s - 1), WatermarkStrategy.noWatermarks(), "source")
                .setParallelism(s)
                .flatMap(new Pace(spec, slice), REC).setParallelism(s).name("pace");
        boolean routed = spec.decided();
        if (spec.job.equals("map")) {
            DataStream<Tuple5<Integer, Long, Long, Long, Long>> to = routed
                    ? paced.partitionCustom((Partitioner<Long>) (w, n) -> (int) (long) w, t -> t.f2)
                    : spec.keyType.equals("long") ? paced.keyBy(t -> t.f2, Types.LONG)
                    : paced.keyBy(t -> Long.toString(t.f2), Types.STRING);
            to.map(new Work<>(spec)).name("work").sinkTo(new DiscardingSink<>()).name("discard");
        } else {
            DataStream<Tuple5<Integer, Long, Long, Long, Long>> timed = paced.assignTimestampsAndWatermarks(
                    WatermarkStrategy.<Tuple5<Integer, Long, Long, Long, Long>>forMonotonousTimestamps()
                            .withTimestampAssigner((t, ts) -> t.f1)).setParallelism(s).name("timestamps");
            DataStream<Tuple4<Long, Long, Long, Long>> partial;
            if (routed || spec.keyType.equals("long")) {
                KeyedStream<Tuple5<Integer, Long, Long, Long, Long>, Long> keyed = timed.keyBy(t -> t.f2, Types.LONG);
                partial = keyed.process(new Aggregate<Long>(spec), PART).name("work");
            } else {
                KeyedStream<Tuple5<Integer, Long, Long, Long, Long>, String> keyed =
                        timed.keyBy((KeySelector<Tuple5<Integer, Long, Long, Long, Long>, String>) t -> Long.toString(t.f2), Types.STRING);
                partial = keyed.process(new Aggregate<String>(spec), PART).name("work");
            }
            DataStream<Tuple4<Long, Long, Long, Long>> fin = partial;
            int sinkP = spec.workers;
            if (spec.merge > 0) {
                fin = partial.keyBy(a -> a.f0, Types.LONG).process(new Merge(spec), PART).setParallelism(spec.merge).name("merge");
                sinkP = spec.merge;
            }
            fin.map(new Sink(spec)).setParallelism(sinkP).name("sink")
                    .sinkTo(new DiscardingSink<>()).setParallelism(sinkP).name("discard");
        }
        long t0 = nowUs();
        JobClient client = env.executeAsync("skewbench-live " + spec.name);
        String jobId = client.getJobID().toString();
        String rest = job.path("remote").asText("");
        int port = job.path("rest_port").asInt(0);
        String base = "http://" + (rest.isEmpty() ? "127.0.0.1:" + port : rest);
        Poller poller = new Poller(base, jobId, job.path("sample_ms").asLong(1000));
        long startUs = awaitRunning(poller, ph.path("deploy_timeout_ms").asLong(120_000)) + ph.path("lead_ms").asLong(300) * 1000L;
        Path go = Paths.get(spec.dir, "go");
        Files.writeString(Paths.get(spec.dir, "go.tmp"), Long.toString(startUs));
        Files.move(Paths.get(spec.dir, "go.tmp"), go, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        System.out.println("started " + spec.name + " " + jobId + " " + startUs);
        System.out.flush();
        poller.start();
        JobExecutionResult result = client.getJobExecutionResult().get();
        long t1 = nowUs();
        ObjectNode out = JSON.createObjectNode();
        out.put("job_id", jobId);
        out.put("net_runtime_ms", result.getNetRuntime());
        out.put("submitted_us", t0);
        out.put("start_us", startUs);
        out.put("finished_us", t1);
        poller.done = true;
        poller.interrupt();
        poller.join(5000);
        synchronized (poller) {
            out.set("samples", poller.samples);
            out.set("states", poller.states);
            out.set("placement", poller.placement);
        }
        try {  // the failures the job recovered from (a task's restart leaves the job RUNNING)
            ArrayNode failures = out.putArray("failures");
            for (JsonNode e : poller.get("/jobs/" + jobId + "/exceptions").path("exceptionHistory").path("entries")) {
                ObjectNode f = failures.addObject();
                f.put("us", e.path("timestamp").asLong() * 1000L);
                f.put("exception", e.path("exceptionName").asText());
                f.put("task", e.path("taskName").asText(""));
            }
        } catch (Exception ignored) {
            // no history: nothing failed, or the endpoint is gone
        }
        Files.writeString(Paths.get(spec.dir, "phase.json"), JSON.writeValueAsString(out));
        System.out.println("done " + spec.name + " " + (t1 - t0) / 1000);
        System.out.flush();
    }

    public static void main(String[] args) throws Exception {
        Path work = Paths.get(args[0]);
        JsonNode job = JSON.readTree(work.resolve(args.length > 1 ? args[1] : "job.json").toFile());
        for (JsonNode ph : job.path("phases")) {
            phase(job, ph, work);
        }
    }
}
