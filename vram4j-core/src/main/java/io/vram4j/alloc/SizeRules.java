package io.vram4j.alloc;

import io.vram4j.alloc.config.AllocatorConfig;

/**
 * The size constants and rounding rules of PyTorch's CUDA caching allocator (spec section 2), as pure
 * functions. Sizes are bytes. Stateless and thread-safe.
 */
public final class SizeRules {
    /** kMinBlockSize: minimum block size and rounding quantum, 512 B. */
    public static final long MIN_BLOCK_SIZE = 512;
    /** kSmallSize: the largest request (after rounding) served from the small pool, 1 MiB. */
    public static final long SMALL_SIZE = 1L << 20;
    /** kSmallBuffer: small-pool segment size and small expandable page size, 2 MiB. */
    public static final long SMALL_BUFFER = 2L << 20;
    /** kLargeBuffer: segment size for large requests below 10 MiB and large expandable page size, 20 MiB. */
    public static final long LARGE_BUFFER = 20L << 20;
    /** kMinLargeAlloc: large requests of at least this size get a segment of their own (rounded), 10 MiB. */
    public static final long MIN_LARGE_ALLOC = 10L << 20;
    /** kRoundLarge: rounding quantum of segments for requests of at least 10 MiB, 2 MiB. */
    public static final long ROUND_LARGE = 2L << 20;
    /** Requests of this size (2^60 bytes, 1 EiB) or more fail before anything else. */
    public static final long ONE_EXBIBYTE = 1L << 60;

    private SizeRules() {
    }

    /**
     * The address range one expandable segment reserves (spec 2 table, 6.2):
     * {@code pageSize × ceil(1.125 · capacity / pageSize)}.
     *
     * @param capacity the device's total memory in bytes
     * @param pageSize the pool's page size in bytes ({@link #SMALL_BUFFER} or {@link #LARGE_BUFFER})
     * @return the reservation size in bytes, at least one page
     */
    public static long expandableReservationSize(long capacity, long pageSize) {
        long pages = Math.max(1, (capacity + capacity / 8 + pageSize - 1) / pageSize);
        return pages * pageSize;
    }

    /**
     * Rounds a request as PyTorch's {@code round_size}: below 512 B to 512 B; otherwise to the next of N
     * equal steps between powers of two when {@code roundup_power2_divisions} gives N &gt; 1 for the size's
     * class and size &gt; 512·N; else up to a multiple of 512 B.
     *
     * @param size requested bytes, non-negative and below 2^60
     * @param config supplies {@code roundup_power2_divisions}
     * @return the rounded block size in bytes
     */
    public static long roundSize(long size, AllocatorConfig config) {
        if (size < MIN_BLOCK_SIZE) {
            return MIN_BLOCK_SIZE;
        }
        int divisions = config.roundupPower2Divisions(roundupIntervalIndex(size));
        if (divisions > 1 && size > MIN_BLOCK_SIZE * divisions) {
            return roundupPower2NextDivision(size, divisions);
        }
        return MIN_BLOCK_SIZE * ((size + MIN_BLOCK_SIZE - 1) / MIN_BLOCK_SIZE);
    }

    /**
     * The size class of {@code roundup_power2_divisions}: floor(log2(size)) − 20, clamped to [0, 15]
     * (class 0 holds everything below 2 MiB, class 15 everything from 32 GiB).
     *
     * @param size bytes, positive
     * @return the class index
     */
    public static int roundupIntervalIndex(long size) {
        int log2 = 63 - Long.numberOfLeadingZeros(size);
        return Math.clamp(log2 - 20, 0, AllocatorConfig.ROUNDUP_INTERVALS - 1);
    }

    /**
     * PyTorch's {@code roundup_power2_next_division}: a power of two stays; otherwise the next multiple of
     * floor2(size)/divisions.
     *
     * @param size bytes, positive
     * @param divisions a power of two
     * @return the rounded size
     */
    public static long roundupPower2NextDivision(long size, int divisions) {
        if (Long.bitCount(size) == 1) {
            return size;
        }
        long floor2 = Long.highestOneBit(size);
        long step = floor2 / divisions;
        if (step == 0) {
            return floor2 * 2;
        }
        return size % step == 0 ? size : (size / step) * step + step;
    }

    /**
     * @param roundedSize a result of {@link #roundSize}
     * @return true when the request belongs to the small pool (rounded size ≤ 1 MiB)
     */
    public static boolean isSmall(long roundedSize) {
        return roundedSize <= SMALL_SIZE;
    }

    /**
     * The size of a new segment for a rounded request, as PyTorch's {@code get_allocation_size}:
     * 2 MiB for the small pool, 20 MiB for large requests below 10 MiB, otherwise rounded up to 2 MiB.
     *
     * @param roundedSize a result of {@link #roundSize}
     * @return the segment size in bytes
     */
    public static long allocationSize(long roundedSize) {
        if (roundedSize <= SMALL_SIZE) {
            return SMALL_BUFFER;
        } else if (roundedSize < MIN_LARGE_ALLOC) {
            return LARGE_BUFFER;
        } else {
            return ROUND_LARGE * ((roundedSize + ROUND_LARGE - 1) / ROUND_LARGE);
        }
    }
}
