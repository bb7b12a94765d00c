package io.vram4j.replay;

import io.vram4j.memory.stats.MemoryStats;

import java.util.List;

/**
 * What a replay of one device's trace found. Bytes throughout.
 *
 * @param device device index
 * @param conf the allocator settings used ({@code PYTORCH_CUDA_ALLOC_CONF} format)
 * @param capacityEstimate the simulated device's capacity, its source and the interval the recording allows
 * @param recordedAddresses whether new segments were placed at the recorded addresses
 * @param events trace entries replayed
 * @param eventsPerSecond replay speed
 * @param fromEmpty true when the trace starts from an empty allocator
 * @param initialReserved reserved bytes rebuilt before the first entry
 * @param initialLiveBlocks live blocks rebuilt before the first entry
 * @param recordedPeakReserved peak of the recorded reserved bytes
 * @param replayedPeakReserved {@code reserved_bytes.all.peak} of the replay
 * @param recordedPeakRequested peak of the recorded Σ requested bytes of live blocks
 * @param replayedPeakRequested {@code requested_bytes.all.peak} of the replay
 * @param recordedPeakAllocated peak of the recorded allocated bytes, derived from the trace: pre-trace live
 *     blocks at their dumped or rebuilt sizes plus {@code round_size(requested)} under the recorded settings for
 *     each block allocated in the trace. It cannot see unsplit remainders (a large-pool block keeps a remainder of
 *     at most 1 MiB; an oversize block may be served from a cached block up to {@code max_non_split_rounding_mb}
 *     larger), which PyTorch and the replay count in the block's size, so it can be lower than
 *     {@code replayedPeakAllocated} by the remainders live at the peak
 * @param replayedPeakAllocated {@code allocated_bytes.all.peak} of the replay
 * @param recordedSegmentSizes sizes of the recorded new segments / mapped ranges, in order
 * @param replayedSegmentSizes sizes of the replay's new segments / mapped ranges, in order
 * @param allocs allocations replayed
 * @param allocsAtOtherAddress allocations that landed at another address than recorded; with the device's own
 *     addresses, at another place: not at the recorded offset inside the segment of ours that replays the recorded
 *     segment; counted only under the recorded settings and capacity, and not with expandable segments
 * @param finalStateEqual whether the final segments and blocks equal the dump (by address when placed at
 *     recorded addresses, else by sizes and states)
 * @param finalStateDifferences the first differences found, empty when equal
 * @param recordedOoms {@code oom} entries in the recording
 * @param predictedOoms allocations that ran out of memory in the replay
 * @param firstPredictedOomEntry entry index of the first predicted OOM, -1 if none
 * @param firstOom the first out-of-memory failure of the replay with its stack and state, null if none: the answer
 *     of a what-if (the real program would have stopped there); figures after it come from a replay that went on
 * @param oomEvents the recording's {@code oom} entries as the replay met them, with the state at each
 * @param bursts release bursts of the recording with their explanation
 * @param notes one-line remarks on how the replay had to start (e.g. a capacity below the pre-trace reservations)
 * @param skipped entries skipped in lenient mode
 * @param atPeak fragmentation at the moment allocated memory peaked in the replay
 * @param statsAtPeak {@code memory_stats} at that moment
 * @param finalStats {@code memory_stats} at the end
 */
public record ReplayReport(int device, String conf, CapacityEstimate capacityEstimate, boolean recordedAddresses,
                           int events, double eventsPerSecond, boolean fromEmpty, long initialReserved,
                           int initialLiveBlocks, long recordedPeakReserved, long replayedPeakReserved,
                           long recordedPeakRequested, long replayedPeakRequested, long recordedPeakAllocated,
                           long replayedPeakAllocated,
                           List<Long> recordedSegmentSizes, List<Long> replayedSegmentSizes, long allocs,
                           long allocsAtOtherAddress, boolean finalStateEqual, List<String> finalStateDifferences,
                           int recordedOoms, int predictedOoms, int firstPredictedOomEntry, OomEvent firstOom,
                           List<OomEvent> oomEvents, List<ReleaseBurst> bursts, List<String> notes,
                           int skipped, Fragmentation atPeak, MemoryStats statsAtPeak, MemoryStats finalStats) {

    /** @return the simulated device's capacity in bytes ({@code capacityEstimate().capacity()}) */
    public long capacity() {
        return capacityEstimate.capacity();
    }

    /** @return how reports name the capacity's source */
    public String capacitySource() {
        return capacityEstimate.source().text();
    }

    /** @return true when the replayed new-segment sizes equal the recorded ones, in order */
    public boolean segmentSequenceEqual() {
        return recordedSegmentSizes.equals(replayedSegmentSizes);
    }

    /** @return how many leading new segments agree in size between recording and replay */
    public int segmentSequencePrefix() {
        int n = Math.min(recordedSegmentSizes.size(), replayedSegmentSizes.size());
        int i = 0;
        while (i < n && recordedSegmentSizes.get(i).equals(replayedSegmentSizes.get(i))) {
            i++;
        }
        return i;
    }

    /** @return true when the replay reproduced the recording exactly (segments, addresses, peak, final state) */
    public boolean exact() {
        return segmentSequenceEqual() && allocsAtOtherAddress == 0 && recordedPeakReserved == replayedPeakReserved
                && finalStateEqual && skipped == 0;
    }
}
