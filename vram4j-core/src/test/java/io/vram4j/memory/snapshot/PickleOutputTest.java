package io.vram4j.memory.snapshot;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.math.BigInteger;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Our pickles as Python sees them: loadable, PyTorch's field names and types, only the viewer's opcodes. */
class PickleOutputTest {
    /**
     * The opcodes we allow ourselves: all of them are decoded by the unpickler of PyTorch's memory_viz page
     * ({@code torch/utils/viz/MemoryViz.js}) and are valid at protocol 2.
     */
    static final Set<String> ALLOWED = Set.of("PROTO", "EMPTY_DICT", "MARK", "SETITEMS", "EMPTY_LIST", "APPEND",
            "APPENDS", "BININT", "BININT1", "BININT2", "LONG1", "BINUNICODE", "BINFLOAT", "NEWTRUE", "NEWFALSE",
            "NONE", "EMPTY_TUPLE", "TUPLE", "TUPLE1", "TUPLE2", "TUPLE3", "BINPUT", "LONG_BINPUT", "BINGET",
            "LONG_BINGET", "STOP");

    static final long U64_MAX = -1L;

    /** Two devices, 1500 entries (several APPENDS batches), over 256 memo slots, unsigned handles, oom, map. */
    static MemorySnapshot rich() {
        Frame train = new Frame("train_step", "/home/ü/train.py", 42);
        Frame emoji = new Frame("λ_🚀", "C:\\work\\model.py", 7);
        List<TraceEntry> t0 = new ArrayList<>();
        long base = 139_937_017_020_416L;
        t0.add(TraceEntry.of(TraceAction.SEGMENT_ALLOC, base, 20_971_520, 0, 1_783_874_667_632_574L,
                List.of(train)));
        for (int i = 0; i < 1500; i++) {
            List<Frame> frames = List.of(new Frame("layer" + (i % 300), "model.py", 100 + i % 300), train);
            long addr = base + 512L * i;
            t0.add(new TraceEntry(TraceAction.ALLOC, addr, 500 + i, 0, 1_783_874_667_632_575L + i, 0, frames,
                    "N/A", i == 5 ? "ünïcödé" : ""));
        }
        t0.add(new TraceEntry(TraceAction.FREE_REQUESTED, base, 500, 0, TraceEntry.NO_TIME, 0, List.of(emoji),
                null, null));
        t0.add(TraceEntry.of(TraceAction.FREE_COMPLETED, base, 500, 0, TraceEntry.NO_TIME, List.of(emoji)));
        List<TraceEntry> t1 = List.of(
                TraceEntry.of(TraceAction.SEGMENT_MAP, 1L << 45, 2_097_152, U64_MAX, 5, List.of()),
                TraceEntry.oom(4_194_304, U64_MAX, 6, 1_000_000, List.of(train)),
                TraceEntry.of(TraceAction.SEGMENT_UNMAP, 1L << 45, 2_097_152, U64_MAX, 7, List.of()),
                TraceEntry.of(TraceAction.SNAPSHOT, 0, 0, 0, 8, List.of()));
        SegmentInfo s0 = new SegmentInfo(0, base, 20_971_520, 512, 512, 500, 0, SegmentInfo.LARGE,
                PoolId.DEFAULT, false, List.of(train),
                List.of(new BlockInfo(base, 512, 500, BlockState.ACTIVE_ALLOCATED, List.of(train, emoji)),
                        new BlockInfo(base + 512, 20_971_008, 0, BlockState.INACTIVE, List.of())));
        SegmentInfo s1 = new SegmentInfo(1, 1L << 45, 2_097_152, 0, 0, 0, U64_MAX, SegmentInfo.SMALL,
                new PoolId(3, Long.MIN_VALUE), true, List.of(),
                List.of(new BlockInfo(1L << 45, 2_097_152, 0, BlockState.INACTIVE, List.of())));
        Map<String, Object> settings = new LinkedHashMap<>();
        settings.put("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True");
        settings.put("max_split_size", -1);
        settings.put("garbage_collection_threshold", 0.8);
        settings.put("expandable_segments", true);
        settings.put("huge", BigInteger.TWO.pow(70).negate());
        settings.put("nothing", null);
        settings.put("inf", Double.POSITIVE_INFINITY);
        settings.put("nested", Map.of("list", List.of(1, 2, 3), "empty", List.of()));
        return new MemorySnapshot(List.of(s0, s1), List.of(t0, t1), settings,
                List.of(Map.of("stage", "START", "name", "step", "device", 0, "time_us", 1_783_874_667_632_570L)));
    }

