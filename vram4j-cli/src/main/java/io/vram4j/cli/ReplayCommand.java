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
import io.vram4j.replay.Fragmentation;
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
import java.util.Locale;
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

    /** Why a sweep recommends nothing. */
    static final String NO_FIT = "every setting runs out of memory at this capacity";

    private final PrintStream out = System.out;

    @Override
    public Integer call() throws IOException {
        MemorySnapshot snapshot = read(file);
        long cap = capacity == null ? 0 : parseCapacity(capacity);
        if (!snapshot.hasTraces()) {
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

    static long parseCapacity(String spec) {
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
        return String.format(Locale.ROOT, "%.1f MiB", bytes / (double) (1L << 20));
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
        out.printf("device %d: %,d events replayed at %,.0f events/s (%s, capacity %s)%n", r.device(), r.events(),
                r.eventsPerSecond(), r.conf().isEmpty() ? "default settings" : r.conf(),
                r.capacitySource().equals("unbounded") ? "unbounded" : human(r.capacity()) + " from " + r.capacitySource());
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
        out.printf("  %-20s %15d %15d%n", "new segments", r.recordedSegmentSizes().size(), r.replayedSegmentSizes().size());
        out.printf("  %-20s %15d %15d%n", "OOMs", r.recordedOoms(), r.predictedOoms());
        out.printf("  segment sequence     %s (first %d of %d agree)%n", r.segmentSequenceEqual() ? "identical" : "differs",
                r.segmentSequencePrefix(), r.recordedSegmentSizes().size());
        if (r.recordedAddresses()) {
            out.printf("  alloc addresses      %,d of %,d at another address than recorded%n", r.allocsAtOtherAddress(), r.allocs());
        } else if (conf == null && capacity == null) {
            out.printf("  alloc places         %,d of %,d at another segment or offset than recorded%n",
                    r.allocsAtOtherAddress(), r.allocs());
        }
        out.printf("  final state          %s%n", r.finalStateEqual() ? "equal to the dump" : "differs from the dump");
        for (String d : r.finalStateDifferences()) {
            out.println("    " + d);
        }
        Fragmentation f = r.atPeak();
        out.printf("  at peak allocated    reserved %s, allocated %s, reserved-unallocated %s, largest free block %s%n",
                human(f.reserved()), human(f.allocated()), human(f.reservedUnallocated()), mib(f.largestFreeBlock()));
        for (ReleaseBurst b : r.bursts()) {
            out.printf("  release burst at entry %d: %d segment(s), %s, %s%n", b.firstEntry(), b.segments(), mib(b.bytes()),
                    b.kind() == ReleaseBurst.Kind.EMPTY_CACHE ? "an explicit empty_cache()"
                            : "the out-of-memory path of one malloc (needed " + mib(b.nextSegmentBytes()) + ")");
        }
        if (r.skipped() > 0) {
            out.printf("  skipped              %d inconsistent or failed entries (lenient)%n", r.skipped());
        }
        out.printf("  verdict              %s%n", r.exact() ? "EXACT: the replay reproduces the recording"
                : r.predictedOoms() > 0 ? "OUT OF MEMORY first at entry " + r.firstPredictedOomEntry() : "replayed");
    }

    private int runSweep(MemorySnapshot snapshot, long cap) throws IOException {
        List<String> grid = new ArrayList<>(List.of("", "expandable_segments:True",
                "max_split_size_mb:64", "max_split_size_mb:128", "max_split_size_mb:256", "max_split_size_mb:512",
                "roundup_power2_divisions:2", "roundup_power2_divisions:4", "roundup_power2_divisions:8",
                "garbage_collection_threshold:0.6,per_process_memory_fraction:1.0",
                "garbage_collection_threshold:0.8,per_process_memory_fraction:1.0",
                "expandable_segments:True,roundup_power2_divisions:4"));
        List<Object[]> rows = new ArrayList<>();
        for (String c : grid) {
            List<ReplayReport> rs;
            try {
                rs = Replayer.replay(snapshot, ReplayOptions.whatIf(c, cap));
            } catch (ReplayException e) {
                throw new UserException(file + ": " + e.getMessage());
            }
            for (ReplayReport r : rs) {
                rows.add(new Object[] {c.isEmpty() ? "(default)" : c, r});
            }
        }
        rows.sort(Comparator.<Object[]>comparingInt(o -> ((ReplayReport) o[1]).predictedOoms() > 0 ? 1 : 0)
                .thenComparingLong(o -> ((ReplayReport) o[1]).replayedPeakReserved()));
        if (json) {
            List<Map<String, Object>> list = new ArrayList<>();
            for (Object[] row : rows) {
                ReplayReport r = (ReplayReport) row[1];
                Map<String, Object> m = new LinkedHashMap<>();
                m.put("conf", row[0]);
                m.put("device", r.device());
                m.put("peak_reserved", r.replayedPeakReserved());
                m.put("peak_allocated", r.replayedPeakAllocated());
                m.put("reserved_unallocated_at_peak", r.atPeak().reservedUnallocated());
                m.put("segments", r.replayedSegmentSizes().size());
                m.put("ooms", r.predictedOoms());
                list.add(m);
            }
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("capacity", cap);
            m.put("results", list);
            boolean fits = !rows.isEmpty() && ((ReplayReport) rows.get(0)[1]).predictedOoms() == 0;
            m.put("recommendation", fits ? rows.get(0)[0] : null);
            if (!fits) {
                m.put("recommendation_reason", NO_FIT);
            }
            out.println(mapper().writeValueAsString(m));
            return 0;
        }
        ReplayReport first = rows.isEmpty() ? null : (ReplayReport) rows.get(0)[1];
        out.printf("sweep of %d settings on %s (capacity %s)%n", grid.size(), file.getFileName(),
                first == null ? "-" : first.capacitySource().equals("unbounded") ? "unbounded" : human(first.capacity()));
        int width = Math.max("settings".length(), rows.stream().mapToInt(row -> row[0].toString().length()).max().orElse(0));
        String header = "%-4s %-" + width + "s %13s %13s %13s %9s %5s%n";
        String line = "%-4d %-" + width + "s %13s %13s %13s %9d %5d%n";
        out.printf(header, "rank", "settings", "peak reserved", "peak alloc.", "unalloc@peak", "segments", "OOMs");
        int rank = 1;
        for (Object[] row : rows) {
            ReplayReport r = (ReplayReport) row[1];
            out.printf(line, rank++, row[0], human(r.replayedPeakReserved()),
                    human(r.replayedPeakAllocated()), human(r.atPeak().reservedUnallocated()), r.replayedSegmentSizes().size(),
                    r.predictedOoms());
        }
        if (first != null) {
            if (first.predictedOoms() > 0) {
                out.println("recommendation: none: " + NO_FIT);
            } else {
                out.printf("recommendation: %s (peak reserved %s)%n", rows.get(0)[0], human(first.replayedPeakReserved()));
            }
        }
        return 0;
    }

    private static ObjectMapper mapper() {
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
