// skewbench live: one phase per strategy, each a Flink DataStream job on the same Flink: a paced
// source, the strategy's routing (its decisions through a custom partitioner, or Flink's own keyBy),
// and a worker operator that spends each tuple's cost (sleeping or busy) and records, per tuple,
// when it was due, when its work started and when it ended. Written for skewbench; compiled by
// skewbench.live.flink with javac against the Flink environment's jars (flink-dist).
//
// Usage: LiveJob WORKDIR   (WORKDIR/job.json; per phase WORKDIR/<dir>/ inputs and outputs)
//
// job.json: {"parallelism": p, "work": "sleep"|"cpu",
//            "lead_ms": ms before the first tuple is due, "remote": "host:port" or "", "rest_port": port
//            of a local cluster (0: none), "jar": this job's jar (remote submission),
//            "phases": [{"name": ..., "dir": ..., "routing": "routed"|"native", "n": tuples,
//                        "key": "long"|"string" (native), "max_parallelism": P (0: Flink's default rule)}]}
// Inputs (little-endian): due_us.i64 (when each tuple is due, from the phase's start), cost_ns.i64,
// worker.i32 (routed) or key.i64 / key.txt (native, one key a line). Outputs: out-<subtask>.i64,
// four longs a tuple (index, due, start, end; epoch microseconds), and phase.json (the job's id,
// its net runtime, its start, and the subtasks' Flink metrics sampled over REST while it ran).
package skewbench.live;

import java.io.*;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.*;
import java.time.Duration;
import java.time.Instant;
import java.util.*;
import java.util.concurrent.locks.LockSupport;

import org.apache.flink.api.common.JobExecutionResult;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.functions.Partitioner;
import org.apache.flink.api.common.functions.RichMapFunction;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.connector.source.lib.NumberSequenceSource;
import org.apache.flink.api.java.tuple.Tuple3;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.RestOptions;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink;

public class LiveJob {
    static final ObjectMapper JSON = new ObjectMapper();
    static final String[] METRICS = {"accumulateBusyTimeMs", "accumulateIdleTimeMs",
            "accumulateBackPressuredTimeMs", "numRecordsIn", "numRecordsOut"};

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

    /** The paced source's map: tuple i leaves when it is due (phase start + due_us[i]). */
    public static class Pace<K> extends RichMapFunction<Long, Tuple3<Integer, Long, K>> {
        final String dir; final String routing; final String keyType; final long leadUs;
        transient long[] due; transient int[] worker; transient long[] keyLong; transient String[] keyText;
        transient long start;

        Pace(String dir, String routing, String keyType, long leadUs) {
            this.dir = dir; this.routing = routing; this.keyType = keyType; this.leadUs = leadUs;
        }

        @Override
        public void open(OpenContext ctx) throws Exception {
            Path d = Paths.get(dir);
            due = longs(d.resolve("due_us.i64"));
            if (routing.equals("routed")) {
                worker = ints(d.resolve("worker.i32"));
            } else if (keyType.equals("long")) {
                keyLong = longs(d.resolve("key.i64"));
            } else {
                keyText = Files.readAllLines(d.resolve("key.txt"), StandardCharsets.UTF_8).toArray(new String[0]);
            }
            start = -1;
        }

        @Override
        @SuppressWarnings("unchecked")
        public Tuple3<Integer, Long, K> map(Long seq) {
            int i = (int) (long) seq;
            if (start < 0) {
                start = nowUs() + leadUs;
            }
            long at = start + due[i];
            long wait = at - nowUs();
            while (wait > 0) {
                LockSupport.parkNanos(wait * 1000L);
                wait = at - nowUs();
            }
            Object k = worker != null ? (Object) worker[i] : keyLong != null ? (Object) keyLong[i] : keyText[i];
            return new Tuple3<>(i, at, (K) k);
        }
    }

    /** A worker: spends the tuple's cost, records (index, due, start, end); writes them when closed. */
    public static class Work<K> extends RichMapFunction<Tuple3<Integer, Long, K>, Integer> {
        final String dir; final boolean cpu;
        transient long[] cost; transient long[] rows; transient int n; transient int subtask;

