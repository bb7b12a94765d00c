package io.vram4j.bench.peers;

/**
 * One thread's view of an allocator under test: a fixed number of slots, each empty or holding one live
 * buffer. Benchmarks drive allocators only through this interface so that every peer pays the same
 * bookkeeping (no boxing, no per-call objects other than those the allocator itself creates).
 * Not thread-safe: each benchmark thread owns its own instance.
 */
public interface SlotAllocator {
    /**
     * Allocates a buffer of {@code size} bytes into an empty slot.
     *
     * @param slot index in [0, slots)
     * @param size bytes, at least 1
     */
    void alloc(int slot, long size);

    /**
     * Frees the buffer held by a slot; the slot becomes empty.
     *
     * @param slot index of a slot that holds a buffer
     */
    void free(int slot);

    /** Frees every buffer still held. */
    void freeAll();
}
