package io.vram4j.memory.snapshot;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.math.BigInteger;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Every generation of the snapshot format, pickled by Python itself ({@code pickle.dumps} at protocols 2 to 5)
 * from literal dicts and lists, then read with {@link SnapshotReader}.
 */
class SyntheticPickleTest {
    /** 2^64 − 1 and 2^63 + 5: stream handles Python shows unsigned. */
    static final long MAX_U64 = -1L;
    static final long U63_PLUS_5 = Long.MIN_VALUE + 5;

    static final String SEGMENT_NEWEST = """
            {'device': 0, 'address': 139937017020416, 'total_size': 2097152, 'allocated_size': 512,
             'active_size': 1024, 'requested_size': 1000, 'stream': 0, 'segment_type': 'small',
             'segment_pool_id': (0, 0), 'is_expandable': False, 'frames': [],
             'blocks': [
               {'address': 139937017020416, 'size': 512, 'requested_size': 500, 'state': 'active_allocated',
                'frames': [{'name': 'f', 'filename': 'a.py', 'line': 3}, {'name': 'g', 'filename': 'b.py', 'line': 7}]},
               {'address': 139937017020928, 'size': 512, 'requested_size': 500, 'state': 'active_pending_free',
                'frames': []},
               {'address': 139937017021440, 'size': 2096128, 'requested_size': 0, 'state': 'inactive',
                'frames': []}]}""";

