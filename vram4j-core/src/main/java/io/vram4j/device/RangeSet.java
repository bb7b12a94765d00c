package io.vram4j.device;

import java.util.Map;
import java.util.TreeMap;

/**
 * A set of disjoint half-open address ranges {@code [start, end)}, kept coalesced: adjacent or overlapping
 * ranges merge. Used for the mapped part of a reservation. Operations are O(log n + k) where k is the
 * number of ranges touched. Not thread-safe; {@link AbstractDevice} guards it.
 */
final class RangeSet {
    private final TreeMap<Long, Long> ranges = new TreeMap<>(); // start -> end
    private long total;

    /** @return the number of bytes in the set */
    long total() {
        return total;
    }

    boolean isEmpty() {
        return ranges.isEmpty();
    }

    /** @return true if every byte of {@code [start, end)} is in the set */
    boolean containsAll(long start, long end) {
        Map.Entry<Long, Long> e = ranges.floorEntry(start);
        return e != null && e.getValue() >= end;
    }

    /** @return true if some byte of {@code [start, end)} is in the set */
    boolean intersects(long start, long end) {
        Map.Entry<Long, Long> e = ranges.lowerEntry(end);
        return e != null && e.getValue() > start;
    }

    /** Adds {@code [start, end)}, which must not intersect the set. */
    void add(long start, long end) {
        if (intersects(start, end)) {
            throw new IllegalStateException("range overlaps the set");
        }
        long s = start;
        long e = end;
        Map.Entry<Long, Long> before = ranges.floorEntry(start);
        if (before != null && before.getValue() == start) {
            s = before.getKey();
            ranges.remove(s);
        }
        Long after = ranges.get(end);
        if (after != null) {
            e = after;
            ranges.remove(end);
        }
        ranges.put(s, e);
        total += end - start;
    }

    /** Removes {@code [start, end)}, which must be contained in the set. */
    void remove(long start, long end) {
        Map.Entry<Long, Long> e = ranges.floorEntry(start);
        if (e == null || e.getValue() < end) {
            throw new IllegalStateException("range not contained in the set");
        }
        long s = e.getKey();
        long t = e.getValue();
        ranges.remove(s);
        if (s < start) {
            ranges.put(s, start);
        }
        if (end < t) {
            ranges.put(end, t);
        }
        total -= end - start;
    }

    /** @return the coalesced ranges, start to end, in address order (a copy) */
    TreeMap<Long, Long> ranges() {
        return new TreeMap<>(ranges);
    }
}
