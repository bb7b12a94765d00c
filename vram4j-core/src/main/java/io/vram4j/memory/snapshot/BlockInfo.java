package io.vram4j.memory.snapshot;

import java.util.List;
import java.util.Objects;

/**
 * One block of a segment in a snapshot, PyTorch's block dict. Sizes are in bytes. Immutable and thread-safe.
 *
 * @param address       PyTorch {@code address}: start address (segment address + sizes of the blocks before it)
 * @param size          PyTorch {@code size}: the block size in bytes (rounded)
 * @param requestedSize PyTorch {@code requested_size}: the caller's request in bytes; stale or 0 for inactive blocks
 * @param state         PyTorch {@code state}
 * @param frames        PyTorch {@code frames}: the allocation stack of the current or last owner, empty if none
 */
public record BlockInfo(long address, long size, long requestedSize, BlockState state, List<Frame> frames) {
    /** @throws NullPointerException if {@code state} or {@code frames} (or one of its elements) is null */
    public BlockInfo {
        Objects.requireNonNull(state, "state");
        frames = List.copyOf(frames);
    }

    /** @return true if the block is allocated or pending free */
    public boolean isActive() {
        return state.isActive();
    }

    /** @return true if the block is {@link BlockState#ACTIVE_ALLOCATED} */
    public boolean isAllocated() {
        return state == BlockState.ACTIVE_ALLOCATED;
    }
}
