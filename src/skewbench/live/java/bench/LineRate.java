// skewbench benchmark: the partitioners at line rate on a Flink cluster (benchmarks/bench_partitioners.py).
// Usage: LineRate WORKDIR HOST:PORT JAR KEYS.i64 SOURCES WORKERS WARM_MS WINDOW_MS WINDOWS CONFIGS
// (CONFIGS: comma-separated router names of skewbench.partition, "keyBy" for Flink's own keyBy on
// the Long key, "rebalance" for Flink's round robin; NAME~warm: a warm-up job of twice the windows,
// for the cluster's JVMs; NAME~K: NAME again; both reported under that name). One job per
// configuration, one after another:
//   source (NumberSequenceSource, SOURCES subtasks) -> emit (chained: each subtask replays the whole
//   stream KEYS.i64 from its start, cyclically, as fast as the job takes it; one Long a record) ->
//   [partitionCustom(skewbench.flink.StrategyPartitioner, the user jar's partitioner: one Router per
//   sending subtask, created on the first call with numPartitions) | keyBy | rebalance] ->
//   DiscardingSink (WORKERS subtasks).
// Each emit subtask times itself: after WARM_MS from its first records (the job's deployment and
// the JIT inside it) it marks (records emitted, System.nanoTime) at the start and the end of WINDOWS
// consecutive windows of WINDOW_MS and writes the marks to WORKDIR/<config>-<workers>-<subtask>.txt;
// once every subtask has written, this client cancels the job and waits until it is cancelled. Prints
// "rate <config> <workers> <subtask> <window> <records> <ns>" a window, or "error <config> <workers> <message>".
package skewbench.bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;

import org.apache.flink.api.common.JobStatus;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.functions.Partitioner;
import org.apache.flink.api.common.functions.RichMapFunction;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.connector.source.lib.NumberSequenceSource;
import org.apache.flink.api.java.functions.KeySelector;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink;

import skewbench.flink.StrategyPartitioner;

public final class LineRate {
    private LineRate() {}

    static final class Identity implements KeySelector<Long, Long> {
        private static final long serialVersionUID = 1L;

        @Override
        public Long getKey(Long k) { return k; }
    }

    /** The stream's keys, replayed cyclically; times its own emission (see the header). */
    static final class Emit extends RichMapFunction<Long, Long> {
        private static final long serialVersionUID = 1L;
        final String keysPath, dir, tag;
        final long warmNs, windowNs;
        final int windows;
        private transient long[] keys;
        private transient long[] marks;
        private transient int pos, m;
        private transient long n, next;

        Emit(String keysPath, String dir, String tag, long warmMs, long windowMs, int windows) {
            this.keysPath = keysPath; this.dir = dir; this.tag = tag;
            this.warmNs = warmMs * 1_000_000L; this.windowNs = windowMs * 1_000_000L; this.windows = windows;
        }

        @Override
        public void open(OpenContext ctx) throws Exception {
            keys = RouterBench.readLongs(keysPath);
            marks = new long[2 * (windows + 1)];
            pos = 0; m = -1; n = 0;
        }

        @Override
        public Long map(Long ignored) throws Exception {
            long k = keys[pos];
            if (++pos == keys.length) {
                pos = 0;
            }
            if ((++n & 1023) == 0) {
                check();
            }
            return k;
        }

        private void check() throws IOException {
            if (m > windows) {
                return;
            }
            long t = System.nanoTime();
            if (m < 0) {  // the first records: the warm-up starts
                m = 0;
                next = t + warmNs;
            } else if (t >= next) {
                marks[2 * m] = n;
                marks[2 * m + 1] = t;
                next = t + windowNs;
                if (++m > windows) {
                    StringBuilder b = new StringBuilder();
                    for (int i = 0; i <= windows; i++) {
                        b.append(marks[2 * i]).append(' ').append(marks[2 * i + 1]).append('\n');
                    }
                    int j = getRuntimeContext().getTaskInfo().getIndexOfThisSubtask();
                    Path tmp = Paths.get(dir, tag + "-" + j + ".tmp");
                    Files.writeString(tmp, b.toString());
                    Files.move(tmp, Paths.get(dir, tag + "-" + j + ".txt"), StandardCopyOption.ATOMIC_MOVE);
                }
            }
        }
    }