    /** Python literals by fixture name. */
    static final Map<String, String> FIXTURES = Map.of(
            "bare_list", "[" + SEGMENT_NEWEST + "]",
            "two_devices_old", """
                    {'segments': [
                       dict(""" + SEGMENT_NEWEST + """
                       , stream=2**64 - 1),
                       {'device': 1, 'address': 2**40, 'total_size': 20971520, 'allocated_size': 0,
                        'active_size': 0, 'requested_size': 0, 'stream': 2**63 + 5, 'segment_type': 'large',
                        'segment_pool_id': (0, 0), 'is_expandable': False, 'frames': [],
                        'blocks': [{'address': 2**40, 'size': 20971520, 'requested_size': 0, 'state': 'inactive',
                                    'frames': []}]}],
                     'device_traces': [
                       [{'action': 'alloc', 'addr': 139937017020416, 'size': 500, 'stream': 2**64 - 1,
                         'frames': [{'name': 'f', 'filename': 'a.py', 'line': 3}]},
                        {'action': 'free_requested', 'addr': 139937017020928, 'size': 500, 'stream': 2**64 - 1,
                         'frames': []}],
                       [{'action': 'segment_alloc', 'addr': 2**40, 'size': 20971520, 'stream': 2**63 + 5,
                         'frames': []},
                        {'action': 'oom', 'device_free': 123456, 'size': 4194304, 'stream': 2**63 + 5,
                         'frames': []},
                        {'action': 'snapshot', 'addr': 0, 'size': 0, 'stream': 0, 'frames': []}]]}""",
            "newest", """
                    {'segments': [
                       {'device': 0, 'address': 2**45, 'total_size': 4194304, 'allocated_size': 2097152,
                        'active_size': 2097152, 'requested_size': 2000000, 'stream': 0, 'segment_type': 'large',
                        'segment_pool_id': (1, 2**63 + 5), 'is_expandable': True,
                        'frames': [{'name': 'main', 'filename': 'C:\\\\x\\\\train.py', 'line': 10}],
                        'blocks': [{'address': 2**45, 'size': 2097152, 'requested_size': 2000000,
                                    'state': 'active_allocated', 'frames': []},
                                   {'address': 2**45 + 2097152, 'size': 2097152, 'requested_size': 0,
                                    'state': 'inactive', 'frames': []}]}],
                     'device_traces': [[
                       {'action': 'segment_map', 'addr': 2**45, 'size': 4194304, 'stream': 0,
                        'time_us': 1783874667632574, 'compile_context': 'N/A', 'user_metadata': '', 'frames': []},
                       {'action': 'alloc', 'addr': 2**45, 'size': 2000000, 'stream': 0,
                        'time_us': 1783874667632575, 'compile_context': 'fwd', 'user_metadata': 'step=1',
                        'frames': [{'name': 'main', 'filename': 'C:\\\\x\\\\train.py', 'line': 10}]},
                       {'action': 'segment_unmap', 'addr': 2**45 + 4194304, 'size': 2097152, 'stream': 0,
                        'time_us': 1783874667632576, 'compile_context': 'N/A', 'user_metadata': '', 'frames': []}]],
                     'allocator_settings': {'PYTORCH_CUDA_ALLOC_CONF': 'expandable_segments:True',
                        'max_split_size': -1, 'garbage_collection_threshold': 0.6, 'expandable_segments': True,
                        'roundup_power2_divisions': {'1': 4, '2': 0}},
                     'external_annotations': [{'stage': 'START', 'name': 'step', 'device': 0,
                        'time_us': 1783874667632570}],
                     'host_segments': [], 'host_traces': []}""",
            "legacy_history", """
                    {'segments': [
                       {'device': 0, 'address': 1000000000, 'total_size': 2097152, 'allocated_size': 512,
                        'active_size': 512, 'stream': -(2**63) + 5, 'segment_type': 'small',
                        'blocks': [{'size': 512, 'state': 'active_allocated',
                                    'history': [{'addr': 1000000000, 'real_size': 300,
                                                 'frames': [{'filename': 'old.py', 'name': 'h', 'line': 1}],
                                                 'cpp_frames': []}]},
                                   {'size': 2096640, 'state': 'inactive'}]}],
                     'device_traces': [[{'action': 'alloc', 'addr': 1000000000, 'size': 300,
                                         'stream': -(2**63) + 5, 'cpp_frames': []},
                                        {'action': 'segment_free', 'addr': 2000000000, 'size': 2097152,
                                         'stream': 0}]]}""",
            // PyTorch 2.1 to 2.3: time_us on entries, but no compile_context / user_metadata, no allocator_settings
            "time_us_only", """
                    {'segments': [""" + SEGMENT_NEWEST + """
                    ],
                     'device_traces': [[
                       {'action': 'alloc', 'addr': 139937017020416, 'size': 500, 'stream': 0,
                        'time_us': 1700000000000001, 'frames': [{'name': 'f', 'filename': 'a.py', 'line': 3}]},
                       {'action': 'free_requested', 'addr': 139937017020928, 'size': 500, 'stream': 0,
                        'time_us': 1700000000000002, 'frames': []},
                       {'action': 'free_completed', 'addr': 139937017020928, 'size': 500, 'stream': 0,
                        'time_us': 1700000000000003, 'frames': []}]]}""",
            // allocator_settings without external_annotations; settings applied without the environment string
            "settings_no_annotations", """
                    {'segments': [""" + SEGMENT_NEWEST + """
                    ],
                     'device_traces': [[
                       {'action': 'alloc', 'addr': 139937017020416, 'size': 500, 'stream': 0,
                        'time_us': 1700000000000001, 'compile_context': 'N/A', 'frames': []}]],
                     'allocator_settings': {'PYTORCH_CUDA_ALLOC_CONF': '', 'max_split_size': 209715200,
                        'garbage_collection_threshold': 0.0, 'expandable_segments': False,
                        'pinned_num_register_threads': 1, 'release_lock_on_cudamalloc': False,
                        'pinned_use_cuda_host_register': False,
                        'roundup_power2_divisions': {'1': 0, '2': 0, '4': 0, '8': 0, '16': 0, '32': 0, '64': 0,
                            '128': 0, '256': 0, '512': 2, '1024': 4, '2048': 8, '4096': 8, '8192': 8,
                            '16384': 8, '32768': 8}}}""");

