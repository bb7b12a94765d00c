package io.vram4j.train;

import io.vram4j.alloc.CachingAllocator;
import io.vram4j.memory.MemoryTracker;

/**
 * The four numbers users log after each epoch (as the usual {@code log_memory} helpers around
 * {@code torch.cuda.memory_allocated()}, {@code memory_reserved()}, {@code max_memory_allocated()} and
 * {@code max_memory_reserved()}), in bytes. Peaks are since the allocator was created (or its peaks reset).
 *
 * @param allocated     bytes in live allocations
 * @param reserved      bytes in segments the allocator holds
 * @param peakAllocated highest {@code allocated}
 * @param peakReserved  highest {@code reserved}
 */
public record MemoryPoint(long allocated, long reserved, long peakAllocated, long peakReserved) {
    /**
     * @param alloc the allocator
     * @return its numbers now
     */
    public static MemoryPoint of(CachingAllocator alloc) {
        return new MemoryPoint(alloc.memoryAllocated(), alloc.memoryReserved(), alloc.maxMemoryAllocated(),
                alloc.maxMemoryReserved());
    }

    /**
     * @param label e.g. {@code "epoch 1"}
     * @return e.g. {@code "epoch 1: allocated 12.3 MiB, reserved 20.0 MiB, peak allocated 30.1 MiB, peak reserved 40.0 MiB"}
     */
    public String line(String label) {
        return label + ": " + MemoryTracker.figures(allocated, reserved, peakAllocated, peakReserved);
    }
}
