package io.vram4j.memory.viz;

import io.vram4j.alloc.config.AllocatorConfig;
import io.vram4j.memory.snapshot.Frame;
import io.vram4j.memory.snapshot.MemorySnapshot;
import io.vram4j.memory.snapshot.SegmentInfo;
import io.vram4j.memory.snapshot.TraceEntry;

import java.util.Collections;
import java.util.List;

/**
 * The active memory timeline of one device of a memory snapshot, the model behind {@code vram4j viz}: every
 * allocation a band stacked over time as in PyTorch's {@code memory_viz} "Active Memory Timeline", the allocation
 * sites taken from the recorded frames, the allocator state (segments and blocks) at any moment, and the headline
 * figures.
 *
 * <p>Time is counted in <em>steps</em>: step 0 is the state before the first trace entry, step {@code k} the
 * state after the {@code k}-th {@code alloc} or {@code free_completed} (the entries that change what is
 * alive). Sizes are bytes. Band heights are the requested sizes (the trace's {@code size}), so the top of the
 * stack at a step is the requested bytes alive; {@link #allocated(int)} and {@link #reserved(int)} give the
 * allocator's block and segment bytes. When there are more than {@code maxEntries} allocations only the largest
 * {@code maxEntries} get a band of their own and the rest are summed into the summary band on top
 * ({@link #summary(int)}), as PyTorch's viewer does.
 *
 * <p>The state before the trace is the state at dump minus the net effect of the trace; each {@code alloc}
 * then takes the free block at its recorded address and splits it by the allocator's rules, so the state after
 * the last entry equals the dumped segments and blocks for a consistent recording. Immutable and thread-safe.
 */
public final class MemoryTimeline {
    /** PyTorch's viewer default for the number of allocations drawn one by one. */
    public static final int DEFAULT_MAX_ENTRIES = 15_000;

    private final int device;
    private final List<TraceEntry> trace;
    private final AllocatorConfig config;
    private final List<SegmentInfo> initial;
    private final List<SegmentInfo> fin;
    private final StackTable stacks;
    private final List<Band> bands;
    private final int[] stepEntry;
    private final long[] total;
    private final long[] summary;
    private final long[] allocated;
    private final long[] reserved;
    private final long[] ops;
    private final List<int[]> ooms;
    private final Headline headline;
    private final int inconsistencies;
    private final String firstInconsistency;
    private final int maxEntries;

    MemoryTimeline(int device, List<TraceEntry> trace, AllocatorConfig config, List<SegmentInfo> initial,
            List<SegmentInfo> fin, StackTable stacks, List<Band> bands, int[] stepEntry, long[] total, long[] summary,
            long[] allocated, long[] reserved, long[] ops, List<int[]> ooms, Headline headline, int inconsistencies,
            String firstInconsistency, int maxEntries) {
        this.device = device;
        this.trace = trace;
        this.config = config;
        this.initial = List.copyOf(initial);
        this.fin = List.copyOf(fin);
        this.stacks = stacks;
        this.bands = List.copyOf(bands);
        this.stepEntry = stepEntry;
        this.total = total;
        this.summary = summary;
        this.allocated = allocated;
        this.reserved = reserved;
        this.ops = ops;
        this.ooms = List.copyOf(ooms);
        this.headline = headline;
        this.inconsistencies = inconsistencies;
        this.firstInconsistency = firstInconsistency;
        this.maxEntries = maxEntries;
    }

    MemoryTimeline withHeadline(Headline h) {
        return new MemoryTimeline(device, trace, config, initial, fin, stacks, bands, stepEntry, total, summary,
                allocated, reserved, ops, ooms, h, inconsistencies, firstInconsistency, maxEntries);
    }

    /**
     * Computes the timeline of one device.
     *
     * @param snapshot   the snapshot (PyTorch's or vram4j's); its {@code allocator_settings}'
     *                   {@code PYTORCH_CUDA_ALLOC_CONF} gives the rounding and splitting rules
     * @param device     the device index
     * @param maxEntries how many of the largest allocations get a band of their own, at least 1
     * @return the timeline
     * @throws IllegalArgumentException if the snapshot has neither segments nor a trace for {@code device}, if
     *                                  {@code maxEntries < 1}, or if the recorded settings do not parse
     */
    public static MemoryTimeline of(MemorySnapshot snapshot, int device, int maxEntries) {
        if (maxEntries < 1) {
            throw new IllegalArgumentException("maxEntries must be at least 1, got " + maxEntries);
        }
        if (!snapshot.devices().contains(device)) {
            throw new IllegalArgumentException("the snapshot has no segments and no trace for device " + device
                    + (snapshot.devices().isEmpty() ? " (it is empty)" : " (devices: " + snapshot.devices() + ")"));
        }
        AllocatorConfig config = AllocatorConfig.DEFAULT;
        Object conf = snapshot.allocatorSettings().get("PYTORCH_CUDA_ALLOC_CONF");
        if (conf instanceof String s && !s.isBlank()) {
            config = AllocatorConfig.DEFAULT.parse(s);
        }
        return new TimelineBuilder(device, snapshot.trace(device), snapshot.segments(device), config, maxEntries).build();
    }