    @Test
    void pythonLoadsOurPickle(@TempDir Path tmp) throws Exception {
        SnapshotTestSupport.assumePython();
        MemorySnapshot s = rich();
        Path file = tmp.resolve("ours.pickle");
        SnapshotWriter.write(s, file);
        Path again = tmp.resolve("again.pickle");
        String out = SnapshotTestSupport.python(tmp, """
                import pickle, pickletools, json, sys, io
                data = open(sys.argv[1], 'rb').read()
                pickletools.dis(data, out=io.StringIO())  # checks marks, memo and stack consistency
                s = pickle.loads(data)
                t0, t1 = s['device_traces']
                oom = t1[1]
                facts = {
                  'ops': sorted({op.name for op, arg, pos in pickletools.genops(data)}),
                  'protocol': data[1],
                  'keys': list(s.keys()),
                  'segments': len(s['segments']),
                  'traces': [len(t) for t in s['device_traces']],
                  'segment_keys': list(s['segments'][0].keys()),
                  'block_keys': list(s['segments'][0]['blocks'][0].keys()),
                  'entry_keys': list(t0[1].keys()),
                  'old_entry_keys': list(t0[-1].keys()),
                  'oom_keys': list(oom.keys()),
                  'frame_keys': list(t0[0]['frames'][0].keys()),
                  'address': s['segments'][0]['address'],
                  'stream_is_u64_max': t1[0]['stream'] == 2**64 - 1 and s['segments'][1]['stream'] == 2**64 - 1,
                  'pool_id': repr(s['segments'][1]['segment_pool_id']),
                  'pool_id_type': type(s['segments'][1]['segment_pool_id']).__name__,
                  'is_expandable': s['segments'][1]['is_expandable'],
                  'time_us': t0[1]['time_us'],
                  'device_free': oom['device_free'],
                  'unicode_meta': t0[6]['user_metadata'],
                  'emoji': t0[-1]['frames'][0]['name'],
                  'path': t0[-1]['frames'][0]['filename'],
                  'huge': str(s['allocator_settings']['huge']),
                  'settings': repr({k: v for k, v in s['allocator_settings'].items() if k != 'huge'}),
                  'annotations': repr(s['external_annotations']),
                  'state': s['segments'][0]['blocks'][0]['state'],
                  'types': sorted({k + ':' + type(v).__name__ for seg in s['segments'] for k, v in seg.items()}
                                  | {k + ':' + type(v).__name__ for t in s['device_traces'] for e in t
                                     for k, v in e.items()}),
                  'frame_dicts_shared': t0[1]['frames'][1] is t0[2]['frames'][1],
                }
                print(json.dumps(facts))
                open(sys.argv[2], 'wb').write(pickle.dumps(s, 4))
                """, file.toString(), again.toString());
        JsonNode f = new ObjectMapper().readTree(out);
        Set<String> ops = new TreeSet<>();
        f.get("ops").forEach(o -> ops.add(o.asText()));
        assertTrue(ALLOWED.containsAll(ops), "opcodes outside the viewer's set: " + ops);
        assertTrue(ops.containsAll(Set.of("LONG1", "LONG_BINPUT", "LONG_BINGET", "APPENDS", "TUPLE2", "BINFLOAT")),
                "the test covers the interesting opcodes: " + ops);
        assertEquals(2, f.get("protocol").asInt());
        assertEquals(List.of("segments", "device_traces", "allocator_settings", "external_annotations"),
                strings(f.get("keys")));
        assertEquals(2, f.get("segments").asInt());
        assertEquals(List.of("1503", "4"), strings(f.get("traces")));
        assertEquals(List.of("device", "address", "total_size", "allocated_size", "active_size", "requested_size",
                "stream", "segment_type", "segment_pool_id", "is_expandable", "frames", "blocks"),
                strings(f.get("segment_keys")));
        assertEquals(List.of("address", "size", "requested_size", "state", "frames"), strings(f.get("block_keys")));
        assertEquals(List.of("action", "addr", "size", "stream", "time_us", "compile_context", "user_metadata",
                "frames"), strings(f.get("entry_keys")));
        assertEquals(List.of("action", "addr", "size", "stream", "frames"), strings(f.get("old_entry_keys")));
        assertEquals(List.of("action", "device_free", "size", "stream", "time_us", "frames"),
                strings(f.get("oom_keys")));
        assertEquals(List.of("name", "filename", "line"), strings(f.get("frame_keys")));
        assertEquals(139_937_017_020_416L, f.get("address").asLong());
        assertTrue(f.get("stream_is_u64_max").asBoolean());
        assertEquals("(3, 9223372036854775808)", f.get("pool_id").asText());
        assertEquals("tuple", f.get("pool_id_type").asText());
        assertTrue(f.get("is_expandable").asBoolean());
        assertEquals(1_783_874_667_632_575L, f.get("time_us").asLong());
        assertEquals(1_000_000, f.get("device_free").asLong());
        assertEquals("ünïcödé", f.get("unicode_meta").asText());
        assertEquals("λ_🚀", f.get("emoji").asText());
        assertEquals("C:\\work\\model.py", f.get("path").asText());
        assertEquals(BigInteger.TWO.pow(70).negate().toString(), f.get("huge").asText());
        assertEquals("{'PYTORCH_CUDA_ALLOC_CONF': 'expandable_segments:True', 'max_split_size': -1, "
                + "'garbage_collection_threshold': 0.8, 'expandable_segments': True, 'nothing': None, "
                + "'inf': inf, 'nested': " + nestedRepr(rich()) + "}", f.get("settings").asText());
        assertEquals("[{" + annotationRepr(rich()) + "}]", f.get("annotations").asText());
        assertEquals("active_allocated", f.get("state").asText());
        assertEquals(List.of("action:str", "active_size:int", "addr:int", "address:int", "allocated_size:int",
                "blocks:list", "compile_context:str", "device:int", "device_free:int", "frames:list",
                "is_expandable:bool", "requested_size:int", "segment_pool_id:tuple", "segment_type:str",
                "size:int", "stream:int", "time_us:int", "total_size:int", "user_metadata:str"),
                strings(f.get("types")));
        assertTrue(f.get("frame_dicts_shared").asBoolean(), "frames are memoized");

        // What Python re-pickles from our data (protocol 4, its own memo) reads back to the same snapshot.
        assertEquals(s, SnapshotReader.read(again));
        assertEquals(s, SnapshotReader.read(file));
    }

