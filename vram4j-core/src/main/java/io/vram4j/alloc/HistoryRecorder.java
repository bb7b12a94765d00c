package io.vram4j.alloc;

import io.vram4j.device.Stream;

import java.util.ArrayList;
import java.util.List;

/**
 * The memory history of one device: a ring buffer of trace entries with PyTorch's actions and fields
 * (spec 10.1, 10.2). The allocator calls it under its lock; reading it also happens under that lock.
 * Time stamps are wall-clock epoch microseconds (see {@link #nowUs()}).
 */
final class HistoryRecorder implements AllocatorListener {

    /** One trace entry. {@code stack} is null when no stack was kept. */
    record Entry(String action, long addr, long size, long stream, long timeUs, StackCapture.Stack stack,
                 long deviceFree) {
        /** @return the kept frames, innermost first; empty when none */
        List<StackCapture.JavaFrame> frames() {
            return stack == null ? List.of() : stack.frames();
        }
    }

    final HistoryContext context;
    final boolean javaStacks;
    private final Entry[] ring;
    private int start;
    private int count;

    private final long startEpochUs;
    private final long startNanos;

    HistoryRecorder(HistoryContext context, boolean javaStacks, int capacity) {
        java.time.Instant now = java.time.Instant.now();
        this.startNanos = System.nanoTime();
        this.startEpochUs = now.getEpochSecond() * 1_000_000L + now.getNano() / 1_000;
        this.context = context;
        this.javaStacks = javaStacks;
        this.ring = new Entry[Math.max(1, capacity)];
    }

    /** @return true when allocation stacks are to be captured */
    boolean captureAtAlloc() {
        return javaStacks && context.compareTo(HistoryContext.STATE) >= 0;
    }

    /** @return true when free / empty_cache stacks are to be captured */
    boolean captureAtFree() {
        return javaStacks && context == HistoryContext.ALL;
    }

    private boolean entriesKeepStacks() {
        return context.compareTo(HistoryContext.ALLOC) >= 0;
    }

    private StackCapture.Stack frames(Object ctx) {
        return entriesKeepStacks() && ctx instanceof StackCapture.Stack s ? s : null;
    }

    private void add(String action, long addr, long size, Stream stream, Object ctx) {
        add(new Entry(action, addr, size, stream.handle(), nowUs(), frames(ctx), 0));
    }

    private void add(Entry e) {
        if (count < ring.length) {
            ring[(start + count) % ring.length] = e;
            count++;
        } else {
            ring[start] = e;
            start = (start + 1) % ring.length;
        }
    }

    /**
     * @return wall-clock epoch microseconds: the wall clock read once when recording started plus the
     *     monotonic clock's progress since (reading the wall clock per entry costs an Instant each time)
     */
    long nowUs() {
        return startEpochUs + (System.nanoTime() - startNanos) / 1_000;
    }

    /** @return the entries, oldest first */
    List<Entry> entries() {
        List<Entry> out = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            out.add(ring[(start + i) % ring.length]);
        }
        return out;
    }

    void snapshotTaken(long activeBytes, Stream stream) {
        add(new Entry("snapshot", 0, activeBytes, stream.handle(), nowUs(), null, 0));
    }

    @Override
    public void alloc(long addr, long size, Stream stream, Object ctx) {
        add("alloc", addr, size, stream, ctx);
    }

    @Override
    public void freeRequested(long addr, long size, Stream stream, Object freeContext, Object allocContext) {
        add("free_requested", addr, size, stream, context == HistoryContext.ALL ? freeContext : allocContext);
    }

    @Override
    public void freeCompleted(long addr, long size, Stream stream, Object freeContext, Object allocContext) {
        add("free_completed", addr, size, stream, context == HistoryContext.ALL ? freeContext : allocContext);
    }

    @Override
    public void segmentAlloc(long addr, long size, Stream stream, boolean small, Object ctx) {
        add("segment_alloc", addr, size, stream, ctx);
    }

    @Override
    public void segmentFree(long addr, long size, Stream stream, boolean small) {
        add("segment_free", addr, size, stream, currentFreeContext);
    }

    @Override
    public void segmentMap(long addr, long size, Stream stream, boolean small, Object ctx) {
        add("segment_map", addr, size, stream, ctx);
    }

    @Override
    public void segmentUnmap(long addr, long size, Stream stream, boolean small) {
        add("segment_unmap", addr, size, stream, currentFreeContext);
    }

    @Override
    public void oom(long deviceFree, long roundedSize, Stream stream) {
        add(new Entry("oom", 0, roundedSize, stream.handle(), nowUs(), null, deviceFree));
    }

    /** Stack of the empty_cache call in progress (context ALL), set by the allocator around releases. */
    Object currentFreeContext;
}