    /** @return the device index */
    public int device() {
        return device;
    }

    /** @return the number of steps after step 0: the {@code alloc} and {@code free_completed} entries applied */
    public int steps() {
        return stepEntry.length - 1;
    }

    /** @return the device's trace, oldest entry first */
    public List<TraceEntry> trace() {
        return trace;
    }

    /**
     * @param step a step in {@code [0, steps()]}
     * @return the index of the trace entry that made the step, -1 for step 0
     */
    public int entryOf(int step) {
        return stepEntry[step];
    }

    /**
     * @param step a step in {@code [0, steps()]}
     * @return requested bytes alive after the step: the top of the stacked bands and the summary band
     */
    public long total(int step) {
        return total[step];
    }

    /**
     * @param step a step
     * @return requested bytes alive after the step in allocations too small for a band of their own
     */
    public long summary(int step) {
        return summary[step];
    }

    /**
     * @param step a step
     * @return bytes in allocated blocks after the step
     */
    public long allocated(int step) {
        return allocated[step];
    }

    /**
     * @param step a step
     * @return bytes in segments after the step
     */
    public long reserved(int step) {
        return reserved[step];
    }

    /** @return the allocations drawn one by one, by start step then offset */
    public List<Band> bands() {
        return bands;
    }

    /** @return the distinct recorded stacks (innermost frame first) the bands and blocks refer to */
    public List<List<Frame>> stacks() {
        return Collections.unmodifiableList(stacks.stacks);
    }

    /**
     * @param stack an index into {@link #stacks()}, or -1
     * @return the index of its allocation site in {@link #sites()}, -1 for -1
     */
    public int siteOf(int stack) {
        return stack < 0 ? -1 : stacks.stackSite.get(stack);
    }

    /** @return the allocation sites, {@code "function (file:line)"} of the innermost user frame */
    public List<String> sites() {
        return Collections.unmodifiableList(stacks.sites);
    }

    /** @return the headline figures */
    public Headline headline() {
        return headline;
    }

    /** @return the {@code oom} entries as {entry index, step before which it happened} */
    public List<int[]> ooms() {
        return ooms.stream().map(int[]::clone).toList();
    }

    /** @return how many allocations get a band of their own at most */
    public int maxEntries() {
        return maxEntries;
    }

    /** @return entries that did not fit the reconstructed state (0 for a consistent recording) */
    public int inconsistencies() {
        return inconsistencies;
    }

    /** @return the first entry that did not fit, with its index; null when none */
    public String firstInconsistency() {
        return firstInconsistency;
    }

    /** @return the segments and blocks before the first trace entry, in address order */
    public List<SegmentInfo> initialState() {
        return initial;
    }

    /** @return the segments and blocks after the last trace entry, in address order */
    public List<SegmentInfo> finalState() {
        return fin;
    }

    /**
     * The allocator state at a moment, replayed forward from the state before the trace.
     *
     * @param step a step in {@code [0, steps()]}
     * @return the segments (with all their blocks, inactive ones included) after the step, in address order
     * @throws IndexOutOfBoundsException if the step is out of range
     */
    public List<SegmentInfo> stateAt(int step) {
        return trackerAfter(stepEntry[step]).toSegments(device, stacks.stacks);
    }

    /**
     * @param entry a trace entry index, or -1 for the state before the trace
     * @return the segments and blocks after that entry, in address order
     */
    public List<SegmentInfo> stateAfterEntry(int entry) {
        return trackerAfter(entry).toSegments(device, stacks.stacks);
    }

    /**
     * The state-change operations the page replays, six numbers each: entry index (-1 before the trace), code
     * ({@code TimelineBuilder.OP_*}), address, size, requested size or segment flags (1 small, 2 expandable),
     * stack index.
     */
    long[] ops() {
        return ops;
    }

    StateTracker trackerAfter(int entry) {
        StateTracker t = new StateTracker(config);
        for (int i = 0; i < ops.length; i += 6) {
            if (ops[i] > entry) {
                break;
            }
            long addr = ops[i + 2], size = ops[i + 3], aux = ops[i + 4];
            int entryIndex = (int) ops[i];
            switch ((int) ops[i + 1]) {
                case TimelineBuilder.OP_SEGMENT -> t.addSegment(addr, size, 0, (aux & 1) != 0, (aux & 2) != 0);
                case TimelineBuilder.OP_SEGMENT_FREE -> t.segmentFree(addr, entryIndex);
                case TimelineBuilder.OP_MAP -> t.segmentMap(addr, size, 0, (aux & 1) != 0);
                case TimelineBuilder.OP_UNMAP -> t.segmentUnmap(addr, size, entryIndex);
                case TimelineBuilder.OP_ALLOC -> t.place(addr, size, aux, StateTracker.ALLOCATED, (int) ops[i + 5]);
                case TimelineBuilder.OP_FREE -> t.freeCompleted(addr, entryIndex);
                case TimelineBuilder.OP_PENDING -> t.freeRequested(addr);
                default -> throw new IllegalStateException("unknown op " + ops[i + 1]);
            }
        }
        return t;
    }
}
