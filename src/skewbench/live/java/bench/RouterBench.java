// skewbench benchmark: every router's own cost per tuple in one JVM, without Flink
// (benchmarks/bench_partitioners.py). Usage: RouterBench KEYS.i64 WORKERS[,WORKERS...] WARM REPS [NAMES]
// (KEYS.i64: the stream's keys, int64 little-endian; NAMES: comma-separated, default every router).
// Each strategy's RouterLoop lives in a class loader of its own (a monomorphic call site, as in a
// Flink job). Per worker count: WARM untimed passes of the whole stream per strategy, then REPS
// timed passes, the strategies' order rotated by one each repetition. Prints one line a pass:
// "ns <strategy> <workers> <rep> <nanoseconds per tuple>".
package skewbench.bench;

import java.io.IOException;
import java.lang.reflect.Method;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import skewbench.partition.Routers;

public final class RouterBench {
    private RouterBench() {}

    static long[] readLongs(String path) throws IOException {
        ByteBuffer b = ByteBuffer.wrap(Files.readAllBytes(Paths.get(path))).order(ByteOrder.LITTLE_ENDIAN);
        long[] a = new long[b.remaining() / 8];
        b.asLongBuffer().get(a);
        return a;
    }

    public static void main(String[] args) throws Exception {
        long[] keys = readLongs(args[0]);
        int[] workers = Arrays.stream(args[1].split(",")).mapToInt(Integer::parseInt).toArray();
        int warm = Integer.parseInt(args[2]);
        int reps = Integer.parseInt(args[3]);
        List<String> names = args.length > 4 && !args[4].isEmpty() ? Arrays.asList(args[4].split(","))
                : new ArrayList<>(Routers.names());
        URL jar = RouterBench.class.getProtectionDomain().getCodeSource().getLocation();
        Method[] loops = new Method[names.size()];
        for (int s = 0; s < loops.length; s++) {
            ClassLoader own = new URLClassLoader(new URL[] {jar}, ClassLoader.getPlatformClassLoader());
            loops[s] = own.loadClass("skewbench.bench.RouterLoop").getMethod("time", String.class, int.class, long[].class);
        }
        for (int n : workers) {
            for (int s = 0; s < loops.length; s++) {
                for (int w = 0; w < warm; w++) {
                    loops[s].invoke(null, names.get(s), n, keys);
                }
            }
            for (int r = 0; r < reps; r++) {
                for (int k = 0; k < loops.length; k++) {
                    int s = (k + r) % loops.length;
                    long ns = (Long) loops[s].invoke(null, names.get(s), n, keys);
                    System.out.println("ns " + names.get(s) + " " + n + " " + r + " " + ((double) ns / keys.length));
                }
            }
        }
        System.out.flush();
    }
}
