package io.vram4j.replay;

import io.vram4j.alloc.AllocatorListener;
import io.vram4j.alloc.CachingAllocator;
import io.vram4j.alloc.DeviceOutOfMemoryException;
import io.vram4j.alloc.SizeRules;
import io.vram4j.alloc.config.AllocatorConfig;
import io.vram4j.device.AbstractDevice;
import io.vram4j.device.DeviceBackend;
import io.vram4j.device.Stream;
import io.vram4j.device.sim.SimDevice;
import io.vram4j.memory.snapshot.BlockInfo;
import io.vram4j.memory.snapshot.BlockState;
import io.vram4j.memory.snapshot.SegmentInfo;
import io.vram4j.memory.snapshot.TraceAction;
import io.vram4j.memory.snapshot.TraceEntry;
import io.vram4j.memory.stats.FormatSize;
import io.vram4j.memory.stats.MemoryStats;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/*
 * Replays one device's recorded trace through vram4j's allocator on a simulated device.
 *
 * Note [Initial state]
 *   A trace that starts mid-run begins with memory already reserved and blocks already live. They are
 *   rebuilt as the state at dump minus the net effect of the trace: segments present at dump but not
 *   created by the trace, plus segments the trace frees without having created them; live blocks present
 *   at dump and not allocated by the trace, plus blocks the trace frees without having allocated them. A
 *   block's true size may exceed round_size(requested): in the large pool an unsplit remainder of at most
 *   1 MiB stays inside the block, so a gap of at most 1 MiB before the next known block start belongs to
 *   it. The pre-trace state is rebuilt under the recorded settings; what-if settings apply from the first
 *   entry on. Expandable segments are rebuilt as reservations at recorded bases with their pre-trace mapped
 *   ranges (Note [Expandable mid-run] at expandableReservations).
 *
 * Note [Placement]
 *   Best fit breaks ties by address, so where segments sit decides where later blocks go. With
 *   recordedAddresses, each new segment is placed where the recording's segment_alloc / segment_map put it.
 *
 * Note [Release bursts]
 *   A run of segment_free entries is either an explicit empty_cache() or the out-of-memory path of one
 *   malloc. empty_cache bursts are replayed as emptyCache(). OOM-path bursts happen by themselves when the
 *   simulated device is bounded (CapacityEstimate); on an unbounded one they are emulated with emptyCache(),
 *   which releases the same segments. TraceAnalysis tells them apart (Note [Release bursts] there).
 */
final class TraceReplayer implements AllocatorListener {
    private final int deviceIndex;
    private final TraceAnalysis analysis;
    private final ReplayOptions options;
    /** Settings of the recording: the pre-trace state is rebuilt under them. */
    private final AllocatorConfig recordedConfig;
    /** Settings of the replay, in force from the first entry on. */
    private final AllocatorConfig config;
    private final long capacity;
    private final CapacityEstimate estimate;
    private final boolean nativeOom;

    private DeviceBackend device;
    private CachingAllocator alloc;
    private final LongLongMap recordedToOurs = new LongLongMap();
    private final Set<Long> failedAllocs = new HashSet<>();
    private final Map<Long, Stream> streams = new HashMap<>();
    /** Pending recorded new segments of the malloc being replayed: {address, size}. */
    private final List<long[]> pendingSegments = new ArrayList<>();
    private final Set<Long> ourSegments = new HashSet<>();
    private final Map<Long, Long> segmentRecordedToOurs = new HashMap<>();
    /** Own-address replays: the recorded segments live now, base → size (unsigned order); null when not tracked. */
    private final TreeMap<Long, Long> recordedSegments;
    private final List<Long> replayedSegmentSizes = new ArrayList<>();
    /** Pre-trace live blocks as rebuilt: recorded address → block size in bytes. */
    private final LongLongMap preTraceSizes = new LongLongMap();
    private long preTraceAllocated;
    private long allocs;
    private long otherAddress;
    private int predictedOoms;
    private int firstPredictedOom = -1;
    private OomEvent firstOom;
    private final List<OomEvent> recordedOomEvents = new ArrayList<>();
    private final List<String> notes = new ArrayList<>();
    private int skipped;
    private long peakAllocated;
    /** Entry after which allocated memory peaked (-1: before the first entry). */
    private int peakAllocatedEntry = -1;
    /** Entry after which to capture fragmentation and stats (-1: after the rebuilt initial state). */
    private final int captureAt;
    private Fragmentation atPeak;
    /** Set by {@link #stopAtFirstOom()}: end the replay at its first out-of-memory failure. */
    private boolean stopAtFirstOom;
    private MemoryStats statsAtPeak;

