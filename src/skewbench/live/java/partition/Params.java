package skewbench.partition;

import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

/** A router's parameters as text (name -> value), read with one clear error for a bad one. */
final class Params {
    private final String strategy;
    private final Map<String, String> values;

    Params(String strategy, Map<String, String> values, String... known) {
        this.strategy = strategy;
        this.values = values;
        Set<String> unknown = new TreeSet<>(values.keySet());
        unknown.removeAll(Set.of(known));
        if (!unknown.isEmpty())
            throw new IllegalArgumentException(strategy + ": unknown parameter(s) " + unknown + "; it takes "
                    + (known.length == 0 ? "none" : new TreeSet<>(Set.of(known))));
    }

    double number(String name, double fallback, double low, boolean lowOpen) {
        String v = values.get(name);
        if (v == null) return fallback;
        double x;
        try {
            x = Double.parseDouble(v);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(strategy + ": " + name + " must be a number, got '" + v + "'");
        }
        if (!(lowOpen ? x > low : x >= low) || Double.isNaN(x) || Double.isInfinite(x))
            throw new IllegalArgumentException(strategy + ": " + name + " must be a finite number " + (lowOpen ? "> " : ">= ")
                    + low + ", got " + v);
        return x;
    }

    int integer(String name, int fallback, int low) {
        String v = values.get(name);
        if (v == null) return fallback;
        int x;
        try {
            x = Integer.parseInt(v);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(strategy + ": " + name + " must be an integer, got '" + v + "'");
        }
        if (x < low) throw new IllegalArgumentException(strategy + ": " + name + " must be an integer >= " + low + ", got " + v);
        return x;
    }

    long longInteger(String name, long fallback, long low, long high) {
        String v = values.get(name);
        if (v == null) return fallback;
        long x;
        try {
            x = Long.parseLong(v);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(strategy + ": " + name + " must be an integer, got '" + v + "'");
        }
        if (x < low || x > high)
            throw new IllegalArgumentException(strategy + ": " + name + " must be an integer from " + low + " to " + high + ", got " + v);
        return x;
    }

    String text(String name, String fallback, String... allowed) {
        String v = values.getOrDefault(name, fallback);
        if (allowed.length > 0 && !Set.of(allowed).contains(v))
            throw new IllegalArgumentException(strategy + ": " + name + " must be one of " + new TreeSet<>(Set.of(allowed))
                    + ", got '" + v + "'");
        return v;
    }
}
