package io.vram4j.alloc;

import io.vram4j.device.Stream;

/**
 * Receives the allocator's trace events as they happen, under the allocator's lock, in the order and with
 * the fields of PyTorch's trace entries (spec 10.2): {@code size} is the caller's requested size for block
 * events, the segment or range size for segment events, and the rounded size for {@code oom}. Used by the
 * history recorder. Implementations must be fast and must not call back into the allocator.
 */
public interface AllocatorListener {
    /** Listens to nothing. */
    AllocatorListener NONE = new AllocatorListener() {
    };

    /**
     * A block was handed out.
     *
     * @param addr device address of the block
     * @param size requested size, bytes
     * @param stream its stream
     * @param context allocation context or null
     */
    default void alloc(long addr, long size, Stream stream, Object context) {
    }

    /**
     * The caller freed a block.
     *
     * @param addr device address of the block
     * @param size requested size, bytes
     * @param stream the stream it belongs to
     * @param freeContext context of the free call or null
     * @param allocContext context of the allocation or null
     */
    default void freeRequested(long addr, long size, Stream stream, Object freeContext, Object allocContext) {
    }

    /**
     * The block went back to its pool.
     *
     * @param addr device address of the block
     * @param size requested size, bytes
     * @param stream the stream it belongs to
     * @param freeContext context of the free call or null
     * @param allocContext context of the allocation or null
     */
    default void freeCompleted(long addr, long size, Stream stream, Object freeContext, Object allocContext) {
    }

    /**
     * A new segment.
     *
     * @param addr device address of the segment
     * @param size size, bytes
     * @param stream the stream it belongs to
     * @param small true for the small pool (blocks up to 1 MiB), false for the large
     * @param context the allocation context (e.g. captured stack frames) or null
     */
    default void segmentAlloc(long addr, long size, Stream stream, boolean small, Object context) {
    }

    /**
     * A segment went back to the device.
     *
     * @param addr device address of the segment
     * @param size size, bytes
     * @param stream the stream it belongs to
     * @param small true for the small pool (blocks up to 1 MiB), false for the large
     */
    default void segmentFree(long addr, long size, Stream stream, boolean small) {
    }

    /**
     * Expandable pages were mapped.
     *
     * @param addr device address of the first mapped byte
     * @param size size, bytes
     * @param stream the stream it belongs to
     * @param small true for the small pool (blocks up to 1 MiB), false for the large
     * @param context the allocation context (e.g. captured stack frames) or null
     */
    default void segmentMap(long addr, long size, Stream stream, boolean small, Object context) {
    }

    /**
     * Expandable pages were unmapped.
     *
     * @param addr device address of the first mapped byte
     * @param size size, bytes
     * @param stream the stream it belongs to
     * @param small true for the small pool (blocks up to 1 MiB), false for the large
     */
    default void segmentUnmap(long addr, long size, Stream stream, boolean small) {
    }

    /**
     * An out-of-memory error is about to be raised.
     *
     * @param deviceFree free memory on the device, bytes
     * @param roundedSize the rounded request, bytes
     * @param stream the stream it belongs to
     */
    default void oom(long deviceFree, long roundedSize, Stream stream) {
    }
}