    TraceReplayer(int deviceIndex, TraceAnalysis analysis, ReplayOptions options, AllocatorConfig recordedConfig,
                  AllocatorConfig config, int captureAt) {
        this.captureAt = captureAt;
        this.deviceIndex = deviceIndex;
        this.analysis = analysis;
        this.options = options;
        this.recordedConfig = recordedConfig;
        this.config = config;
        estimate = CapacityEstimate.of(analysis, options);
        capacity = estimate.capacity();
        nativeOom = estimate.limited();
        recordedSegments = options.recordedAddresses() || analysis.expandable || options.conf() != null
                || options.capacity() > 0 ? null : new TreeMap<>(Long::compareUnsigned);
    }

    /** @return the report, or null for a measuring pass ({@code captureAt >= -1}), read via {@link #atPeak()} */
    ReplayReport run() {
        device = new SimDevice(deviceIndex, capacity, "sim:replay");
        try {
            alloc = CachingAllocator.create(device, recordedConfig);
            alloc.setListener(this);
            if (options.recordedAddresses()) {
                alloc.setSegmentPlacement(this::placement);
            }
            int initialLive = rebuildInitialState();
            alloc.setConfig(config);
            if (!Double.isNaN(config.perProcessMemoryFraction())) {
                alloc.setPerProcessMemoryFraction(config.perProcessMemoryFraction());
            }
            alloc.resetPeakMemoryStats();
            alloc.resetAccumulatedMemoryStats();
            peakAllocated = alloc.memoryAllocated();
            if (captureAt == -1) {
                capturePeak();
            }
            long start = System.nanoTime();
            List<TraceEntry> trace = analysis.trace;
            for (int i = 0; i < trace.size(); i++) {
                step(i, trace.get(i));
                if (stopAtFirstOom && predictedOoms > 0) {
                    break; // a search only asks whether the trace fits
                }
                if (i == captureAt) {
                    capturePeak();
                    return null; // a measuring pass ends here
                }
            }
            if (captureAt == -1) {
                return null;
            }
            double seconds = Math.max(1e-9, (System.nanoTime() - start) / 1e9);
            MemoryStats finalStats = alloc.memoryStats();
            List<String> diffs = compareFinalState();
            ReplayReport report = new ReplayReport(deviceIndex, config.confString(), estimate,
                    options.recordedAddresses(), trace.size(), trace.size() / seconds, analysis.fromEmpty(),
                    analysis.initialReserved, initialLive, analysis.recordedPeakReserved,
                    finalStats.maxReservedBytes(), analysis.recordedPeakRequested,
                    finalStats.get("requested_bytes.all.peak"), recordedPeakAllocated(), finalStats.maxAllocatedBytes(),
                    List.copyOf(analysis.segmentSizes), List.copyOf(replayedSegmentSizes), allocs, otherAddress,
                    diffs.isEmpty(), diffs, analysis.ooms, predictedOoms, firstPredictedOom, firstOom,
                    List.copyOf(recordedOomEvents), List.copyOf(analysis.bursts), List.copyOf(notes),
                    skipped, atPeak, statsAtPeak, finalStats);
            return report;
        } finally {
            device.close();
        }
    }

