package io.vram4j.memory.snapshot;

import java.util.List;
import java.util.Objects;
import java.util.OptionalLong;

/**
 * One event of a device's allocator trace (ring buffer), PyTorch's trace entry dict (spec section 10.2).
 * Sizes are in bytes, {@code timeUs} in microseconds since the Unix epoch. Compact on purpose: a replay holds tens
 * of thousands of these. Immutable and thread-safe.
 *
 * @param action         PyTorch {@code action}
 * @param addr           PyTorch {@code addr}: block, segment or range address ({@code snapshot}: 0); 0 for
 *                       {@code oom}, whose dict has {@code device_free} instead
 * @param size           PyTorch {@code size}: requested size for {@code alloc}/{@code free_*}, segment size for
 *                       {@code segment_*}, rounded request for {@code oom}, active bytes for {@code snapshot}
 * @param stream         PyTorch {@code stream}: the raw stream handle as 64 bits (0 = default stream)
 * @param timeUs         PyTorch {@code time_us}: wall-clock microseconds since the epoch, or {@link #NO_TIME} when
 *                       the entry has none (PyTorch before 2.2 and the 2.x C++ writer)
 * @param deviceFree     PyTorch {@code device_free} ({@code oom} only): bytes free on the device per
 *                       {@code cudaMemGetInfo}; 0 for other actions
 * @param frames         PyTorch {@code frames}: the recorded stack, empty when none was kept
 * @param compileContext PyTorch {@code compile_context} (≈2.6+): the torch.compile region, {@code "N/A"} outside
 *                       one; null when the entry has no such key
 * @param userMetadata   PyTorch {@code user_metadata} (≈2.7+): set through {@code _set_memory_metadata}; null when
 *                       the entry has no such key
 */
public record TraceEntry(TraceAction action, long addr, long size, long stream, long timeUs, long deviceFree,
        List<Frame> frames, String compileContext, String userMetadata) {
    /** The {@code timeUs} of an entry without {@code time_us}. */
    public static final long NO_TIME = Long.MIN_VALUE;

    /** @throws NullPointerException if {@code action} or {@code frames} (or one of its elements) is null */
    public TraceEntry {
        Objects.requireNonNull(action, "action");
        frames = List.copyOf(frames);
    }

    /**
     * An entry of the newest field set without compile context or user metadata.
     *
     * @param action the action
     * @param addr   the address
     * @param size   the size in bytes
     * @param stream the raw stream handle
     * @param timeUs microseconds since the epoch, or {@link #NO_TIME}
     * @param frames the stack, empty if none
     * @return the entry
     */
    public static TraceEntry of(TraceAction action, long addr, long size, long stream, long timeUs,
            List<Frame> frames) {
        return new TraceEntry(action, addr, size, stream, timeUs, 0, frames, null, null);
    }

    /**
     * An {@code oom} entry.
     *
     * @param size       the rounded request in bytes
     * @param stream     the raw stream handle
     * @param timeUs     microseconds since the epoch, or {@link #NO_TIME}
     * @param deviceFree bytes free on the device at the failure
     * @param frames     the stack, empty if none
     * @return the entry
     */
    public static TraceEntry oom(long size, long stream, long timeUs, long deviceFree, List<Frame> frames) {
        return new TraceEntry(TraceAction.OOM, 0, size, stream, timeUs, deviceFree, frames, null, null);
    }

    /** @return true if the entry has a {@code time_us} */
    public boolean hasTimeUs() {
        return timeUs != NO_TIME;
    }

    /** @return {@code time_us} if present */
    public OptionalLong time() {
        return hasTimeUs() ? OptionalLong.of(timeUs) : OptionalLong.empty();
    }
}