    @ParameterizedTest
    @ValueSource(ints = {2, 3, 4, 5})
    void readsEveryGeneration(int protocol, @TempDir Path tmp) throws Exception {
        SnapshotTestSupport.assumePython();
        StringBuilder script = new StringBuilder("import pickle, sys, os\n");
        for (var e : FIXTURES.entrySet()) {
            script.append("open(os.path.join(sys.argv[1], '").append(e.getKey()).append(".pickle'), 'wb')")
                    .append(".write(pickle.dumps(").append(e.getValue()).append(", ").append(protocol)
                    .append("))\n");
        }
        SnapshotTestSupport.python(tmp, script.toString(), tmp.toString());

        checkBareList(SnapshotReader.read(tmp.resolve("bare_list.pickle")));
        checkTwoDevicesOld(SnapshotReader.read(tmp.resolve("two_devices_old.pickle")));
        checkNewest(SnapshotReader.read(tmp.resolve("newest.pickle")));
        checkLegacyHistory(SnapshotReader.read(tmp.resolve("legacy_history.pickle")));
        checkTimeUsOnly(SnapshotReader.read(tmp.resolve("time_us_only.pickle")));
        checkSettingsNoAnnotations(SnapshotReader.read(tmp.resolve("settings_no_annotations.pickle")));
    }

    static void checkTimeUsOnly(MemorySnapshot s) {
        List<TraceEntry> t = s.trace(0);
        assertEquals(List.of(TraceAction.ALLOC, TraceAction.FREE_REQUESTED, TraceAction.FREE_COMPLETED),
                t.stream().map(TraceEntry::action).toList());
        for (int i = 0; i < 3; i++) {
            assertTrue(t.get(i).hasTimeUs());
            assertEquals(1700000000000001L + i, t.get(i).timeUs());
            assertNull(t.get(i).compileContext(), "no compile_context in this generation");
            assertNull(t.get(i).userMetadata(), "no user_metadata in this generation");
        }
        assertEquals(List.of(new Frame("f", "a.py", 3)), t.get(0).frames());
        assertTrue(s.allocatorSettings().isEmpty());
        assertTrue(s.externalAnnotations().isEmpty());
        assertEquals(512, s.allocatedBytes());
    }

    static void checkSettingsNoAnnotations(MemorySnapshot s) {
        assertTrue(s.externalAnnotations().isEmpty());
        assertEquals("", s.allocatorSettings().get("PYTORCH_CUDA_ALLOC_CONF"));
        assertEquals(209715200L, s.allocatorSettings().get("max_split_size"));
        assertEquals(0.0, s.allocatorSettings().get("garbage_collection_threshold"));
        assertEquals(Boolean.FALSE, s.allocatorSettings().get("expandable_segments"));
        assertEquals(16, ((Map<?, ?>) s.allocatorSettings().get("roundup_power2_divisions")).size());
        assertEquals("N/A", s.trace(0).get(0).compileContext());
        assertNull(s.trace(0).get(0).userMetadata());
        // the empty conf string: a replay takes the settings from the structured fields
        io.vram4j.alloc.config.AllocatorConfig c = io.vram4j.replay.Replayer.config(s, io.vram4j.replay.ReplayOptions.EXACT);
        assertEquals(209715200L, c.maxSplitSize());
        assertEquals(0, c.roundupPower2Divisions(8));
        assertEquals(2, c.roundupPower2Divisions(9));
        assertEquals(4, c.roundupPower2Divisions(10));
        assertEquals(8, c.roundupPower2Divisions(15));
        assertFalse(c.expandableSegments());
    }