    // ---- initial state (Note [Initial state]) ----

    private int rebuildInitialState() {
        if (analysis.fromEmpty()) {
            return 0;
        }
        // segment address -> {size, stream, small}
        TreeMap<Long, long[]> segments = new TreeMap<>(Long::compareUnsigned);
        for (SegmentInfo s : analysis.dump) {
            if (!s.isExpandable() && !analysis.createdSegments.contains(s.address())) {
                segments.put(s.address(), new long[] {s.totalSize(), s.stream(), s.isLarge() ? 0 : 1});
            }
        }
        for (Map.Entry<Long, long[]> o : analysis.orphanSegments.entrySet()) {
            long size = o.getValue()[0];
            segments.put(o.getKey(), new long[] {size, o.getValue()[1], size == SizeRules.SMALL_BUFFER ? 1 : 0});
        }
        // live block address -> {size or 0 (infer), requested}
        TreeMap<Long, long[]> live = new TreeMap<>(Long::compareUnsigned);
        for (SegmentInfo s : analysis.dump) {
            for (BlockInfo b : s.blocks()) {
                if (b.state() == BlockState.ACTIVE_ALLOCATED && analysis.liveAtEnd.get(b.address()) == 0
                        && !analysis.orphanFrees.containsKey(b.address())) {
                    live.put(b.address(), new long[] {b.size(), b.requestedSize()});
                }
            }
        }
        for (Map.Entry<Long, long[]> o : analysis.orphanFrees.entrySet()) {
            live.put(o.getKey(), new long[] {0, o.getValue()[0]});
        }
        fitPreTraceState(segments, live);
        int count = 0;
        for (Map.Entry<Long, long[]> seg : segments.entrySet()) {
            long base = seg.getKey();
            long size = seg.getValue()[0];
            boolean small = seg.getValue()[2] == 1;
            List<long[]> blocks = takeBlocks(live, base, size, small, false);
            count += blocks.size();
            try {
                alloc.restoreSegment(base, size, stream(seg.getValue()[1]), small, blocks);
            } catch (IllegalArgumentException e) {
                throw new ReplayException("device " + deviceIndex + ": cannot rebuild the state before the trace: "
                        + e.getMessage(), -1);
            }
            ourSegments.add(base);
            segmentRecordedToOurs.put(base, base);
            if (recordedSegments != null) {
                recordedSegments.put(base, size);
            }
        }
        for (Reservation r : expandableReservations(capacity)) {
            List<long[]> blocks = new ArrayList<>();
            for (long[] m : r.mapped()) {
                blocks.addAll(takeBlocks(live, m[0], m[1], r.small(), true));
            }
            count += blocks.size();
            try {
                alloc.restoreExpandableSegment(r.base(), stream(r.stream()), r.small(), r.mapped(), blocks);
            } catch (IllegalArgumentException e) {
                throw new ReplayException("device " + deviceIndex + ": cannot rebuild the expandable segments before"
                        + " the trace: " + e.getMessage(), -1);
            }
        }
        if (!live.isEmpty() && !options.lenient()) {
            long addr = live.firstKey();
            long[] orphan = analysis.orphanFrees.get(addr);
            int entry = orphan == null ? -1 : (int) orphan[2];
            throw new ReplayException("device " + deviceIndex + ": " + (orphan == null ? "" : "entry " + entry + ": ")
                    + "free_completed of unknown address 0x" + Long.toHexString(addr)
                    + " (not allocated in the trace, and in no segment that existed before it)", entry);
        }
        // lenient: each such free is counted as skipped when the replay reaches it (free() finds no block)
        return count;
    }

