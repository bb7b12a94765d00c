package io.vram4j.replay;

/**
 * How to replay a recorded trace.
 *
 * @param conf allocator settings in {@code PYTORCH_CUDA_ALLOC_CONF} format to use instead of the recorded
 *     {@code allocator_settings}; null to use the recorded ones
 * @param capacity device capacity in bytes; 0 to take it from the recording (an {@code oom} entry, the release
 *     bursts of the out-of-memory path, or the spacing of expandable segments' reservations), or leave the device
 *     unbounded when the recording tells nothing ({@link CapacityEstimate}); never the recorded peak
 * @param recordedAddresses place new segments at the addresses the recording had (exact replays); false to let
 *     the simulated device choose (what-if replays)
 * @param lenient continue past inconsistent entries (frees of unknown addresses, allocations that fail),
 *     counting what was skipped, instead of stopping with a {@link ReplayException}
 */
public record ReplayOptions(String conf, long capacity, boolean recordedAddresses, boolean lenient) {
    /** The exact replay: recorded settings, addresses and capacity, strict. */
    public static final ReplayOptions EXACT = new ReplayOptions(null, 0, true, false);

    /**
     * @param conf settings for a what-if replay
     * @param capacity capacity in bytes, or 0
     * @return what-if options: the device's own addresses, lenient (a predicted OOM does not stop the replay)
     */
    public static ReplayOptions whatIf(String conf, long capacity) {
        return new ReplayOptions(conf, capacity, false, true);
    }

    /** @return true when these options change nothing the recording fixed */
    public boolean isExact() {
        return conf == null && capacity == 0 && recordedAddresses;
    }
}
