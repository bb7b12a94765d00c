package io.vram4j.alloc;

/**
 * Chooses where new segments should be placed on the device. Replays of recorded PyTorch snapshots use it to
 * put each new segment at the address the recording had, because best fit breaks ties by address. The
 * device honours a hint when that address range is free and ignores it otherwise. Called under the
 * allocator's lock; implementations must not call back into the allocator.
 */
@FunctionalInterface
public interface SegmentPlacement {
    /** No hints: the device picks addresses. */
    SegmentPlacement NONE = (size, expandable) -> 0;

    /**
     * @param size the segment size in bytes (0 for an expandable reservation)
     * @param expandable true when an expandable segment's address range is being reserved
     * @return the wanted base address, or 0 for no preference
     */
    long segmentAddress(long size, boolean expandable);
}