    /**
     * A capacity below what was reserved before the trace: the segments that hold no live block are left out (the
     * out-of-memory path would release them first), and a note says so with both figures. When the segments
     * holding live blocks alone exceed the capacity, the program could not have reached the trace: the first
     * allocation that cannot be served comes before it, and the replay stops with that answer.
     *
     * @param segments pre-trace segments, address → {size, stream, small}; free ones are removed when needed
     * @param live pre-trace live blocks by address
     */
    private void fitPreTraceState(TreeMap<Long, long[]> segments, TreeMap<Long, long[]> live) {
        long mapped = 0;
        for (long[] r : analysis.mappedBefore) {
            mapped += r[1] - r[0];
        }
        long reserved = mapped + segments.values().stream().mapToLong(v -> v[0]).sum();
        if (reserved <= capacity) {
            return;
        }
        segments.entrySet().removeIf(seg -> live.subMap(seg.getKey(), true, seg.getKey() + seg.getValue()[0], false)
                .isEmpty());
        long holding = mapped + segments.values().stream().mapToLong(v -> v[0]).sum();
        String head = "device " + deviceIndex + ": capacity " + FormatSize.formatSize(capacity) + " is below the "
                + FormatSize.formatSize(reserved) + " reserved before the trace began";
        if (holding > capacity) {
            throw new PreTraceOutOfMemoryException(head + ", and its segments holding live blocks need "
                    + FormatSize.formatSize(holding) + ": the first allocation that cannot be served comes before the"
                    + " trace");
        }
        notes.add(head + "; its cached free segments (" + FormatSize.formatSize(reserved - holding)
                + ") are released first, as the out-of-memory path would");
    }

    /**
     * Takes the pre-trace live blocks inside {@code [base, base + size)} out of {@code live} and sizes them: a
     * block known only from its free (size 0) is round_size(requested) under the recorded settings, plus, in an
     * ordinary large-pool segment, a gap of an unsplit remainder before the next known block start (Note [Initial
     * state]); in an expandable segment every remainder of 512 B or more is split off, so it is the rounded size.
     *
     * @param live recorded address → {size in bytes or 0 to infer, requested bytes}
     * @return {address, size, requested} triples in address order, recorded in preTraceSizes and recordedToOurs
     */
    private List<long[]> takeBlocks(TreeMap<Long, long[]> live, long base, long size, boolean small, boolean expandable) {
        List<long[]> blocks = new ArrayList<>();
        List<Map.Entry<Long, long[]>> inside = new ArrayList<>(live.subMap(base, true, base + size, false).entrySet());
        for (int k = 0; k < inside.size(); k++) {
            long addr = inside.get(k).getKey();
            long[] v = inside.get(k).getValue();
            long blockSize = v[0];
            if (blockSize == 0) {
                long rounded = SizeRules.roundSize(v[1], recordedConfig);
                // Every block start the recording knows of (TraceAnalysis.knownStarts): a block's true end is the
                // next known start when the gap could only be an unsplit remainder (Note [Initial state]).
                Long next = analysis.nextKnownStart(addr);
                long nextStart = next == null || Long.compareUnsigned(next, base + size) >= 0 ? base + size : next;
                long limit = k + 1 < inside.size() ? inside.get(k + 1).getKey() : base + size;
                nextStart = Math.min(nextStart, limit);
                long gap = nextStart - (addr + rounded);
                long tolerance = rounded >= recordedConfig.maxSplitSize() ? recordedConfig.maxNonSplitRounding() - 1
                        : SizeRules.SMALL_SIZE;
                blockSize = !small && !expandable && gap > 0 && gap <= tolerance ? rounded + gap : rounded;
            }
            blocks.add(new long[] {addr, blockSize, v[1]});
            preTraceSizes.put(addr, blockSize);
            preTraceAllocated += blockSize;
            recordedToOurs.put(addr, addr);
        }
        for (Map.Entry<Long, long[]> e : inside) {
            live.remove(e.getKey());
        }
        return blocks;
    }

