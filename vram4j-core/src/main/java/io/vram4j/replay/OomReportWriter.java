package io.vram4j.replay;

import io.vram4j.memory.snapshot.Frame;
import io.vram4j.memory.snapshot.MemorySnapshot;
import io.vram4j.memory.stats.FormatSize;

import java.util.ArrayList;
import java.util.List;

/**
 * The text of the OOM forensics report (what {@code vram4j explain-oom} prints): per out-of-memory event of a
 * snapshot, the failing allocation and its Python frames, the cause with its figures, the free memory per stream
 * and pool, and the counterfactuals. Stateless and thread-safe.
 */
public final class OomReportWriter {
    private OomReportWriter() {
    }

    /**
     * The recorded {@code oom} entries of every device, as an exact replay meets them; with {@code conf} or
     * {@code capacity}, the first out-of-memory failure that what-if predicts instead.
     *
     * @param snapshot a snapshot with traces
     * @param conf what-if settings or null
     * @param capacity what-if capacity in bytes or 0
     * @return one report per device: the events to explain (possibly none)
     * @throws ReplayException when the trace cannot be replayed
     */
    public static List<ReplayReport> events(MemorySnapshot snapshot, String conf, long capacity) {
        boolean whatIf = conf != null || capacity > 0;
        return Replayer.replay(snapshot, whatIf ? ReplayOptions.whatIf(conf, capacity) : ReplayOptions.EXACT);
    }

    /**
     * @param report a replay report
     * @return the events it explains: its recorded {@code oom} entries, or its first predicted failure
     */
    public static List<OomEvent> eventsOf(ReplayReport report) {
        if (!report.oomEvents().isEmpty()) {
            return report.oomEvents();
        }
        return report.firstOom() == null ? List.of() : List.of(report.firstOom());
    }

    /**
     * @param snapshot the snapshot replayed
     * @param report its report for one device
     * @param conf the what-if settings or null
     * @return the report's text, one paragraph per event; a line saying there is none otherwise
     */
    public static String text(MemorySnapshot snapshot, ReplayReport report, String conf) {
        StringBuilder sb = new StringBuilder();
        List<OomEvent> events = eventsOf(report);
        if (events.isEmpty()) {
            return "device " + report.device() + ": no out-of-memory event recorded or predicted\n";
        }
        for (OomEvent e : events) {
            OomState s = e.state();
            sb.append("device ").append(report.device()).append(", ")
                    .append(e.recorded() ? "recorded oom entry " : "predicted out of memory at entry ").append(e.entry())
                    .append(": an allocation of ").append(fmt(e.requestedBytes())).append(" (rounded ")
                    .append(fmt(s.request())).append(") on stream ").append(Long.toUnsignedString(s.stream()))
                    .append(s.smallPool() ? ", small pool" : ", large pool").append('\n');
            for (Frame f : pythonFirst(e.frames())) {
                sb.append("    at ").append(f.name()).append(" (").append(f.filename()).append(':').append(f.line())
                        .append(")\n");
            }
            if (e.recorded() && !e.failedInReplay()) {
                sb.append("  note: the replay served this request (the inferred capacity is above the real one)\n");
            }
            OomForensics.Explanation x = OomForensics.explain(snapshot, report.device(), e, conf);
            OomForensics.Diagnosis d = x.diagnosis();
            sb.append("  cause: ").append(d.cause().name().toLowerCase().replace('_', ' ')).append(": ")
                    .append(d.reason()).append('\n');
            sb.append("  memory: capacity ").append(fmt(s.capacity())).append(", reserved ").append(fmt(s.reserved()))
                    .append(", allocated ").append(fmt(s.allocated())).append(", device free ").append(fmt(s.deviceFree()))
                    .append(", cached free ").append(fmt(s.cachedFree())).append(" (largest block ")
                    .append(fmt(s.largestFreeBlock())).append("), pending on events ").append(fmt(s.pendingFree()))
                    .append('\n');
            for (OomState.PoolFree p : s.pools()) {
                sb.append("    stream ").append(Long.toUnsignedString(p.stream())).append(p.small() ? " small" : " large")
                        .append(" pool: ").append(fmt(p.freeBytes())).append(" free in ").append(p.freeBlocks())
                        .append(" blocks, largest ").append(fmt(p.largestFreeBlock())).append('\n');
            }
            if (!x.growthSites().isEmpty()) {
                sb.append("  sites whose live bytes kept growing up to the failure (sampled at ").append(OomForensics.SAMPLES)
                        .append(" points; a forward pass grows too, growth across steps is a leak):\n");
                for (OomForensics.GrowthSite g : x.growthSites()) {
                    sb.append("    +").append(fmt(g.growth())).append("  ").append(g.site()).append('\n');
                }
            }
            OomForensics.Counterfactuals c = x.counterfactuals();
            sb.append("  counterfactuals (by replay):\n");
            sb.append("    smallest capacity that fits: ").append(fmt(c.smallestFittingCapacity()))
                    .append(", 2 MiB less does not (the peak would have to be ").append(fmt(c.peakReduction()))
                    .append(" smaller at ").append(fmt(c.capacity())).append(")\n");
            sb.append("    settings that fit at ").append(fmt(c.capacity())).append(": ")
                    .append(c.settingsThatFit().isEmpty() ? "none"
                            : String.join(", ", c.settingsThatFit().stream().map(v -> v.isEmpty() ? "(default)" : v).toList()))
                    .append('\n');
        }
        return sb.toString();
    }

    /**
     * @param frames a recorded stack, innermost first
     * @return its Python frames (as memory_viz shows them) when there are any, else all frames; at most 12
     */
    public static List<Frame> pythonFirst(List<Frame> frames) {
        List<Frame> python = new ArrayList<>(frames.stream().filter(f -> f.filename().endsWith(".py")).toList());
        List<Frame> shown = python.isEmpty() ? frames : python;
        return shown.subList(0, Math.min(12, shown.size()));
    }

    private static String fmt(long bytes) {
        return FormatSize.formatSize(bytes);
    }
}