        Work(String dir, boolean cpu) { this.dir = dir; this.cpu = cpu; }

        @Override
        public void open(OpenContext ctx) throws Exception {
            cost = longs(Paths.get(dir, "cost_ns.i64"));
            subtask = getRuntimeContext().getTaskInfo().getIndexOfThisSubtask();
            rows = new long[4 * 1024];
            n = 0;
        }

        @Override
        public Integer map(Tuple3<Integer, Long, K> t) {
            long s = nowUs();
            long deadline = System.nanoTime() + cost[t.f0];
            if (cpu) {
                while (System.nanoTime() < deadline) { }
            } else {
                long left;
                while ((left = deadline - System.nanoTime()) > 0) {
                    LockSupport.parkNanos(left);
                }
            }
            long e = nowUs();
            if (4 * (n + 1) > rows.length) {
                rows = Arrays.copyOf(rows, rows.length * 2);
            }
            rows[4 * n] = t.f0; rows[4 * n + 1] = t.f1; rows[4 * n + 2] = s; rows[4 * n + 3] = e;
            n++;
            return 0;
        }

        @Override
        public void close() throws Exception {
            ByteBuffer b = ByteBuffer.allocate(32 * n).order(ByteOrder.LITTLE_ENDIAN);
            b.asLongBuffer().put(rows, 0, 4 * n);
            Path tmp = Paths.get(dir, "out-" + subtask + ".i64.tmp");
            Files.write(tmp, b.array());
            Files.move(tmp, Paths.get(dir, "out-" + subtask + ".i64"), StandardCopyOption.ATOMIC_MOVE,
                    StandardCopyOption.REPLACE_EXISTING);
        }
    }

    /** Samples the running job's per-subtask metrics over Flink's REST API until it ends. */
    static class Poller extends Thread {
        final String base; final String jobId; final HttpClient http = HttpClient.newHttpClient();
        final ObjectNode last = JSON.createObjectNode(); volatile boolean done;

        Poller(String base, String jobId) { this.base = base; this.jobId = jobId; setDaemon(true); }

        JsonNode get(String path) throws Exception {
            HttpRequest r = HttpRequest.newBuilder(URI.create(base + path)).timeout(Duration.ofSeconds(2)).build();
            return JSON.readTree(http.send(r, HttpResponse.BodyHandlers.ofString()).body());
        }

        @Override
        public void run() {
            String want = String.join(",", METRICS);
            while (!done) {
                try {
                    for (JsonNode v : get("/jobs/" + jobId).path("vertices")) {
                        String vid = v.path("id").asText();
                        ObjectNode vertex = JSON.createObjectNode();
                        vertex.put("name", v.path("name").asText());
                        vertex.put("parallelism", v.path("parallelism").asInt());
                        for (int i = 0; i < v.path("parallelism").asInt(); i++) {
                            ObjectNode m = vertex.putObject(String.valueOf(i));
                            for (JsonNode x : get("/jobs/" + jobId + "/vertices/" + vid + "/subtasks/" + i + "/metrics?get=" + want)) {
                                m.put(x.path("id").asText(), x.path("value").asText());
                            }
                        }
                        synchronized (last) { last.set(vid, vertex); }
                    }
                    last.put("samples", last.path("samples").asInt() + 1);
                    last.put("sampled_us", nowUs());
                } catch (Exception ignored) {
                    // the job may have ended between two calls: the last complete sample stays
                }
                try { Thread.sleep(200); } catch (InterruptedException e) { return; }
            }
        }
    }

    static StreamExecutionEnvironment environment(JsonNode job, JsonNode ph, int p) {
        String remote = job.path("remote").asText("");
        StreamExecutionEnvironment env;
        if (!remote.isEmpty()) {
            String[] hp = remote.split(":");
            env = StreamExecutionEnvironment.createRemoteEnvironment(hp[0], Integer.parseInt(hp[1]), job.path("jar").asText());
        } else {
            Configuration conf = new Configuration();
            int port = job.path("rest_port").asInt(0);
            if (port > 0) {
                conf.set(RestOptions.PORT, port);
                conf.set(RestOptions.BIND_ADDRESS, "127.0.0.1");
                conf.set(RestOptions.ADDRESS, "127.0.0.1");
            }
            conf.setString("metrics.fetcher.update-interval", "200");
            env = StreamExecutionEnvironment.createLocalEnvironment(p, conf);
        }
        env.setParallelism(p);
        int maxP = ph.path("max_parallelism").asInt(0);
        if (maxP > 0) {
            env.setMaxParallelism(maxP);
        }
        env.setBufferTimeout(0);  // every record leaves at once: latency is the work's, not a buffer's
        return env;
    }

