package io.vram4j.alloc;

import io.vram4j.device.Stream;

import java.lang.foreign.MemorySegment;
import java.util.LinkedHashSet;
import java.util.Set;

/** One cached block of host memory; guarded by its allocator's lock. */
final class HostBlock {
    final long size;
    final MemorySegment memory;
    /** The buffer the block is handed out as, or null while it is free or waits for events. */
    PinnedBuffer handedOut;
    int eventCount;
    final Set<Stream> streams = new LinkedHashSet<>();

    HostBlock(long size, MemorySegment memory) {
        this.size = size;
        this.memory = memory;
    }
}
