package io.vram4j.memory.viz;

import io.vram4j.alloc.SizeRules;
import io.vram4j.alloc.config.AllocatorConfig;
import io.vram4j.memory.snapshot.AddressRanges;
import io.vram4j.memory.snapshot.BlockInfo;
import io.vram4j.memory.snapshot.BlockState;
import io.vram4j.memory.snapshot.SegmentInfo;
import io.vram4j.memory.snapshot.TraceAction;
import io.vram4j.memory.snapshot.TraceEntry;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/**
 * Computes a {@link MemoryTimeline} in one forward pass over a device's trace, from the state before its first
 * entry (the state at dump minus the net effect of the trace, as PyTorch's viewer and {@code vram4j replay}
 * rebuild it). Not thread-safe; used once.
 */
final class TimelineBuilder {
    /** State-change operations, in the order the page applies them (see timeline.js). */
    static final int OP_SEGMENT = 0;
    static final int OP_SEGMENT_FREE = 1;
    static final int OP_ALLOC = 2;
    static final int OP_FREE = 3;
    static final int OP_PENDING = 4;
    static final int OP_MAP = 5;
    static final int OP_UNMAP = 6;
    /** Numbers per op in {@link MemoryTimeline#ops()}: entry, code, address, size, aux, stack. */
    static final int OP_FIELDS = 6;

    private final int device;
    private final List<TraceEntry> trace;
    private final List<SegmentInfo> dump;
    private final AllocatorConfig config;
    private final int maxEntries;
    private final long vertexBudget;
    final StackTable stacks = new StackTable();

    /** Thrown when the bands would need more vertices than the budget: the caller retries with fewer bands. */
    static final class TooManyVertices extends RuntimeException {
        TooManyVertices() {
            super(null, null, false, false);
        }
    }

    TimelineBuilder(int device, List<TraceEntry> trace, List<SegmentInfo> dump, AllocatorConfig config, int maxEntries,
            long vertexBudget) {
        this.device = device;
        this.trace = trace;
        this.dump = dump;
        this.config = config;
        this.maxEntries = maxEntries;
        this.vertexBudget = vertexBudget;
    }

    // ---- the state before the first entry ----

