package io.vram4j.tensor;

import io.vram4j.alloc.CachingAllocator;

/**
 * Splits an allocator's peak memory by {@link MemoryCategory}: while open, every tensor allocation that raises
 * the allocator's allocated bytes above the highest value seen so far takes a census of the live storages
 * ({@link LiveTensors}), adding each one's block size (as {@code memory_allocated} counts it, rounding
 * included) to its category, and records what was running ({@link ExecutionContext}: which module's forward or
 * which node's backward). {@link #profile()} returns the census at the peak.
 *
 * <pre>{@code
 * try (MemoryProfiler prof = MemoryProfiler.start(alloc)) {
 *     trainer.dryRun(train);
 *     System.out.print(prof.profile().table());
 * }
 * }</pre>
 *
 * <p>One profiler is active at a time in the process (starting a second throws). Each new peak costs a pass
 * over the live storages, so the first steps of a run are slower while profiling. Not thread-safe: allocate
 * from one thread while profiling.
 */
public final class MemoryProfiler implements AutoCloseable {
    static volatile MemoryProfiler active;

    private final CachingAllocator alloc;
    private long peak = -1;
    private long[] atPeak = new long[MemoryCategory.values().length];
    private long untracked;
    private String where = "";
    private boolean closed;

    private MemoryProfiler(CachingAllocator alloc) {
        this.alloc = alloc;
    }

    /**
     * Starts profiling {@code alloc}; the current allocation is the first peak.
     *
     * @param alloc the allocator whose peak is split
     * @return the profiler; close it to stop
     * @throws IllegalStateException when another profiler is active
     */
    public static synchronized MemoryProfiler start(CachingAllocator alloc) {
        if (active != null) {
            throw new IllegalStateException("a memory profiler is already active; close it first");
        }
        MemoryProfiler p = new MemoryProfiler(java.util.Objects.requireNonNull(alloc, "alloc"));
        p.census();
        active = p;
        return p;
    }

    void afterAllocate(CachingAllocator a) {
        if (a == alloc && !closed && alloc.memoryAllocated() > peak) {
            census();
        }
    }

    private void census() {
        long now = alloc.memoryAllocated();
        long[] by = new long[atPeak.length];
        long sum = 0;
        for (StorageInfo s : LiveTensors.storages()) {
            if (s.device.allocator() == alloc) {
                long b = alloc.blockSize(s.address);
                by[s.category().ordinal()] += b;
                sum += b;
            }
        }
        peak = now;
        atPeak = by;
        untracked = now - sum;
        where = ExecutionContext.describe();
    }

    /** @return the split at the highest allocated bytes seen so far */
    public MemoryProfile profile() {
        return new MemoryProfile(peak, atPeak.clone(), untracked, where);
    }

    /** Stops profiling. Idempotent. */
    @Override
    public void close() {
        synchronized (MemoryProfiler.class) {
            closed = true;
            if (active == this) {
                active = null;
            }
        }
    }
}
