package io.vram4j.bench.peers;

/**
 * The "hit mix" workload: cache hits over a mix of sizes. Each thread keeps {@link #LIVE} live buffers and
 * each operation frees the buffer of slot {@code i mod LIVE} and allocates the next size of a fixed cycle of
 * {@link #SIZES} (512 B to 2 MiB, 16 sizes, mean about 400 KiB) in its place. The live set is bounded (at
 * most 8 buffers, under 7 MiB), so once the cycle has run once a caching allocator serves every request from
 * memory it already holds: the workload measures the cache-hit path over mixed sizes, the "median
 * cache-hit pair", where the single-size {@code hit} workloads measure one size class. {@link #run} is not
 * thread-safe: one mix per benchmark thread.
 */
public final class HitMix {
    /** Live buffers per thread. */
    public static final int LIVE = 8;
    /** The cycle of sizes, in bytes: small-pool and large-pool sizes interleaved. */
    static final long[] SIZES = {512, 262_144, 4_096, 1_048_576, 1_536, 700_000, 10_000, 2_097_152,
        32_768, 100_000, 3_000, 1_572_864, 20_000, 400_000, 65_536, 786_432};

    private final SlotAllocator slots;
    private int next;

    /**
     * Fills all {@link #LIVE} slots with the first sizes of the cycle.
     *
     * @param slots the thread's slots, with at least {@link #LIVE} of them
     */
    public HitMix(SlotAllocator slots) {
        this.slots = slots;
        for (int i = 0; i < LIVE; i++) {
            slots.alloc(i, SIZES[i]);
        }
        next = LIVE;
    }

    /**
     * Runs {@code ops} operations (free slot {@code i mod LIVE}, allocate the cycle's next size in it).
     *
     * @param ops number of operations
     */
    public void run(int ops) {
        int i = next;
        for (int k = 0; k < ops; k++) {
            int slot = i & (LIVE - 1);
            slots.free(slot);
            slots.alloc(slot, SIZES[i & (SIZES.length - 1)]);
            i++;
        }
        next = i;
    }

    private boolean closed;

    /** Frees the live buffers once; later calls do nothing (JMH may tear down twice, see {@link DlMix#close}). */
    public synchronized void close() {
        if (!closed) {
            closed = true;
            slots.freeAll();
        }
    }
}
