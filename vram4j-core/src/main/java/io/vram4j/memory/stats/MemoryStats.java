package io.vram4j.memory.stats;

import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.SortedMap;
import java.util.TreeMap;

/**
 * A point-in-time copy of one device's allocator statistics, keyed exactly as PyTorch's
 * {@code torch.cuda.memory_stats()}: 122 flat keys sorted by name, such as {@code allocated_bytes.all.current},
 * {@code inactive_split.small_pool.peak}, {@code oversize_segments.allocated} and {@code num_alloc_retries}
 * (spec section 8.2). Byte stats are in bytes, counts are counts. Immutable and thread-safe.
 */
public final class MemoryStats {
    /** The nine stat arrays, in PyTorch's order. */
    public static final List<String> STAT_ARRAYS = List.of(
            "allocation", "segment", "active", "inactive_split", "allocated_bytes", "reserved_bytes",
            "active_bytes", "inactive_split_bytes", "requested_bytes");
    /** The pools of each stat array: {@code all}, {@code small_pool}, {@code large_pool}. */
    public static final List<String> POOLS = List.of("all", "small_pool", "large_pool");
    /** The four metrics of each stat. */
    public static final List<String> METRICS = List.of("current", "peak", "allocated", "freed");
    /** The six scalar counters. */
    public static final List<String> SCALARS = List.of(
            "num_alloc_retries", "num_ooms", "num_sync_all_streams", "num_device_alloc", "num_device_free",
            "max_split_size");

    /** The two oversize stats, which have the four metrics but no pools. */
    public static final List<String> OVERSIZE_STATS = List.of("oversize_allocations", "oversize_segments");

    /**
     * All 122 flat keys of {@code torch.cuda.memory_stats()} (spec 8.2), sorted by string as PyTorch's
     * OrderedDict: 9 stat arrays × 3 pools × 4 metrics, 2 oversize stats × 4 metrics and 6 scalars.
     */
    public static final List<String> KEYS = buildKeys();

    private static List<String> buildKeys() {
        TreeMap<String, Boolean> keys = new TreeMap<>();
        for (String stat : STAT_ARRAYS) {
            for (String pool : POOLS) {
                for (String metric : METRICS) {
                    keys.put(stat + "." + pool + "." + metric, true);
                }
            }
        }
        for (String stat : OVERSIZE_STATS) {
            for (String metric : METRICS) {
                keys.put(stat + "." + metric, true);
            }
        }
        for (String scalar : SCALARS) {
            keys.put(scalar, true);
        }
        return List.copyOf(keys.keySet());
    }

    /**
     * A fresh, modifiable map holding every one of the 122 {@link #KEYS} with value 0 (including
     * {@code max_split_size}, which a live allocator reports as -1 when unlimited). Handy for building stats by
     * hand: fill in the non-zero values, then pass it to {@link #MemoryStats(Map)}.
     *
     * @return a new sorted map; the caller owns it
     */
    public static SortedMap<String, Long> zeroValues() {
        SortedMap<String, Long> m = new TreeMap<>();
        for (String k : KEYS) {
            m.put(k, 0L);
        }
        return m;
    }

    /** @return stats with all 122 {@link #KEYS} at 0 (see {@link #zeroValues()}) */
    public static MemoryStats zeros() {
        return new MemoryStats(zeroValues());
    }

    private final SortedMap<String, Long> values;

    /**
     * @param values the flat key/value pairs; copied
     * @throws IllegalArgumentException if a key is missing
     */
    public MemoryStats(Map<String, Long> values) {
        this.values = Collections.unmodifiableSortedMap(new TreeMap<>(values));
    }

    /**
     * @param key a flat key such as {@code reserved_bytes.all.peak}
     * @return its value
     * @throws IllegalArgumentException for an unknown key
     */
    public long get(String key) {
        Long v = values.get(key);
        if (v == null) {
            throw new IllegalArgumentException("unknown memory_stats key '" + key + "'");
        }
        return v;
    }

    /**
     * @param stat one of {@link #STAT_ARRAYS}, or {@code oversize_allocations} / {@code oversize_segments}
     * @param pool one of {@link #POOLS} (ignored for the oversize stats)
     * @param metric one of {@link #METRICS}
     * @return the value
     */
    public long get(String stat, String pool, String metric) {
        return stat.startsWith("oversize_") ? get(stat + "." + metric) : get(stat + "." + pool + "." + metric);
    }

    /** @return all keys and values, sorted by key, unmodifiable */
    public SortedMap<String, Long> asMap() {
        return values;
    }

    /** @return {@code allocated_bytes.all.current} (as {@code torch.cuda.memory_allocated}) */
    public long allocatedBytes() {
        return get("allocated_bytes.all.current");
    }

    /** @return {@code allocated_bytes.all.peak} (as {@code torch.cuda.max_memory_allocated}) */
    public long maxAllocatedBytes() {
        return get("allocated_bytes.all.peak");
    }

    /** @return {@code reserved_bytes.all.current} (as {@code torch.cuda.memory_reserved}) */
    public long reservedBytes() {
        return get("reserved_bytes.all.current");
    }

    /** @return {@code reserved_bytes.all.peak} (as {@code torch.cuda.max_memory_reserved}) */
    public long maxReservedBytes() {
        return get("reserved_bytes.all.peak");
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof MemoryStats s && s.values.equals(values);
    }

    @Override
    public int hashCode() {
        return values.hashCode();
    }

    @Override
    public String toString() {
        return values.toString();
    }
}
