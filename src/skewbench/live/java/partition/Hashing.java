package skewbench.partition;

/**
 * The hash functions the routers share: the seeded 64-bit family F_1..F_d of skewbench's
 * strategies (splitmix64's finaliser of the key XOR a per-choice seed, then fastrange), and the
 * engines' own key hashes (Kafka's murmur2, Spark's Murmur3 x86_32 with its legacy byte rule,
 * Java's hashCode) of a key serialised as a Java long or as its decimal text.
 */
public final class Hashing {
    private Hashing() {}

    static final long GOLDEN = 0x9E3779B97F4A7C15L;
    static final long M1 = 0xBF58476D1CE4E5B9L;
    static final long M2 = 0x94D049BB133111EBL;
    static final long SEED_STEP = 0x632BE59BD9B4E019L;

    /** splitmix64's finaliser (arithmetic modulo 2^64). */
    public static long mix64(long x) {
        long z = x + GOLDEN;
        z = (z ^ (z >>> 30)) * M1;
        z = (z ^ (z >>> 27)) * M2;
        return z ^ (z >>> 31);
    }

    /** seed_1..seed_count of the hash family under {@code seed}, the same at every source. */
    public static long[] hashSeeds(long seed, int count) {
        long base = mix64(seed);
        long[] out = new long[count];
        for (int i = 0; i < count; i++) out[i] = mix64(base + SEED_STEP * (i + 1));
        return out;
    }

    /** F_i(key) = fastrange(mix64(key XOR seed_i), n): a worker in [0, n). */
    public static int hashChoice(long key, long seedI, int n) {
        long h = mix64(key ^ seedI);
        return (int) (((h >>> 32) * (long) n) >>> 32);
    }

    // ---- the engines' hashes of a key value -----------------------------------------------

    /** The key value's decimal text (ASCII): how a String key of that value serialises. */
    public static byte[] decimal(long v) {
        return Long.toString(v).getBytes(java.nio.charset.StandardCharsets.US_ASCII);
    }

    /** A long's 8 bytes, most significant first (Kafka's LongSerializer). */
    public static byte[] bigEndian(long v) {
        byte[] b = new byte[8];
        for (int i = 7; i >= 0; i--) { b[i] = (byte) v; v >>= 8; }
        return b;
    }

    private static final int KM = 0x5bd1e995;

    /** Kafka's murmur2 of the bytes (seed 0x9747b28c, little-endian words, the tail's multiply only with a tail). */
    public static int murmur2(byte[] data) {
        int length = data.length;
        int h = 0x9747b28c ^ length;
        int words = length >>> 2;
        for (int i = 0; i < words; i++) {
            int o = 4 * i;
            int k = (data[o] & 0xff) | ((data[o + 1] & 0xff) << 8) | ((data[o + 2] & 0xff) << 16) | ((data[o + 3] & 0xff) << 24);
            k *= KM;
            k ^= k >>> 24;
            k *= KM;
            h *= KM;
            h ^= k;
        }
        int o = 4 * words;
        int r = length & 3;
        if (r == 3) h ^= (data[o + 2] & 0xff) << 16;
        if (r >= 2) h ^= (data[o + 1] & 0xff) << 8;
        if (r >= 1) {
            h ^= data[o] & 0xff;
            h *= KM;
        }
        h ^= h >>> 13;
        h *= KM;
        h ^= h >>> 15;
        return h;
    }

    private static final int C1 = 0xcc9e2d51, C2 = 0x1b873593;

    private static int mixK1(int k) {
        return Integer.rotateLeft(k * C1, 15) * C2;
    }

    private static int mixH1(int h, int k) {
        return Integer.rotateLeft(h ^ k, 13) * 5 + 0xe6546b64;
    }

    private static int fmix(int h, int length) {
        h ^= length;
        h ^= h >>> 16;
        h *= 0x85ebca6b;
        h ^= h >>> 13;
        h *= 0xc2b2ae35;
        h ^= h >>> 16;
        return h;
    }

    /** Murmur3 x86_32 of a long: the low word, then the high word, length 8 (Spark's hashLong). */
    public static int murmur3Long(long v, int seed) {
        int h = mixH1(seed, mixK1((int) v));
        h = mixH1(h, mixK1((int) (v >>> 32)));
        return fmix(h, 8);
    }

    /** Spark's legacy Murmur3 x86_32 of bytes: little-endian words, then each remaining byte, sign-extended, as a block. */
    public static int murmur3Bytes(byte[] data, int seed) {
        int h = seed;
        int words = data.length >>> 2;
        for (int i = 0; i < words; i++) {
            int o = 4 * i;
            h = mixH1(h, mixK1((data[o] & 0xff) | ((data[o + 1] & 0xff) << 8) | ((data[o + 2] & 0xff) << 16)
                    | ((data[o + 3] & 0xff) << 24)));
        }
        for (int o = 4 * words; o < data.length; o++) h = mixH1(h, mixK1(data[o]));
        return fmix(h, data.length);
    }
}
