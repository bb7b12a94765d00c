package io.vram4j.memory;

import io.vram4j.alloc.CachingAllocator;
import io.vram4j.alloc.PeakRegion;
import io.vram4j.memory.stats.FormatSize;
import io.vram4j.memory.stats.MemoryStats;

import java.io.PrintStream;
import java.util.Objects;
import java.util.function.Consumer;

/**
 * Prints what a region of code did to device memory, in the style of the {@code log_memory} helpers PyTorch
 * users write: allocated ({@code memory_allocated}), reserved ({@code memory_reserved}), peak allocated
 * ({@code max_memory_allocated}) and peak reserved ({@code max_memory_reserved}) before and after, the deltas,
 * and the peaks reached inside the region.
 *
 * <pre>{@code
 * try (MemoryTracker t = MemoryTracker.track(alloc, "forward")) {
 *     logits = model.forward(x);
 * }
 * // [forward] allocated 12.00 MiB -> 48.50 MiB (+36.50 MiB), reserved 20.00 MiB -> 60.00 MiB (+40.00 MiB),
 * //   peak allocated 30.00 MiB -> 50.10 MiB (+20.10 MiB), peak reserved 40.00 MiB -> 60.00 MiB (+20.00 MiB);
 * //   in region: peak allocated 50.10 MiB (+38.10 MiB over start), peak reserved 60.00 MiB (+40.00 MiB over start)
 * }</pre>
 * (one line; wrapped here). The tensor runtime's {@code io.vram4j.tensor.Memory} offers the same without an
 * allocator argument ({@code Memory.track("forward")}, {@code Memory.logMemory("step")}), on the current
 * device.
 *
 * <p>All sizes are bytes. Neither the tracker nor {@link #logMemory} resets the allocator's PyTorch-style peak
 * statistics: the region peaks come from a {@link PeakRegion}, which measures beside them. Each set of four
 * figures is one {@link CachingAllocator#memoryStats()} snapshot.
 *
 * <p>Thread-safety: a tracker belongs to the thread that opened it (open and close it on that thread);
 * trackers of one allocator nest and must be closed innermost first. Allocations made by other threads while
 * a tracker is open count in its figures, since they are the allocator's. {@link #logMemory} may be called
 * from any thread.
 */
public final class MemoryTracker implements AutoCloseable {
    private final CachingAllocator alloc;
    private final String tag;
    private final Consumer<String> sink;
    private final MemoryStats before;
    private final PeakRegion region;
    private Report report;

    /**
     * What the region did; every figure is in bytes.
     *
     * @param tag the region's name
     * @param allocatedBefore {@code memory_allocated} at the start
     * @param allocatedAfter {@code memory_allocated} at the end
     * @param reservedBefore {@code memory_reserved} at the start
     * @param reservedAfter {@code memory_reserved} at the end
     * @param maxAllocatedBefore {@code max_memory_allocated} at the start
     * @param maxAllocatedAfter {@code max_memory_allocated} at the end
     * @param maxReservedBefore {@code max_memory_reserved} at the start
     * @param maxReservedAfter {@code max_memory_reserved} at the end
     * @param peakAllocated the highest allocated bytes inside the region
     * @param peakReserved the highest reserved bytes inside the region
     */
    public record Report(String tag, long allocatedBefore, long allocatedAfter, long reservedBefore, long reservedAfter,
                         long maxAllocatedBefore, long maxAllocatedAfter, long maxReservedBefore, long maxReservedAfter,
                         long peakAllocated, long peakReserved) {
        /**
         * @return one line: {@code [tag] allocated B -> A (+D), reserved ..., peak allocated ..., peak reserved ...;
         *     in region: peak allocated P (+D over start), peak reserved P (+D over start)}
         */
        public String line() {
            return "[" + tag + "] " + change("allocated", allocatedBefore, allocatedAfter) + ", "
                    + change("reserved", reservedBefore, reservedAfter) + ", "
                    + change("peak allocated", maxAllocatedBefore, maxAllocatedAfter) + ", "
                    + change("peak reserved", maxReservedBefore, maxReservedAfter) + "; in region: peak allocated "
                    + FormatSize.formatSize(peakAllocated) + " (" + delta(peakAllocated - allocatedBefore)
                    + " over start), peak reserved " + FormatSize.formatSize(peakReserved) + " ("
                    + delta(peakReserved - reservedBefore) + " over start)";
        }

        private static String change(String what, long before, long after) {
            return what + " " + FormatSize.formatSize(before) + " -> " + FormatSize.formatSize(after) + " ("
                    + delta(after - before) + ")";
        }

        private static String delta(long d) {
            return (d < 0 ? "-" : "+") + FormatSize.formatSize(Math.abs(d));
        }
    }

