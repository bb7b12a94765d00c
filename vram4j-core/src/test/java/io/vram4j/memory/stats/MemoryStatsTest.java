package io.vram4j.memory.stats;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.SortedMap;
import org.junit.jupiter.api.Test;

class MemoryStatsTest {
    @Test
    void keysAreThe122SortedKeysOfMemoryStats() {
        List<String> keys = MemoryStats.KEYS;
        assertEquals(122, keys.size());
        List<String> sorted = new ArrayList<>(keys);
        sorted.sort(null);
        assertEquals(sorted, keys);
        assertEquals("active.all.allocated", keys.get(0));
        assertEquals("active.all.current", keys.get(1));
        assertEquals("segment.small_pool.peak", keys.get(121));
        // the scalars and oversize keys sit between inactive_split_bytes and requested_bytes, as in spec 8.2
        int i = keys.indexOf("max_split_size");
        assertEquals("inactive_split_bytes.small_pool.peak", keys.get(i - 1));
        assertEquals(List.of("max_split_size", "num_alloc_retries", "num_device_alloc", "num_device_free",
                "num_ooms", "num_sync_all_streams", "oversize_allocations.allocated", "oversize_allocations.current",
                "oversize_allocations.freed", "oversize_allocations.peak", "oversize_segments.allocated",
                "oversize_segments.current", "oversize_segments.freed", "oversize_segments.peak",
                "requested_bytes.all.allocated"), keys.subList(i, i + 15));
    }

    @Test
    void zerosHoldsEveryKeyAtZero() {
        MemoryStats z = MemoryStats.zeros();
        assertEquals(MemoryStats.KEYS, List.copyOf(z.asMap().keySet()));
        assertTrue(z.asMap().values().stream().allMatch(v -> v == 0L));
        assertEquals(0, z.get("oversize_segments", "all", "peak"));
        SortedMap<String, Long> a = MemoryStats.zeroValues();
        SortedMap<String, Long> b = MemoryStats.zeroValues();
        assertNotSame(a, b);
        a.put("num_ooms", 3L);
        assertEquals(0L, b.get("num_ooms"));
        assertEquals(3, new MemoryStats(a).get("num_ooms"));
    }
}
