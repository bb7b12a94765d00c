package io.vram4j.memory.snapshot;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.SortedSet;
import java.util.TreeSet;

/**
 * A PyTorch CUDA memory snapshot: the dict returned by {@code torch.cuda.memory._snapshot()} and written by
 * {@code torch.cuda.memory._dump_snapshot()} (spec section 10.2). Sizes are in bytes. Immutable and thread-safe.
 *
 * <p>{@code allocatorSettings} and {@code externalAnnotations} hold plain values as Python has them: {@link String},
 * {@link Long} (or {@link java.math.BigInteger} beyond 64 bits), {@link Double}, {@link Boolean}, {@code null},
 * {@link List} and {@link Map} with string keys. The constructor copies them into unmodifiable collections that
 * keep key order and turns {@link Integer}s into {@link Long}s and tuples ({@code Object[]}) into lists, so that
 * a snapshot read back from any format equals the one written.
 *
 * @param segments            PyTorch {@code segments}: all devices' segments (device order, then address order)
 * @param deviceTraces        PyTorch {@code device_traces}: one trace per device (index = device ordinal), oldest
 *                            entry first; empty when the snapshot has no traces (a bare list of segments)
 * @param allocatorSettings   PyTorch {@code allocator_settings} (2.4+): {@code PYTORCH_CUDA_ALLOC_CONF},
 *                            {@code max_split_size}, ...; empty when absent
 * @param externalAnnotations PyTorch {@code external_annotations}: dicts such as
 *                            {@code {'stage': 'START', 'name': ..., 'device': 0, 'time_us': ...}}; empty when absent
 */
public record MemorySnapshot(List<SegmentInfo> segments, List<List<TraceEntry>> deviceTraces,
        Map<String, Object> allocatorSettings, List<Map<String, Object>> externalAnnotations) {

    /**
     * @throws NullPointerException     if an argument or a list element is null
     * @throws IllegalArgumentException if a settings or annotation value is not a plain Python value
     */
    public MemorySnapshot {
        segments = List.copyOf(segments);
        List<List<TraceEntry>> traces = new ArrayList<>(deviceTraces.size());
        for (List<TraceEntry> t : deviceTraces) {
            traces.add(List.copyOf(t));
        }
        deviceTraces = Collections.unmodifiableList(traces);
        allocatorSettings = PyValues.normalizeDict(allocatorSettings);
        List<Map<String, Object>> annotations = new ArrayList<>(externalAnnotations.size());
        for (Map<String, Object> a : externalAnnotations) {
            annotations.add(PyValues.normalizeDict(a));
        }
        externalAnnotations = Collections.unmodifiableList(annotations);
    }

    /**
     * A snapshot of segments only, as {@code torch.cuda.memory_snapshot()} returns.
     *
     * @param segments the segments
     * @return a snapshot without traces, settings or annotations
     */
    public static MemorySnapshot ofSegments(List<SegmentInfo> segments) {
        return new MemorySnapshot(segments, List.of(), Map.of(), List.of());
    }

    /** @return Σ {@code total_size} over all segments: the reserved bytes of all devices */
    public long reservedBytes() {
        long sum = 0;
        for (SegmentInfo s : segments) {
            sum += s.totalSize();
        }
        return sum;
    }

    /** @return Σ {@code allocated_size} over all segments: the allocated bytes of all devices */
    public long allocatedBytes() {
        long sum = 0;
        for (SegmentInfo s : segments) {
            sum += s.allocatedSize();
        }
        return sum;
    }

    /** @return Σ {@code active_size} over all segments */
    public long activeBytes() {
        long sum = 0;
        for (SegmentInfo s : segments) {
            sum += s.activeSize();
        }
        return sum;
    }

    /** @return Σ {@code requested_size} over all segments */
    public long requestedBytes() {
        long sum = 0;
        for (SegmentInfo s : segments) {
            sum += s.requestedSize();
        }
        return sum;
    }

    /**
     * @param device a device index
     * @return Σ {@code total_size} over that device's segments
     */
    public long reservedBytes(int device) {
        long sum = 0;
        for (SegmentInfo s : segments) {
            if (s.device() == device) {
                sum += s.totalSize();
            }
        }
        return sum;
    }

    /**
     * @param device a device index
     * @return Σ {@code allocated_size} over that device's segments
     */
    public long allocatedBytes(int device) {
        long sum = 0;
        for (SegmentInfo s : segments) {
            if (s.device() == device) {
                sum += s.allocatedSize();
            }
        }
        return sum;
    }

    /** @return the number of blocks in all segments */
    public int blockCount() {
        int n = 0;
        for (SegmentInfo s : segments) {
            n += s.blocks().size();
        }
        return n;
    }

    /**
     * The devices that have segments or a non-empty trace (the devices PyTorch's viewer offers).
     *
     * @return the device indices, ascending
     */
    public SortedSet<Integer> devices() {
        SortedSet<Integer> devices = new TreeSet<>();
        for (SegmentInfo s : segments) {
            devices.add(s.device());
        }
        for (int d = 0; d < deviceTraces.size(); d++) {
            if (!deviceTraces.get(d).isEmpty()) {
                devices.add(d);
            }
        }
        return Collections.unmodifiableSortedSet(devices);
    }

    /**
     * @param device a device index
     * @return that device's segments, in the snapshot's order
     */
    public List<SegmentInfo> segments(int device) {
        List<SegmentInfo> result = new ArrayList<>();
        for (SegmentInfo s : segments) {
            if (s.device() == device) {
                result.add(s);
            }
        }
        return Collections.unmodifiableList(result);
    }

    /**
     * @param device a device index
     * @return that device's trace, oldest entry first; empty if the snapshot has no trace for it
     */
    public List<TraceEntry> trace(int device) {
        return device >= 0 && device < deviceTraces.size() ? deviceTraces.get(device) : List.of();
    }

    /** @return true if some device has a non-empty trace */
    public boolean hasTraces() {
        for (List<TraceEntry> t : deviceTraces) {
            if (!t.isEmpty()) {
                return true;
            }
        }
        return false;
    }
}