    /**
     * One expandable segment to rebuild before the first entry.
     *
     * @param base its reservation's base address
     * @param stream the stream handle
     * @param small the small pool (2 MiB pages) or the large (20 MiB pages)
     * @param mapped {start, length} in bytes of its ranges mapped before the first entry, ascending
     */
    private record Reservation(long base, long stream, boolean small, List<long[]> mapped) {
    }

    /**
     * Note [Expandable mid-run]
     *   A snapshot shows each contiguous mapped range of an expandable segment as one segment, but neither the
     *   reserved virtual range the ranges belong to nor which ranges share it. Each reservation serves one stream
     *   and pool and is far larger than the memory mapped at once (9/8 of the capacity), so the ranges mapped
     *   before the first entry (TraceAnalysis.mappedBefore) are grouped by stream and pool into one reservation
     *   each. Its base matters: new pages are mapped into the unmapped range of lowest address that has room,
     *   and best fit compares a free block together with the unmapped range after it. PyTorch maps a new
     *   reservation from its base, so the base is the lowest address known to lie in it: the group's first
     *   range, or lower when the trace maps pages of the same stream and pool below that range (pages unmapped
     *   before the trace began; a map into an unmapped range starts at that range's start, which is the base
     *   when the range begins there). Blind spot: an unmapped range at the base that the trace never maps into
     *   again is invisible. Reservations do not overlap, so one that would reach past the base of the
     *   reservation above it starts lower, where it ends at that base (back to back, as the sim device lays out
     *   reservations and as an exact reservation size implies); otherwise the replayed reservation starts at the
     *   first mapped page, and where the unseen range was too small for every later map, nothing differs.
     *   Without an oom entry the replay's capacity is raised so that one reservation covers each group; with a
     *   recorded capacity (the recording's own reservation size) ranges beyond one reservation's reach start
     *   another reservation at their own start. A range no longer mapped at dump takes its pool from the
     *   evidence listed at TraceAnalysis.findMappedBefore.
     *
     * @param capacity the replay device's capacity in bytes
     * @return the reservations to rebuild, highest base first
     */
    private List<Reservation> expandableReservations(long capacity) {
        List<Reservation> out = new ArrayList<>();
        List<List<long[]>> groups = mappedBeforeByStreamAndPool(analysis);
        groups.sort((x, y) -> Long.compare(y.get(0)[0], x.get(0)[0])); // highest first: each one's base bounds the next
        long ceiling = Long.MAX_VALUE;
        for (List<long[]> group : groups) {
            long stream = group.get(0)[2];
            boolean small = group.get(0)[3] == 1;
            long reservation = SizeRules.expandableReservationSize(capacity, small ? SizeRules.SMALL_BUFFER
                    : SizeRules.LARGE_BUFFER);
            long base = lowestMapBelow(analysis, group, reservation);
            if (ceiling != Long.MAX_VALUE && base + reservation > ceiling) {
                base = Math.max(0, ceiling - reservation); // ends where the reservation above begins
            }
            ceiling = base;
            Reservation cur = null;
            for (long[] r : group) {
                if (cur == null || r[1] - cur.base() > reservation) {
                    cur = new Reservation(cur == null ? base : r[0], stream, small, new ArrayList<>());
                    out.add(cur);
                }
                cur.mapped().add(new long[] {r[0], r[1] - r[0]});
            }
        }
        return out;
    }

    /**
     * @return the ranges of TraceAnalysis.mappedBefore grouped by stream and pool, each group ascending
     */
    private static List<List<long[]>> mappedBeforeByStreamAndPool(TraceAnalysis analysis) {
        Map<List<Long>, List<long[]>> groups = new java.util.LinkedHashMap<>();
        for (long[] r : analysis.mappedBefore) {
            groups.computeIfAbsent(List.of(r[2], r[3]), k -> new ArrayList<>()).add(r);
        }
        return new ArrayList<>(groups.values());
    }