    static void checkBareList(MemorySnapshot s) {
        assertEquals(1, s.segments().size());
        assertTrue(s.deviceTraces().isEmpty());
        assertTrue(s.allocatorSettings().isEmpty());
        assertTrue(s.externalAnnotations().isEmpty());
        SegmentInfo seg = s.segments().get(0);
        assertEquals(139937017020416L, seg.address(), "an address above 32 bits");
        assertEquals(SegmentInfo.SMALL, seg.segmentType());
        assertEquals(3, seg.blocks().size());
        assertEquals(BlockState.ACTIVE_ALLOCATED, seg.blocks().get(0).state());
        assertEquals(BlockState.ACTIVE_PENDING_FREE, seg.blocks().get(1).state());
        assertEquals(BlockState.INACTIVE, seg.blocks().get(2).state());
        assertEquals(List.of(new Frame("f", "a.py", 3), new Frame("g", "b.py", 7)), seg.blocks().get(0).frames());
        assertEquals(2097152, s.reservedBytes());
        assertEquals(512, s.allocatedBytes());
        assertEquals(1024, s.activeBytes());
        assertEquals(1000, s.requestedBytes());
    }

    static void checkTwoDevicesOld(MemorySnapshot s) {
        assertEquals(2, s.deviceTraces().size());
        assertEquals(java.util.Set.of(0, 1), s.devices());
        assertEquals(MAX_U64, s.segments().get(0).stream(), "2**64 - 1 keeps its 64 bits");
        assertEquals(U63_PLUS_5, s.segments().get(1).stream(), "2**63 + 5 keeps its 64 bits");
        assertEquals(2097152, s.reservedBytes(0));
        assertEquals(20971520, s.reservedBytes(1));
        assertEquals(512, s.allocatedBytes(0));
        assertEquals(0, s.allocatedBytes(1));
        assertEquals(1, s.segments(1).size());
        List<TraceEntry> t0 = s.trace(0);
        assertEquals(2, t0.size());
        assertEquals(TraceAction.ALLOC, t0.get(0).action());
        assertEquals(MAX_U64, t0.get(0).stream());
        assertFalse(t0.get(0).hasTimeUs(), "old entries have no time_us");
        assertTrue(t0.get(0).time().isEmpty());
        assertNull(t0.get(0).compileContext());
        assertNull(t0.get(0).userMetadata());
        List<TraceEntry> t1 = s.trace(1);
        TraceEntry oom = t1.get(1);
        assertEquals(TraceAction.OOM, oom.action());
        assertEquals(123456, oom.deviceFree());
        assertEquals(4194304, oom.size());
        assertEquals(0, oom.addr());
        assertEquals(TraceAction.SNAPSHOT, t1.get(2).action());
        assertTrue(s.trace(2).isEmpty());
    }

    static void checkNewest(MemorySnapshot s) {
        SegmentInfo seg = s.segments().get(0);
        assertTrue(seg.isExpandable());
        assertTrue(seg.isLarge());
        assertEquals(new PoolId(1, U63_PLUS_5), seg.segmentPoolId());
        assertEquals(List.of(new Frame("main", "C:\\x\\train.py", 10)), seg.frames());
        List<TraceEntry> t = s.trace(0);
        assertEquals(List.of(TraceAction.SEGMENT_MAP, TraceAction.ALLOC, TraceAction.SEGMENT_UNMAP),
                t.stream().map(TraceEntry::action).toList());
        assertEquals(1783874667632575L, t.get(1).timeUs());
        assertEquals("fwd", t.get(1).compileContext());
        assertEquals("step=1", t.get(1).userMetadata());
        assertEquals("", t.get(0).userMetadata());
        assertEquals("expandable_segments:True", s.allocatorSettings().get("PYTORCH_CUDA_ALLOC_CONF"));
        assertEquals(-1L, s.allocatorSettings().get("max_split_size"));
        assertEquals(0.6, s.allocatorSettings().get("garbage_collection_threshold"));
        assertEquals(Boolean.TRUE, s.allocatorSettings().get("expandable_segments"));
        assertEquals(Map.of("1", 4L, "2", 0L), s.allocatorSettings().get("roundup_power2_divisions"));
        assertEquals(List.of(Map.of("stage", "START", "name", "step", "device", 0L, "time_us", 1783874667632570L)),
                s.externalAnnotations());
    }

