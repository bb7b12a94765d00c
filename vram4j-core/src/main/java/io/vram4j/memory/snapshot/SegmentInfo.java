package io.vram4j.memory.snapshot;

import java.util.List;
import java.util.Objects;

/**
 * One segment (one device allocation, or the mapped range of an expandable segment) in a snapshot, PyTorch's
 * segment dict (spec section 10.2). Sizes are in bytes. Immutable and thread-safe.
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

    /** @return true if this is a large-pool segment */
    public boolean isLarge() {
        return segmentType.equals(LARGE);
    }

    /** @return the end address (exclusive), {@code address + totalSize} */
    public long endAddress() {
        return address + totalSize;
    }
}