    /** The phase's tuples, paced, as (index, due, worker or key) with the key's type {@code k}. */
    static <K> DataStream<Tuple3<Integer, Long, K>> paced(DataStream<Long> seq, Path dir, String routing, String keyType,
                                                          long leadUs, TypeInformation<K> k) {
        return seq.map(new Pace<K>(dir.toString(), routing, keyType, leadUs))
                .returns(Types.TUPLE(Types.INT, Types.LONG, k)).setParallelism(1).name("pace");
    }

    static void phase(JsonNode job, JsonNode ph, Path work) throws Exception {
        int p = job.path("parallelism").asInt();
        Path dir = work.resolve(ph.path("dir").asText());
        String routing = ph.path("routing").asText();
        String keyType = ph.path("key").asText("long");
        long lead = job.path("lead_ms").asLong(500) * 1000L;
        boolean cpu = job.path("work").asText().equals("cpu");
        StreamExecutionEnvironment env = environment(job, ph, p);
        DataStream<Long> seq = env.fromSource(new NumberSequenceSource(0, ph.path("n").asLong() - 1),
                WatermarkStrategy.noWatermarks(), "tuples").setParallelism(1);
        DataStream<Integer> done;
        if (routing.equals("routed")) {  // the strategy's own decision: worker t.f2, exactly
            done = paced(seq, dir, routing, keyType, lead, Types.INT)
                    .partitionCustom((Partitioner<Integer>) (w, n) -> w, t -> t.f2)
                    .map(new Work<Integer>(dir.toString(), cpu)).name("work");
        } else if (keyType.equals("long")) {  // Flink's own keyBy on a Long key
            done = paced(seq, dir, routing, keyType, lead, Types.LONG).keyBy(t -> t.f2)
                    .map(new Work<Long>(dir.toString(), cpu)).name("work");
        } else {  // Flink's own keyBy on a String key
            done = paced(seq, dir, routing, keyType, lead, Types.STRING).keyBy(t -> t.f2)
                    .map(new Work<String>(dir.toString(), cpu)).name("work");
        }
        done.sinkTo(new DiscardingSink<>()).name("discard");
        long t0 = nowUs();
        JobClient client = env.executeAsync("skewbench-live " + ph.path("name").asText());
        String jobId = client.getJobID().toString();
        String rest = job.path("remote").asText("");
        int port = job.path("rest_port").asInt(0);
        Poller poller = null;
        if (!rest.isEmpty() || port > 0) {
            poller = new Poller("http://" + (rest.isEmpty() ? "127.0.0.1:" + port : rest), jobId);
            poller.start();
        }
        JobExecutionResult result = client.getJobExecutionResult().get();
        long t1 = nowUs();
        ObjectNode out = JSON.createObjectNode();
        out.put("job_id", jobId);
        out.put("net_runtime_ms", result.getNetRuntime());
        out.put("submitted_us", t0);
        out.put("finished_us", t1);
        if (poller != null) {
            poller.done = true;
            poller.join(3000);
            synchronized (poller.last) { out.set("metrics", poller.last); }
        }
        Files.writeString(dir.resolve("phase.json"), JSON.writeValueAsString(out));
        System.out.println("phase " + ph.path("name").asText() + " done in " + (t1 - t0) / 1000 + " ms");
    }

    public static void main(String[] args) throws Exception {
        Path work = Paths.get(args[0]);
        JsonNode job = JSON.readTree(work.resolve("job.json").toFile());
        for (JsonNode ph : job.path("phases")) {
            phase(job, ph, work);
        }
    }
}
