package io.vram4j.replay;

import io.vram4j.memory.snapshot.Frame;

import java.util.List;

/**
 * One out-of-memory failure in a replay: a recorded {@code oom} entry, or an allocation a what-if replay could
 * not serve.
 *
 * @param entry the trace entry index; -1 before the first entry (the state before the trace does not fit)
 * @param requestedBytes the caller's request in bytes (the {@code alloc} entry's size; the rounded size for an
 *     {@code oom} entry, which records no other)
 * @param recorded true for an {@code oom} entry of the recording
 * @param failedInReplay whether the replay's allocator ran out of memory there too
 * @param frames the stack frames of the failing allocation, innermost first, as recorded
 * @param state the allocator's memory at the failure, after the retry sequence
 */
public record OomEvent(int entry, long requestedBytes, boolean recorded, boolean failedInReplay, List<Frame> frames,
                       OomState state) {
}
