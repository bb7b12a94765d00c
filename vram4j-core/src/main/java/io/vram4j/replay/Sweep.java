package io.vram4j.replay;

import io.vram4j.alloc.SizeRules;
import io.vram4j.alloc.config.AllocatorConfig;
import io.vram4j.device.AbstractDevice;
import io.vram4j.memory.snapshot.MemorySnapshot;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;

/**
 * What-if replays of one device's trace under a grid of allocator settings, and the smallest capacity a
 * setting fits in. Stateless and thread-safe.
 */
public final class Sweep {
    /** The settings tried, PyTorch's defaults first ({@code PYTORCH_CUDA_ALLOC_CONF} format). */
    public static final List<String> SETTINGS = List.of("", "expandable_segments:True",
            "max_split_size_mb:64", "max_split_size_mb:128", "max_split_size_mb:256", "max_split_size_mb:512",
            "roundup_power2_divisions:2", "roundup_power2_divisions:4", "roundup_power2_divisions:8",
            "garbage_collection_threshold:0.6,per_process_memory_fraction:1.0",
            "garbage_collection_threshold:0.8,per_process_memory_fraction:1.0",
            "expandable_segments:True,roundup_power2_divisions:4");

    private Sweep() {
    }

    /**
     * One row of a sweep.
     *
     * @param conf the settings ({@code PYTORCH_CUDA_ALLOC_CONF} format, empty for PyTorch's defaults)
     * @param isDefault whether they are PyTorch's defaults
     * @param isRecorded whether they are the recording's settings
     * @param report the what-if replay
     */
    public record Row(String conf, boolean isDefault, boolean isRecorded, ReplayReport report) {
        /** @return true when the replay ran out of memory nowhere */
        public boolean fits() {
            return report.predictedOoms() == 0;
        }
    }

    /**
     * @param snapshot a snapshot with a trace for {@code device}
     * @param device the device index
     * @param capacity bytes, or 0 to infer it as a replay does
     * @return the rows, each setting once (the recorded settings added when not in the grid), by predicted OOMs
     *     (those that fit first), then by peak reserved
     */
    public static List<Row> run(MemorySnapshot snapshot, int device, long capacity) {
        String recorded = Replayer.config(snapshot, ReplayOptions.EXACT).confString();
        List<Row> rows = new ArrayList<>();
        for (String c : settings(recorded)) {
            String canonical = AllocatorConfig.DEFAULT.parse(c).confString();
            rows.add(new Row(c, c.isEmpty(), canonical.equals(recorded),
                    Replayer.replayDevice(snapshot, device, ReplayOptions.whatIf(c, capacity))));
        }
        rows.sort(Comparator.<Row>comparingInt(r -> r.report().predictedOoms())
                .thenComparingLong(r -> r.report().replayedPeakReserved()));
        return rows;
    }

    /**
     * @param snapshot a snapshot with a trace for {@code device}
     * @param device the device index
     * @param capacity bytes
     * @return the settings of the sweep (the recorded ones included) that run out of memory nowhere at
     *     {@code capacity}, in sweep order
     */
    public static List<String> fitting(MemorySnapshot snapshot, int device, long capacity) {
        List<String> out = new ArrayList<>();
        for (String c : settings(Replayer.config(snapshot, ReplayOptions.EXACT).confString())) {
            if (fits(snapshot, device, c, capacity)) {
                out.add(c);
            }
        }
        return out;
    }

    /** @return {@link #SETTINGS}, plus {@code recorded} when it is none of them */
    private static List<String> settings(String recorded) {
        List<String> confs = new ArrayList<>(SETTINGS);
        if (confs.stream().noneMatch(c -> AllocatorConfig.DEFAULT.parse(c).confString().equals(recorded))) {
            confs.add(recorded);
        }
        return confs;
    }

    /**
     * The smallest capacity above {@code failing}, to 2 MiB, on which a what-if replay under {@code conf} runs out of
     * memory nowhere, found by bisection between {@code failing} and the peak reserved of an unbounded replay (which
     * fits: no device malloc fails below it). Whether a replay fits is not monotonic in the capacity (the
     * out-of-memory path releases cached segments and can change later placement), so the result is a capacity that
     * fits while 2 MiB less does not, the first such one above {@code failing} that bisection meets.
     *
     * @param snapshot a snapshot with a trace for {@code device}
     * @param device the device index
     * @param conf settings, or null for the recorded ones
     * @param failing a capacity known to run out of memory (bytes), or 0
     * @return bytes
     */
    public static long smallestFittingCapacity(MemorySnapshot snapshot, int device, String conf, long failing) {
        long step = SizeRules.SMALL_BUFFER;
        long hi = Replayer.replayOnce(snapshot, device, new ReplayOptions(conf, AbstractDevice.MAX_CAPACITY, false, true))
                .replayedPeakReserved();
        hi = Math.max(failing + step, (hi + step - 1) / step * step);
        while (hi < AbstractDevice.MAX_CAPACITY && !fits(snapshot, device, conf, hi)) {
            hi = Math.min(AbstractDevice.MAX_CAPACITY, hi * 2);
        }
        long lo = failing;
        while (hi - lo > step) {
            long mid = lo + (hi - lo) / 2 / step * step;
            if (mid <= lo) {
                break;
            }
            if (fits(snapshot, device, conf, mid)) {
                hi = mid;
            } else {
                lo = mid;
            }
        }
        return hi;
    }

    private static boolean fits(MemorySnapshot snapshot, int device, String conf, long capacity) {
        try {
            return Replayer.replayOnce(snapshot, device, new ReplayOptions(conf, capacity, false, true)).predictedOoms() == 0;
        } catch (ReplayException e) {
            return false; // the state before the trace does not fit
        }
    }
}
