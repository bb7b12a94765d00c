package io.vram4j.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.PropertyNamingStrategies;
import com.fasterxml.jackson.databind.SerializationFeature;
import io.vram4j.device.ByteSize;
import io.vram4j.device.Devices;
import io.vram4j.memory.snapshot.MemorySnapshot;
import io.vram4j.memory.snapshot.SegmentInfo;
import io.vram4j.memory.snapshot.SnapshotFormatException;
import io.vram4j.memory.snapshot.SnapshotReader;
import io.vram4j.memory.stats.FormatSize;
import io.vram4j.memory.snapshot.Frame;
import io.vram4j.replay.CapacityEstimate;
import io.vram4j.replay.Fragmentation;
import io.vram4j.replay.PreTraceOutOfMemoryException;
import io.vram4j.replay.OomEvent;
import io.vram4j.replay.OomReportWriter;
import io.vram4j.replay.Sweep;
import io.vram4j.replay.ReleaseBurst;
import io.vram4j.replay.ReplayException;
import io.vram4j.replay.ReplayOptions;
import io.vram4j.replay.ReplayReport;
import io.vram4j.replay.Replayer;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;

/**
 * {@code vram4j replay FILE}: replays a PyTorch memory snapshot's traces through vram4j's allocator on a
 * simulated device, exactly or under other settings and GPU sizes, and recommends settings.
 */
@Command(name = "replay", mixinStandardHelpOptions = true,
        description = {"Replay a PyTorch (or vram4j) memory snapshot through vram4j's allocator on a simulated device.",
                "Without options the replay is exact: recorded settings, segment addresses and capacity.",
                "With --conf / --capacity it is a what-if replay on the device's own addresses."})
final class ReplayCommand implements Callable<Integer> {
    @Parameters(index = "0", paramLabel = "FILE", description = "snapshot pickle (torch.cuda.memory._dump_snapshot) or JSON")
    Path file;

    @Option(names = "--conf", paramLabel = "STRING", description = "allocator settings in PYTORCH_CUDA_ALLOC_CONF format (what-if)")
    String conf;

    @Option(names = "--capacity", paramLabel = "SIZE|PRESET", description = "device capacity, e.g. 40GiB or A100-40GB (what-if)")
    String capacity;

    @Option(names = "--own-addresses", description = "let the simulated device choose segment addresses")
    boolean ownAddresses;

    @Option(names = "--sweep", description = "replay a grid of settings and recommend the one with the lowest peak reserved that does not run out of memory")
    boolean sweep;

    @Option(names = "--lenient", description = "continue past inconsistent entries, counting what was skipped")
    boolean lenient;

    @Option(names = "--json", description = "print the report as JSON")
    boolean json;

    private final PrintStream out = System.out;

    @Override
    public Integer call() throws IOException {
        long cap = capacity == null ? 0 : parseCapacity(capacity);
        checkConf(conf);
        MemorySnapshot snapshot = read(file);
        if (snapshot.devices().isEmpty() && !snapshot.hasTraces()) {
            return printEmpty();
        }
        if (!snapshot.hasTraces()) {
            if (sweep || conf != null || cap > 0) {
                throw new UserException(file + " has no trace (segments only): " + (sweep ? "--sweep" : conf != null
                        ? "--conf" : "--capacity") + " needs one to replay");
            }
            return printState(snapshot);
        }
        if (sweep) {
            return runSweep(snapshot, cap);
        }
        boolean whatIf = conf != null || cap > 0;
        ReplayOptions options = new ReplayOptions(conf, cap, !ownAddresses && !whatIf, lenient || whatIf);
        List<ReplayReport> reports;
        try {
            reports = Replayer.replay(snapshot, options);
        } catch (PreTraceOutOfMemoryException e) {
            if (json) {
                out.println(mapper().writeValueAsString(Map.of("answer", e.getMessage(), "first_oom_entry", -1)));
            } else {
                out.println(e.getMessage());
            }
            return 0;
        } catch (ReplayException e) {
            throw new UserException(file + ": " + e.getMessage()
                    + (e.lenientHelps() && !lenient ? " (use --lenient to continue past it)" : ""));
        }
        if (json) {
            out.println(mapper().writeValueAsString(jsonReports(reports)));
        } else {
            for (ReplayReport r : reports) {
                printReport(r);
            }
        }
        return 0;
    }