    private MemoryTracker(CachingAllocator alloc, String tag, Consumer<String> sink) {
        this.alloc = Objects.requireNonNull(alloc, "alloc");
        this.tag = Objects.requireNonNull(tag, "tag");
        this.sink = sink;
        this.before = alloc.memoryStats();
        this.region = alloc.openPeakRegion();
    }

    /**
     * Opens a tracker that prints its report line to standard error when closed.
     *
     * @param alloc the allocator to watch
     * @param tag a name for the region
     * @return the open tracker (use it in try-with-resources)
     * @throws IllegalStateException when the allocator is closed
     */
    public static MemoryTracker track(CachingAllocator alloc, String tag) {
        return track(alloc, tag, System.err::println);
    }

    /**
     * Opens a tracker.
     *
     * @param alloc the allocator to watch
     * @param tag a name for the region
     * @param sink receives the report line when the tracker is closed (null for none)
     * @return the open tracker (use it in try-with-resources)
     * @throws IllegalStateException when the allocator is closed
     */
    public static MemoryTracker track(CachingAllocator alloc, String tag, Consumer<String> sink) {
        return new MemoryTracker(alloc, tag, sink);
    }

    /**
     * @return the report
     * @throws IllegalStateException while the tracker is open
     */
    public Report report() {
        if (report == null) {
            throw new IllegalStateException("the tracker '" + tag + "' is still open");
        }
        return report;
    }

    /** Ends the region and passes its report line to the sink; closing again does nothing. */
    @Override
    public void close() {
        if (report != null) {
            return;
        }
        region.close();
        MemoryStats after = alloc.memoryStats();
        report = new Report(tag, before.allocatedBytes(), after.allocatedBytes(), before.reservedBytes(),
                after.reservedBytes(), before.maxAllocatedBytes(), after.maxAllocatedBytes(), before.maxReservedBytes(),
                after.maxReservedBytes(), region.peakAllocated(), region.peakReserved());
        if (sink != null) {
            sink.accept(report.line());
        }
    }

    /**
     * @param alloc the allocator
     * @param tag a label
     * @return {@code [tag] allocated A, reserved R, peak allocated PA, peak reserved PR}: the allocator's
     *     {@code memory_allocated}, {@code memory_reserved}, {@code max_memory_allocated} and
     *     {@code max_memory_reserved} from one snapshot
     * @throws IllegalStateException when the allocator is closed
     */
    public static String memoryLine(CachingAllocator alloc, String tag) {
        MemoryStats s = alloc.memoryStats();
        return "[" + tag + "] " + figures(s.allocatedBytes(), s.reservedBytes(), s.maxAllocatedBytes(), s.maxReservedBytes());
    }

    /**
     * The four figures of a memory line, sizes as PyTorch's {@code format_size} writes them.
     *
     * @param allocated {@code memory_allocated}, bytes
     * @param reserved {@code memory_reserved}, bytes
     * @param peakAllocated {@code max_memory_allocated}, bytes
     * @param peakReserved {@code max_memory_reserved}, bytes
     * @return {@code allocated A, reserved R, peak allocated PA, peak reserved PR}
     */
    public static String figures(long allocated, long reserved, long peakAllocated, long peakReserved) {
        return "allocated " + FormatSize.formatSize(allocated) + ", reserved " + FormatSize.formatSize(reserved)
                + ", peak allocated " + FormatSize.formatSize(peakAllocated) + ", peak reserved "
                + FormatSize.formatSize(peakReserved);
    }

    /**
     * Prints {@link #memoryLine} to standard error, as users' {@code log_memory(tag)}. The peaks are not reset.
     *
     * @param alloc the allocator
     * @param tag a label
     * @throws IllegalStateException when the allocator is closed
     */
    public static void logMemory(CachingAllocator alloc, String tag) {
        logMemory(alloc, tag, System.err);
    }

    /**
     * Prints {@link #memoryLine} to {@code out}. The peaks are not reset.
     *
     * @param alloc the allocator
     * @param tag a label
     * @param out where to print
     * @throws IllegalStateException when the allocator is closed
     */
    public static void logMemory(CachingAllocator alloc, String tag, PrintStream out) {
        out.println(memoryLine(alloc, tag));
    }
}
