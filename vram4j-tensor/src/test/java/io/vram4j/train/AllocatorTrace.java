package io.vram4j.train;

import io.vram4j.alloc.AllocatorListener;
import io.vram4j.device.Stream;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * An allocator's trace events as lines that two devices can share: the action, its size, the stream handle, and
 * for blocks the segment they lie in and their offset there (segments numbered in the order they were obtained,
 * since the devices' own addresses differ: the GPU's driver places segments where it likes, {@code sim} from
 * {@code 0x7f0000000000} up). Two runs with equal traces made the same calls and got the same layout inside their
 * segments; other streams than the default one are named {@code side1}, {@code side2}, ... in the order they
 * appear. For tests; not thread-safe (the allocator calls it under its lock).
 */
final class AllocatorTrace implements AllocatorListener {
    private final List<String> lines = new ArrayList<>();
    /** Live segment base to {ordinal, size}. */
    private final TreeMap<Long, long[]> segments = new TreeMap<>();
    private long nextSegment;
    /** Stream handles other than the default stream's 0, numbered in the order they first appear. */
    private final Map<Long, Integer> sideStreams = new java.util.HashMap<>();

    List<String> lines() {
        return List.copyOf(lines);
    }

    private String where(long addr) {
        Map.Entry<Long, long[]> s = segments.floorEntry(addr);
        if (s == null || addr - s.getKey() >= s.getValue()[1]) {
            return "outside any segment";
        }
        return "seg" + s.getValue()[0] + "+" + (addr - s.getKey());
    }

    /**
     * @return {@code 0} for the default stream, else {@code sideN} (N from 1 in order of appearance): the devices
     *     number their other streams differently (the GPU's driver by address, {@code sim} by a counter)
     */
    private String name(Stream stream) {
        long h = stream.handle();
        return h == 0 ? "0" : "side" + sideStreams.computeIfAbsent(h, k -> sideStreams.size() + 1);
    }

    private void add(String action, long size, Stream stream, String where) {
        lines.add(action + " " + size + " stream " + name(stream) + " " + where);
    }

    @Override
    public void alloc(long addr, long size, Stream stream, Object context) {
        add("alloc", size, stream, where(addr));
    }

    @Override
    public void freeRequested(long addr, long size, Stream stream, Object freeContext, Object allocContext) {
        add("free_requested", size, stream, where(addr));
    }

    @Override
    public void freeCompleted(long addr, long size, Stream stream, Object freeContext, Object allocContext) {
        add("free_completed", size, stream, where(addr));
    }

    @Override
    public void segmentAlloc(long addr, long size, Stream stream, boolean small, Object context) {
        long n = nextSegment++;
        segments.put(addr, new long[] {n, size});
        add("segment_alloc", size, stream, "seg" + n + (small ? " small" : " large"));
    }

    @Override
    public void segmentFree(long addr, long size, Stream stream, boolean small) {
        add("segment_free", size, stream, where(addr));
        segments.remove(addr);
    }

    @Override
    public void segmentMap(long addr, long size, Stream stream, boolean small, Object context) {
        add("segment_map", size, stream, small ? "small" : "large");
    }

    @Override
    public void segmentUnmap(long addr, long size, Stream stream, boolean small) {
        add("segment_unmap", size, stream, small ? "small" : "large");
    }

    /** The request that failed, without the device's free bytes (the GPU's count the driver's own memory too). */
    @Override
    public void oom(long deviceFree, long roundedSize, Stream stream) {
        add("oom", roundedSize, stream, "");
    }
}