    /**
     * The base of a group's reservation (Note [Expandable mid-run]): its first range's start, or the lowest
     * {@code segment_map} of the trace below it on the same stream and pool (the pool of the {@code alloc} that
     * directly follows the map: at most 1 MiB requested is small) whose distance to the group's last end fits in
     * {@code reach} bytes and with no pre-trace range of another group in between.
     */
    private static long lowestMapBelow(TraceAnalysis analysis, List<long[]> group, long reach) {
        long first = group.get(0)[0];
        long end = group.get(group.size() - 1)[1];
        // Not below memory known to be another group's: the reservations do not overlap.
        long floor = Math.max(0, end - reach);
        for (long[] r : analysis.mappedBefore) {
            if (r[1] <= first) {
                floor = Math.max(floor, r[1]);
            }
        }
        long base = first;
        List<TraceEntry> trace = analysis.trace;
        for (int i = 0; i < trace.size(); i++) {
            TraceEntry e = trace.get(i);
            if (e.action() != TraceAction.SEGMENT_MAP || e.stream() != group.get(0)[2] || e.addr() >= base
                    || e.addr() < floor) {
                continue;
            }
            int j = i + 1;
            while (j < trace.size() && trace.get(j).action() == TraceAction.SEGMENT_MAP) {
                j++;
            }
            // the pool of the alloc the map served; a map not followed by its alloc (a failed malloc) tells none
            if (j < trace.size() && trace.get(j).action() == TraceAction.ALLOC
                    && (trace.get(j).size() <= SizeRules.SMALL_SIZE) == (group.get(0)[3] == 1)) {
                base = e.addr();
            }
        }
        return base;
    }

    /**
     * The recorded peak allocated bytes, derived from the trace as PyTorch's allocator counts
     * {@code allocated_bytes}: the pre-trace live blocks at their rebuilt sizes, plus for each {@code alloc}
     * {@code round_size(size)} under the recorded settings, minus the same at its {@code free_completed}.
     * Blind spot: a block that keeps an unsplit remainder (large pool, remainder at most 1 MiB; or an
     * oversize block served from a cached block up to {@code max_non_split_rounding_mb} larger) counts its
     * whole size in PyTorch and in the replay, but only its rounded size here, so this can read lower than
     * the replay's peak by the remainders live at that moment.
     *
     * @return bytes
     */
    private long recordedPeakAllocated() {
        LongLongMap sizes = new LongLongMap();
        long allocated = preTraceAllocated;
        long peak = allocated;
        for (TraceEntry e : analysis.trace) {
            if (e.action() == TraceAction.ALLOC) {
                long rounded = SizeRules.roundSize(e.size(), recordedConfig);
                sizes.put(e.addr(), rounded);
                allocated += rounded;
                peak = Math.max(peak, allocated);
            } else if (e.action() == TraceAction.FREE_COMPLETED) {
                long size = sizes.remove(e.addr());
                allocated -= size != 0 ? size : preTraceSizes.remove(e.addr());
            }
        }
        return peak;
    }

    // ---- the entries ----

    private void step(int i, TraceEntry e) {
        switch (e.action()) {
            case ALLOC -> alloc(i, e);
            case FREE_COMPLETED -> free(i, e);
            case SEGMENT_ALLOC, SEGMENT_MAP -> {
                pendingSegments.add(new long[] {e.addr(), e.size()});
                if (recordedSegments != null) {
                    recordedSegments.put(e.addr(), e.size());
                }
            }
            case SEGMENT_FREE, SEGMENT_UNMAP -> {
                release(i, e);
                if (recordedSegments != null) {
                    recordedSegments.remove(e.addr());
                    segmentRecordedToOurs.remove(e.addr());
                }
            }
            case OOM -> recordedOom(i, e);
            default -> { }
        }
    }