    @Test
    void pythonLoadsOurJsonAsThePickle(@TempDir Path tmp) throws Exception {
        SnapshotTestSupport.assumePython();
        MemorySnapshot s = rich();
        Path pickle = tmp.resolve("ours.pickle");
        Path json = tmp.resolve("ours.json");
        SnapshotWriter.write(s, pickle);
        SnapshotWriter.write(s, json);
        String out = SnapshotTestSupport.python(tmp, """
                import pickle, json, sys
                a = pickle.load(open(sys.argv[1], 'rb'))
                c = json.load(open(sys.argv[2]))
                def lists(x):
                    if isinstance(x, (list, tuple)): return [lists(y) for y in x]
                    if isinstance(x, dict): return {k: lists(v) for k, v in x.items()}
                    return x
                print('equal', lists(a) == c)
                """, pickle.toString(), json.toString());
        assertEquals("equal True", out.strip());
        assertEquals(s, SnapshotReader.read(json));
    }

    @Test
    void realFileOutputUsesOnlyAllowedOpcodes(@TempDir Path tmp) throws Exception {
        SnapshotTestSupport.assumePython();
        MemorySnapshot s = RealSnapshotTest.load(RealSnapshotTest.DECOMFL);
        Path file = tmp.resolve("ours.pickle");
        SnapshotWriter.write(s, file);
        String out = SnapshotTestSupport.python(tmp, """
                import pickletools, sys
                data = open(sys.argv[1], 'rb').read()
                print(' '.join(sorted({op.name for op, arg, pos in pickletools.genops(data)})))
                """, file.toString());
        Set<String> ops = new TreeSet<>(List.of(out.trim().split(" ")));
        assertTrue(ALLOWED.containsAll(ops), "opcodes outside the viewer's set: " + ops);
    }

    @Test
    void writesTheRichSnapshotDeterministically() {
        assertTrue(java.util.Arrays.equals(SnapshotWriter.toPickle(rich()), SnapshotWriter.toPickle(rich())));
        assertEquals(rich(), SnapshotReader.read(SnapshotWriter.toPickle(rich()), "x.pickle"));
    }

    private static String nestedRepr(MemorySnapshot s) {
        @SuppressWarnings("unchecked")
        Map<String, Object> nested = (Map<String, Object>) s.allocatorSettings().get("nested");
        StringBuilder b = new StringBuilder("{");
        for (var e : nested.entrySet()) {
            if (b.length() > 1) {
                b.append(", ");
            }
            b.append('\'').append(e.getKey()).append("': ").append(e.getValue());
        }
        return b.append('}').toString();
    }

    private static String annotationRepr(MemorySnapshot s) {
        StringBuilder b = new StringBuilder();
        for (var e : s.externalAnnotations().get(0).entrySet()) {
            if (!b.isEmpty()) {
                b.append(", ");
            }
            b.append('\'').append(e.getKey()).append("': ");
            b.append(e.getValue() instanceof String v ? "'" + v + "'" : String.valueOf(e.getValue()));
        }
        return b.toString();
    }

    private static List<String> strings(JsonNode array) {
        List<String> out = new ArrayList<>();
        array.forEach(n -> out.add(n.asText()));
        return out;
    }
}
