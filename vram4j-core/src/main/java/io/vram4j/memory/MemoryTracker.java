package io.vram4j.memory;

import io.vram4j.alloc.CachingAllocator;
import io.vram4j.alloc.PeakRegion;
import io.vram4j.memory.stats.FormatSize;

import java.io.PrintStream;
import java.util.function.Consumer;

/**
 * Prints what a region of code did to device memory: allocated, reserved and peak before and after, and the
 * deltas, in the style of the {@code log_memory} helpers PyTorch users write.
 *
 * <pre>{@code
 * try (MemoryTracker t = MemoryTracker.track(alloc, "forward")) {
 *     logits = model.forward(x);
 * }
 * // [forward] allocated 12.0 MiB -> 48.5 MiB (+36.5 MiB), reserved 20.0 MiB -> 60.0 MiB (+40.0 MiB),
 * //           peak allocated in region 50.1 MiB (+38.1 MiB over start)
 * }</pre>
 *
 * <p>Sizes are bytes. The region peak does not reset the allocator's peak statistics. A tracker is used by one
 * thread; trackers nest.
 */
public final class MemoryTracker implements AutoCloseable {
    private final CachingAllocator alloc;
    private final String tag;
    private final Consumer<String> sink;
    private final long allocatedBefore;
    private final long reservedBefore;
    private final PeakRegion region;
    private Report report;

    /**
     * What the region did.
     *
     * @param tag the region's name
     * @param allocatedBefore allocated bytes at the start
     * @param allocatedAfter allocated bytes at the end
     * @param reservedBefore reserved bytes at the start
     * @param reservedAfter reserved bytes at the end
     * @param peakAllocated the highest allocated bytes inside the region
     * @param peakReserved the highest reserved bytes inside the region
     */
    public record Report(String tag, long allocatedBefore, long allocatedAfter, long reservedBefore, long reservedAfter,
                         long peakAllocated, long peakReserved) {
        /** @return one line, e.g. {@code [step] allocated 1.00 MiB -> 3.00 MiB (+2.00 MiB), ...} */
        public String line() {
            return "[" + tag + "] allocated " + FormatSize.formatSize(allocatedBefore) + " -> "
                    + FormatSize.formatSize(allocatedAfter) + " (" + delta(allocatedAfter - allocatedBefore) + "), reserved "
                    + FormatSize.formatSize(reservedBefore) + " -> " + FormatSize.formatSize(reservedAfter) + " ("
                    + delta(reservedAfter - reservedBefore) + "), peak allocated in region "
                    + FormatSize.formatSize(peakAllocated) + " (" + delta(peakAllocated - allocatedBefore) + " over start)";
        }

        private static String delta(long d) {
            return (d < 0 ? "-" : "+") + FormatSize.formatSize(Math.abs(d));
        }
    }

    private MemoryTracker(CachingAllocator alloc, String tag, Consumer<String> sink) {
        this.alloc = alloc;
        this.tag = tag;
        this.sink = sink;
        this.allocatedBefore = alloc.memoryAllocated();
        this.reservedBefore = alloc.memoryReserved();
        this.region = alloc.openPeakRegion();
    }

    /**
     * @param alloc the allocator to watch
     * @param tag a name for the region
     * @return a tracker that prints its report to standard error when closed
     */
    public static MemoryTracker track(CachingAllocator alloc, String tag) {
        return track(alloc, tag, System.err::println);
    }

    /**
     * @param alloc the allocator to watch
     * @param tag a name for the region
     * @param sink receives the report line when the tracker is closed (null for none)
     * @return a tracker
     */
    public static MemoryTracker track(CachingAllocator alloc, String tag, Consumer<String> sink) {
        return new MemoryTracker(alloc, tag, sink);
    }

    /** @return the report, once closed */
    public Report report() {
        if (report == null) {
            throw new IllegalStateException("the tracker '" + tag + "' is still open");
        }
        return report;
    }

    @Override
    public void close() {
        if (report != null) {
            return;
        }
        region.close();
        report = new Report(tag, allocatedBefore, alloc.memoryAllocated(), reservedBefore, alloc.memoryReserved(),
                region.peakAllocated(), region.peakReserved());
        if (sink != null) {
            sink.accept(report.line());
        }
    }

    /**
     * Prints one line with the allocator's current and peak figures, as users' {@code log_memory(tag)}.
     *
     * @param alloc the allocator
     * @param tag a label
     * @param out where to print
     */
    public static void logMemory(CachingAllocator alloc, String tag, PrintStream out) {
        out.println("[" + tag + "] allocated " + FormatSize.formatSize(alloc.memoryAllocated()) + ", reserved "
                + FormatSize.formatSize(alloc.memoryReserved()) + ", peak allocated "
                + FormatSize.formatSize(alloc.maxMemoryAllocated()) + ", peak reserved "
                + FormatSize.formatSize(alloc.maxMemoryReserved()));
    }
}