    static void checkLegacyHistory(MemorySnapshot s) {
        SegmentInfo seg = s.segments().get(0);
        assertEquals(U63_PLUS_5, seg.stream(), "a negative int64 handle reads as the same 64 bits");
        assertEquals(PoolId.DEFAULT, seg.segmentPoolId());
        assertFalse(seg.isExpandable());
        assertTrue(seg.frames().isEmpty());
        BlockInfo b0 = seg.blocks().get(0);
        assertEquals(1000000000L, b0.address(), "address derived from the segment");
        assertEquals(300, b0.requestedSize(), "request from history[0].real_size");
        assertEquals(List.of(new Frame("h", "old.py", 1)), b0.frames(), "frames from history[0]");
        BlockInfo b1 = seg.blocks().get(1);
        assertEquals(1000000512L, b1.address());
        assertEquals(2096640, b1.requestedSize(), "no history: the block size, as PyTorch's viewer assumes");
        assertEquals(300, seg.requestedSize(), "segment request = Σ active block requests");
        TraceEntry e = s.trace(0).get(0);
        assertTrue(e.frames().isEmpty(), "an entry without frames");
        assertEquals(U63_PLUS_5, e.stream());
    }

    @ParameterizedTest
    @ValueSource(strings = {"bare_list", "two_devices_old", "newest", "legacy_history", "time_us_only",
            "settings_no_annotations"})
    void pythonJsonDumpsReadTheSame(String fixture, @TempDir Path tmp) throws Exception {
        SnapshotTestSupport.assumePython();
        SnapshotTestSupport.python(tmp, "import pickle, json, sys\nobj = " + FIXTURES.get(fixture)
                + "\nopen(sys.argv[1] + '.pickle', 'wb').write(pickle.dumps(obj, 4))\n"
                + "json.dump(obj, open(sys.argv[1] + '.json', 'w'))\n", tmp.resolve(fixture).toString());
        MemorySnapshot fromPickle = SnapshotReader.read(tmp.resolve(fixture + ".pickle"));
        MemorySnapshot fromJson = SnapshotReader.read(tmp.resolve(fixture + ".json"));
        assertEquals(fromPickle, fromJson);
    }

    @ParameterizedTest
    @ValueSource(strings = {"bare_list", "two_devices_old", "newest", "legacy_history", "time_us_only",
            "settings_no_annotations"})
    void fixturesRoundTripThroughOurWriters(String fixture, @TempDir Path tmp) throws Exception {
        SnapshotTestSupport.assumePython();
        Path file = SnapshotTestSupport.pythonPickle(tmp, fixture + ".pickle", FIXTURES.get(fixture), 2);
        MemorySnapshot s = SnapshotReader.read(file);
        assertEquals(s, SnapshotReader.read(SnapshotWriter.toPickle(s), "ours.pickle"));
        var json = new java.io.ByteArrayOutputStream();
        SnapshotWriter.writeJson(s, json, true);
        assertEquals(s, SnapshotReader.read(json.toByteArray(), "ours.json"));
    }

    @org.junit.jupiter.api.Test
    void bigIntegersInSettingsSurvive() {
        BigInteger huge = BigInteger.TWO.pow(70).negate();
        MemorySnapshot s = new MemorySnapshot(List.of(), List.of(),
                Map.of("huge", huge, "u64", BigInteger.TWO.pow(64).subtract(BigInteger.ONE), "small", 5),
                List.of());
        assertEquals(huge, s.allocatorSettings().get("huge"));
        assertEquals(5L, s.allocatorSettings().get("small"), "Integer becomes Long");
        assertEquals(s, SnapshotReader.read(SnapshotWriter.toPickle(s), "x.pickle"));
        var json = new java.io.ByteArrayOutputStream();
        try {
            SnapshotWriter.writeJson(s, json);
        } catch (java.io.IOException e) {
            throw new AssertionError(e);
        }
        assertEquals(s, SnapshotReader.read(json.toByteArray(), "x.json"));
    }
}
