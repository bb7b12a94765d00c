package io.vram4j.replay;

import io.vram4j.memory.snapshot.MemorySnapshot;

import java.util.List;

/**
 * Why an allocation ran out of memory, with figures, and what would have avoided it, each counterfactual found
 * by what-if replays. Stateless and thread-safe.
 */
public final class OomForensics {
    private OomForensics() {
    }

    /** The cause classes, in the order they are tested. */
    public enum Cause {
        /** Live allocations alone, plus the request, exceed the device: no cache policy helps. */
        CAPACITY,
        /** Enough bytes are free in cached blocks of the request's pool and stream (or with the device's free
         *  bytes), but no block or mappable range is large enough. */
        FRAGMENTATION,
        /** The bytes needed are free, but in blocks of other streams or of the other pool, or pending on events. */
        CACHE_HELD_ELSEWHERE
    }

    /**
     * @param cause the cause class
     * @param reason one sentence with the figures behind it
     */
    public record Diagnosis(Cause cause, String reason) {
    }

    /**
     * What would have avoided an out-of-memory failure, each found by replays of the whole trace.
     *
     * @param capacity the capacity the failure happened at (bytes)
     * @param smallestFittingCapacity the smallest capacity (to 2 MiB) on which the replay runs out of memory
     *     nowhere, under the same settings (bytes)
     * @param peakReduction how much smaller the peak would have to be: smallestFittingCapacity − capacity (bytes)
     * @param settingsThatFit the sweep's settings ({@link Sweep#SETTINGS}, plus the recorded ones) that run out of
     *     memory nowhere at {@code capacity}; empty when none does
     */
    public record Counterfactuals(long capacity, long smallestFittingCapacity, long peakReduction,
                                  List<String> settingsThatFit) {
    }

    /**
     * Classifies a failure from the memory at that moment.
     *
     * @param s the state after the retry sequence
     * @return the cause with its figures
     */
    public static Diagnosis diagnose(OomState s) {
        long need = s.request();
        OomState.PoolFree own = s.own();
        long elsewhere = s.cachedFree() - own.freeBytes() + s.pendingFree();
        if (s.allocated() + need > s.capacity()) {
            return new Diagnosis(Cause.CAPACITY, "live allocations (" + bytes(s.allocated()) + ") plus the request ("
                    + bytes(need) + ") exceed the capacity (" + bytes(s.capacity()) + ") by "
                    + bytes(s.allocated() + need - s.capacity()));
        }
        if (own.freeBytes() + s.deviceFree() >= need) {
            return new Diagnosis(Cause.FRAGMENTATION, bytes(own.freeBytes()) + " free in " + own.freeBlocks()
                    + " cached blocks of the request's pool and stream plus " + bytes(s.deviceFree())
                    + " free on the device would hold the request (" + bytes(need) + "), but the largest free block is "
                    + bytes(own.largestFreeBlock()) + " and blocks cannot be joined with new device memory");
        }
        return new Diagnosis(Cause.CACHE_HELD_ELSEWHERE, bytes(elsewhere) + " is cached for other streams or the other"
                + " pool, or pending on events (" + bytes(s.pendingFree()) + "); the request's own pool and stream have "
                + bytes(own.freeBytes()) + " free and the device " + bytes(s.deviceFree()));
    }

    /**
     * The counterfactuals of a failure in a replay of {@code snapshot}'s trace of {@code device}.
     *
     * @param snapshot the snapshot
     * @param device the device index (with a trace)
     * @param capacity the capacity the failure happened at (bytes)
     * @param conf the settings of that replay, or null for the recorded ones
     * @return what would have fitted
     */
    public static Counterfactuals counterfactuals(MemorySnapshot snapshot, int device, long capacity, String conf) {
        long smallest = Sweep.smallestFittingCapacity(snapshot, device, conf);
        List<String> fit = Sweep.run(snapshot, device, capacity).stream().filter(Sweep.Row::fits).map(Sweep.Row::conf)
                .toList();
        return new Counterfactuals(capacity, smallest, Math.max(0, smallest - capacity), fit);
    }

    private static String bytes(long b) {
        return io.vram4j.memory.stats.FormatSize.formatSize(b);
    }
}
