package io.vram4j.memory.snapshot;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.function.Consumer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Malformed input: every failure is a {@link SnapshotFormatException} naming the source and the location. */
class BadInputTest {

    // ---- building documents ----------------------------------------------------------------------------------

    static Map<String, Object> dict(Object... kv) {
        Map<String, Object> m = new LinkedHashMap<>();
        for (int i = 0; i < kv.length; i += 2) {
            m.put((String) kv[i], kv[i + 1]);
        }
        return m;
    }

    static List<Object> list(Object... items) {
        return new ArrayList<>(Arrays.asList(items));
    }

    /** A valid snapshot document of plain objects, as Python would hold it. */
    static Map<String, Object> doc() {
        long base = 139_937_017_020_416L;
        Map<String, Object> frame = dict("name", "f", "filename", "a.py", "line", 3);
        Map<String, Object> segment = dict("device", 0, "address", base, "total_size", 2_097_152L,
                "allocated_size", 512, "active_size", 512, "requested_size", 500, "stream", 0,
                "segment_type", "small", "segment_pool_id", new Object[] {0, 0}, "is_expandable", false,
                "frames", list(), "blocks", list(
                        dict("address", base, "size", 512, "requested_size", 500, "state", "active_allocated",
                                "frames", list(frame)),
                        dict("address", base + 512, "size", 2_096_640, "requested_size", 0, "state", "inactive",
                                "frames", list())));
        List<Object> trace = list(
                dict("action", "segment_alloc", "addr", base, "size", 2_097_152, "stream", 0,
                        "time_us", 1_700_000_000_000_000L, "frames", list(frame)),
                dict("action", "alloc", "addr", base, "size", 500, "stream", 0, "time_us", 1_700_000_000_000_001L,
                        "frames", list(frame)),
                dict("action", "oom", "device_free", 1000, "size", 4_194_304, "stream", 0, "frames", list()));
        return dict("segments", list(segment), "device_traces", list(trace),
                "allocator_settings", dict("max_split_size", -1), "external_annotations", list());
    }

    @SuppressWarnings("unchecked")
    static Map<String, Object> segment0(Map<String, Object> doc) {
        return (Map<String, Object>) ((List<Object>) doc.get("segments")).get(0);
    }

    @SuppressWarnings("unchecked")
    static Map<String, Object> block(Map<String, Object> doc, int i) {
        return (Map<String, Object>) ((List<Object>) segment0(doc).get("blocks")).get(i);
    }

    @SuppressWarnings("unchecked")
    static Map<String, Object> entry(Map<String, Object> doc, int i) {
        return (Map<String, Object>) ((List<Object>) ((List<Object>) doc.get("device_traces")).get(0)).get(i);
    }

    @SuppressWarnings("unchecked")
    static void replaceEntry(Map<String, Object> doc, int i, Object value) {
        ((List<Object>) ((List<Object>) doc.get("device_traces")).get(0)).set(i, value);
    }

