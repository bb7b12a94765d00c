package io.vram4j.memory.snapshot;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * A set of disjoint half-open address ranges {@code [start, end)} in bytes, merged when they touch: the mapped
 * pages of expandable segments, whose {@code segment_map} and {@code segment_unmap} ranges need not line up.
 * The timeline page and the replay both rebuild, with it, which pages were mapped before a trace that starts
 * mid-run. Addresses are compared as signed longs (device addresses are below 2^63). Operations take
 * O(log n + k) time for k ranges touched. Not thread-safe.
 */
public final class AddressRanges {
    private final TreeMap<Long, Long> byStart = new TreeMap<>();

    /**
     * Adds {@code [start, end)}, merging it with the ranges it overlaps or touches; an empty range is ignored.
     *
     * @param start first address
     * @param end address after the last
     */
    public void add(long start, long end) {
        if (start >= end) {
            return;
        }
        Map.Entry<Long, Long> before = byStart.floorEntry(start);
        if (before != null && before.getValue() >= start) {
            start = before.getKey();
            end = Math.max(end, before.getValue());
            byStart.remove(before.getKey());
        }
        Map.Entry<Long, Long> next = byStart.ceilingEntry(start);
        while (next != null && next.getKey() <= end) {
            end = Math.max(end, next.getValue());
            byStart.remove(next.getKey());
            next = byStart.ceilingEntry(start);
        }
        byStart.put(start, end);
    }

    /**
     * Removes {@code [start, end)}; ranges that stick out on either side keep their outer parts.
     *
     * @param start first address
     * @param end address after the last
     */
    public void remove(long start, long end) {
        if (start >= end) {
            return;
        }
        for (long[] r : overlapping(start, end)) {
            byStart.remove(r[0]);
            if (r[0] < start) {
                byStart.put(r[0], start);
            }
            if (r[1] > end) {
                byStart.put(end, r[1]);
            }
        }
    }

    /** @return the parts of {@code [start, end)} not in this set, ascending */
    public List<long[]> missing(long start, long end) {
        List<long[]> out = new ArrayList<>();
        long at = start;
        for (long[] r : overlapping(start, end)) {
            if (r[0] > at) {
                out.add(new long[] {at, r[0]});
            }
            at = Math.max(at, r[1]);
        }
        if (at < end) {
            out.add(new long[] {at, end});
        }
        return out;
    }

    private List<long[]> overlapping(long start, long end) {
        List<long[]> out = new ArrayList<>();
        Map.Entry<Long, Long> first = byStart.lowerEntry(start);
        if (first != null && first.getValue() > start) {
            out.add(new long[] {first.getKey(), first.getValue()});
        }
        for (Map.Entry<Long, Long> e : byStart.subMap(start, true, end, false).entrySet()) {
            out.add(new long[] {e.getKey(), e.getValue()});
        }
        return out;
    }

    /** @return the ranges as {start, end}, ascending */
    public List<long[]> list() {
        List<long[]> out = new ArrayList<>(byStart.size());
        for (Map.Entry<Long, Long> e : byStart.entrySet()) {
            out.add(new long[] {e.getKey(), e.getValue()});
        }
        return out;
    }
}