    public static void main(String[] a) throws Exception {
        String dir = a[0];
        String[] hp = a[1].split(":");
        String jar = a[2], keys = a[3];
        int sources = Integer.parseInt(a[4]), workers = Integer.parseInt(a[5]);
        long warmMs = Long.parseLong(a[6]), windowMs = Long.parseLong(a[7]);
        int windows = Integer.parseInt(a[8]);
        for (String config : a[9].split(",")) {
            String tag = config.replace('~', '-') + "-" + workers;
            try {
                run(dir, hp, jar, keys, sources, workers, warmMs, windowMs, config.endsWith("~warm") ? 2 * windows : windows, config, tag);
            } catch (Exception e) {
                Throwable c = e;
                while (c.getCause() != null) {
                    c = c.getCause();
                }
                System.out.println("error " + config + " " + workers + " " + (c.getClass().getSimpleName() + ": " + c.getMessage()).replace('\n', ' '));
            }
            System.out.flush();
        }
    }

    static void run(String dir, String[] hp, String jar, String keys, int sources, int workers, long warmMs, long windowMs,
                    int windows, String config, String tag) throws Exception {
        String name = config.split("~")[0];
        Configuration conf = new Configuration();
        conf.setString("restart-strategy.type", "none");
        StreamExecutionEnvironment env = StreamExecutionEnvironment.createRemoteEnvironment(hp[0], Integer.parseInt(hp[1]), conf, jar);
        DataStream<Long> emitted = env
                .fromSource(new NumberSequenceSource(0, Long.MAX_VALUE - 1), WatermarkStrategy.noWatermarks(), "source")
                .setParallelism(sources)
                .map(new Emit(keys, dir, tag, warmMs, windowMs, windows), Types.LONG).setParallelism(sources).name("emit");
        DataStream<Long> routed = name.equals("keyBy") ? emitted.keyBy(new Identity(), Types.LONG)
                : name.equals("rebalance") ? emitted.rebalance()
                : emitted.partitionCustom(new StrategyPartitioner<Long>(name), new Identity());
        routed.sinkTo(new DiscardingSink<>()).setParallelism(workers).name("discard");
        JobClient client = env.executeAsync("skewbench-bench line rate " + tag);
        long limitMs = 120_000L + warmMs + windowMs * windows;
        long until = System.nanoTime() + limitMs * 1_000_000L;
        try {
            while (true) {
                int written = 0;
                for (int j = 0; j < sources; j++) {
                    written += Files.exists(Paths.get(dir, tag + "-" + j + ".txt")) ? 1 : 0;
                }
                if (written == sources) {
                    break;
                }
                JobStatus st = client.getJobStatus().get();
                if (st.isGloballyTerminalState()) {
                    client.getJobExecutionResult().get();  // its failure
                    throw new IllegalStateException("the job ended " + st + " before it was measured");
                }
                if (System.nanoTime() > until) {
                    throw new IllegalStateException("the job was not measured within " + limitMs / 1000 + " s");
                }
                Thread.sleep(100);
            }
        } finally {
            JobStatus st = client.getJobStatus().get();
            if (!st.isGloballyTerminalState()) {
                client.cancel().get();
                long stop = System.nanoTime() + 60_000_000_000L;
                while (!client.getJobStatus().get().isGloballyTerminalState() && System.nanoTime() < stop) {
                    Thread.sleep(50);
                }
            }
        }
        for (int j = 0; j < sources; j++) {
            String[] lines = Files.readString(Paths.get(dir, tag + "-" + j + ".txt")).trim().split("\n");
            for (int w = 0; w + 1 < lines.length; w++) {
                String[] p = lines[w].split(" "), q = lines[w + 1].split(" ");
                System.out.println("rate " + config + " " + workers + " " + j + " " + w + " "
                        + (Long.parseLong(q[0]) - Long.parseLong(p[0])) + " " + (Long.parseLong(q[1]) - Long.parseLong(p[1])));
            }
        }
    }
}
