package io.vram4j.tensor;

import io.vram4j.tensor.internal.ExecutionContext;

import io.vram4j.alloc.CachingAllocator;

/**
 * Splits an allocator's peak memory by {@link MemoryCategory}: while open, every tensor allocation that raises
 * the allocator's allocated bytes above the highest value seen so far takes a census of the live storages
 * ({@link LiveTensors}), adding each one's block size (as {@code memory_allocated} counts it, rounding
 * included) to its category, and records what was running ({@link ExecutionContext}: which module's forward or
 * which node's backward). {@link #profile()} returns the census at the peak. Allocations inside a
 * {@link #suspend()} region (the trainer's evaluation) do not count.
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
    private int suspended;
    private final boolean categoryPeaks;
    private final long[] maxByCategory = new long[MemoryCategory.values().length];

    private MemoryProfiler(CachingAllocator alloc, boolean categoryPeaks) {
        this.alloc = alloc;
        this.categoryPeaks = categoryPeaks;
    }

    /**
     * Starts profiling {@code alloc}; the current allocation is the first peak.
     *
     * @param alloc the allocator whose peak is split
     * @return the profiler; close it to stop
     * @throws IllegalStateException when another profiler is active
     */
    public static MemoryProfiler start(CachingAllocator alloc) {
        return start(alloc, false);
    }

    /**
     * Starts profiling {@code alloc}, optionally also tracking each category's own peak (the highest bytes it
     * held at any allocation, e.g. the peak activation memory, which need not coincide with the overall peak);
     * that takes a census at every allocation, so it is for single steps.
     *
     * @param alloc the allocator whose peak is split
     * @param categoryPeaks whether to track {@link #categoryPeak}
     * @return the profiler; close it to stop
     * @throws IllegalStateException when another profiler is active
     */
    public static synchronized MemoryProfiler start(CachingAllocator alloc, boolean categoryPeaks) {
        if (active != null) {
            throw new IllegalStateException("a memory profiler is already active; close it first");
        }
        MemoryProfiler p = new MemoryProfiler(java.util.Objects.requireNonNull(alloc, "alloc"), categoryPeaks);
        p.census();
        active = p;
        return p;
    }

    /**
     * Leaves the active profiler's peak alone until the returned region is closed (e.g. during evaluation,
     * whose memory is not the training step's); does nothing when no profiler is active. Regions nest.
     *
     * @return the region
     */
    public static AutoCloseable suspend() {
        MemoryProfiler p = active;
        if (p == null) {
            return () -> { };
        }
        p.suspended++;
        return () -> p.suspended--;
    }

    void afterAllocate(CachingAllocator a) {
        if (a == alloc && !closed && suspended == 0) {
            if (alloc.memoryAllocated() > peak) {
                census();
            } else if (categoryPeaks) {
                count(new long[atPeak.length]);
            }
        }
    }

    /**
     * @param c a category
     * @return the most bytes it held at any allocation since the start (only with {@code categoryPeaks})
     * @throws IllegalStateException when the profiler was started without category peaks
     */
    public long categoryPeak(MemoryCategory c) {
        if (!categoryPeaks) {
            throw new IllegalStateException("start the profiler with categoryPeaks = true");
        }
        return maxByCategory[c.ordinal()];
    }

    /** Adds up the live blocks by category into {@code by}; returns the total; updates the category peaks. */
    private long count(long[] by) {
        long sum = 0;
        for (StorageInfo s : LiveTensors.storages()) {
            if (s.device.allocator() == alloc) {
                long b = alloc.blockSize(s.address);
                by[s.category().ordinal()] += b;
                sum += b;
            }
        }
        for (int i = 0; i < by.length; i++) {
            maxByCategory[i] = Math.max(maxByCategory[i], by[i]);
        }
        return sum;
    }

    private void census() {
        long now = alloc.memoryAllocated();
        long[] by = new long[atPeak.length];
        long sum = count(by);
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
