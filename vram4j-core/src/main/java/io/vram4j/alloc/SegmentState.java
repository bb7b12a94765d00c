package io.vram4j.alloc;

import java.util.ArrayList;
import java.util.List;

/**
 * A copy of one segment as the allocator holds it (for expandable segments: one contiguous mapped range),
 * with its blocks in address order. Sizes are bytes. Immutable.
 *
 * @param address base address
 * @param totalSize sum of block sizes
 * @param stream raw stream handle
 * @param small true for a small-pool segment
 * @param expandable true for a mapped range of an expandable segment
 * @param blocks the blocks in address order
 */
public record SegmentState(long address, long totalSize, long stream, boolean small, boolean expandable,
                           List<BlockState> blocks) {

    /**
     * One block.
     *
     * @param address start address
     * @param size block size in bytes
     * @param requestedSize the caller's size of the last allocation that used it
     * @param allocated true when handed out
     * @param pendingFree true when freed but waiting for other streams' events
     */
    public record BlockState(long address, long size, long requestedSize, boolean allocated, boolean pendingFree) {
        /** @return PyTorch's state string: active_allocated, active_pending_free or inactive */
        public String state() {
            return allocated ? "active_allocated" : pendingFree ? "active_pending_free" : "inactive";
        }

        /** @return true for allocated or pending-free blocks */
        public boolean active() {
            return allocated || pendingFree;
        }
    }

    /** @return bytes in allocated blocks */
    public long allocatedSize() {
        return blocks.stream().filter(BlockState::allocated).mapToLong(BlockState::size).sum();
    }

    /** @return bytes in active blocks */
    public long activeSize() {
        return blocks.stream().filter(BlockState::active).mapToLong(BlockState::size).sum();
    }

    /** @return the sum of requested sizes of active blocks */
    public long requestedSize() {
        return blocks.stream().filter(BlockState::active).mapToLong(BlockState::requestedSize).sum();
    }

    static List<SegmentState> of(List<List<Block>> segments) {
        List<SegmentState> out = new ArrayList<>(segments.size());
        for (List<Block> seg : segments) {
            Block head = seg.get(0);
            List<BlockState> blocks = new ArrayList<>(seg.size());
            long total = 0;
            for (Block b : seg) {
                blocks.add(new BlockState(b.ptr, b.size, b.requestedSize, b.allocated, b.isPending()));
                total += b.size;
            }
            out.add(new SegmentState(head.ptr, total, head.streamKey, head.pool.isSmall, head.expandableSegment != null,
                    List.copyOf(blocks)));
        }
        return out;
    }
}
