package io.vram4j.replay;

import io.vram4j.alloc.config.AllocatorConfig;
import io.vram4j.alloc.config.AllocatorConfigException;
import io.vram4j.memory.snapshot.MemorySnapshot;
import io.vram4j.memory.snapshot.SegmentInfo;
import io.vram4j.memory.snapshot.TraceEntry;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

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
            List<TraceEntry> trace = snapshot.deviceTraces().get(d);
            List<SegmentInfo> dump = snapshot.segments(d);
            if (trace.isEmpty()) {
                continue;
            }
            AllocatorConfig recorded = config(snapshot, ReplayOptions.EXACT);
            reports.add(replayDevice(d, trace, dump, recorded, config(snapshot, options), options));
        }
        return reports;
    }

    /**
     * @param snapshot the snapshot
     * @param options the options
     * @return the settings a replay uses: {@code options.conf()} if given, else the recorded
     *     {@code allocator_settings["PYTORCH_CUDA_ALLOC_CONF"]} when it is a non-empty string, else the structured
     *     fields of {@code allocator_settings} as PyTorch writes them (see {@link #fromSettings}), else defaults
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
        return fromSettings(snapshot.allocatorSettings());
    }

    /**
     * Settings from the structured fields of a snapshot's {@code allocator_settings} (spec 10.2), used when its
     * {@code PYTORCH_CUDA_ALLOC_CONF} string is empty or absent (settings applied with
     * {@code _set_allocator_settings} or by other means still show in the fields): {@code max_split_size} (bytes,
     * -1 = unlimited), {@code max_non_split_rounding} (bytes, newer versions), {@code garbage_collection_threshold}
     * (a fraction, 0 = off), {@code expandable_segments}, {@code release_lock_on_cudamalloc}, and
     * {@code roundup_power2_divisions} (a dict from a class's lower bound in MiB, "1" ... "32768", to its
     * divisions). Absent fields keep their defaults.
     *
     * @param settings the {@code allocator_settings} dict, possibly empty
     * @return the settings, with an empty {@code PYTORCH_CUDA_ALLOC_CONF} string
     * @throws AllocatorConfigException when a field has the wrong type or an invalid value, naming the field
     */
    public static AllocatorConfig fromSettings(Map<String, Object> settings) {
        AllocatorConfig.Builder b = AllocatorConfig.DEFAULT.toBuilder();
        Object v = settings.get("max_split_size");
        if (v != null) {
            long bytes = integer("max_split_size", v);
            if (bytes != -1 && bytes <= 0) {
                throw new AllocatorConfigException("allocator_settings.max_split_size: expected -1 or a positive byte count, got " + bytes);
            }
            b.maxSplitSize(bytes == -1 ? AllocatorConfig.UNLIMITED : bytes);
        }
        v = settings.get("max_non_split_rounding");
        if (v != null) {
            long bytes = integer("max_non_split_rounding", v);
            if (bytes <= 0) {
                throw new AllocatorConfigException("allocator_settings.max_non_split_rounding: expected a positive byte count, got " + bytes);
            }
            b.maxNonSplitRounding(bytes);
        }
        v = settings.get("garbage_collection_threshold");
        if (v != null) {
            if (!(v instanceof Number n)) {
                throw new AllocatorConfigException("allocator_settings.garbage_collection_threshold: expected a number, got " + v);
            }
            double t = n.doubleValue();
            if (!(t >= 0 && t < 1)) {
                throw new AllocatorConfigException("allocator_settings.garbage_collection_threshold: expected 0 (off) or a fraction in (0, 1), got " + t);
            }
            b.garbageCollectionThreshold(t);
        }
        v = settings.get("expandable_segments");
        if (v != null) {
            b.expandableSegments(bool("expandable_segments", v));
        }
        v = settings.get("release_lock_on_cudamalloc");
        if (v != null) {
            b.releaseLockOnCudaMalloc(bool("release_lock_on_cudamalloc", v));
        }
        v = settings.get("roundup_power2_divisions");
        if (v != null) {
            if (!(v instanceof Map<?, ?> m)) {
                throw new AllocatorConfigException("allocator_settings.roundup_power2_divisions: expected a dict, got " + v);
            }
            for (Map.Entry<?, ?> e : m.entrySet()) {
                String field = "allocator_settings.roundup_power2_divisions['" + e.getKey() + "']";
                long mib;
                try {
                    mib = Long.parseLong(String.valueOf(e.getKey()));
                } catch (NumberFormatException ex) {
                    throw new AllocatorConfigException(field + ": expected a power of two in MiB as the key");
                }
                if (mib <= 0 || Long.bitCount(mib) != 1 || Long.numberOfTrailingZeros(mib) >= AllocatorConfig.ROUNDUP_INTERVALS) {
                    throw new AllocatorConfigException(field + ": expected a power of two from 1 to 32768 MiB as the key");
                }
                long n = integer(field.substring("allocator_settings.".length()), e.getValue());
                if (n < 0 || (n != 0 && Long.bitCount(n) != 1) || n > Integer.MAX_VALUE) {
                    throw new AllocatorConfigException(field + ": expected 0 or a power of two, got " + n);
                }
                b.roundupPower2Divisions(Long.numberOfTrailingZeros(mib), (int) n);
            }
        }
        return b.confString("").build();
    }

    private static long integer(String field, Object v) {
        if (v instanceof Integer || v instanceof Long) {
            return ((Number) v).longValue();
        }
        if (v instanceof java.math.BigInteger big) {
            return big.longValue(); // SIZE_MAX stored as uint64 by some versions: -1 as int64
        }
        throw new AllocatorConfigException("allocator_settings." + field + ": expected an integer, got " + v);
    }

    private static boolean bool(String field, Object v) {
        if (v instanceof Boolean on) {
            return on;
        }
        throw new AllocatorConfigException("allocator_settings." + field + ": expected True or False, got " + v);
    }

    static ReplayReport replayDevice(int device, List<TraceEntry> trace, List<SegmentInfo> dump, AllocatorConfig recorded,
                                     AllocatorConfig config, ReplayOptions options) {
        TraceAnalysis analysis = new TraceAnalysis(trace, dump);
        // Pass 1 replays and finds when allocated memory peaked; pass 2 stops there to measure fragmentation.
        TraceReplayer first = new TraceReplayer(device, analysis, options, recorded, config, Integer.MIN_VALUE);
        ReplayReport r = first.run();
        TraceReplayer at = new TraceReplayer(device, analysis, options, recorded, config, first.peakAllocatedEntry());
        at.run();
        return new ReplayReport(r.device(), r.conf(), r.capacity(), r.capacitySource(), r.recordedAddresses(), r.events(),
                r.eventsPerSecond(), r.fromEmpty(), r.initialReserved(), r.initialLiveBlocks(), r.recordedPeakReserved(),
                r.replayedPeakReserved(), r.recordedPeakRequested(), r.replayedPeakRequested(), r.recordedPeakAllocated(),
                r.replayedPeakAllocated(),
                r.recordedSegmentSizes(), r.replayedSegmentSizes(), r.allocs(), r.allocsAtOtherAddress(), r.finalStateEqual(),
                r.finalStateDifferences(), r.recordedOoms(), r.predictedOoms(), r.firstPredictedOomEntry(), r.bursts(),
                r.skipped(), at.atPeak(), at.statsAtPeak(), r.finalStats());
    }
}
