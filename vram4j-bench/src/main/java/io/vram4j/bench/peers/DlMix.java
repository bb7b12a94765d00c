package io.vram4j.bench.peers;

import java.util.SplittableRandom;

/**
 * The "DL mix" workload of the peer table: {@link #LIVE} live buffers per thread; each operation frees a
 * random one and allocates a new one in its place. Sizes come from a fixed seed: 70% log-uniform in
 * [512 B, 1 MiB), 30% log-uniform in [1 MiB, 64 MiB) (mean about 4.6 MiB). The sequence of
 * {@link #LENGTH} (size, victim) pairs repeats. {@link #run} is not thread-safe: one mix per benchmark thread.
 */
public final class DlMix {
    /** Live buffers per thread. */
    public static final int LIVE = 64;
    /** Length of the repeating (size, victim) sequence; a power of two. */
    static final int LENGTH = 1 << 14;

    private final SlotAllocator slots;
    private final long[] sizes = new long[LENGTH];
    private final int[] victims = new int[LENGTH];
    private int next;

    /**
     * Creates the sequence and fills all {@link #LIVE} slots.
     *
     * @param slots the thread's slots, with at least {@link #LIVE} of them
     * @param seed the sequence's seed (the benchmarks use 42 + thread index)
     */
    public DlMix(SlotAllocator slots, long seed) {
        this.slots = slots;
        SplittableRandom r = new SplittableRandom(seed);
        for (int i = 0; i < LENGTH; i++) {
            sizes[i] = size(r);
            victims[i] = r.nextInt(LIVE);
        }
        for (int i = 0; i < LIVE; i++) {
            slots.alloc(i, size(r));
        }
    }

    /** @return one size of the mix, in bytes */
    static long size(SplittableRandom r) {
        boolean small = r.nextDouble() < 0.7;
        double lo = Math.log(small ? 512 : 1 << 20);
        double hi = Math.log(small ? 1 << 20 : 64 << 20);
        return (long) Math.exp(lo + r.nextDouble() * (hi - lo));
    }

    /**
     * Runs {@code ops} operations (free a victim, allocate the next size in its slot).
     *
     * @param ops number of operations
     */
    public void run(int ops) {
        int i = next;
        for (int k = 0; k < ops; k++) {
            int v = victims[i];
            slots.free(v);
            slots.alloc(v, sizes[i]);
            i = (i + 1) & (LENGTH - 1);
        }
        next = i;
    }

    /** @return the mean size of the repeating sequence, in bytes */
    public double meanSize() {
        double s = 0;
        for (long x : sizes) {
            s += x;
        }
        return s / LENGTH;
    }

    private boolean closed;

    /**
     * Frees the live buffers once; later calls do nothing. Synchronized because JMH may run the shared
     * state's tear-down (which closes every thread's mix) while a thread closes its own.
     */
    public synchronized void close() {
        if (!closed) {
            closed = true;
            slots.freeAll();
        }
    }
}