    static MemorySnapshot read(Path file) throws IOException {
        try {
            return SnapshotReader.read(file);
        } catch (NoSuchFileException e) {
            throw new UserException(file + ": no such file");
        } catch (SnapshotFormatException e) {
            throw new UserException(e.getMessage());
        }
    }

    /**
     * Refuses settings PyTorch would refuse, before any file is read.
     *
     * @param conf a {@code --conf} value or null
     */
    static void checkConf(String conf) {
        if (conf == null) {
            return;
        }
        try {
            io.vram4j.alloc.config.AllocatorConfig.DEFAULT.parse(conf);
        } catch (io.vram4j.alloc.config.AllocatorConfigException e) {
            throw new UserException("--conf: " + e.getMessage());
        }
    }

    /**
     * @param spec a {@code --capacity} value
     * @return bytes, above 0 and at most {@link io.vram4j.device.AbstractDevice#MAX_CAPACITY}
     */
    static long parseCapacity(String spec) {
        long bytes = parseSize(spec);
        if (bytes <= 0 || bytes > io.vram4j.device.AbstractDevice.MAX_CAPACITY) {
            throw new UserException("--capacity: expected a device size above 0 and at most "
                    + ByteSize.format(io.vram4j.device.AbstractDevice.MAX_CAPACITY) + ", got '" + spec + "'");
        }
        return bytes;
    }

    private static long parseSize(String spec) {
        if (spec.strip().startsWith("-")) {
            throw new UserException("--capacity: expected a device size above 0, got '" + spec + "'");
        }
        Long preset = Devices.presets().entrySet().stream().filter(e -> e.getKey().equalsIgnoreCase(spec))
                .map(Map.Entry::getValue).findFirst().orElse(null);
        if (preset != null) {
            return preset;
        }
        try {
            return ByteSize.parse(spec);
        } catch (IllegalArgumentException e) {
            throw new UserException("--capacity: expected a size such as 40GiB or a preset (" + String.join(", ",
                    Devices.presets().keySet()) + "), got '" + spec + "'");
        }
    }

    /** A size as PyTorch's format_size writes it: bytes, KiB, MiB or GiB with two decimals. */
    private static String human(long bytes) {
        return FormatSize.formatSize(bytes);
    }

    private static String mib(long bytes) {
        return Figures.mib(bytes);
    }

    private int printEmpty() throws IOException {
        String found = "no segments and no trace: nothing was reserved when it was dumped, and no history was recorded";
        if (json) {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("devices", List.of());
            m.put("found", found);
            out.println(mapper().writeValueAsString(m));
        } else {
            out.println(file.getFileName() + ": an empty snapshot: " + found);
        }
        return 0;
    }

    private int printState(MemorySnapshot s) {
        for (int d : s.devices()) {
            List<SegmentInfo> segs = s.segments(d);
            Fragmentation f = Fragmentation.ofSnapshot(segs);
            long large = segs.stream().filter(SegmentInfo::isLarge).count();
            if (json) {
                Map<String, Object> m = new LinkedHashMap<>();
                m.put("device", d);
                m.put("segments", f.segments());
                m.put("large_segments", large);
                m.put("small_segments", f.segments() - large);
                m.put("blocks", segs.stream().mapToInt(x -> x.blocks().size()).sum());
                m.put("fragmentation", f);
                try {
                    out.println(mapper().writeValueAsString(m));
                } catch (IOException e) {
                    throw new java.io.UncheckedIOException(e);
                }
                continue;
            }
            out.printf("device %d: no trace in %s; state at dump%n", d, file.getFileName());
            out.printf("  segments            %d (%d large, %d small), %d blocks%n", f.segments(), large, f.segments() - large,
                    segs.stream().mapToInt(x -> x.blocks().size()).sum());
            out.printf("  reserved            %s%n", human(f.reserved()));
            out.printf("  allocated           %s%n", human(f.allocated()));
            out.printf("  reserved, unalloc.  %s (%.1f%% of reserved)%n", human(f.reservedUnallocated()),
                    100.0 * f.reservedUnallocated() / Math.max(1, f.reserved()));
            out.printf("  free blocks         %d, largest %s, non-releasable %s%n", f.freeBlocks(), mib(f.largestFreeBlock()),
                    mib(f.nonReleasable()));
            out.printf("  external fragmentation (1 - largest free / free) %.3f%n", f.externalFragmentation());
        }
        return 0;
    }