    private void alloc(int i, TraceEntry e) {
        long ours;
        try {
            ours = alloc.malloc(e.size(), stream(e.stream()));
        } catch (DeviceOutOfMemoryException oom) {
            predicted(i, e, false);
            if (!options.lenient()) {
                throw new ReplayException("device " + deviceIndex + ": entry " + i + ": alloc of " + e.size()
                        + " bytes ran out of memory in the replay: " + oom.getMessage(), i);
            }
            failedAllocs.add(e.addr());
            skipped++;
            pendingSegments.clear();
            return;
        }
        pendingSegments.clear();
        allocs++;
        if (recordedSegments != null && ours != expectedPlace(e.addr())) {
            otherAddress++;
        }
        if (options.recordedAddresses() && ours != e.addr()) {
            if (otherAddress == 0 && Boolean.getBoolean("vram4j.replay.debug")) {
                System.err.println("first alloc at another address: entry " + i + " recorded 0x" + Long.toHexString(e.addr())
                        + " replayed 0x" + Long.toHexString(ours) + " size " + e.size());
            }
            otherAddress++;
        }
        recordedToOurs.put(e.addr(), ours);
        long allocated = alloc.memoryAllocated();
        if (allocated > peakAllocated) {
            peakAllocated = allocated;
            peakAllocatedEntry = i;
        }
    }

    /**
     * Own-address replays: where the recorded block would be in our memory, the same offset in the segment of ours
     * that replays the recorded segment holding it.
     *
     * @param recorded the recorded block address
     * @return our address, or 0 when the recorded segment is unknown or has no counterpart
     */
    private long expectedPlace(long recorded) {
        Map.Entry<Long, Long> seg = recordedSegments.floorEntry(recorded);
        if (seg == null || Long.compareUnsigned(recorded - seg.getKey(), seg.getValue()) >= 0) {
            return 0;
        }
        Long ours = segmentRecordedToOurs.get(seg.getKey());
        return ours == null ? 0 : ours + (recorded - seg.getKey());
    }

    /** @return this replayer, set to end at the first out-of-memory failure (its report then covers the entries up to it) */
    TraceReplayer stopAtFirstOom() {
        stopAtFirstOom = true;
        return this;
    }

    Fragmentation atPeak() {
        return atPeak;
    }

    MemoryStats statsAtPeak() {
        return statsAtPeak;
    }

    int peakAllocatedEntry() {
        return peakAllocatedEntry;
    }

    private void capturePeak() {
        atPeak = Fragmentation.ofSnapshot(alloc.segments());
        statsAtPeak = alloc.memoryStats();
    }

    private void free(int i, TraceEntry e) {
        long ours = recordedToOurs.remove(e.addr());
        if (ours == 0) {
            if (failedAllocs.remove(e.addr())) {
                return;
            }
            if (!options.lenient()) {
                throw new ReplayException("device " + deviceIndex + ": entry " + i + ": free_completed of unknown address 0x"
                        + Long.toHexString(e.addr()), i);
            }
            skipped++;
            return;
        }
        alloc.free(ours);
    }

    private void release(int i, TraceEntry e) {
        ReleaseBurst burst = analysis.burstAt.get(i);
        if (burst != null && (burst.kind() == ReleaseBurst.Kind.EMPTY_CACHE || !nativeOom)) {
            alloc.emptyCache();
        }
    }

    private void recordedOom(int i, TraceEntry e) {
        try {
            long p = alloc.malloc(e.size(), stream(e.stream()));
            recordedOomEvents.add(new OomEvent(i, e.size(), true, false, e.frames(), oomState(e)));
            alloc.free(p); // the recorded program never got this memory
        } catch (DeviceOutOfMemoryException oom) {
            recordedOomEvents.add(predicted(i, e, true));
        }
    }

    /** Counts a predicted out-of-memory failure of entry {@code i}; the first one is kept with its state. */
    private OomEvent predicted(int i, TraceEntry e, boolean recorded) {
        predictedOoms++;
        OomEvent event = new OomEvent(i, e.size(), recorded, true, e.frames(), oomState(e));
        if (firstPredictedOom < 0) {
            firstPredictedOom = i;
            firstOom = event;
        }
        return event;
    }

