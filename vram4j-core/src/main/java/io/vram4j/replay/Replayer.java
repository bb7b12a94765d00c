package io.vram4j.replay;

import io.vram4j.alloc.config.AllocatorConfig;
import io.vram4j.alloc.config.AllocatorConfigException;
import io.vram4j.memory.snapshot.MemorySnapshot;
import io.vram4j.memory.snapshot.SegmentInfo;
import io.vram4j.memory.snapshot.TraceEntry;

import java.util.ArrayList;
import java.util.List;

/**
 * Replays the traces of a PyTorch (or vram4j) memory snapshot through vram4j's caching allocator on a
 * simulated device, one device at a time: exactly as recorded (to check that the allocator reproduces
 * PyTorch's decisions), or under other settings and capacities (what-if). See {@link TraceReplayer} notes
 * for how the initial state, segment placement and release bursts are handled. Stateless and thread-safe.
 */
public final class Replayer {
    private Replayer() {
    }

    /**
     * @param snapshot a snapshot with {@code device_traces}
     * @param options how to replay
     * @return one report per device that has a trace, in device order
     * @throws ReplayException when a trace is inconsistent and the options are not lenient
     * @throws AllocatorConfigException when the recorded or given settings are invalid
     */
    public static List<ReplayReport> replay(MemorySnapshot snapshot, ReplayOptions options) {
        List<ReplayReport> reports = new ArrayList<>();
        for (int d = 0; d < snapshot.deviceTraces().size(); d++) {
            if (snapshot.deviceTraces().get(d).isEmpty()) {
                continue;
            }
            reports.add(replayDevice(snapshot, d, options));
        }
        return reports;
    }

    /**
     * @param snapshot a snapshot
     * @param device a device index with a non-empty trace
     * @param options how to replay
     * @return the report of that device
     * @throws IllegalArgumentException when the device has no trace
     * @throws ReplayException when the trace is inconsistent and the options are not lenient
     * @throws AllocatorConfigException when the recorded or given settings are invalid
     */
    public static ReplayReport replayDevice(MemorySnapshot snapshot, int device, ReplayOptions options) {
        if (device >= snapshot.deviceTraces().size() || snapshot.deviceTraces().get(device).isEmpty()) {
            throw new IllegalArgumentException("device " + device + " has no trace");
        }
        return replayDevice(device, snapshot.deviceTraces().get(device), snapshot.segments(device),
                config(snapshot, ReplayOptions.EXACT), config(snapshot, options), options);
    }

    /**
     * One pass that ends at the first out-of-memory failure, for searches that ask only whether a trace fits and
     * how high it peaks when it does: no fragmentation or stats at the allocated peak (both null), and after a
     * failure the figures cover the entries up to it.
     */
    static ReplayReport replayOnce(MemorySnapshot snapshot, int device, ReplayOptions options) {
        AllocatorConfig recorded = config(snapshot, ReplayOptions.EXACT);
        TraceAnalysis analysis = new TraceAnalysis(snapshot.deviceTraces().get(device), snapshot.segments(device), recorded);
        return new TraceReplayer(device, analysis, options, recorded, config(snapshot, options), Integer.MIN_VALUE)
                .stopAtFirstOom().run();
    }

    /**
     * @param snapshot the snapshot
     * @param options the options
     * @return the settings a replay uses: {@code options.conf()} if given, else the recorded
     *     {@code allocator_settings["PYTORCH_CUDA_ALLOC_CONF"]} when it is a non-empty string, else the structured
     *     fields of {@code allocator_settings} as PyTorch writes them (see {@link AllocatorConfig#fromSettingsMap}), else defaults
     * @throws AllocatorConfigException when the given or recorded settings are invalid; the message names the field
     */
    public static AllocatorConfig config(MemorySnapshot snapshot, ReplayOptions options) {
        if (options.conf() != null) {
            return AllocatorConfig.DEFAULT.parse(options.conf());
        }
        Object recorded = snapshot.allocatorSettings().get("PYTORCH_CUDA_ALLOC_CONF");
        if (recorded instanceof String s && !s.isBlank()) {
            try {
                return AllocatorConfig.DEFAULT.parse(s);
            } catch (AllocatorConfigException e) {
                throw new AllocatorConfigException("recorded allocator_settings: " + e.getMessage(), e);
            }
        }
        return AllocatorConfig.fromSettingsMap(snapshot.allocatorSettings());
    }

    static ReplayReport replayDevice(int device, List<TraceEntry> trace, List<SegmentInfo> dump, AllocatorConfig recorded,
                                     AllocatorConfig config, ReplayOptions options) {
        TraceAnalysis analysis = new TraceAnalysis(trace, dump, recorded);
        // Pass 1 replays and finds when allocated memory peaked; pass 2 stops there to measure fragmentation.
        TraceReplayer first = new TraceReplayer(device, analysis, options, recorded, config, Integer.MIN_VALUE);
        ReplayReport r = first.run();
        TraceReplayer at = new TraceReplayer(device, analysis, options, recorded, config, first.peakAllocatedEntry());
        at.run();
        return new ReplayReport(r.device(), r.conf(), r.capacityEstimate(), r.recordedAddresses(), r.events(),
                r.eventsPerSecond(), r.fromEmpty(), r.initialReserved(), r.initialLiveBlocks(), r.recordedPeakReserved(),
                r.replayedPeakReserved(), r.recordedPeakRequested(), r.replayedPeakRequested(), r.recordedPeakAllocated(),
                r.replayedPeakAllocated(),
                r.recordedSegmentSizes(), r.replayedSegmentSizes(), r.allocs(), r.allocsAtOtherAddress(), r.finalStateEqual(),
                r.finalStateDifferences(), r.recordedOoms(), r.predictedOoms(), r.firstPredictedOomEntry(), r.firstOom(), r.oomEvents(), r.bursts(), r.notes(),
                r.skipped(), at.atPeak(), at.statsAtPeak(), r.finalStats());
    }
}