    private void printReport(ReplayReport r) {
        // numbers go through Figures, not Formatter's %d and %f (start-up: Figures' note)
        out.printf("device %s: %s events replayed at %s events/s (%s, capacity %s)%n", r.device(), Figures.grouped(r.events()),
                Figures.grouped(Math.round(r.eventsPerSecond())), r.conf().isEmpty() ? "default settings" : r.conf(),
                r.capacitySource().equals("unbounded") ? "unbounded" : human(r.capacity()) + " from " + r.capacitySource());
        if (r.capacityEstimate().source() != CapacityEstimate.Source.OPTION) {
            out.printf("  capacity interval    [%s, %s] (%s)%n", human(r.capacityEstimate().lower()),
                    r.capacityEstimate().upper() == Long.MAX_VALUE ? "unknown" : human(r.capacityEstimate().upper()),
                    r.capacitySource());
        }
        for (String note : r.notes()) {
            out.println("  note: " + note);
        }
        OomEvent oom = r.firstOom();
        if (oom != null && !oom.recorded()) {
            printOomAnswer(out, oom, "  ");
            out.println("  the figures below come from a replay that continued past it (the real program would have stopped)");
        }
        out.printf("  initial state        %s%n", r.fromEmpty() ? "empty" : human(r.initialReserved()) + " reserved, "
                + r.initialLiveBlocks() + " live blocks rebuilt");
        out.printf("  %-20s %15s %15s%n", "", "recorded", "replayed");
        out.printf("  %-20s %15s %15s%n", "peak reserved", human(r.recordedPeakReserved()), human(r.replayedPeakReserved()));
        out.printf("  %-20s %15s %15s%n", "peak requested", human(r.recordedPeakRequested()), human(r.replayedPeakRequested()));
        out.printf("  %-20s %15s %15s%n", "peak allocated", human(r.recordedPeakAllocated()),
                human(r.replayedPeakAllocated()));
        if (r.recordedPeakAllocated() != r.replayedPeakAllocated()) {
            out.printf("  %-20s %s%n", "", "(recorded allocated = round_size(requested) per block: it cannot see unsplit"
                    + " remainders, which the replay counts)");
        }
        out.printf("  %-20s %15s %15s%n", "new segments", r.recordedSegmentSizes().size(), r.replayedSegmentSizes().size());
        out.printf("  %-20s %15s %15s%n", "OOMs", r.recordedOoms(), r.predictedOoms());
        out.printf("  segment sequence     %s (first %s of %s agree)%n", r.segmentSequenceEqual() ? "identical" : "differs",
                r.segmentSequencePrefix(), r.recordedSegmentSizes().size());
        if (r.recordedAddresses()) {
            out.printf("  alloc addresses      %s of %s at another address than recorded%n", Figures.grouped(r.allocsAtOtherAddress()),
                    Figures.grouped(r.allocs()));
        } else if (conf == null && capacity == null) {
            out.printf("  alloc places         %s of %s at another segment or offset than recorded%n",
                    Figures.grouped(r.allocsAtOtherAddress()), Figures.grouped(r.allocs()));
        }
        out.printf("  final state          %s%n", r.finalStateEqual() ? "equal to the dump" : "differs from the dump");
        for (String d : r.finalStateDifferences()) {
            out.println("    " + d);
        }
        Fragmentation f = r.atPeak();
        out.printf("  at peak allocated    reserved %s, allocated %s, reserved-unallocated %s, largest free block %s%n",
                human(f.reserved()), human(f.allocated()), human(f.reservedUnallocated()), mib(f.largestFreeBlock()));
        for (ReleaseBurst b : r.bursts()) {
            out.printf("  release burst at entry %s: %s segment(s), %s, %s%n", b.firstEntry(), b.segments(), mib(b.bytes()),
                    b.kind() == ReleaseBurst.Kind.EMPTY_CACHE ? "an explicit empty_cache()"
                            : "the out-of-memory path of one malloc (needed " + mib(b.nextSegmentBytes()) + ")");
        }
        if (r.skipped() > 0) {
            out.printf("  skipped              %s inconsistent or failed entries (lenient)%n", r.skipped());
        }
        out.printf("  verdict              %s%n", r.exact() ? "EXACT: the replay reproduces the recording"
                : r.predictedOoms() > 0 ? "OUT OF MEMORY first at entry " + r.firstPredictedOomEntry() : "replayed");
    }

