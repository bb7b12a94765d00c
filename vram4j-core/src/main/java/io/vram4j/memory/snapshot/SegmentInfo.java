package io.vram4j.memory.snapshot;

import java.util.List;
import java.util.Objects;

/**
 * One segment (one device allocation, or the mapped range of an expandable segment) in a snapshot, PyTorch's
 * segment dict (spec section 10.2). Sizes are in bytes. Immutable and thread-safe.
 *
 * <p>This is vram4j's one model of allocator state: snapshots read from PyTorch's files, the allocator's own
 * state ({@link io.vram4j.alloc.CachingAllocator#segments()} and {@code snapshot()}), the states the memory
 * timeline rebuilds, and replay's final-state comparison all use it.
 *
 * @param device        PyTorch {@code device}: the device index
 * @param address       PyTorch {@code address}: start address
 * @param totalSize     PyTorch {@code total_size}: sum of the block sizes
 * @param allocatedSize PyTorch {@code allocated_size}: sum of the sizes of allocated blocks
 * @param activeSize    PyTorch {@code active_size}: sum of the sizes of active (allocated or pending-free) blocks
 * @param requestedSize PyTorch {@code requested_size}: sum of the requested sizes of active blocks
 * @param stream        PyTorch {@code stream}: the raw stream handle as 64 bits (0 = default stream); compare
 *                      unsigned
 * @param segmentType   PyTorch {@code segment_type}: {@code "small"} or {@code "large"}
 * @param segmentPoolId PyTorch {@code segment_pool_id}: the owning private pool, {@link PoolId#DEFAULT} if none
 * @param isExpandable  PyTorch {@code is_expandable}: whether it belongs to an expandable segment
 * @param frames        PyTorch {@code frames}: the stack at segment creation, empty if not recorded
 * @param blocks        PyTorch {@code blocks}: the blocks in address order
 */
public record SegmentInfo(int device, long address, long totalSize, long allocatedSize, long activeSize,
        long requestedSize, long stream, String segmentType, PoolId segmentPoolId, boolean isExpandable,
        List<Frame> frames, List<BlockInfo> blocks) {
    /** PyTorch's {@code segment_type} of the small pool. */
    public static final String SMALL = "small";
    /** PyTorch's {@code segment_type} of the large pool. */
    public static final String LARGE = "large";

    /**
     * @throws NullPointerException     if a reference argument (or a list element) is null
     * @throws IllegalArgumentException if {@code segmentType} is not {@code "small"} or {@code "large"}
     */
    public SegmentInfo {
        Objects.requireNonNull(segmentType, "segmentType");
        if (!segmentType.equals(SMALL) && !segmentType.equals(LARGE)) {
            throw new IllegalArgumentException("segmentType must be 'small' or 'large', got '" + segmentType + "'");
        }
        Objects.requireNonNull(segmentPoolId, "segmentPoolId");
        frames = List.copyOf(frames);
        blocks = List.copyOf(blocks);
    }

    /**
     * A segment whose four sizes are computed from its blocks as PyTorch's {@code snapshot()} computes them (spec
     * section 10.2): {@code total_size} = Σ block sizes, {@code allocated_size} = Σ sizes of allocated blocks,
     * {@code active_size} = Σ sizes of active blocks, {@code requested_size} = Σ requested sizes of active blocks.
     *
     * @param device        the device index
     * @param address       start address
     * @param stream        raw stream handle as 64 bits
     * @param segmentType   {@link #SMALL} or {@link #LARGE}
     * @param segmentPoolId the owning private pool, {@link PoolId#DEFAULT} if none
     * @param isExpandable  whether it belongs to an expandable segment
     * @param frames        the stack at segment creation, empty if not recorded
     * @param blocks        the blocks in address order
     * @return the segment
     * @throws NullPointerException     if a reference argument (or a list element) is null
     * @throws IllegalArgumentException if {@code segmentType} is not {@code "small"} or {@code "large"}
     */
    public static SegmentInfo of(int device, long address, long stream, String segmentType, PoolId segmentPoolId,
            boolean isExpandable, List<Frame> frames, List<BlockInfo> blocks) {
        long total = 0, allocated = 0, active = 0, requested = 0;
        for (BlockInfo b : blocks) {
            total += b.size();
            if (b.isAllocated()) {
                allocated += b.size();
            }
            if (b.isActive()) {
                active += b.size();
                requested += b.requestedSize();
            }
        }
        return new SegmentInfo(device, address, total, allocated, active, requested, stream, segmentType,
                segmentPoolId, isExpandable, frames, blocks);
    }

    /** @return true if this is a large-pool segment */
    public boolean isLarge() {
        return segmentType.equals(LARGE);
    }

    /** @return the end address (exclusive), {@code address + totalSize} */
    public long endAddress() {
        return address + totalSize;
    }
}
