package skewbench.partition;

import java.util.Map;

/**
 * The engines' default partitioners, a pure function of the key's value serialised as a Java
 * long (key_format "long") or as its decimal text ("string"):
 * <ul>
 * <li>kafka: (murmur2(bytes) AND 0x7fffffff) mod n, the long as 8 bytes, most significant first;</li>
 * <li>spark-hash: Spark RDD's HashPartitioner, the non-negative remainder of Long.hashCode or String.hashCode;</li>
 * <li>spark-sql: Spark SQL's shuffle, the non-negative remainder of Murmur3 (seed 42) of the long or of the text's bytes.</li>
 * </ul>
 * Not seeded: the engines have no seed.
 */
public final class EngineHash implements Router {
    public enum Engine { KAFKA, SPARK_HASH, SPARK_SQL }

    static final int SPARK_SQL_SEED = 42;
    private final Engine engine;
    private final boolean text;
    private final int n;

    public EngineHash(Engine engine, int workers, Map<String, String> params) {
        String name = engine == Engine.KAFKA ? "kafka" : engine == Engine.SPARK_HASH ? "spark-hash" : "spark-sql";
        this.text = new Params(name, params, "key_format").text("key_format", "long", "long", "string").equals("string");
        this.engine = engine;
        this.n = workers;
    }

    /** The engine's 32-bit hash of key value {@code v}. */
    public int hash(long v) {
        switch (engine) {
            case KAFKA:
                return Hashing.murmur2(text ? Hashing.decimal(v) : Hashing.bigEndian(v));
            case SPARK_SQL:
                return text ? Hashing.murmur3Bytes(Hashing.decimal(v), SPARK_SQL_SEED) : Hashing.murmur3Long(v, SPARK_SQL_SEED);
            default:
                return text ? Long.toString(v).hashCode() : Long.hashCode(v);
        }
    }

    @Override public int route(long key) {
        int h = hash(key);
        return engine == Engine.KAFKA ? (h & 0x7fffffff) % n : Math.floorMod(h, n);
    }

    @Override public int workers() { return n; }
}