    static byte[] pickle(Object doc) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        try {
            PickleEncoder e = new PickleEncoder(out);
            e.header();
            e.value(doc);
            e.finish();
        } catch (IOException e) {
            throw new AssertionError(e);
        }
        return out.toByteArray();
    }

    static String error(byte[] data, String source) {
        return assertThrows(SnapshotFormatException.class, () -> SnapshotReader.read(data, source)).getMessage();
    }

    /** Mutates a valid document and returns the reader's message. */
    static String mutated(Consumer<Map<String, Object>> mutation) {
        Map<String, Object> d = doc();
        mutation.accept(d);
        return error(pickle(d), "bad.pickle");
    }

    @Test
    void theUnmutatedDocumentIsValid() {
        MemorySnapshot s = SnapshotReader.read(pickle(doc()), "good.pickle");
        assertEquals(3, s.trace(0).size());
        assertEquals(1000, s.trace(0).get(2).deviceFree());
    }

    // ---- not a snapshot at all -------------------------------------------------------------------------------

    @Test
    void zipAndPngHeaders() {
        assertEquals("x.pickle: not a pickle or JSON snapshot (starts with bytes 50 4b 03 04)",
                error(new byte[] {0x50, 0x4b, 0x03, 0x04, 0x14, 0, 0, 0}, "x.pickle"));
        assertEquals("img.pickle: not a pickle or JSON snapshot (starts with bytes 89 50 4e 47)",
                error(new byte[] {(byte) 0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'}, "img.pickle"));
        assertEquals("e.pickle: empty input, not a pickle or JSON snapshot", error(new byte[0], "e.pickle"));
        assertEquals("p0.pickle: not a pickle or JSON snapshot (starts with bytes 28 6c 70 30)",
                error("(lp0\n.".getBytes(StandardCharsets.US_ASCII), "p0.pickle"), "protocol 0 is not a snapshot");
    }

    @Test
    void randomBytes() {
        Random r = new Random(42);
        for (int i = 0; i < 300; i++) {
            byte[] data = new byte[1 + r.nextInt(200)];
            r.nextBytes(data);
            if (i % 3 == 0) {
                data[0] = (byte) 0x80; // looks like a pickle at first
            }
            String m = messageOrNull(data, "rnd.bin");
            if (m != null) {
                assertTrue(m.startsWith("rnd.bin: "), m);
            }
        }
        byte[] data = new byte[64];
        r.nextBytes(data);
        data[0] = 0x13;
        assertTrue(error(data, "rnd.bin").startsWith("rnd.bin: not a pickle or JSON snapshot (starts with bytes 13 "));
    }

    @Test
    void truncatedPickles() {
        byte[] full = pickle(doc());
        String half = error(Arrays.copyOf(full, full.length / 2), "cut.pickle");
        assertTrue(half.startsWith("cut.pickle: truncated pickle: " + full.length / 2 + " bytes end"), half);
        for (int n = 1; n < full.length; n++) {
            String m = error(Arrays.copyOf(full, n), "cut.pickle");
            assertTrue(m.startsWith("cut.pickle: truncated pickle: "), n + ": " + m);
        }
        // The viewer pads with NUL bytes after STOP; Python ignores bytes after STOP and so do we.
        byte[] padded = Arrays.copyOf(full, full.length + 3);
        assertEquals(SnapshotReader.read(full, "a"), SnapshotReader.read(padded, "b"));
    }

    @Test
    void truncatedRealFile() throws IOException {
        byte[] full = Files.readAllBytes(SnapshotTestSupport.realSnapshot(RealSnapshotTest.VERL));
        String m = error(Arrays.copyOf(full, full.length / 2), "verl.pickle");
        assertTrue(m.startsWith("verl.pickle: truncated pickle: "), m);
    }

    @Test
    void fuzzedPicklesFailOnlyWithFormatErrors() {
        byte[] valid = pickle(doc());
        Random r = new Random(7);
        int failures = 0;
        for (int i = 0; i < 3000; i++) {
            byte[] data = valid.clone();
            for (int k = 0, n = 1 + r.nextInt(3); k < n; k++) {
                data[1 + r.nextInt(data.length - 1)] = (byte) r.nextInt(256);
            }
            if (messageOrNull(data, "fuzz.pickle") != null) {
                failures++;
            }
        }
        assertTrue(failures > 1000, "most mutations are caught: " + failures);
    }

    @Test
    void fuzzedJsonFailsOnlyWithFormatErrors() throws IOException {
        ByteArrayOutputStream json = new ByteArrayOutputStream();
        SnapshotWriter.writeJson(SnapshotReader.read(pickle(doc()), "x"), json);
        byte[] valid = json.toByteArray();
        Random r = new Random(11);
        byte[] alphabet = "{}[]:,\"0123456789-.eEtrufalsn \\x".getBytes(StandardCharsets.US_ASCII);
        for (int i = 0; i < 2000; i++) {
            byte[] data = valid.clone();
            for (int k = 0, n = 1 + r.nextInt(3); k < n; k++) {
                data[1 + r.nextInt(data.length - 1)] = alphabet[r.nextInt(alphabet.length)];
            }
            messageOrNull(data, "fuzz.json");
        }
    }

    /** @return null if the data read fine, else the message of the SnapshotFormatException (any other fails) */
    static String messageOrNull(byte[] data, String source) {
        try {
            SnapshotReader.read(data, source);
            return null;
        } catch (SnapshotFormatException e) {
            assertTrue(e.getMessage().startsWith(source + ": "), e.getMessage());
            return e.getMessage();
        } catch (RuntimeException | StackOverflowError e) {
            fail("raw " + e + " for " + Arrays.toString(data), e);
            return null;
        }
    }

    // ---- pickle-level problems -------------------------------------------------------------------------------

    @Test
    void classReferencesAreRejectedBeforeDecoding() {
        byte[] evil = "\u0080\u0002cos\nsystem\nX\u0002\u0000\u0000\u0000lsR.".getBytes(StandardCharsets.ISO_8859_1);
        assertEquals("evil.pickle: unsupported pickle opcode GLOBAL at byte offset 2: a memory snapshot holds only"
                + " dicts, lists, tuples, str, int, float, bool and None, never class instances",
                error(evil, "evil.pickle"));
    }

    @Test
    void unknownOpcodeAndProtocol() {
        assertEquals("u.pickle: invalid pickle: unknown opcode 0xff at byte offset 2",
                error(new byte[] {(byte) 0x80, 2, (byte) 0xff, '.'}, "u.pickle"));
        assertEquals("p.pickle: unsupported pickle protocol 9 at byte offset 0 (Python writes protocols 0 to 5)",
                error(new byte[] {(byte) 0x80, 9, ']', '.'}, "p.pickle"));
    }

    @Test
    void badMemoAndStack() {
        String m = error(new byte[] {(byte) 0x80, 2, 'h', 5, '.'}, "memo.pickle");
        assertTrue(m.startsWith("memo.pickle: invalid pickle: "), m);
        m = error(new byte[] {(byte) 0x80, 2, 'e', '.'}, "stack.pickle");
        assertTrue(m.startsWith("stack.pickle: invalid pickle: "), m);
        m = error(new byte[] {(byte) 0x80, 2, ']', '(', 'K', 1, 'u', '.'}, "setitems.pickle");
        assertTrue(m.startsWith("setitems.pickle: invalid pickle: "), m);
    }

    @Test
    void setInSettings() {
        // {'segments': [], 'allocator_settings': {'s': set()}}
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        b.writeBytes(new byte[] {(byte) 0x80, 4, '}', '('});
        b.writeBytes(new byte[] {(byte) 0x8c, 8});
        b.writeBytes("segments".getBytes(StandardCharsets.US_ASCII));
        b.write(']');
        b.writeBytes(new byte[] {(byte) 0x8c, 18});
        b.writeBytes("allocator_settings".getBytes(StandardCharsets.US_ASCII));
        b.writeBytes(new byte[] {'}', '(', (byte) 0x8c, 1, 's', (byte) 0x8f, 'u', 'u', '.'});
        assertEquals("set.pickle: allocator_settings.s: unsupported value of type set",
                error(b.toByteArray(), "set.pickle"));
    }

    // ---- structure and field types ---------------------------------------------------------------------------

    @Test
    void wrongFieldTypes() {
        assertEquals("bad.pickle: device_traces[0][1]: field 'size' must be an integer, got str 'abc'",
                mutated(d -> entry(d, 1).put("size", "abc")));
        assertEquals("bad.pickle: device_traces[0][1]: field 'size' must be an integer, got bool True",
                mutated(d -> entry(d, 1).put("size", true)));
        assertEquals("bad.pickle: device_traces[0][1]: field 'addr' must be an integer, got float 1.5",
                mutated(d -> entry(d, 1).put("addr", 1.5)));
        assertEquals("bad.pickle: device_traces[0][1]: field 'addr' must not be None",
                mutated(d -> entry(d, 1).put("addr", null)));
        assertEquals("bad.pickle: device_traces[0][1]: field 'size' must be a non-negative integer, got int -1",
                mutated(d -> entry(d, 1).put("size", -1)));
        assertEquals("bad.pickle: device_traces[0][1]: field 'time_us' must be an integer, got str 'now'",
                mutated(d -> entry(d, 1).put("time_us", "now")));
        assertEquals("bad.pickle: device_traces[0][1]: field 'compile_context' must be a str, got int 3",
                mutated(d -> entry(d, 1).put("compile_context", 3)));
        assertEquals("bad.pickle: segments[0]: field 'stream' must be a 64-bit integer, got int 18446744073709551616",
                mutated(d -> segment0(d).put("stream", BigInteger.TWO.pow(64))));
        assertEquals("bad.pickle: segments[0]: field 'is_expandable' must be a bool, got int 1",
                mutated(d -> segment0(d).put("is_expandable", 1)));
        assertEquals("bad.pickle: segments[0]: field 'segment_type' must be 'small' or 'large', got str 'medium'",
                mutated(d -> segment0(d).put("segment_type", "medium")));
        assertEquals("bad.pickle: segments[0]: field 'segment_pool_id' must be a tuple of two integers, got tuple"
                + " of length 3", mutated(d -> segment0(d).put("segment_pool_id", new Object[] {0, 0, 0})));
        assertEquals("bad.pickle: segments[0]: field 'device' must be a 32-bit integer, got int 4294967296",
                mutated(d -> segment0(d).put("device", 1L << 32)));
        assertEquals("bad.pickle: segments[0].blocks[1]: field 'state' must be 'active_allocated',"
                + " 'active_pending_free' or 'inactive', got str 'free'",
                mutated(d -> block(d, 1).put("state", "free")));
        assertEquals("bad.pickle: segments[0].blocks[0].frames[0]: field 'line' must be an integer, got str '3'",
                mutated(d -> block(d, 0).put("frames", list(dict("name", "f", "filename", "a.py", "line", "3")))));
        assertEquals("bad.pickle: device_traces[0][0].frames[1]: must be a dict, got int 5",
                mutated(d -> entry(d, 0).put("frames", list(dict("name", "f", "filename", "a.py", "line", 3), 5))));
        assertEquals("bad.pickle: segments[0].blocks: must be a list, got dict",
                mutated(d -> segment0(d).put("blocks", dict())));
        assertEquals("bad.pickle: device_traces: must be a list, got int 5",
                mutated(d -> d.put("device_traces", 5)));
        assertEquals("bad.pickle: device_traces[0][2]: must be a dict, got str 'oops'",
                mutated(d -> replaceEntry(d, 2, "oops")));
        assertEquals("bad.pickle: allocator_settings: must be a dict, got list of length 0",
                mutated(d -> d.put("allocator_settings", list())));
        assertEquals("bad.pickle: external_annotations[0]: dict keys must be str, got int 1",
                mutated(d -> d.put("external_annotations", list(Map.of(1, 2)))));
    }

    @Test
    void unknownActionAndMissingFields() {
        assertEquals("bad.pickle: device_traces[0][0]: unknown action 'explode' (expected one of alloc,"
                + " free_requested, free_completed, segment_alloc, segment_free, segment_map, segment_unmap,"
                + " snapshot, oom, annotate, user_defined)", mutated(d -> entry(d, 0).put("action", "explode")));
        assertEquals("bad.pickle: segments[0]: missing field 'total_size'",
                mutated(d -> segment0(d).remove("total_size")));
        assertEquals("bad.pickle: segments[0].blocks[0]: missing field 'size'",
                mutated(d -> block(d, 0).remove("size")));
        assertEquals("bad.pickle: device_traces[0][2]: missing field 'device_free'",
                mutated(d -> entry(d, 2).remove("device_free")));
        assertEquals("bad.pickle: device_traces[0][1]: missing field 'action'",
                mutated(d -> entry(d, 1).remove("action")));
        assertEquals("bad.pickle: device_traces[0][0]: missing field 'stream'",
                mutated(d -> entry(d, 0).remove("stream")));
        assertEquals("bad.pickle: top level: missing key 'segments'", mutated(d -> d.remove("segments")));
        assertEquals("n.pickle: top level: must be a dict with 'segments' or a list of segments, got int 5",
                error(pickle(5), "n.pickle"));
    }

    // ---- JSON ------------------------------------------------------------------------------------------------

    static String json(String text) {
        return error(text.getBytes(StandardCharsets.UTF_8), "bad.json");
    }

    @Test
    void jsonWrongTypesAndSyntax() {
        assertEquals("bad.json: segments[0]: field 'device' must be an integer, got str '0'",
                json("{\"segments\": [{\"device\": \"0\"}]}"));
        assertEquals("bad.json: device_traces[1][0]: field 'size' must be an integer, got float 1.0",
                json("{\"segments\": [], \"device_traces\": [[], [{\"action\": \"alloc\", \"addr\": 1,"
                        + " \"size\": 1.0, \"stream\": 0}]]}"));
        assertEquals("bad.json: segments: must be a list, got dict", json("{\"segments\": {}}"));
        assertEquals("bad.json: top level: missing key 'segments'", json("  {\"device_traces\": []}"));
        String m = json("{\"segments\": [\n  {\"device\": 0,, }]}");
        assertTrue(m.startsWith("bad.json: invalid JSON at line 2, column "), m);
        m = json("{\"segments\": [");
        assertTrue(m.startsWith("bad.json: invalid JSON at line 1, column "), m);
        m = json("{\"segments\": []} {}");
        assertTrue(m.startsWith("bad.json: invalid JSON at line 1, column 18: data after the end"), m);
        m = json("{\"segments\": [], \"segments\": []}");
        assertTrue(m.startsWith("bad.json: invalid JSON at line 1, column "), m);
        assertTrue(m.contains("Duplicate field 'segments'"), m);
    }

    // ---- entry points ----------------------------------------------------------------------------------------

    @Test
    void fileNamesAppearInMessages(@TempDir Path tmp) throws IOException {
        Path broken = tmp.resolve("broken.pickle");
        byte[] full = pickle(doc());
        Files.write(broken, Arrays.copyOf(full, 20));
        SnapshotFormatException e = assertThrows(SnapshotFormatException.class, () -> SnapshotReader.read(broken));
        assertTrue(e.getMessage().startsWith("broken.pickle: truncated pickle: 20 bytes end"), e.getMessage());
        assertThrows(java.nio.file.NoSuchFileException.class, () -> SnapshotReader.read(tmp.resolve("missing")));
    }

    @Test
    void formatSpecificEntryPoints() throws IOException {
        byte[] json = "{\"segments\": []}".getBytes(StandardCharsets.UTF_8);
        SnapshotFormatException e = assertThrows(SnapshotFormatException.class,
                () -> SnapshotReader.readPickle(new ByteArrayInputStream(json), "s.json"));
        assertEquals("s.json: not a pickle of protocol 2 or later (starts with bytes 7b 22 73 65)", e.getMessage());
        e = assertThrows(SnapshotFormatException.class,
                () -> SnapshotReader.readJson(new ByteArrayInputStream(pickle(doc())), "s.pickle"));
        assertTrue(e.getMessage().startsWith("s.pickle: invalid JSON at line 1, column 1"), e.getMessage());
        assertEquals(0, SnapshotReader.readJson(new ByteArrayInputStream(json), "s.json").segments().size());
    }
}
