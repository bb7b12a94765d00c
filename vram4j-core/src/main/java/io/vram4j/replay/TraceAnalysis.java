package io.vram4j.replay;

import io.vram4j.alloc.config.AllocatorConfig;
import io.vram4j.memory.snapshot.AddressRanges;
import io.vram4j.memory.snapshot.BlockInfo;
import io.vram4j.memory.snapshot.BlockState;
import io.vram4j.memory.snapshot.SegmentInfo;
import io.vram4j.memory.snapshot.TraceAction;
import io.vram4j.memory.snapshot.TraceEntry;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * A pre-pass over one device's recorded trace: the recorded reserved/requested timeline and peaks, the
 * segment sequence, the release bursts and their explanation, the capacity an {@code oom} entry or the
 * out-of-memory bursts imply, and what existed before the first entry (the state at dump minus the net
 * effect of the trace, as PyTorch's own viewer rebuilds it).
 */
final class TraceAnalysis {
    final List<TraceEntry> trace;
    final List<SegmentInfo> dump;
    long initialReserved;
    long recordedPeakReserved;
    long recordedPeakRequested;
    final List<Long> segmentSizes = new ArrayList<>();
    final List<ReleaseBurst> bursts = new ArrayList<>();
    /** Burst by its first entry index. */
    final Map<Integer, ReleaseBurst> burstAt = new HashMap<>();
    int ooms;
    /** Capacity implied by the first {@code oom} entry (reserved then + device_free), or 0. */
    long oomCapacity;
    /** Lower and upper bounds on the capacity implied by out-of-memory-path bursts; 0 / MAX when none. */
    long inferredLower;
    long inferredUpper = Long.MAX_VALUE;
    /** Live blocks before the first entry, freed during the trace: address → {requested, stream, entry index}. */
    final Map<Long, long[]> orphanFrees = new HashMap<>();
    /** Segments released during the trace that were created before it: address → {size, stream}. */
    final Map<Long, long[]> orphanSegments = new HashMap<>();
    /** Segment addresses created during the trace. */
    final Set<Long> createdSegments = new HashSet<>();
    /** Addresses allocated during the trace and still live at its end (value 1; a primitive set). */
    final LongLongMap liveAtEnd = new LongLongMap();
    boolean expandable;
    /**
     * Expandable segments' address ranges mapped before the first entry (Note [Expandable mid-run] in
     * TraceReplayer): {start, end, stream, 1 for the small pool or 0 for the large}, ascending by start, contiguous
     * mapped pages merged into one range. Empty without expandable segments.
     */
    final List<long[]> mappedBefore = new ArrayList<>();

    /** The recorded settings: a release burst is explained by whether the cache could serve the next malloc. */
    private final AllocatorConfig recordedConfig;

    TraceAnalysis(List<TraceEntry> trace, List<SegmentInfo> dump, AllocatorConfig recordedConfig) {
        this.trace = trace;
        this.dump = dump;
        this.recordedConfig = recordedConfig;
        analyse();
    }

    private void analyse() {
        // one pass for the net reservation, expandable segments and what the trace allocates, frees, creates and
        // releases: a replay in a fresh JVM runs this loop interpreted, so each pass over the trace shows in its time
        long net = 0;
        boolean mapsInTrace = false;
        LongLongMap allocatedInTrace = new LongLongMap(); // as a set: value 1
        for (int i = 0; i < trace.size(); i++) {
            TraceEntry e = trace.get(i);
            switch (e.action()) {
                case ALLOC -> {
                    allocatedInTrace.put(e.addr(), 1);
                    liveAtEnd.put(e.addr(), 1);
                }
                case FREE_COMPLETED -> {
                    if (allocatedInTrace.get(e.addr()) == 0 && !orphanFrees.containsKey(e.addr())) {
                        orphanFrees.put(e.addr(), new long[] {e.size(), e.stream(), i});
                    }
                    liveAtEnd.remove(e.addr());
                }
                case SEGMENT_ALLOC -> {
                    net += e.size();
                    createdSegments.add(e.addr());
                }
                case SEGMENT_MAP -> {
                    net += e.size();
                    mapsInTrace = true;
                }
                case SEGMENT_FREE -> {
                    net -= e.size();
                    if (!createdSegments.contains(e.addr()) && !orphanSegments.containsKey(e.addr())) {
                        orphanSegments.put(e.addr(), new long[] {e.size(), e.stream()});
                    }
                }
                case SEGMENT_UNMAP -> net -= e.size();
                default -> { }
            }
        }
        long dumpReserved = 0;
        for (SegmentInfo s : dump) {
            dumpReserved += s.totalSize();
            expandable |= s.isExpandable();
        }
        initialReserved = dumpReserved - net;
        expandable |= mapsInTrace;
        if (expandable) {
            findMappedBefore();
        }
        long initialRequested = 0;
        for (long[] o : orphanFrees.values()) {
            initialRequested += o[0];
        }
        for (SegmentInfo s : dump) {
            for (BlockInfo b : s.blocks()) {
                if (b.state() == BlockState.ACTIVE_ALLOCATED && liveAtEnd.get(b.address()) == 0
                        && !orphanFrees.containsKey(b.address())) {
                    initialRequested += b.requestedSize();
                }
            }
        }

        long reserved = initialReserved;
        long requested = initialRequested;
        recordedPeakReserved = reserved;
        recordedPeakRequested = requested;
        for (int i = 0; i < trace.size(); i++) {
            TraceEntry e = trace.get(i);
            switch (e.action()) {
                case SEGMENT_ALLOC, SEGMENT_MAP -> {
                    reserved += e.size();
                    segmentSizes.add(e.size());
                    recordedPeakReserved = Math.max(recordedPeakReserved, reserved);
                }
                case SEGMENT_FREE, SEGMENT_UNMAP -> {
                    int j = i;
                    long bytes = 0;
                    long before = reserved;
                    while (j < trace.size() && (trace.get(j).action() == TraceAction.SEGMENT_FREE
                            || trace.get(j).action() == TraceAction.SEGMENT_UNMAP)) {
                        bytes += trace.get(j).size();
                        j++;
                    }
                    boolean oomEntry = j < trace.size() && trace.get(j).action() == TraceAction.OOM;
                    int k = j;
                    while (k < trace.size() && (trace.get(k).action() == TraceAction.SEGMENT_ALLOC
                            || trace.get(k).action() == TraceAction.SEGMENT_MAP)) {
                        k++;
                    }
                    boolean newSegment = k > j && k < trace.size() && trace.get(k).action() == TraceAction.ALLOC;
                    // Note [Release bursts]: inside one malloc only when the cache could not serve that malloc
                    boolean oomPath = oomEntry || newSegment && !cacheCouldServe(i, j, trace.get(k));
                    long next = 0;
                    for (int m = j; newSegment && m < k; m++) {
                        next += trace.get(m).size();
                    }
                    ReleaseBurst b = new ReleaseBurst(i, j - i, bytes,
                            oomPath ? ReleaseBurst.Kind.OOM_PATH : ReleaseBurst.Kind.EMPTY_CACHE, before, next);
                    bursts.add(b);
                    burstAt.put(i, b);
                    if (oomPath && newSegment) {
                        // the malloc could not get `next` bytes with `before` reserved, and could after releasing
                        inferredUpper = Math.min(inferredUpper, before + next);
                        inferredLower = Math.max(inferredLower, before - bytes + next);
                    }
                    reserved -= bytes;
                    i = j - 1;
                }
                case ALLOC -> {
                    requested += e.size();
                    recordedPeakRequested = Math.max(recordedPeakRequested, requested);
                }
                case FREE_COMPLETED -> requested -= e.size();
                case OOM -> {
                    ooms++;
                    if (oomCapacity == 0) {
                        oomCapacity = reserved + e.deviceFree();
                    }
                }
                default -> { }
            }
        }
        if (!bursts.isEmpty()) {
            inferredLower = Math.max(inferredLower, recordedPeakReserved);
        }
    }

    /**
     * The ranges mapped before the first entry, as the viz module's TimelineBuilder finds them: the dump's
     * expandable segments minus what the trace mapped (and left mapped), plus what the trace unmaps without having
     * mapped it. Map and unmap ranges need not line up, so ranges are kept, not addresses. Each range takes its
     * stream and pool from the dump segment holding it; failing that, the stream of the unmap entry that released
     * it, and the pool of a block freed in it before being allocated (requests of at most 1 MiB are small),
     * else of the first block the trace allocates in it before unmapping any of it, else the small pool when
     * its length is not a whole number of 20 MiB pages, else the pool of the nearest
     * dump expandable segment of that stream (reservations lie far apart), else the large pool.
     */
    private void findMappedBefore() {
        AddressRanges mappedInTrace = new AddressRanges();
        AddressRanges before = new AddressRanges();
        List<TraceEntry> unmaps = new ArrayList<>();
        for (TraceEntry e : trace) {
            if (e.action() == TraceAction.SEGMENT_MAP) {
                mappedInTrace.add(e.addr(), e.addr() + e.size());
            } else if (e.action() == TraceAction.SEGMENT_UNMAP) {
                for (long[] r : mappedInTrace.missing(e.addr(), e.addr() + e.size())) {
                    before.add(r[0], r[1]);
                }
                mappedInTrace.remove(e.addr(), e.addr() + e.size());
                unmaps.add(e);
            }
        }
        for (SegmentInfo s : dump) {
            if (s.isExpandable()) {
                for (long[] r : mappedInTrace.missing(s.address(), s.address() + s.totalSize())) {
                    before.add(r[0], r[1]);
                }
            }
        }
        for (long[] r : before.list()) {
            long stream = 0;
            int small = -1;
            for (SegmentInfo s : dump) {
                if (s.isExpandable() && s.address() < r[1] && r[0] < s.address() + s.totalSize()) {
                    stream = s.stream();
                    small = s.isLarge() ? 0 : 1;
                    break;
                }
            }
            if (small < 0) {
                for (TraceEntry e : unmaps) {
                    if (e.addr() < r[1] && r[0] < e.addr() + e.size()) {
                        stream = e.stream();
                        break;
                    }
                }
                for (Map.Entry<Long, long[]> o : orphanFrees.entrySet()) {
                    if (o.getKey() >= r[0] && o.getKey() < r[1]) {
                        small = o.getValue()[0] <= io.vram4j.alloc.SizeRules.SMALL_SIZE ? 1 : 0;
                        break;
                    }
                }
                for (TraceEntry e : small < 0 ? trace : List.<TraceEntry>of()) {
                    if (e.action() == TraceAction.SEGMENT_UNMAP && e.addr() < r[1] && r[0] < e.addr() + e.size()) {
                        break; // from here on the addresses may be mapped anew, for another reservation
                    }
                    if (e.action() == TraceAction.ALLOC && e.addr() >= r[0] && e.addr() < r[1]) {
                        small = e.size() <= io.vram4j.alloc.SizeRules.SMALL_SIZE ? 1 : 0;
                        break;
                    }
                }
                if (small < 0 && (r[1] - r[0]) % io.vram4j.alloc.SizeRules.LARGE_BUFFER != 0) {
                    small = 1; // not whole large pages
                }
                long nearest = Long.MAX_VALUE;
                for (SegmentInfo s : small < 0 ? dump : List.<SegmentInfo>of()) {
                    long distance = s.address() >= r[1] ? s.address() - r[1] : r[0] - s.endAddress();
                    if (s.isExpandable() && s.stream() == stream && distance < nearest) {
                        nearest = distance;
                        small = s.isLarge() ? 0 : 1;
                    }
                }
                if (small < 0) {
                    small = 0;
                }
            }
            mappedBefore.add(new long[] {r[0], r[1], stream, small});
        }
    }

    /**
     * Note [Release bursts]
     *   A malloc enters the out-of-memory path only after best fit found no cached block, so a burst released
     *   inside a malloc cannot contain a whole free segment that best fit would have handed to it. The entries
     *   {@code [from, to)} release whole free segments (each one free block); when one of them is in the pool and
     *   on the stream of the following {@code alloc}, large enough for its rounded size and allowed by the
     *   {@code max_split_size_mb} rules of get_free_block, the cache could have served the malloc, and the burst
     *   was an explicit {@code empty_cache()} before it.
     *
     * @return true when a released segment could have served {@code next}
     */
    private boolean cacheCouldServe(int from, int to, TraceEntry next) {
        long size = io.vram4j.alloc.SizeRules.roundSize(next.size(), recordedConfig);
        boolean small = io.vram4j.alloc.SizeRules.isSmall(size);
        for (int m = from; m < to; m++) {
            TraceEntry e = trace.get(m);
            boolean segmentSmall = e.action() == TraceAction.SEGMENT_UNMAP
                    ? e.size() % io.vram4j.alloc.SizeRules.LARGE_BUFFER != 0
                    : e.size() == io.vram4j.alloc.SizeRules.SMALL_BUFFER;
            if (e.stream() != next.stream() || segmentSmall != small || e.size() < size) {
                continue;
            }
            long maxSplit = recordedConfig.maxSplitSize();
            if (size < maxSplit && e.size() >= maxSplit
                    || size >= maxSplit && e.size() >= size + recordedConfig.maxNonSplitRounding()) {
                continue;
            }
            return true;
        }
        return false;
    }

    /**
     * The device total implied by the spacing of expandable segments' reservations: PyTorch reserves
     * {@code page × ceil(1.125 × total / page)} bytes of addresses per stream and pool (small pool: 2 MiB pages,
     * large: 20 MiB), and the driver lays reservations out back to back. Each stream and pool's reservation
     * starts at its lowest known address (the first {@code segment_map} of a from-empty trace is at the base);
     * the distance to the next reservation's base is at least this reservation's size, and equals it when they
     * are back to back. The narrowest such distance gives the interval.
     *
     * @return {lower, upper} bytes of device total, or null without two reservations to compare
     */
    long[] expandableSpacing() {
        if (!expandable) {
            return null;
        }
        // reservation base → page size, one per (stream, pool): the lowest known address
        Map<List<Long>, Long> bases = new HashMap<>();
        for (int i = 0; i < trace.size(); i++) {
            TraceEntry e = trace.get(i);
            if (e.action() != TraceAction.SEGMENT_MAP) {
                continue;
            }
            int j = i + 1;
            while (j < trace.size() && trace.get(j).action() == TraceAction.SEGMENT_MAP) {
                j++;
            }
            if (j < trace.size() && trace.get(j).action() == TraceAction.ALLOC) {
                boolean small = io.vram4j.alloc.SizeRules.isSmall(io.vram4j.alloc.SizeRules.roundSize(trace.get(j).size(),
                        recordedConfig));
                bases.merge(List.of(e.stream(), small ? 1L : 0L), e.addr(), TraceAnalysis::lowerUnsigned);
            }
        }
        for (long[] r : mappedBefore) {
            bases.merge(List.of(r[2], r[3]), r[0], TraceAnalysis::lowerUnsigned);
        }
        for (SegmentInfo s : dump) {
            if (s.isExpandable()) {
                bases.merge(List.of(s.stream(), s.isLarge() ? 0L : 1L), s.address(), TraceAnalysis::lowerUnsigned);
            }
        }
        List<Map.Entry<List<Long>, Long>> sorted = new ArrayList<>(bases.entrySet());
        sorted.sort((x, y) -> Long.compareUnsigned(x.getValue(), y.getValue()));
        long[] best = null;
        for (int k = 0; k + 1 < sorted.size(); k++) {
            long page = sorted.get(k).getKey().get(1) == 1 ? io.vram4j.alloc.SizeRules.SMALL_BUFFER
                    : io.vram4j.alloc.SizeRules.LARGE_BUFFER;
            long reservation = (sorted.get(k + 1).getValue() - sorted.get(k).getValue()) / page * page;
            if (reservation < page) {
                continue;
            }
            long upper = largestTotalWithin(reservation);
            long lower = largestTotalWithin(reservation - page) + 1; // back to back: the reservation is exactly this
            if (best == null || upper < best[1]) {
                best = new long[] {lower, upper};
            }
        }
        if (best != null) {
            best[0] = Math.min(Math.max(best[0], recordedPeakReserved), best[1]);
        }
        return best;
    }

    /** @return the largest total T whose 1.125 × T (as PyTorch computes it: T + T / 8) is at most {@code bytes} */
    private static long largestTotalWithin(long bytes) {
        long t = bytes / 9 * 8;
        while (t + 1 + (t + 1) / 8 <= bytes) {
            t++;
        }
        while (t > 0 && t + t / 8 > bytes) {
            t--;
        }
        return t;
    }

    private static Long lowerUnsigned(Long a, Long b) {
        return Long.compareUnsigned(a, b) <= 0 ? a : b;
    }

    private long[] knownStarts;

    /**
     * Every block start the recording knows of (dump blocks, trace allocs, frees of pre-trace blocks), as a
     * sorted array of addresses with the sign bit flipped, so signed order is the addresses' unsigned order.
     * Computed once and shared by the replay's passes.
     */
    long[] knownStarts() {
        if (knownStarts == null) {
            long[] a = new long[64];
            int n = 0;
            for (SegmentInfo s : dump) {
                for (BlockInfo b : s.blocks()) {
                    a = ensure(a, n);
                    a[n++] = b.address() ^ Long.MIN_VALUE;
                }
            }
            for (TraceEntry e : trace) {
                if (e.action() == TraceAction.ALLOC) {
                    a = ensure(a, n);
                    a[n++] = e.addr() ^ Long.MIN_VALUE;
                }
            }
            for (long addr : orphanFrees.keySet()) {
                a = ensure(a, n);
                a[n++] = addr ^ Long.MIN_VALUE;
            }
            a = java.util.Arrays.copyOf(a, n);
            java.util.Arrays.sort(a);
            knownStarts = a;
        }
        return knownStarts;
    }

    private static long[] ensure(long[] a, int n) {
        return n < a.length ? a : java.util.Arrays.copyOf(a, a.length * 2);
    }

    /**
     * @param addr an address
     * @return the least known block start above {@code addr} (unsigned), or null when none
     */
    Long nextKnownStart(long addr) {
        long[] a = knownStarts();
        long key = addr ^ Long.MIN_VALUE;
        int lo = 0;
        int hi = a.length;
        while (lo < hi) { // first index with a[i] > key
            int mid = (lo + hi) >>> 1;
            if (a[mid] <= key) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        return lo < a.length ? a[lo] ^ Long.MIN_VALUE : null;
    }

    boolean hasOomPathBursts() {
        return bursts.stream().anyMatch(b -> b.kind() == ReleaseBurst.Kind.OOM_PATH);
    }

    boolean fromEmpty() {
        return initialReserved == 0 && orphanFrees.isEmpty();
    }
}
