package io.vram4j.replay;

import io.vram4j.device.AbstractDevice;

/**
 * The device capacity a replay runs under, where it came from, and the interval of capacities the recording is
 * consistent with. Bytes throughout. Sources, in the order they are tried: {@code --capacity}; an {@code oom}
 * entry (reserved at that moment + its {@code device_free}); the bounds implied by release bursts of the
 * out-of-memory path; for expandable segments, the device total implied by the spacing of the address
 * reservations ({@link TraceAnalysis#expandableSpacing()}); else no limit. The recorded peak reserved is never used
 * as a limit: the device that ran the recording may have been far larger.
 *
 * @param capacity the simulated device's capacity; {@link AbstractDevice#MAX_CAPACITY} when there is no limit
 * @param lower the least capacity consistent with the recording (at least the recorded peak reserved)
 * @param upper the greatest capacity consistent with the recording; {@link Long#MAX_VALUE} when unknown
 * @param source {@link Source} of the capacity
 */
public record CapacityEstimate(long capacity, long lower, long upper, Source source) {
    /** Where a replay's capacity came from. */
    public enum Source {
        /** Given with {@code --capacity} / {@link ReplayOptions#capacity()}. */
        OPTION("--capacity"),
        /** An {@code oom} entry: reserved at that moment + its {@code device_free}. */
        OOM_ENTRY("oom entry (reserved + device_free)"),
        /** The release bursts of the out-of-memory path: the least capacity they allow. */
        OOM_PATH_BURSTS("out-of-memory release bursts"),
        /** The spacing of expandable segments' address reservations: the greatest total they allow. */
        EXPANDABLE_SPACING("spacing of the expandable segments' address reservations"),
        /** Nothing in the recording bounds the device. */
        UNBOUNDED("unbounded");

        private final String text;

        Source(String text) {
            this.text = text;
        }

        /** @return how reports name it */
        public String text() {
            return text;
        }
    }

    /** @return true when the device is bounded (a replay may run out of memory by itself) */
    public boolean limited() {
        return source != Source.UNBOUNDED;
    }

    /** @return e.g. "oom entry (reserved + device_free): [a, b]" with byte counts, for reports */
    public String describe() {
        return source.text() + ": in [" + lower + ", " + (upper == Long.MAX_VALUE ? "unknown" : upper) + "]";
    }

    static CapacityEstimate of(TraceAnalysis analysis, ReplayOptions options) {
        long peak = analysis.recordedPeakReserved;
        if (options.capacity() > 0) {
            return new CapacityEstimate(options.capacity(), options.capacity(), options.capacity(), Source.OPTION);
        }
        if (analysis.oomCapacity > 0) {
            return new CapacityEstimate(analysis.oomCapacity, analysis.oomCapacity, analysis.oomCapacity, Source.OOM_ENTRY);
        }
        if (analysis.hasOomPathBursts() && analysis.inferredLower < analysis.inferredUpper) {
            return new CapacityEstimate(analysis.inferredLower, analysis.inferredLower, analysis.inferredUpper - 1,
                    Source.OOM_PATH_BURSTS);
        }
        long[] spacing = analysis.expandableSpacing();
        if (spacing != null) {
            return new CapacityEstimate(spacing[1], spacing[0], spacing[1], Source.EXPANDABLE_SPACING);
        }
        // Expandable segments with one stream and pool only: its one reservation (1.125 PiB) overlaps nothing.
        return new CapacityEstimate(AbstractDevice.MAX_CAPACITY, peak, Long.MAX_VALUE, Source.UNBOUNDED);
    }
}
