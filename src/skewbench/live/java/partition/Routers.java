package skewbench.partition;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;

/**
 * The table of the grouping strategies that have a router here: one line a strategy, under the
 * name of its Python class's row in skewbench.grouping.STRATEGIES (docs/extending.md). A
 * strategy without a line is run from the Python replay's decisions.
 */
public final class Routers {
    private Routers() {}

    /** A router of one source: workers, the cell's hash seed, the strategy's parameters as text. */
    public interface Factory {
        Router create(int workers, long seed, Map<String, String> params);
    }

    private static final Map<String, Factory> TABLE = new LinkedHashMap<>();

    static {
        TABLE.put("kg", KeyGrouping::new);
        TABLE.put("sg", ShuffleGrouping::new);
        TABLE.put("pkg", PartialKeyGrouping::new);
        TABLE.put("dc", (n, seed, p) -> new HeadAware(HeadAware.Variant.DC, n, seed, p));
        TABLE.put("wc", (n, seed, p) -> new HeadAware(HeadAware.Variant.WC, n, seed, p));
        TABLE.put("rr", (n, seed, p) -> new HeadAware(HeadAware.Variant.RR, n, seed, p));
        TABLE.put("fixed-d", (n, seed, p) -> new HeadAware(HeadAware.Variant.FIXED, n, seed, p));
        TABLE.put("chwbl", Chwbl::new);
        TABLE.put("local-global", LocalGlobal::new);
        TABLE.put("salt", Salt::new);
        TABLE.put("kafka", (n, seed, p) -> new EngineHash(EngineHash.Engine.KAFKA, n, p));
        TABLE.put("spark-hash", (n, seed, p) -> new EngineHash(EngineHash.Engine.SPARK_HASH, n, p));
        TABLE.put("spark-sql", (n, seed, p) -> new EngineHash(EngineHash.Engine.SPARK_SQL, n, p));
    }

    /** The strategies with a router, in the table's order. */
    public static Set<String> names() { return Collections.unmodifiableSet(TABLE.keySet()); }

    /** One source's router of strategy {@code name}; IllegalArgumentException for an unknown name or parameter. */
    public static Router create(String name, int workers, long seed, Map<String, String> params) {
        Factory f = TABLE.get(name);
        if (f == null)
            throw new IllegalArgumentException("no router for strategy '" + name + "'; routers: " + TABLE.keySet());
        if (workers < 1) throw new IllegalArgumentException(name + ": workers must be >= 1, got " + workers);
        return f.create(workers, seed, params);
    }
}