    /** The segments and blocks before the first entry; interns the stacks of the blocks alive then. */
    StateTracker initialState() {
        Set<Long> created = new HashSet<>();
        Map<Long, long[]> orphanSegments = new HashMap<>();
        LongSet allocatedSoFar = new LongSet(1 << 10);
        LongSet liveAtEnd = new LongSet(1 << 10);
        Map<Long, long[]> orphanFrees = new HashMap<>();
        AddressRanges mappedInTrace = new AddressRanges();
        AddressRanges mappedBefore = new AddressRanges();
        LongList starts = new LongList(1 << 10); // block starts known, any order, repeats allowed
        for (int i = 0; i < trace.size(); i++) {
            TraceEntry e = trace.get(i);
            switch (e.action()) {
                case ALLOC -> {
                    allocatedSoFar.add(e.addr());
                    liveAtEnd.add(e.addr());
                    starts.add(e.addr());
                }
                case FREE_COMPLETED -> {
                    if (!allocatedSoFar.contains(e.addr()) && !orphanFrees.containsKey(e.addr())) {
                        orphanFrees.put(e.addr(), new long[] {e.size(), i});
                    }
                    liveAtEnd.remove(e.addr());
                }
                case SEGMENT_ALLOC -> created.add(e.addr());
                case SEGMENT_FREE -> {
                    if (!created.contains(e.addr()) && !orphanSegments.containsKey(e.addr())) {
                        orphanSegments.put(e.addr(), new long[] {e.size(), e.stream()});
                    }
                }
                // expandable segments: map and unmap ranges need not line up, so keep ranges, not addresses
                case SEGMENT_MAP -> mappedInTrace.add(e.addr(), e.addr() + e.size());
                case SEGMENT_UNMAP -> {
                    for (long[] r : mappedInTrace.missing(e.addr(), e.addr() + e.size())) {
                        mappedBefore.add(r[0], r[1]);
                    }
                    mappedInTrace.remove(e.addr(), e.addr() + e.size());
                }
                default -> { }
            }
        }
        StateTracker t = new StateTracker(config);
        for (SegmentInfo s : dump) {
            if (s.isExpandable()) {
                // still mapped at the end and not mapped by the trace: mapped before it
                for (long[] r : mappedInTrace.missing(s.address(), s.endAddress())) {
                    mappedBefore.add(r[0], r[1]);
                }
            } else if (!created.contains(s.address())) {
                t.addSegment(s.address(), s.totalSize(), s.stream(), !s.isLarge(), false);
            }
            for (BlockInfo b : s.blocks()) {
                starts.add(b.address());
            }
        }
        for (long[] r : mappedBefore.list()) {
            SegmentInfo owner = null;
            for (SegmentInfo s : dump) {
                if (s.isExpandable() && s.address() <= r[1] && r[0] <= s.endAddress()) {
                    owner = s;
                }
            }
            boolean small = owner != null ? !owner.isLarge() : (r[1] - r[0]) % SizeRules.LARGE_BUFFER != 0;
            t.addSegment(r[0], r[1] - r[0], owner != null ? owner.stream() : 0, small, true);
        }
        for (Map.Entry<Long, long[]> o : orphanSegments.entrySet()) {
            long size = o.getValue()[0];
            t.addSegment(o.getKey(), size, o.getValue()[1], size == SizeRules.SMALL_BUFFER, false);
        }
        // live blocks: address -> {size or 0 to infer, requested, state, stack}
        TreeMap<Long, long[]> live = new TreeMap<>(Long::compareUnsigned);
        for (SegmentInfo s : dump) {
            for (BlockInfo b : s.blocks()) {
                if (b.state().isActive() && !liveAtEnd.contains(b.address()) && !orphanFrees.containsKey(b.address())) {
                    byte state = b.state() == BlockState.ACTIVE_ALLOCATED ? StateTracker.ALLOCATED : StateTracker.PENDING;
                    live.put(b.address(), new long[] {b.size(), b.requestedSize(), state, stacks.intern(b.frames())});
                }
            }
        }
        for (Map.Entry<Long, long[]> o : orphanFrees.entrySet()) {
            live.put(o.getKey(), new long[] {0, o.getValue()[0], StateTracker.ALLOCATED, -1});
        }
        for (long addr : live.keySet()) {
            starts.add(addr);
        }
        long[] sortedStarts = sortedUnsigned(starts.toArray());
        for (Map.Entry<Long, long[]> e : live.entrySet()) {
            long addr = e.getKey();
            long[] v = e.getValue();
            long size = v[0];
            if (size == 0) {
                size = inferredSize(t, addr, v[1], sortedStarts);
            }
            if (!t.place(addr, size, v[1], (byte) v[2], (int) v[3])) {
                t.inconsistencies++;
                if (t.firstInconsistency == null) {
                    t.firstInconsistency = "the block at 0x" + Long.toHexString(addr)
                            + " alive before the trace lies in no free space of a segment that existed then";
                }
            }
        }
        return t;
    }

    /**
     * The size of a block allocated before the trace and freed during it: its rounded request, or up to the
     * next known block start when the gap can only be a remainder the allocator did not split off.
     */
    private long inferredSize(StateTracker t, long addr, long requested, long[] sortedStarts) {
        long rounded = SizeRules.roundSize(requested, config);
        StateTracker.Seg seg = t.segmentOf(addr);
        if (seg == null || seg.small) {
            return rounded;
        }
        int k = higherUnsigned(sortedStarts, addr);
        long nextStart = k < 0 || Long.compareUnsigned(sortedStarts[k], seg.end()) >= 0 ? seg.end() : sortedStarts[k];
        long gap = nextStart - (addr + rounded);
        long tolerance = rounded >= config.maxSplitSize() ? config.maxNonSplitRounding() - 1 : SizeRules.SMALL_SIZE;
        return gap > 0 && gap <= tolerance ? rounded + gap : rounded;
    }

    /** The values sorted as unsigned numbers (addresses). */
    static long[] sortedUnsigned(long[] values) {
        for (int i = 0; i < values.length; i++) {
            values[i] ^= Long.MIN_VALUE; // unsigned order as signed order
        }
        Arrays.sort(values);
        for (int i = 0; i < values.length; i++) {
            values[i] ^= Long.MIN_VALUE;
        }
        return values;
    }

