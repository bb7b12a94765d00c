package io.vram4j.predict;

import io.vram4j.memory.snapshot.Frame;
import io.vram4j.memory.snapshot.MemorySnapshot;
import io.vram4j.replay.ReplayOptions;
import io.vram4j.replay.ReplayReport;
import io.vram4j.replay.Replayer;
import io.vram4j.memory.snapshot.TraceEntry;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * One recording's trace as a sequence of allocations and frees: each allocation numbered in order (its ordinal)
 * and keyed by its stack frames, each free pointing at the ordinal it frees. Segment and other entries are left
 * out: the replay decides segments itself.
 */
final class EventTrace {
    static final int ALLOC = 0;
    static final int FREE = 1;

    final Recording recording;
    /** {@link #ALLOC} or {@link #FREE} per event. */
    final int[] kind;
    /** ALLOC: the frames' key; FREE: the ordinal of the allocation freed. */
    final int[] ref;
    /** ALLOC: the requested size; FREE: 0. */
    final long[] size;
    final long[] stream;
    /** Per allocation ordinal: its event index. */
    final int[] allocEvent;
    final List<List<Frame>> frames;

    private EventTrace(Recording recording, int[] kind, int[] ref, long[] size, long[] stream, int[] allocEvent,
                       List<List<Frame>> frames) {
        this.recording = recording;
        this.kind = kind;
        this.ref = ref;
        this.size = size;
        this.stream = stream;
        this.allocEvent = allocEvent;
        this.frames = frames;
    }

    int events() {
        return kind.length;
    }

    int allocs() {
        return allocEvent.length;
    }

    /** @return e.g. {@code "alloc of 4,096 bytes at Linear.forward (Linear.java:41)"} */
    String describe(int event) {
        int ordinal = kind[event] == ALLOC ? Alignment.ordinal(this, event) : ref[event];
        List<Frame> f = frames.get(ordinal);
        String where = f.isEmpty() ? "(no frames)" : f.getFirst().name() + " (" + f.getFirst().filename() + ":" + f.getFirst().line() + ")";
        return String.format(java.util.Locale.ROOT, "%s of %,d bytes at %s", kind[event] == ALLOC ? "alloc" : "free",
                size[allocEvent[ordinal]], where);
    }

    /**
     * @param r the recording
     * @param keys frames → key, shared by the recordings compared
     * @return its events
     * @throws PredictionException when it has no trace, or its trace does not start from an empty allocator
     */
    static EventTrace of(Recording r, Map<List<Frame>, Integer> keys) {
        var traces = r.snapshot().deviceTraces();
        int device = -1;
        for (int d = 0; d < traces.size(); d++) {
            if (!traces.get(d).isEmpty()) {
                device = d;
                break;
            }
        }
        if (device < 0) {
            throw new PredictionException(r.name() + ": the snapshot has no trace (record it with memory history on)");
        }
        List<TraceEntry> trace = traces.get(device);
        // the replay's own analysis of the initial state: the state at dump minus the trace's net effect
        ReplayReport replay = Replayer.replay(new MemorySnapshot(r.snapshot().segments(device), List.of(trace),
                r.snapshot().allocatorSettings(), List.of()), ReplayOptions.whatIf(null, 0)).getFirst();
        if (!replay.fromEmpty()) {
            throw new PredictionException(String.format(java.util.Locale.ROOT, "%s: the trace starts mid-run (%,d bytes reserved "
                    + "before its first entry); predict needs traces recorded from an empty allocator", r.name(), replay.initialReserved()));
        }
        int n = 0;
        for (TraceEntry e : trace) {
            switch (e.action()) {
                case ALLOC, FREE_COMPLETED -> n++;
                default -> { }
            }
        }
        int[] kind = new int[n];
        int[] ref = new int[n];
        long[] size = new long[n];
        long[] stream = new long[n];
        List<Integer> allocEvents = new ArrayList<>();
        List<List<Frame>> frames = new ArrayList<>();
        Map<Long, Integer> live = new HashMap<>();
        int k = 0;
        for (int i = 0; i < trace.size(); i++) {
            TraceEntry e = trace.get(i);
            switch (e.action()) {
                case ALLOC -> {
                    int ordinal = allocEvents.size();
                    kind[k] = ALLOC;
                    ref[k] = keys.computeIfAbsent(e.frames(), f -> keys.size());
                    size[k] = e.size();
                    stream[k] = e.stream();
                    allocEvents.add(k);
                    frames.add(e.frames());
                    live.put(e.addr(), ordinal);
                    k++;
                }
                case FREE_COMPLETED -> {
                    Integer ordinal = live.remove(e.addr());
                    if (ordinal == null) {
                        throw new PredictionException(String.format(java.util.Locale.ROOT, "%s: trace entry %d frees 0x%x, which the "
                                + "trace did not allocate; predict needs traces recorded from an empty allocator", r.name(), i, e.addr()));
                    }
                    kind[k] = FREE;
                    ref[k] = ordinal;
                    stream[k] = e.stream();
                    k++;
                }
                default -> { }
            }
        }
        return new EventTrace(r, kind, ref, size, stream, allocEvents.stream().mapToInt(Integer::intValue).toArray(), frames);
    }
}
