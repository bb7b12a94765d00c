package io.vram4j.device;

import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.TreeMap;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class FreeRangesTest {
    private static final long SMALL = 512;
    private static final long LARGE = 2L << 20;

    @Test
    void firstFitFindsTheLowestRangeAtEachAlignment() {
        FreeRanges free = new FreeRanges(SMALL, LARGE);
        free.give(512, 1024);            // [512, 1536): small only
        free.give(LARGE - 512, LARGE);   // [2 MiB - 512, 4 MiB - 512): holds 2 MiB, but not 2 MiB aligned
        free.give(3 * LARGE, LARGE);     // [6 MiB, 8 MiB)
        assertEquals(3, free.rangeCount());
        assertEquals(512, free.firstFit(512, SMALL));
        assertEquals(512, free.firstFit(1024, SMALL));
        assertEquals(LARGE - 512, free.firstFit(1536, SMALL));
        assertEquals(LARGE, free.firstFit(512, LARGE));
        assertEquals(LARGE, free.firstFit(LARGE - 512, LARGE));
        assertEquals(3 * LARGE, free.firstFit(LARGE, LARGE));
        assertEquals(LARGE - 512, free.firstFit(LARGE, SMALL));
        assertEquals(-1, free.firstFit(LARGE + 512, SMALL));
        assertThrows(IllegalArgumentException.class, () -> free.firstFit(512, 4096));
    }

    @Test
    void takeSplitsAndGiveMerges() {
        FreeRanges free = new FreeRanges(SMALL, LARGE);
        free.give(0, 10 * SMALL);
        free.take(2 * SMALL, 3 * SMALL);
        assertEquals(2, free.rangeCount());
        assertTrue(free.isFree(0, 2 * SMALL));
        assertFalse(free.isFree(SMALL, 2 * SMALL));
        assertTrue(free.isFree(5 * SMALL, 5 * SMALL));
        assertThrows(IllegalStateException.class, () -> free.take(4 * SMALL, 2 * SMALL));
        assertThrows(IllegalStateException.class, () -> free.give(SMALL, SMALL), "already free");
        free.give(2 * SMALL, 3 * SMALL);
        assertEquals(1, free.rangeCount());
        assertTrue(free.isFree(0, 10 * SMALL));
    }

    @Test
    void agreesWithANaiveModelOnRandomOperations() {
        long region = 1L << 32;
        FreeRanges free = new FreeRanges(SMALL, LARGE);
        NaiveFree model = new NaiveFree();
        free.give(0, region);
        model.give(0, region);
        SplittableRandom random = new SplittableRandom(42);
        List<long[]> used = new ArrayList<>();
        for (int i = 0; i < 20_000; i++) {
            int op = random.nextInt(10);
            if (op < 5 || used.isEmpty()) {
                long length = SMALL * (1 + random.nextInt(random.nextBoolean() ? 16 : 16_384));
                long alignment = random.nextBoolean() ? LARGE : SMALL;
                long expected = model.firstFit(length, alignment);
                assertEquals(expected, free.firstFit(length, alignment), "firstFit(" + length + ", " + alignment + ")");
                if (expected >= 0) {
                    free.take(expected, length);
                    model.take(expected, length);
                    used.add(new long[] {expected, length});
                }
            } else if (op < 7) {
                long start = SMALL * random.nextLong(region / SMALL);
                long length = SMALL * (1 + random.nextInt(4096));
                boolean expected = start + length <= region && model.isFree(start, length);
                assertEquals(expected, free.isFree(start, length));
                if (expected) {
                    free.take(start, length);
                    model.take(start, length);
                    used.add(new long[] {start, length});
                }
            } else {
                long[] r = used.remove(random.nextInt(used.size()));
                free.give(r[0], r[1]);
                model.give(r[0], r[1]);
            }
            assertEquals(model.ranges.size(), free.rangeCount(), "ranges stay coalesced");
        }
    }

    /** First fit by scanning every free range. */
    private static final class NaiveFree {
        final TreeMap<Long, Long> ranges = new TreeMap<>();

        long firstFit(long length, long alignment) {
            for (Map.Entry<Long, Long> e : ranges.entrySet()) {
                long at = (e.getKey() + alignment - 1) / alignment * alignment;
                if (at + length <= e.getValue()) {
                    return at;
                }
            }
            return -1;
        }

        boolean isFree(long start, long length) {
            Map.Entry<Long, Long> e = ranges.floorEntry(start);
            return e != null && start + length <= e.getValue();
        }

        void take(long start, long length) {
            Map.Entry<Long, Long> e = ranges.floorEntry(start);
            ranges.remove(e.getKey());
            if (e.getKey() < start) {
                ranges.put(e.getKey(), start);
            }
            if (start + length < e.getValue()) {
                ranges.put(start + length, e.getValue());
            }
        }

        void give(long start, long length) {
            long s = start;
            long end = start + length;
            Map.Entry<Long, Long> before = ranges.floorEntry(start);
            if (before != null && before.getValue() == start) {
                s = before.getKey();
                ranges.remove(s);
            }
            Long after = ranges.remove(end);
            ranges.put(s, after != null ? after : end);
        }
    }
}
