package io.vram4j.predict;

import io.vram4j.memory.snapshot.Frame;
import io.vram4j.replay.Fragmentation;

import java.util.List;

/**
 * What the replay of the synthesized trace at one value found. Bytes throughout.
 *
 * @param value the parameter's value
 * @param peakAllocated predicted {@code allocated_bytes.all.peak}
 * @param peakReserved predicted {@code reserved_bytes.all.peak}
 * @param atPeak fragmentation when allocated memory peaked
 * @param capacity the device capacity replayed on ({@code Long.MAX_VALUE}-like when unbounded)
 * @param capacitySource where the capacity came from (as {@link io.vram4j.replay.ReplayReport#capacitySource()})
 * @param conf the allocator settings replayed under
 * @param fits false when an allocation ran out of memory
 * @param oomEvent index of the first allocation that ran out of memory among the trace's events, -1 if none
 * @param oomSize its requested size, 0 if none
 * @param oomFrames its stack frames (innermost first, as recorded), empty if none
 * @param events events in the synthesized trace
 * @param oneOffs allocations left out of the model because they occur in some recordings only (counted once
 *     per recording they were found in)
 * @param seconds wall time of synthesis and replay
 */
public record Prediction(long value, long peakAllocated, long peakReserved, Fragmentation atPeak, long capacity,
                         String capacitySource, String conf, boolean fits, int oomEvent, long oomSize,
                         List<Frame> oomFrames, int events, int oneOffs, double seconds) {
    /** Copies the frames. */
    public Prediction {
        oomFrames = List.copyOf(oomFrames);
    }
}
