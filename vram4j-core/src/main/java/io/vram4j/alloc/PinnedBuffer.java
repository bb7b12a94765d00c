package io.vram4j.alloc;

import java.lang.foreign.MemorySegment;

/**
 * Host memory handed out by a {@link CachingHostAllocator}: {@link #segment()} has the size asked for and lies in
 * a cached block whose size is that rounded up to a power of two. Give it back with
 * {@link CachingHostAllocator#free(PinnedBuffer)}; after that the segment must not be used (the block may be
 * handed out again). Not thread-safe on its own: one owner at a time.
 */
public final class PinnedBuffer {
    final HostBlock block;
    private final MemorySegment segment;

    PinnedBuffer(HostBlock block, long size) {
        this.block = block;
        this.segment = block.memory.asSlice(0, size);
    }

    /** @return the memory, of the size asked for */
    public MemorySegment segment() {
        return segment;
    }

    /** @return the size of the cached block behind it: the size asked for rounded up to a power of two, bytes */
    public long blockSize() {
        return block.size;
    }
}
