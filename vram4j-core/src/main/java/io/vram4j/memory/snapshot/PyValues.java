package io.vram4j.memory.snapshot;

import java.math.BigInteger;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Plain Python values in Java: type names and short reprs for messages, and the normal form used in
 * {@link MemorySnapshot} ({@code Long}, {@code BigInteger} beyond 64 bits, {@code Double}, {@code String},
 * {@code Boolean}, {@code null}, unmodifiable {@code List} and key-ordered unmodifiable {@code Map<String, ?>}).
 */
final class PyValues {
    /** Deepest nesting accepted in free-form values (settings, annotations). */
    static final int MAX_DEPTH = 100;

    private static final BigInteger LONG_MIN = BigInteger.valueOf(Long.MIN_VALUE);
    private static final BigInteger LONG_MAX = BigInteger.valueOf(Long.MAX_VALUE);

    private PyValues() {
    }

    /** @return the Python type name of a value as razorvine or Jackson-derived readers produce it */
    static String typeName(Object v) {
        if (v == null) {
            return "NoneType";
        }
        if (v instanceof String) {
            return "str";
        }
        if (v instanceof Boolean) {
            return "bool";
        }
        if (v instanceof Integer || v instanceof Long || v instanceof BigInteger || v instanceof Short
                || v instanceof Byte) {
            return "int";
        }
        if (v instanceof Double || v instanceof Float) {
            return "float";
        }
        if (v instanceof Object[]) {
            return "tuple";
        }
        if (v instanceof List) {
            return "list";
        }
        if (v instanceof Map) {
            return "dict";
        }
        if (v instanceof Set) {
            return "set";
        }
        if (v instanceof byte[]) {
            return "bytes";
        }
        if (v instanceof net.razorvine.pickle.objects.ClassDict cd) {
            return cd.getClassName();
        }
        return v.getClass().getSimpleName();
    }

    /** @return the type name and, for scalars, a short repr: {@code str 'abc'}, {@code int 5}, {@code list} */
    static String describe(Object v) {
        String type = typeName(v);
        if (v instanceof String s) {
            return type + " " + quote(s);
        }
        if (v instanceof Number || v instanceof Boolean) {
            String r = v instanceof Boolean b ? (b ? "True" : "False") : v.toString();
            return type + " " + r;
        }
        if (v instanceof Object[] a) {
            return type + " of length " + a.length;
        }
        if (v instanceof Collection<?> c) {
            return type + " of length " + c.size();
        }
        return type;
    }

    /** @return a Python-style single-quoted repr, cut to 40 characters */
    static String quote(String s) {
        StringBuilder b = new StringBuilder("'");
        int n = Math.min(s.length(), 40);
        for (int i = 0; i < n; i++) {
            char c = s.charAt(i);
            switch (c) {
                case '\'' -> b.append("\\'");
                case '\\' -> b.append("\\\\");
                case '\n' -> b.append("\\n");
                case '\r' -> b.append("\\r");
                case '\t' -> b.append("\\t");
                default -> {
                    if (c < 0x20 || c == 0x7f) {
                        b.append(String.format("\\x%02x", (int) c));
                    } else {
                        b.append(c);
                    }
                }
            }
        }
        b.append('\'');
        if (s.length() > n) {
            b.append("...");
        }
        return b.toString();
    }

    /**
     * Normalizes a dict of plain values.
     *
     * @throws IllegalArgumentException naming the offending key path if a value is not a plain Python value
     */
    static Map<String, Object> normalizeDict(Map<String, Object> map) {
        return normalizeMap(map, "", 0);
    }

    /**
     * Normalizes one plain value.
     *
     * @param path the location for messages, such as {@code allocator_settings}
     * @throws IllegalArgumentException naming {@code path} if the value is not a plain Python value
     */
    static Object normalize(Object v, String path, int depth) {
        if (depth > MAX_DEPTH) {
            throw new IllegalArgumentException(path + ": nested deeper than " + MAX_DEPTH + " levels");
        }
        if (v == null || v instanceof String || v instanceof Boolean || v instanceof Long || v instanceof Double) {
            return v;
        }
        if (v instanceof Integer || v instanceof Short || v instanceof Byte) {
            return ((Number) v).longValue();
        }
        if (v instanceof Float f) {
            return f.doubleValue();
        }
        if (v instanceof BigInteger b) {
            return b.compareTo(LONG_MIN) >= 0 && b.compareTo(LONG_MAX) <= 0 ? (Object) b.longValue() : b;
        }
        if (v instanceof Object[] a) {
            return normalizeList(List.of(a), path, depth);
        }
        if (v instanceof List<?> l) {
            return normalizeList(l, path, depth);
        }
        if (v instanceof Map<?, ?> m) {
            return normalizeMap(m, path, depth);
        }
        throw new IllegalArgumentException(
                (path.isEmpty() ? "" : path + ": ") + "unsupported value of type " + typeName(v));
    }

    private static List<Object> normalizeList(List<?> list, String path, int depth) {
        List<Object> out = new ArrayList<>(list.size());
        for (int i = 0; i < list.size(); i++) {
            out.add(normalize(list.get(i), path + "[" + i + "]", depth + 1));
        }
        return Collections.unmodifiableList(out);
    }

    private static Map<String, Object> normalizeMap(Map<?, ?> map, String path, int depth) {
        Map<String, Object> out = new LinkedHashMap<>(Math.max(4, map.size() * 2));
        for (Map.Entry<?, ?> e : map.entrySet()) {
            if (!(e.getKey() instanceof String key)) {
                throw new IllegalArgumentException((path.isEmpty() ? "" : path + ": ")
                        + "dict keys must be str, got " + describe(e.getKey()));
            }
            out.put(key, normalize(e.getValue(), path.isEmpty() ? key : path + "." + key, depth + 1));
        }
        return Collections.unmodifiableMap(out);
    }
}