    private OomState oomState(TraceEntry e) {
        double fraction = config.perProcessMemoryFraction();
        long allowed = Double.isNaN(fraction) ? capacity : (long) (fraction * capacity);
        return OomState.of(alloc.segments(), allowed, SizeRules.roundSize(e.size(), config), e.stream());
    }

    private Stream stream(long handle) {
        return streams.computeIfAbsent(handle, device::stream);
    }

    private long placement(long size, boolean expandable) {
        for (long[] p : pendingSegments) {
            if (expandable || p[1] == size) {
                return p[0];
            }
        }
        return 0;
    }

    // ---- our segments (listener) ----

    @Override
    public void segmentAlloc(long addr, long size, Stream stream, boolean small, Object context) {
        ourSegments.add(addr);
        replayedSegmentSizes.add(size);
        for (long[] p : pendingSegments) {
            if (p[1] == size) {
                segmentRecordedToOurs.put(p[0], addr);
                break;
            }
        }
    }

    @Override
    public void segmentFree(long addr, long size, Stream stream, boolean small) {
        ourSegments.remove(addr);
    }

    @Override
    public void segmentMap(long addr, long size, Stream stream, boolean small, Object context) {
        replayedSegmentSizes.add(size);
    }

    // ---- final state ----

    private List<String> compareFinalState() {
        List<String> diffs = new ArrayList<>();
        List<SegmentInfo> ours = alloc.segments();
        List<SegmentInfo> recorded = analysis.dump;
        if (options.recordedAddresses()) {
            Map<Long, SegmentInfo> byAddr = new HashMap<>();
            for (SegmentInfo s : ours) {
                byAddr.put(s.address(), s);
            }
            for (SegmentInfo r : recorded) {
                SegmentInfo s = byAddr.remove(r.address());
                if (s == null) {
                    diffs.add("segment 0x" + Long.toHexString(r.address()) + " (" + r.totalSize() + " B) is missing");
                } else if (!sameLayout(r, s, true)) {
                    diffs.add("segment 0x" + Long.toHexString(r.address()) + ": blocks differ: recorded "
                            + layout(r) + ", replayed " + layout(s));
                }
                if (diffs.size() >= 10) {
                    return diffs;
                }
            }
            for (SegmentInfo s : byAddr.values()) {
                diffs.add("extra segment 0x" + Long.toHexString(s.address()) + " (" + s.totalSize() + " B)");
                if (diffs.size() >= 10) {
                    break;
                }
            }
        } else {
            List<String> a = recorded.stream().map(TraceReplayer::layout).sorted().toList();
            List<String> b = ours.stream().map(TraceReplayer::layout).sorted().toList();
            if (!a.equals(b)) {
                diffs.add("segment layouts differ (compared without addresses): recorded " + a.size()
                        + " segments, replayed " + b.size());
            }
        }
        return diffs;
    }

    private static boolean sameLayout(SegmentInfo r, SegmentInfo s, boolean addresses) {
        if (r.totalSize() != s.totalSize() || r.blocks().size() != s.blocks().size()) {
            return false;
        }
        for (int k = 0; k < r.blocks().size(); k++) {
            BlockInfo rb = r.blocks().get(k);
            BlockInfo sb = s.blocks().get(k);
            if (rb.size() != sb.size() || (addresses && rb.address() != sb.address()) || rb.state() != sb.state()) {
                return false;
            }
        }
        return true;
    }

    private static String layout(SegmentInfo r) {
        StringBuilder sb = new StringBuilder().append(r.totalSize()).append(':');
        for (BlockInfo b : r.blocks()) {
            sb.append(b.size()).append(b.state() == BlockState.INACTIVE ? "f" : "a").append(',');
        }
        return sb.toString();
    }
}
