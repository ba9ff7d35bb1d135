package skewbench.partition;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Routes streams through the routers in one JVM, without Flink: the conformance test's and the
 * per-tuple benchmark's driver. Usage: {@code Conform CASES}, a file of one case a line,
 * tab-separated: the keys' file (int64, little-endian, in stream order), the output file, the
 * sources, the strategy, the workers, the hash seed, and its parameters as
 * {@code name=value,name=value} (or {@code -}). Tuple i goes to source i mod sources, each source
 * with its own router; the output holds each tuple's worker (int32, little-endian). Prints a line
 * a case: {@code done <output> <nanoseconds a tuple>}; a bad case stops with one line on standard
 * error and exit status 2.
 */
public final class Conform {
    private Conform() {}

    public static void main(String[] args) throws IOException {
        if (args.length == 1 && args[0].equals("--list")) {
            System.out.println(String.join(" ", Routers.names()));
            return;
        }
        if (args.length != 1) {
            System.err.println("usage: Conform CASES | Conform --list");
            System.exit(2);
        }
        List<String> lines = Files.readAllLines(Path.of(args[0]));
        for (String line : lines) {
            if (line.isBlank()) continue;
            String[] f = line.split("\t");
            try {
                if (f.length != 7) throw new IllegalArgumentException("a case has 7 tab-separated fields, got " + f.length + ": " + line);
                long[] keys = readLongs(Path.of(f[0]));
                int sources = Integer.parseInt(f[2]);
                if (sources < 1) throw new IllegalArgumentException("sources must be >= 1, got " + sources);
                Router[] routers = new Router[sources];
                for (int j = 0; j < sources; j++)
                    routers[j] = Routers.create(f[3], Integer.parseInt(f[4]), Long.parseLong(f[5]), params(f[6]));
                int[] out = new int[keys.length];
                long t0 = System.nanoTime();
                route(routers, keys, out);
                long ns = System.nanoTime() - t0;
                writeInts(Path.of(f[1]), out);
                System.out.println("done " + f[1] + " " + (keys.length == 0 ? 0.0 : (double) ns / keys.length));
            } catch (IllegalArgumentException e) {
                System.err.println("error: " + e.getMessage());
                System.exit(2);
            }
        }
    }

    static void route(Router[] routers, long[] keys, int[] out) {
        int s = routers.length, j = 0;
        for (int i = 0; i < keys.length; i++) {
            out[i] = routers[j].route(keys[i], i);
            if (++j == s) j = 0;
        }
    }

    /** A case's parameter text, {@code name=value,name=value} or {@code -}, as a map. */
    public static Map<String, String> params(String text) {
        Map<String, String> p = new LinkedHashMap<>();
        if (text.equals("-") || text.isEmpty()) return p;
        for (String kv : text.split(",")) {
            int eq = kv.indexOf('=');
            if (eq <= 0) throw new IllegalArgumentException("a parameter is name=value, got '" + kv + "'");
            p.put(kv.substring(0, eq), kv.substring(eq + 1));
        }
        return p;
    }

    static long[] readLongs(Path path) throws IOException {
        ByteBuffer b = ByteBuffer.wrap(Files.readAllBytes(path)).order(ByteOrder.LITTLE_ENDIAN);
        long[] out = new long[b.remaining() / 8];
        b.asLongBuffer().get(out);
        return out;
    }

    static void writeInts(Path path, int[] values) throws IOException {
        ByteBuffer b = ByteBuffer.allocate(values.length * 4).order(ByteOrder.LITTLE_ENDIAN);
        b.asIntBuffer().put(values);
        Path tmp = path.resolveSibling(path.getFileName() + ".tmp");
        Files.write(tmp, b.array());
        Files.move(tmp, path, java.nio.file.StandardCopyOption.REPLACE_EXISTING);
    }
}
