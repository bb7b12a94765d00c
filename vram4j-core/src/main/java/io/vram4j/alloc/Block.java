package io.vram4j.alloc;

import io.vram4j.device.Stream;

import java.util.ArrayList;
import java.util.List;

/**
 * A contiguous piece of a segment (spec 1.1). Blocks of one segment form a doubly linked list in address
 * order. A block is "split" when it has a neighbour. Mutable; guarded by the owning allocator's lock.
 * Fields that key the pool's ordered sets ({@link #stream}, {@link #size}, {@link #ptr}) may only change
 * while the block is outside those sets.
 */
final class Block {
    final Stream stream;
    /** {@link Stream#handle()} of {@link #stream}, cached for ordering (compared unsigned). */
    long streamKey;
    final BlockPool pool;
    long size;
    long ptr;
    /** The caller's unrounded size of the last allocation that used this block. */
    long requestedSize;
    boolean allocated;
    /** False only for the unmapped parts of an expandable segment. */
    boolean mapped = true;
    Block prev;
    Block next;
    /** Outstanding cross-stream events; the block is "pending free" while this is positive. */
    int eventCount;
    /** Streams other than {@link #stream} that used the block ({@code record_stream}); null when none. */
    List<Stream> streamUses;
    /** Value of the pool's free-block call counter when the block was last put into the free set (GC age). */
    long gcCountBase;
    /** The owning expandable segment, or null for an ordinary segment. */
    ExpandableSegment expandableSegment;
    /** Allocation-site context (stack frames) when history recording is on; otherwise null. */
    Object context;

    // Links of the pool's free-block tree (see FreeBlockTree); meaningful only while inFreeTree.
    Block treeLeft;
    Block treeRight;
    Block treeParent;
    boolean treeRed;
    boolean inFreeTree;

    Block(Stream stream, BlockPool pool, long size, long ptr) {
        this.stream = stream;
        this.streamKey = stream.handle();
        this.pool = pool;
        this.size = size;
        this.ptr = ptr;
    }

    boolean isSplit() {
        return prev != null || next != null;
    }

    /** @return true when the block waits for events or has stream uses recorded (state active_pending_free) */
    boolean isPending() {
        return !allocated && (eventCount > 0 || (streamUses != null && !streamUses.isEmpty()));
    }

    void addStreamUse(Stream s) {
        if (streamUses == null) {
            streamUses = new ArrayList<>(2);
        }
        if (!streamUses.contains(s)) {
            streamUses.add(s);
        }
    }

    boolean hasStreamUses() {
        return streamUses != null && !streamUses.isEmpty();
    }

    /** Inserts this block between {@code before} and {@code after} in the neighbour list. */
    void splice(Block before, Block after) {
        if (before != null) {
            before.next = this;
        }
        prev = before;
        if (after != null) {
            after.prev = this;
        }
        next = after;
    }

    @Override
    public String toString() {
        return "Block[ptr=" + ptr + ", size=" + size + ", stream=" + Long.toUnsignedString(streamKey)
                + (allocated ? ", allocated" : "") + (mapped ? "" : ", unmapped") + "]";
    }
}
