package io.vram4j.memory.viz;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.Arrays;
import java.util.HashSet;
import java.util.Set;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/** The unboxed helpers of the timeline builder, each against the boxed collection or sort it replaces. */
class TimelinePrimitivesTest {
    /** Random adds, removes and lookups agree with a {@code HashSet<Long>}, keys sharing their low bits included. */
    @Test
    void longSetAgreesWithHashSet() {
        SplittableRandom r = new SplittableRandom(7);
        LongSet set = new LongSet(4);
        Set<Long> oracle = new HashSet<>();
        for (int op = 0; op < 200_000; op++) {
            // block-like addresses (512-byte aligned, few distinct high bits), some with the sign bit set
            long key = (r.nextInt(4) == 0 ? 0x8000_7f00_0000_0000L : 0x7f00_0000_0000L) + 512L * r.nextInt(5_000);
            switch (r.nextInt(3)) {
                case 0 -> assertEquals(oracle.add(key), set.add(key), "add " + key + " at op " + op);
                case 1 -> assertEquals(oracle.remove(key), set.remove(key), "remove " + key + " at op " + op);
                default -> assertEquals(oracle.contains(key), set.contains(key), "contains " + key + " at op " + op);
            }
            assertEquals(oracle.size(), set.size());
        }
        for (long k = 0x7f00_0000_0000L; k < 0x7f00_0000_0000L + 512L * 5_000; k += 512) {
            assertEquals(oracle.contains(k), set.contains(k));
        }
    }

    /** The n largest, ties to the earlier element: the same marks as sorting boxed indices by (size desc, index). */
    @Test
    void largestMatchesAFullSortByIndex() {
        SplittableRandom r = new SplittableRandom(11);
        for (int round = 0; round < 200; round++) {
            long[] sizes = new long[1 + r.nextInt(300)];
            for (int i = 0; i < sizes.length; i++) {
                sizes[i] = 512L * r.nextInt(round % 2 == 0 ? 8 : 100_000); // many ties in even rounds
            }
            int n = r.nextInt(sizes.length + 2);
            Integer[] order = new Integer[sizes.length];
            for (int i = 0; i < order.length; i++) {
                order[i] = i;
            }
            Arrays.sort(order, (a, b) -> sizes[a] != sizes[b] ? Long.compare(sizes[b], sizes[a]) : Integer.compare(a, b));
            boolean[] expected = new boolean[sizes.length];
            for (int i = 0; i < Math.min(n, sizes.length); i++) {
                expected[order[i]] = true;
            }
            assertArrayEquals(expected, TimelineBuilder.largest(sizes, n), "round " + round + ", n " + n);
        }
    }

    /** Addresses with the top bit set sort after the others, as unsigned numbers. */
    @Test
    void higherUnsignedFindsTheNextStart() {
        long high = 0xffff_8000_0000_0000L;
        long[] sorted = TimelineBuilder.sortedUnsigned(new long[] {high, 0x2000, 0x1000, 0x2000, high + 512});
        assertArrayEquals(new long[] {0x1000, 0x2000, 0x2000, high, high + 512}, sorted);
        assertEquals(0, TimelineBuilder.higherUnsigned(sorted, 0));
        assertEquals(1, TimelineBuilder.higherUnsigned(sorted, 0x1000));
        assertEquals(3, TimelineBuilder.higherUnsigned(sorted, 0x2000), "past both equal starts");
        assertEquals(4, TimelineBuilder.higherUnsigned(sorted, high));
        assertEquals(-1, TimelineBuilder.higherUnsigned(sorted, high + 512));
        assertEquals(-1, TimelineBuilder.higherUnsigned(new long[0], 5));
    }
}