    /**
     * Prints a predicted out-of-memory failure as a what-if's answer: entry, size, the stack of that allocation.
     *
     * @param out where to print
     * @param oom the failure
     * @param indent prefix of each line
     */
    static void printOomAnswer(PrintStream out, OomEvent oom, String indent) {
        if (oom.entry() < 0) {
            out.println(indent + "answer: OUT OF MEMORY before the trace: the state it starts from does not fit");
            return;
        }
        out.printf("%sanswer: OUT OF MEMORY at entry %s: an allocation of %s (%s B, rounded %s) on stream %s%n",
                indent, oom.entry(), human(oom.requestedBytes()), Figures.grouped(oom.requestedBytes()), human(oom.state().request()),
                Long.toUnsignedString(oom.state().stream()));
        if (oom.frames().isEmpty()) {
            out.println(indent + "  (no stack frames recorded)");
        }
        List<Frame> shown = OomReportWriter.pythonFirst(oom.frames());
        for (Frame f : shown) {
            out.printf("%s  at %s (%s:%s)%n", indent, f.name(), f.filename(), f.line());
        }
        if (shown.size() < oom.frames().size()) {
            out.printf("%s  (%s more frames)%n", indent, oom.frames().size() - shown.size());
        }
    }

    private int runSweep(MemorySnapshot snapshot, long cap) throws IOException {
        List<Map<String, Object>> devices = new ArrayList<>();
        for (int d = 0; d < snapshot.deviceTraces().size(); d++) {
            if (snapshot.deviceTraces().get(d).isEmpty()) {
                continue;
            }
            List<Sweep.Row> rows;
            try {
                rows = Sweep.run(snapshot, d, cap);
            } catch (ReplayException e) {
                throw new UserException(file + ": " + e.getMessage());
            }
            boolean fits = rows.get(0).fits();
            long smallest = fits ? 0 : Sweep.smallestFittingCapacity(snapshot, d, null,
                    rows.get(0).report().capacityEstimate().limited() ? rows.get(0).report().capacity() : 0);
            if (json) {
                devices.add(sweepJson(d, rows, smallest));
            } else {
                printSweep(d, rows, smallest);
            }
        }
        if (json) {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("capacity", cap == 0 ? null : cap);
            m.put("devices", devices);
            out.println(mapper().writeValueAsString(m));
        }
        return 0;
    }

    private static String label(Sweep.Row row) {
        String name = row.conf().isEmpty() ? "(default)" : row.conf();
        return row.isRecorded() ? name + " [recorded]" : name;
    }

    private Map<String, Object> sweepJson(int device, List<Sweep.Row> rows, long smallest) {
        ReplayReport first = rows.get(0).report();
        List<Map<String, Object>> list = new ArrayList<>();
        for (Sweep.Row row : rows) {
            ReplayReport r = row.report();
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("conf", row.conf());
            m.put("default", row.isDefault());
            m.put("recorded", row.isRecorded());
            m.put("peak_reserved", r.replayedPeakReserved());
            m.put("peak_allocated", r.replayedPeakAllocated());
            m.put("reserved_unallocated_at_peak", r.atPeak().reservedUnallocated());
            m.put("segments", r.replayedSegmentSizes().size());
            m.put("ooms", r.predictedOoms());
            m.put("first_oom_entry", r.firstPredictedOomEntry());
            m.put("alloc_retries", r.finalStats().get("num_alloc_retries"));
            m.put("segment_frees", r.finalStats().get("num_device_free"));
            list.add(m);
        }
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("device", device);
        m.put("capacity", first.capacityEstimate().limited() ? first.capacity() : null);
        m.put("capacity_source", first.capacitySource());
        m.put("results", list);
        boolean fits = rows.get(0).fits();
        m.put("recommendation", fits ? rows.get(0).conf() : null);
        if (!fits) {
            m.put("recommendation_reason", noFit(device));
            m.put("smallest_fitting_capacity", smallest);
        }
        return m;
    }

    /** @return the line said when no setting fits on a device */
    static String noFit(int device) {
        return "no setting fits on device " + device;
    }