    /** The index of the first value above {@code v} (unsigned) in values sorted by {@link #sortedUnsigned}, or -1. */
    static int higherUnsigned(long[] sorted, long v) {
        int lo = 0;
        int hi = sorted.length;
        while (lo < hi) {
            int mid = (lo + hi) >>> 1;
            if (Long.compareUnsigned(sorted[mid], v) <= 0) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        return lo < sorted.length ? lo : -1;
    }

    // ---- the forward pass ----

    MemoryTimeline build() {
        StateTracker t = initialState();
        List<SegmentInfo> initial = t.toSegments(device, stacks.stacks);

        // elements: blocks alive before the trace (address order), then every alloc entry
        List<long[]> initialElems = new ArrayList<>(); // {addr, requested, blockSize, stack}
        for (StateTracker.Seg s : t.segments.values()) {
            for (StateTracker.Blk b : s.blocks.values()) {
                if (b.state != StateTracker.FREE) {
                    initialElems.add(new long[] {b.addr, b.requested > 0 ? b.requested : b.size, b.size, b.stack});
                }
            }
        }
        int allocCount = 0;
        for (TraceEntry e : trace) {
            if (e.action() == TraceAction.ALLOC) {
                allocCount++;
            }
        }
        long[] elemSize = new long[initialElems.size() + allocCount];
        for (int i = 0; i < initialElems.size(); i++) {
            elemSize[i] = initialElems.get(i)[1];
        }
        int k = initialElems.size();
        for (TraceEntry e : trace) {
            if (e.action() == TraceAction.ALLOC) {
                elemSize[k++] = e.size();
            }
        }
        boolean[] drawn = largest(elemSize, maxEntries);

        Layout layout = new Layout(trace.size() + 1, vertexBudget);
        for (int i = 0; i < initialElems.size(); i++) {
            long[] v = initialElems.get(i);
            layout.add(i, drawn[i], v[0], v[1], v[2], (int) v[3], 0);
        }
        layout.recordStep(-1, t);

        LongList ops = new LongList(trace.size() * 6);
        for (StateTracker.Seg s : t.segments.values()) {
            op(ops, -1, OP_SEGMENT, s.addr, s.size, (s.small ? 1 : 0) | (s.expandable ? 2 : 0), -1);
            for (StateTracker.Blk b : s.blocks.values()) {
                if (b.state != StateTracker.FREE) {
                    op(ops, -1, OP_ALLOC, b.addr, b.size, b.requested, b.stack);
                    if (b.state == StateTracker.PENDING) {
                        op(ops, -1, OP_PENDING, b.addr, 0, 0, -1);
                    }
                }
            }
        }
        long peakAllocated = t.allocated, peakReserved = t.reserved;
        int peakAllocatedEntry = -1, peakReservedEntry = -1;
        List<int[]> ooms = new ArrayList<>(); // {entry, step}
        Map<Long, Integer> liveElem = new HashMap<>();
        for (int i = 0; i < initialElems.size(); i++) {
            liveElem.put(initialElems.get(i)[0], i);
        }
        int elem = initialElems.size();
        int allocs = 0;
        for (int i = 0; i < trace.size(); i++) {
            TraceEntry e = trace.get(i);
            switch (e.action()) {
                case SEGMENT_ALLOC -> {
                    boolean small = smallPoolSegment(i);
                    t.segmentAlloc(e.addr(), e.size(), e.stream(), small);
                    op(ops, i, OP_SEGMENT, e.addr(), e.size(), small ? 1 : 0, -1);
                }
                case SEGMENT_MAP -> {
                    boolean small = smallPoolSegment(i);
                    t.segmentMap(e.addr(), e.size(), e.stream(), small);
                    op(ops, i, OP_MAP, e.addr(), e.size(), (small ? 1 : 0) | 2, -1);
                }
                case SEGMENT_FREE -> {
                    t.segmentFree(e.addr(), i);
                    op(ops, i, OP_SEGMENT_FREE, e.addr(), e.size(), 0, -1);
                }
                case SEGMENT_UNMAP -> {
                    t.segmentUnmap(e.addr(), e.size(), i);
                    op(ops, i, OP_UNMAP, e.addr(), e.size(), 0, -1);
                }
                case ALLOC -> {
                    int id = elem++;
                    int stack = stacks.intern(e.frames());
                    StateTracker.Blk b = t.alloc(e.addr(), e.size(), stack, i);
                    if (b != null) {
                        allocs++;
                        liveElem.put(e.addr(), id);
                        layout.add(id, drawn[id], e.addr(), e.size(), b.size, stack, layout.steps() + 1);
                        layout.recordStep(i, t);
                        op(ops, i, OP_ALLOC, e.addr(), b.size, e.size(), stack);
                    }
                }
                case FREE_REQUESTED -> {
                    boolean completedNext = i + 1 < trace.size()
                            && trace.get(i + 1).action() == TraceAction.FREE_COMPLETED && trace.get(i + 1).addr() == e.addr();
                    if (!completedNext) {
                        t.freeRequested(e.addr());
                        op(ops, i, OP_PENDING, e.addr(), 0, 0, -1);
                    }
                }
                case FREE_COMPLETED -> {
                    Integer id = liveElem.remove(e.addr());
                    if (t.freeCompleted(e.addr(), i) >= 0) {
                        op(ops, i, OP_FREE, e.addr(), 0, 0, -1);
                        if (id != null) {
                            layout.remove(id, drawn[id], layout.steps() + 1);
                            layout.recordStep(i, t);
                        }
                    }
                }
                case OOM -> ooms.add(new int[] {i, layout.steps()});
                default -> { }
            }
            if (t.allocated > peakAllocated) {
                peakAllocated = t.allocated;
                peakAllocatedEntry = i;
            }
            if (t.reserved > peakReserved) {
                peakReserved = t.reserved;
                peakReservedEntry = i;
            }
        }
        List<SegmentInfo> fin = t.toSegments(device, stacks.stacks);
        MemoryTimeline partial = new MemoryTimeline(device, trace, config, initial, fin, stacks, layout.bands(),
                layout.stepEntry.toIntArray(), layout.total.toArray(), layout.summary.toArray(),
                layout.allocated.toArray(), layout.reserved.toArray(), ops.toArray(), ooms, null,
                t.inconsistencies, t.firstInconsistency, maxEntries);
        StateTracker atPeak = partial.trackerAfter(peakAllocatedEntry);
        int freeBlocks = 0;
        for (StateTracker.Seg s : atPeak.segments.values()) {
            for (StateTracker.Blk b : s.blocks.values()) {
                if (b.state == StateTracker.FREE) {
                    freeBlocks++;
                }
            }
        }
        long peakRequested = 0;
        for (int s = 0; s < layout.total.size(); s++) {
            peakRequested = Math.max(peakRequested, layout.total.get(s));
        }
        Headline h = new Headline(peakAllocated, peakAllocatedEntry, peakReserved, peakReservedEntry, peakRequested,
                atPeak.reserved, atPeak.largestFreeBlock(), freeBlocks, ooms.size(), trace.size(), allocs, fin.size());
        return partial.withHeadline(h);
    }

    private static void op(LongList ops, int entry, int code, long addr, long size, long requested, int stack) {
        ops.add(entry);
        ops.add(code);
        ops.add(addr);
        ops.add(size);
        ops.add(requested);
        ops.add(stack);
    }

    /** A new segment belongs to the small pool when the malloc that opened it asked for at most 1 MiB. */
    private boolean smallPoolSegment(int i) {
        for (int j = i + 1; j < trace.size(); j++) {
            TraceEntry n = trace.get(j);
            if (n.action() == TraceAction.ALLOC) {
                return SizeRules.isSmall(SizeRules.roundSize(n.size(), config));
            }
            if (n.action() != TraceAction.SEGMENT_ALLOC && n.action() != TraceAction.SEGMENT_MAP) {
                break;
            }
        }
        return trace.get(i).size() == SizeRules.SMALL_BUFFER;
    }

    /**
     * Marks the {@code n} largest sizes (ties: the earlier element): every size above the n-th largest, then the
     * earliest of those equal to it. Sorts a primitive copy, so a million allocations cost a primitive sort.
     */
    static boolean[] largest(long[] sizes, int n) {
        boolean[] drawn = new boolean[sizes.length];
        if (sizes.length <= n) {
            Arrays.fill(drawn, true);
            return drawn;
        }
        if (n <= 0) {
            return drawn;
        }
        long[] sorted = sizes.clone();
        Arrays.sort(sorted);
        long threshold = sorted[sorted.length - n]; // the n-th largest
        int above = 0;
        for (long s : sizes) {
            if (s > threshold) {
                above++;
            }
        }
        int ties = n - above; // how many of the sizes equal to the threshold are drawn, earliest first
        for (int i = 0; i < sizes.length; i++) {
            if (sizes[i] > threshold) {
                drawn[i] = true;
            } else if (sizes[i] == threshold && ties > 0) {
                drawn[i] = true;
                ties--;
            }
        }
        return drawn;
    }


    /**
     * The stacking of PyTorch's active memory timeline: drawn allocations sit on each other in allocation
     * order, and the ones too small to draw one by one are summed into a summary band on top.
     */
    static final class Layout {
        private static final class Live {
            final int id;
            final long addr, size, blockSize;
            final int stack, start;
            final LongList steps = new LongList(2);
            final LongList offsets = new LongList(2);

            Live(int id, long addr, long size, long blockSize, int stack, int start) {
                this.id = id;
                this.addr = addr;
                this.size = size;
                this.blockSize = blockSize;
                this.stack = stack;
                this.start = start;
            }
        }

        private final List<Live> current = new ArrayList<>();
        private final Map<Integer, Live> byId = new HashMap<>();
        private final Map<Integer, Long> summarized = new HashMap<>();
        private final List<Band> done = new ArrayList<>();
        private long drawnTotal;
        private long vertices;
        private final long vertexBudget;
        private long summaryTotal;
        final LongList stepEntry;
        final LongList total;
        final LongList summary;
        final LongList allocated;
        final LongList reserved;

        Layout(int capacity, long vertexBudget) {
            this.vertexBudget = vertexBudget;
            stepEntry = new LongList(capacity);
            total = new LongList(capacity);
            summary = new LongList(capacity);
            allocated = new LongList(capacity);
            reserved = new LongList(capacity);
        }

        int steps() {
            return stepEntry.size() - 1;
        }

        void add(int id, boolean drawn, long addr, long size, long blockSize, int stack, int step) {
            if (!drawn) {
                summaryTotal += size;
                summarized.put(id, size);
                return;
            }
            Live l = new Live(id, addr, size, blockSize, stack, step);
            l.steps.add(step);
            l.offsets.add(drawnTotal);
            drawnTotal += size;
            current.add(l);
            byId.put(id, l);
        }

        void remove(int id, boolean drawn, int step) {
            if (!drawn) {
                Long size = summarized.remove(id);
                summaryTotal -= size == null ? 0 : size;
                return;
            }
            Live l = byId.remove(id);
            if (l == null) {
                return;
            }
            int idx = current.lastIndexOf(l);
            current.remove(idx);
            for (int j = idx; j < current.size(); j++) {
                Live above = current.get(j);
                if (++vertices > vertexBudget) {
                    throw new TooManyVertices();
                }
                above.steps.add(step);
                above.offsets.add(above.offsets.last() - l.size);
            }
            drawnTotal -= l.size;
            done.add(band(l, step));
        }

        void recordStep(int entry, StateTracker t) {
            stepEntry.add(entry);
            total.add(drawnTotal + summaryTotal);
            summary.add(summaryTotal);
            allocated.add(t.allocated);
            reserved.add(t.reserved);
        }

        private static Band band(Live l, int end) {
            return new Band(l.addr, l.size, l.blockSize, l.stack, l.start, end, l.steps.toIntArray(), l.offsets.toArray());
        }

        List<Band> bands() {
            int end = steps() + 1;
            List<Band> all = new ArrayList<>(done);
            for (Live l : current) {
                all.add(band(l, end));
            }
            all.sort((a, b) -> a.start() != b.start() ? Integer.compare(a.start(), b.start())
                    : Long.compare(a.offsetOf(0), b.offsetOf(0)));
            return all;
        }
    }
}
