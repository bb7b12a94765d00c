package io.vram4j.alloc;

import java.util.Comparator;
import java.util.TreeSet;

/**
 * One pool of cached blocks (spec 1.1): the free, mapped blocks ordered by (stream, size, address) for
 * best-fit search, and, for expandable segments, the unmapped ranges ordered by (stream, address). Stream
 * handles compare as unsigned 64-bit integers, as PyTorch compares raw pointers. Guarded by the allocator's
 * lock.
 */
final class BlockPool {
    /**
     * Orders free blocks by (stream, size, address): PyTorch's BlockComparatorSize. {@link FreeBlockTree} keeps
     * this order itself; the comparator is its reference in tests.
     */
    static final Comparator<Block> BY_SIZE = (a, b) -> {
        int c = Long.compareUnsigned(a.streamKey, b.streamKey);
        if (c != 0) {
            return c;
        }
        c = Long.compare(a.size, b.size);
        return c != 0 ? c : Long.compareUnsigned(a.ptr, b.ptr);
    };
    /** Orders unmapped blocks by (stream, address): PyTorch's BlockComparatorAddress. */
    static final Comparator<Block> BY_ADDRESS = (a, b) -> {
        int c = Long.compareUnsigned(a.streamKey, b.streamKey);
        return c != 0 ? c : Long.compareUnsigned(a.ptr, b.ptr);
    };

    final boolean isSmall;
    /** Free mapped blocks in {@link #BY_SIZE} order (an intrusive tree: see {@link FreeBlockTree}). */
    final FreeBlockTree blocks = new FreeBlockTree();
    final TreeSet<Block> unmapped = new TreeSet<>(BY_ADDRESS);
    /** The ageing clock of garbage collection: incremented by each free-block search when GC is on. */
    long getFreeBlocksCallCount;

    BlockPool(boolean isSmall) {
        this.isSmall = isSmall;
    }

    /** Puts a block into the free set and restarts its GC age. */
    void insertIntoBlocks(Block block) {
        block.gcCountBase = getFreeBlocksCallCount;
        blocks.add(block);
    }

    long gcAge(Block block) {
        return getFreeBlocksCallCount - block.gcCountBase;
    }
}