    private void printSweep(int device, List<Sweep.Row> rows, long smallest) {
        ReplayReport first = rows.get(0).report();
        out.printf("device %d: sweep of %d settings on %s (capacity %s)%n", device, rows.size(), file.getFileName(),
                first.capacityEstimate().limited() ? human(first.capacity()) + " from " + first.capacitySource() : "unbounded");
        int width = Math.max("settings".length(), rows.stream().mapToInt(row -> label(row).length()).max().orElse(0));
        String header = "%-4s %-" + width + "s %13s %13s %13s %9s %5s %13s %13s%n";
        String line = "%-4d %-" + width + "s %13s %13s %13s %9d %5d %13d %13d%n";
        out.printf(header, "rank", "settings", "peak reserved", "peak alloc.", "unalloc@peak", "segments", "OOMs",
                "alloc retries", "segment frees");
        int rank = 1;
        for (Sweep.Row row : rows) {
            ReplayReport r = row.report();
            out.printf(line, rank++, label(row), human(r.replayedPeakReserved()), human(r.replayedPeakAllocated()),
                    human(r.atPeak().reservedUnallocated()), r.replayedSegmentSizes().size(), r.predictedOoms(),
                    r.finalStats().get("num_alloc_retries"), r.finalStats().get("num_device_free"));
        }
        if (!rows.get(rows.size() - 1).fits()) {
            out.println("(rows with OOMs: figures of a replay continued past its first OOM, where the program would have stopped)");
        }
        if (rows.get(0).fits()) {
            out.printf("recommendation: %s (peak reserved %s)%n", label(rows.get(0)), human(first.replayedPeakReserved()));
        } else {
            out.printf("recommendation: none: %s; the smallest capacity that fits with the recorded settings is %s (%,d B)%n",
                    noFit(device), human(smallest), smallest);
        }
    }

    static ObjectMapper mapper() {
        // records (fragmentation, release bursts) in snake_case like the rest of the output; map keys stay as written
        return new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT)
                .setPropertyNamingStrategy(PropertyNamingStrategies.SNAKE_CASE);
    }

    private static List<Map<String, Object>> jsonReports(List<ReplayReport> reports) {
        List<Map<String, Object>> list = new ArrayList<>();
        for (ReplayReport r : reports) {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("device", r.device());
            m.put("conf", r.conf());
            m.put("capacity", r.capacity());
            m.put("capacity_source", r.capacitySource());
            m.put("capacity_lower", r.capacityEstimate().lower());
            m.put("capacity_upper", r.capacityEstimate().upper() == Long.MAX_VALUE ? null : r.capacityEstimate().upper());
            m.put("notes", r.notes());
            m.put("first_oom", r.firstOom());
            m.put("continued_past_oom", r.firstOom() != null && !r.firstOom().recorded());
            m.put("recorded_addresses", r.recordedAddresses());
            m.put("events", r.events());
            m.put("events_per_second", r.eventsPerSecond());
            m.put("from_empty", r.fromEmpty());
            m.put("initial_reserved", r.initialReserved());
            m.put("recorded_peak_reserved", r.recordedPeakReserved());
            m.put("replayed_peak_reserved", r.replayedPeakReserved());
            m.put("recorded_peak_requested", r.recordedPeakRequested());
            m.put("replayed_peak_requested", r.replayedPeakRequested());
            m.put("recorded_peak_allocated", r.recordedPeakAllocated());
            m.put("replayed_peak_allocated", r.replayedPeakAllocated());
            m.put("segment_sequence_equal", r.segmentSequenceEqual());
            m.put("segment_sequence_prefix", r.segmentSequencePrefix());
            m.put("recorded_segment_sizes", r.recordedSegmentSizes());
            m.put("replayed_segment_sizes", r.replayedSegmentSizes());
            m.put("allocs", r.allocs());
            m.put("allocs_at_other_address", r.allocsAtOtherAddress());
            m.put("final_state_equal", r.finalStateEqual());
            m.put("final_state_differences", r.finalStateDifferences());
            m.put("recorded_ooms", r.recordedOoms());
            m.put("predicted_ooms", r.predictedOoms());
            m.put("first_predicted_oom_entry", r.firstPredictedOomEntry());
            m.put("release_bursts", r.bursts());
            m.put("skipped", r.skipped());
            m.put("fragmentation_at_peak", r.atPeak());
            m.put("memory_stats_at_peak", r.statsAtPeak().asMap());
            m.put("memory_stats", r.finalStats().asMap());
            m.put("exact", r.exact());
            list.add(m);
        }
        return list;
    }
}
