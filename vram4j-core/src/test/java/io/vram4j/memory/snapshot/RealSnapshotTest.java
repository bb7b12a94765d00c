package io.vram4j.memory.snapshot;

import io.vram4j.testsupport.SharedData;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.EnumMap;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.Test;

/** The three real snapshots in {@code shared/data/snapshots}: figures from {@code stats.json}, spot checks, round trips. */
class RealSnapshotTest {
    static final String DECOMFL = "decomfl-opt-zo-finetune_from-empty.pickle";
    static final String CS336 = "cs336-medium-ctx512_train-step_steady-state.pickle";
    static final String VERL = "verl-megatron-vllm_segments-only.pickle";

    private static final Map<String, MemorySnapshot> CACHE = new java.util.concurrent.ConcurrentHashMap<>();

    static MemorySnapshot load(String name) {
        Path file = SnapshotTestSupport.realSnapshot(name);
        return CACHE.computeIfAbsent(name, n -> {
            try {
                return SnapshotReader.read(file);
            } catch (IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
        });
    }

    private static JsonNode stats(String name) throws IOException {
        Path dir = SnapshotTestSupport.snapshotsDir();
        SharedData.require(dir != null && Files.isRegularFile(dir.resolve("stats.json")), "shared/data/snapshots/stats.json");
        for (JsonNode n : new ObjectMapper().readTree(dir.resolve("stats.json").toFile())) {
            if (n.get("file").asText().equals(name)) {
                return n;
            }
        }
        throw new AssertionError(name + " not in stats.json");
    }

    /** Small files are read into a heap array, big ones mapped: both paths give the same snapshot. */
    @ParameterizedTest
    @ValueSource(strings = {DECOMFL, VERL})
    void mappedAndHeapReadsAgree(String name) throws IOException {
        Path file = SnapshotTestSupport.realSnapshot(name);
        MemorySnapshot mapped = SnapshotReader.read(file, 0);
        MemorySnapshot heap = SnapshotReader.read(file, Long.MAX_VALUE);
        assertFalse(mapped.segments().isEmpty());
        assertEquals(mapped, heap);
        assertEquals(load(name), heap);
    }

    @ParameterizedTest
    @ValueSource(strings = {DECOMFL, CS336, VERL})
    void figuresMatchStatsJson(String name) throws IOException {
        MemorySnapshot s = load(name);
        JsonNode st = stats(name);
        assertEquals(st.get("segments").asInt(), s.segments().size(), "segments");
        assertEquals(st.get("blocks").asInt(), s.blockCount(), "blocks");
        assertEquals(st.get("reserved_at_dump").asLong(), s.reservedBytes(), "reserved");
        assertEquals(st.get("allocated_at_dump").asLong(), s.allocatedBytes(), "allocated");
        Set<Integer> devices = new LinkedHashSet<>();
        st.get("devices").forEach(d -> devices.add(d.asInt()));
        assertEquals(devices, Set.copyOf(s.devices()));
        assertEquals(st.get("expandable").asBoolean(),
                s.segments().stream().anyMatch(SegmentInfo::isExpandable));
        assertEquals(st.get("alloc_conf").asText(), s.allocatorSettings().get("PYTORCH_CUDA_ALLOC_CONF"));

        int withEvents = 0;
        for (JsonNode t : st.get("traces")) {
            int device = t.get("device").asInt();
            var trace = s.trace(device);
            withEvents++;
            assertEquals(t.get("events").asInt(), trace.size(), "events");
            Map<TraceAction, Integer> counts = new EnumMap<>(TraceAction.class);
            for (TraceEntry e : trace) {
                counts.merge(e.action(), 1, Integer::sum);
            }
            Map<TraceAction, Integer> expected = new EnumMap<>(TraceAction.class);
            t.get("actions").properties().forEach(
                    en -> expected.put(TraceAction.fromPytorchName(en.getKey()), en.getValue().asInt()));
            assertEquals(expected, counts, "action counts");
            assertEquals(t.get("streams").asInt(), trace.stream().map(TraceEntry::stream).distinct().count());
            assertEquals(t.get("has_frames").asBoolean(), trace.stream().anyMatch(e -> !e.frames().isEmpty()));
            assertEquals(t.get("has_time").asBoolean(), trace.stream().allMatch(TraceEntry::hasTimeUs));

            // Reserved memory over the trace: the dump minus the net effect of the trace, then replayed forwards.
            long net = 0;
            for (TraceEntry e : trace) {
                net += switch (e.action()) {
                    case SEGMENT_ALLOC, SEGMENT_MAP -> e.size();
                    case SEGMENT_FREE, SEGMENT_UNMAP -> -e.size();
                    default -> 0;
                };
            }
            long reserved = s.reservedBytes(device) - net;
            assertEquals(t.get("initial_reserved").asLong(), reserved, "initial reserved");
            long peak = reserved;
            for (TraceEntry e : trace) {
                reserved += switch (e.action()) {
                    case SEGMENT_ALLOC, SEGMENT_MAP -> e.size();
                    case SEGMENT_FREE, SEGMENT_UNMAP -> -e.size();
                    default -> 0;
                };
                peak = Math.max(peak, reserved);
            }
            assertEquals(t.get("peak_reserved").asLong(), peak, "peak reserved");

            // Frees of blocks allocated before recording began.
            Set<Long> live = new HashSet<>();
            int orphans = 0;
            for (TraceEntry e : trace) {
                if (e.action() == TraceAction.ALLOC) {
                    live.add(e.addr());
                } else if (e.action() == TraceAction.FREE_COMPLETED && !live.remove(e.addr())) {
                    orphans++;
                }
            }
            assertEquals(t.get("orphan_frees").asInt(), orphans, "orphan frees");
        }
        assertEquals(withEvents, (int) s.deviceTraces().stream().filter(t -> !t.isEmpty()).count());
    }

    @Test
    void decomflIsATraceFromEmpty() {
        MemorySnapshot s = load(DECOMFL);
        var trace = s.trace(0);
        var segmentAllocs = trace.stream().filter(e -> e.action() == TraceAction.SEGMENT_ALLOC).toList();
        assertEquals(61, segmentAllocs.size());
        assertEquals(61, s.segments().size());
        // The 61 segments at dump are exactly those 61.
        Set<Long> opened = new HashSet<>();
        segmentAllocs.forEach(e -> opened.add(e.addr()));
        Set<Long> dumped = new HashSet<>();
        s.segments().forEach(seg -> dumped.add(seg.address()));
        assertEquals(opened, dumped);
        TraceEntry first = trace.get(0);
        assertEquals(TraceAction.SEGMENT_ALLOC, first.action());
        assertEquals(155_189_248L, first.size());
        assertEquals(0, first.stream());
        assertTrue(first.hasTimeUs());
        assertEquals(1763324225770003L, first.timeUs());
        assertEquals("N/A", first.compileContext());
        assertNull(first.userMetadata(), "this file's entries have no user_metadata key");
        assertEquals("convert", first.frames().get(0).name());
        assertTrue(first.frames().get(0).filename().startsWith("C:\\research\\DeComFL"), "Windows paths");
        assertEquals(1357, first.frames().get(0).line());
        assertEquals(PoolId.DEFAULT, s.segments().get(0).segmentPoolId());
        assertFalse(s.externalAnnotations().isEmpty());
        assertEquals(-1L, s.allocatorSettings().get("max_split_size"));
        assertEquals(0.0, s.allocatorSettings().get("garbage_collection_threshold"));
        assertEquals(Boolean.FALSE, s.allocatorSettings().get("expandable_segments"));
        @SuppressWarnings("unchecked")
        Map<String, Object> roundup = (Map<String, Object>) s.allocatorSettings().get("roundup_power2_divisions");
        assertEquals(16, roundup.size());
        assertEquals("1", roundup.keySet().iterator().next(), "Python's key order is kept");
    }

    @Test
    void cs336HasTheNewestFields() {
        MemorySnapshot s = load(CS336);
        var trace = s.trace(0);
        assertTrue(trace.stream().allMatch(TraceEntry::hasTimeUs));
        assertTrue(trace.stream().allMatch(e -> "N/A".equals(e.compileContext())));
        assertTrue(trace.stream().allMatch(e -> "".equals(e.userMetadata())));
        assertEquals(1, trace.stream().filter(e -> e.action() == TraceAction.SEGMENT_ALLOC).count());
        TraceEntry first = trace.get(0);
        assertEquals(TraceAction.ALLOC, first.action());
        assertEquals(33390854144L, first.addr());
        assertEquals(8388608L, first.size());
        assertEquals(1783874667632574L, first.timeUs());
        assertEquals(new Frame("torch::unwind::unwind()", "??", 0), first.frames().get(0));
        Map<String, Object> ann = s.externalAnnotations().get(0);
        assertEquals("START", ann.get("stage"));
        assertEquals(0L, ann.get("device"));
        assertEquals(1783874667811927L, ann.get("time_us"));
        // Stacks are shared as in the pickle: far fewer distinct frame lists than entries.
        long distinct = trace.stream().map(e -> System.identityHashCode(e.frames())).distinct().count();
        assertTrue(distinct < trace.size(), "frame lists are shared");
    }

    @Test
    void verlIsSegmentsOnly() {
        MemorySnapshot s = load(VERL);
        assertEquals(1, s.deviceTraces().size());
        assertTrue(s.deviceTraces().get(0).isEmpty());
        assertFalse(s.hasTraces());
        assertEquals(127, s.segments().size());
        assertEquals(84, s.segments().stream().filter(SegmentInfo::isLarge).count());
        assertEquals(43, s.segments().stream().filter(x -> !x.isLarge()).count());
        assertEquals(638, s.blockCount());
        assertEquals(9, s.segments().stream().flatMap(x -> x.blocks().stream())
                .filter(b -> b.state() == BlockState.ACTIVE_PENDING_FREE).count());
        SegmentInfo first = s.segments().get(0);
        assertEquals(new PoolId(0, 1), first.segmentPoolId(), "a private pool");
        assertEquals(12918456320L, first.address());
        assertEquals(136314880L, first.totalSize());
        assertEquals(136134656L, first.requestedSize());
        assertFalse(first.frames().isEmpty());
        assertTrue(s.externalAnnotations().isEmpty());
        // Invariants: blocks tile the segment, sums match.
        for (SegmentInfo seg : s.segments()) {
            long addr = seg.address();
            long allocated = 0;
            long active = 0;
            for (BlockInfo b : seg.blocks()) {
                assertEquals(addr, b.address());
                addr += b.size();
                allocated += b.isAllocated() ? b.size() : 0;
                active += b.isActive() ? b.size() : 0;
            }
            assertEquals(seg.endAddress(), addr);
            assertEquals(seg.allocatedSize(), allocated);
            assertEquals(seg.activeSize(), active);
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {DECOMFL, CS336, VERL})
    void roundTripsThroughPickleAndJson(String name) throws IOException {
        MemorySnapshot s = load(name);
        byte[] pickle = SnapshotWriter.toPickle(s);
        MemorySnapshot fromPickle = SnapshotReader.readPickle(new ByteArrayInputStream(pickle), "ours.pickle");
        assertEquals(s, fromPickle);
        ByteArrayOutputStream json = new ByteArrayOutputStream();
        SnapshotWriter.writeJson(s, json);
        MemorySnapshot fromJson = SnapshotReader.readJson(new ByteArrayInputStream(json.toByteArray()), "ours.json");
        assertEquals(s, fromJson);
        assertEquals(s, SnapshotReader.read(json.toByteArray(), "ours.json"), "detected as JSON");
        // The memo keeps our pickle close to PyTorch's own size.
        long original = Files.size(SnapshotTestSupport.realSnapshot(name));
        assertTrue(pickle.length < original * 1.5, pickle.length + " vs " + original);
    }

    @ParameterizedTest
    @ValueSource(strings = {DECOMFL, CS336, VERL})
    void pythonLoadsOurPickleAsEqualToTheOriginal(String name, @TempDir Path tmp) throws Exception {
        SnapshotTestSupport.assumePython();
        Path original = SnapshotTestSupport.realSnapshot(name);
        Path ours = tmp.resolve("ours.pickle");
        SnapshotWriter.write(load(name), ours);
        Path json = tmp.resolve("ours.json");
        SnapshotWriter.write(load(name), json);
        String out = SnapshotTestSupport.python(tmp, """
                import pickle, json, sys
                a = pickle.load(open(sys.argv[1], 'rb'))
                b = pickle.load(open(sys.argv[2], 'rb'))
                c = json.load(open(sys.argv[3]))
                def tuples_to_lists(x):
                    if isinstance(x, (list, tuple)): return [tuples_to_lists(y) for y in x]
                    if isinstance(x, dict): return {k: tuples_to_lists(v) for k, v in x.items()}
                    return x
                def shape(x, path='', out=None, seen=None):
                    # (path, key, type) of every dict item; shared objects are walked once per path
                    out = set() if out is None else out
                    seen = set() if seen is None else seen
                    if isinstance(x, (dict, list, tuple)):
                        if (id(x), path) in seen: return out
                        seen.add((id(x), path))
                    if isinstance(x, dict):
                        for k, v in x.items():
                            out.add((path, k, type(v).__name__))
                            shape(v, path + '.' + k, out, seen)
                    elif isinstance(x, (list, tuple)):
                        for v in x: shape(v, path + '[]', out, seen)
                    return out
                print('pickle_equal', a == b)
                print('types_equal', shape(a) == shape(b))
                print('json_equal', tuples_to_lists(a) == c)
                """, original.toString(), ours.toString(), json.toString());
        assertTrue(out.contains("pickle_equal True"), out);
        assertTrue(out.contains("types_equal True"), out);
        assertTrue(out.contains("json_equal True"), out);
    }

    @Test
    void framesAreSharedAndInterned() {
        MemorySnapshot s = load(CS336);
        var trace = s.trace(0);
        Frame a = trace.get(0).frames().get(0);
        Frame b = trace.get(1).frames().get(0);
        assertEquals(a, b);
        assertSame(a, b, "equal frames are one object");
        assertNotNull(s.segments().get(0).blocks());
    }
}
