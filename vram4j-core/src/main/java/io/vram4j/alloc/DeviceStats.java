package io.vram4j.alloc;

import io.vram4j.memory.stats.MemoryStats;

import java.util.HashMap;
import java.util.Map;

/**
 * The allocator's live counters (spec section 8): nine stat arrays over {all, small_pool, large_pool}, two
 * oversize stats and six scalars. Each {@link Stat} keeps current, peak, allocated and freed as PyTorch's
 * {@code Stat}. Guarded by the allocator's lock; {@link #toMemoryStats()} makes the public copy.
 */
final class DeviceStats {
    static final int ALL = 0;
    static final int SMALL = 1;
    static final int LARGE = 2;

    /** One statistic: current, peak, allocated (sum of increases), freed (sum of decreases). */
    static final class Stat {
        long current;
        long peak;
        long allocated;
        long freed;
        /** Peak since the innermost open region (memory trackers); not part of PyTorch's stats. */
        long regionPeak;

        void increase(long n) {
            current += n;
            if (current > peak) {
                peak = current;
            }
            if (current > regionPeak) {
                regionPeak = current;
            }
            allocated += n;
        }

        void decrease(long n) {
            current -= n;
            freed += n;
        }

        void resetAccumulated() {
            allocated = 0;
            freed = 0;
        }

        void resetPeak() {
            peak = current;
        }
    }

    /** A stat per pool type: index {@link #ALL}, {@link #SMALL}, {@link #LARGE}. */
    static final class StatArray {
        final Stat[] byType = {new Stat(), new Stat(), new Stat()};

        /** Updates "all" and the given pool's stat. */
        void increase(int poolType, long n) {
            byType[ALL].increase(n);
            byType[poolType].increase(n);
        }

        void decrease(int poolType, long n) {
            byType[ALL].decrease(n);
            byType[poolType].decrease(n);
        }

        Stat all() {
            return byType[ALL];
        }
    }

    final StatArray allocation = new StatArray();
    final StatArray segment = new StatArray();
    final StatArray active = new StatArray();
    final StatArray inactiveSplit = new StatArray();
    final StatArray allocatedBytes = new StatArray();
    final StatArray reservedBytes = new StatArray();
    final StatArray activeBytes = new StatArray();
    final StatArray inactiveSplitBytes = new StatArray();
    final StatArray requestedBytes = new StatArray();
    final Stat oversizeAllocations = new Stat();
    final Stat oversizeSegments = new Stat();
    long numAllocRetries;
    long numOoms;
    long numSyncAllStreams;
    long numDeviceAlloc;
    long numDeviceFree;
    /** max_split_size captured when the allocator was created; -1 for unlimited. */
    final long maxSplitSize;

    DeviceStats(long maxSplitSize) {
        this.maxSplitSize = maxSplitSize;
    }

    private StatArray[] arrays() {
        return new StatArray[] {allocation, segment, active, inactiveSplit, allocatedBytes, reservedBytes,
                activeBytes, inactiveSplitBytes, requestedBytes};
    }

    void resetAccumulated() {
        for (StatArray a : arrays()) {
            for (Stat s : a.byType) {
                s.resetAccumulated();
            }
        }
        oversizeAllocations.resetAccumulated();
        oversizeSegments.resetAccumulated();
        numAllocRetries = 0;
        numOoms = 0;
        numSyncAllStreams = 0;
        numDeviceAlloc = 0;
        numDeviceFree = 0;
    }

    void resetPeak() {
        for (StatArray a : arrays()) {
            for (Stat s : a.byType) {
                s.resetPeak();
            }
        }
        oversizeAllocations.resetPeak();
        oversizeSegments.resetPeak();
    }

    /** @return the 122 flat keys of {@code torch.cuda.memory_stats()} */
    MemoryStats toMemoryStats() {
        Map<String, Long> m = new HashMap<>(256);
        StatArray[] arrays = arrays();
        for (int i = 0; i < arrays.length; i++) {
            String name = MemoryStats.STAT_ARRAYS.get(i);
            for (int t = 0; t < 3; t++) {
                put(m, name + "." + MemoryStats.POOLS.get(t), arrays[i].byType[t]);
            }
        }
        put(m, "oversize_allocations", oversizeAllocations);
        put(m, "oversize_segments", oversizeSegments);
        m.put("num_alloc_retries", numAllocRetries);
        m.put("num_ooms", numOoms);
        m.put("num_sync_all_streams", numSyncAllStreams);
        m.put("num_device_alloc", numDeviceAlloc);
        m.put("num_device_free", numDeviceFree);
        m.put("max_split_size", maxSplitSize);
        return new MemoryStats(m);
    }

    private static void put(Map<String, Long> m, String prefix, Stat s) {
        m.put(prefix + ".current", s.current);
        m.put(prefix + ".peak", s.peak);
        m.put(prefix + ".allocated", s.allocated);
        m.put(prefix + ".freed", s.freed);
    }
}
