package io.vram4j.tensor;

import io.vram4j.alloc.CachingAllocator;
import io.vram4j.memory.MemoryTracker;
import io.vram4j.memory.stats.MemoryStats;

import java.io.PrintStream;
import java.util.function.Consumer;

/**
 * The memory functions of {@code torch.cuda.memory} for the {@linkplain Device#current() current device}:
 * the same figures and trackers as {@link MemoryTracker} and {@link CachingAllocator}, without an allocator
 * argument. This facade lives in the tensor runtime because the current device is a tensor-runtime notion;
 * {@code vram4j-core}'s {@link MemoryTracker} takes the allocator explicitly.
 *
 * <pre>{@code
 * try (Device dev = Device.open("host:1GiB"); Device.Scope s = dev.use()) {
 *     try (MemoryTracker t = Memory.track("forward")) {
 *         logits = model.forward(x);
 *     }   // [forward] allocated ... -> ... (+...), reserved ..., peak allocated ..., peak reserved ...; in region: ...
 *     Memory.logMemory("after forward");
 * }
 * }</pre>
 *
 * <p>All sizes are bytes. Nothing here resets the PyTorch-style peaks (use
 * {@code Device.current().allocator().resetPeakMemoryStats()} for that). Every method resolves the current
 * device when called, so it follows the calling thread's {@link Device#use()} scopes; a tracker keeps the
 * allocator it started with. Thread-safety as {@link MemoryTracker}.
 *
 * <p>Every method throws {@link IllegalStateException} when there is no current device or its allocator is
 * closed.
 */
public final class Memory {
    private Memory() {
    }

    private static CachingAllocator allocator() {
        return Device.current().allocator();
    }

    /** @return bytes in allocated blocks of the current device (as {@code torch.cuda.memory_allocated()}) */
    public static long memoryAllocated() {
        return allocator().memoryAllocated();
    }

    /** @return bytes reserved by the current device's allocator (as {@code torch.cuda.memory_reserved()}) */
    public static long memoryReserved() {
        return allocator().memoryReserved();
    }

    /** @return the peak of allocated bytes (as {@code torch.cuda.max_memory_allocated()}) */
    public static long maxMemoryAllocated() {
        return allocator().maxMemoryAllocated();
    }

    /** @return the peak of reserved bytes (as {@code torch.cuda.max_memory_reserved()}) */
    public static long maxMemoryReserved() {
        return allocator().maxMemoryReserved();
    }

    /** @return the current device's {@code memory_stats()} */
    public static MemoryStats memoryStats() {
        return allocator().memoryStats();
    }

    /**
     * As {@link MemoryTracker#track(CachingAllocator, String)} on the current device: prints the report line
     * to standard error when closed.
     *
     * @param tag a name for the region
     * @return the open tracker (use it in try-with-resources)
     */
    public static MemoryTracker track(String tag) {
        return MemoryTracker.track(allocator(), tag);
    }

    /**
     * As {@link MemoryTracker#track(CachingAllocator, String, Consumer)} on the current device.
     *
     * @param tag a name for the region
     * @param sink receives the report line when the tracker is closed (null for none)
     * @return the open tracker
     */
    public static MemoryTracker track(String tag, Consumer<String> sink) {
        return MemoryTracker.track(allocator(), tag, sink);
    }

    /**
     * Prints {@code [tag] allocated A, reserved R, peak allocated PA, peak reserved PR} for the current device
     * to standard error, as users' {@code log_memory(tag)}.
     *
     * @param tag a label
     */
    public static void logMemory(String tag) {
        MemoryTracker.logMemory(allocator(), tag);
    }

    /**
     * As {@link #logMemory(String)}, printing to {@code out}.
     *
     * @param tag a label
     * @param out where to print
     */
    public static void logMemory(String tag, PrintStream out) {
        MemoryTracker.logMemory(allocator(), tag, out);
    }
}
