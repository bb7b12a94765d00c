package io.vram4j.memory.snapshot;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** The streaming pickle decoder: stacks interned by either path, memo rules, and what it refuses. */
class PickleDecoderTest {
    private static byte[] pickle(MemorySnapshot s, boolean shareStacks) throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        SnapshotWriter.writePickle(s, out, shareStacks);
        return out.toByteArray();
    }

    /** PyTorch's layout (a list of memo references per entry, the fast path) and the shared one read the same. */
    @Test
    void bothStackLayoutsReadBackEqual() throws IOException {
        MemorySnapshot real = SnapshotReader.read(
                SnapshotTestSupport.realSnapshot("cs336-medium-ctx512_train-step_steady-state.pickle"));
        byte[] perEntry = pickle(real, false);
        byte[] shared = pickle(real, true);
        assertTrue(perEntry.length > shared.length, perEntry.length + " vs " + shared.length);
        MemorySnapshot a = SnapshotReader.read(perEntry, "per-entry.pickle");
        MemorySnapshot b = SnapshotReader.read(shared, "shared.pickle");
        assertEquals(real, a);
        assertEquals(real, b);
        // equal stacks are one object, whichever path decoded them
        List<TraceEntry> t = a.trace(0);
        for (int i = 1; i < t.size(); i++) {
            if (t.get(i).frames().equals(t.get(i - 1).frames())) {
                assertSame(t.get(i).frames(), t.get(i - 1).frames(), "entry " + i);
            }
        }
    }

    /**
     * Short strs are shared (one object per value, interned so a key equals its literal by identity), and never
     * confused: 3,000 distinct values of 1 to 32 bytes, ASCII and not, each repeated, through a 512-slot cache.
     */
    @Test
    void shortStringsAreSharedAndNeverConfused() throws IOException {
        ByteArrayOutputStream p = new ByteArrayOutputStream();
        p.write(new byte[] {(byte) 0x80, 4, ']', '('});
        List<String> expected = new java.util.ArrayList<>();
        java.util.Random rnd = new java.util.Random(7);
        for (int i = 0; i < 3000; i++) {
            String v = i % 3 == 0 ? "N/A" : i % 7 == 0 ? "é" + i : "k" + Integer.toString(i, 36).repeat(1 + rnd.nextInt(5));
            v = v.length() > 32 ? v.substring(0, 32) : v;
            byte[] b = v.getBytes(java.nio.charset.StandardCharsets.UTF_8);
            if (b.length > 32) {
                v = "short" + i;
                b = v.getBytes(java.nio.charset.StandardCharsets.UTF_8);
            }
            p.write(0x8c); // SHORT_BINUNICODE, not memoized: each copy decoded on its own
            p.write(b.length);
            p.write(b);
            expected.add(v);
        }
        p.write(new byte[] {'e', '.'});
        List<?> got = (List<?>) PickleDecoder.decode(ByteBuffer.wrap(p.toByteArray())).root();
        assertEquals(expected, got);
        assertSame(got.get(0), got.get(3), "one object for the repeated 'N/A'");
        assertSame("N/A", got.get(0), "interned: the literal itself");
    }

    @Test
    void framesBecomeInternedFramesAndOtherDictsStayMaps() {
        // {'a': [{'name': 'f', 'filename': 'x.py', 'line': 3}], 'b': {'name': 'f'}} in protocol 2
        byte[] p = {(byte) 0x80, 2, '}', 'q', 0, '(', 'X', 1, 0, 0, 0, 'a', ']', 'q', 1, '}', 'q', 2, '(',
            'X', 4, 0, 0, 0, 'n', 'a', 'm', 'e', 'X', 1, 0, 0, 0, 'f', 'X', 8, 0, 0, 0, 'f', 'i', 'l', 'e', 'n', 'a', 'm', 'e',
            'X', 4, 0, 0, 0, 'x', '.', 'p', 'y', 'X', 4, 0, 0, 0, 'l', 'i', 'n', 'e', 'K', 3, 'u', 'a',
            'X', 1, 0, 0, 0, 'b', '}', '(', 'X', 4, 0, 0, 0, 'n', 'a', 'm', 'e', 'X', 1, 0, 0, 0, 'f', 'u', 'u', '.'};
        PickleScanner.check(p);
        Map<?, ?> root = (Map<?, ?>) PickleDecoder.decode(ByteBuffer.wrap(p)).root();
        assertEquals(List.of(new Frame("f", "x.py", 3)), root.get("a"));
        assertTrue(((List<?>) root.get("a")).get(0) instanceof Frame);
        assertEquals(Map.of("name", "f"), root.get("b"));
    }

    @Test
    void memoRules() {
        // [None memoized, then fetched]: PROTO 2, EMPTY_LIST, MARK, NONE, BINPUT 0, BINGET 0, APPENDS, STOP
        byte[] none = {(byte) 0x80, 2, ']', '(', 'N', 'q', 0, 'h', 0, 'e', '.'};
        assertEquals(java.util.Arrays.asList(null, null), PickleDecoder.decode(ByteBuffer.wrap(none)).root());
        byte[] undefined = {(byte) 0x80, 2, ']', '(', 'h', 5, 'e', '.'};
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> PickleDecoder.decode(ByteBuffer.wrap(undefined)));
        assertEquals("memo index 5 is not defined at byte offset 4", e.getMessage());
        byte[] far = {(byte) 0x80, 2, 'N', 'r', (byte) 0xff, (byte) 0xff, (byte) 0xff, 0x7f, '.'};
        e = assertThrows(IllegalArgumentException.class, () -> PickleDecoder.decode(ByteBuffer.wrap(far)));
        assertEquals("memo index 2147483647 out of range at byte offset 3", e.getMessage());
    }

    /**
     * Reading is one pass: the decoder alone refuses what it must never execute or allocate, and the reader then
     * reports the scanner's message, naming the first problem in file order.
     */
    @Test
    void decoderRefusesUnsafeInputOnItsOwnAndTheReaderKeepsTheScannersMessage() {
        // BINUNICODE claiming 2,147,483,631 bytes in a 9-byte input: refused before allocating them
        byte[] huge = {(byte) 0x80, 2, 'X', (byte) 0xef, (byte) 0xff, (byte) 0xff, 0x7f, 'a', '.'};
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> PickleDecoder.decode(ByteBuffer.wrap(huge)));
        assertEquals("string of 2147483631 bytes runs past the end of the input at byte offset 2", e.getMessage());
        SnapshotFormatException r = assertThrows(SnapshotFormatException.class,
                () -> SnapshotReader.read(huge, "x.pickle"));
        assertEquals("x.pickle: truncated pickle: 9 bytes end inside the BINUNICODE opcode at byte offset 2",
                r.getMessage());
        // LONG4 with a negative length (it used to move the decoder backwards)
        byte[] negative = {(byte) 0x80, 2, (byte) 0x8b, (byte) 0xff, (byte) 0xff, (byte) 0xff, (byte) 0xff, '.'};
        e = assertThrows(IllegalArgumentException.class, () -> PickleDecoder.decode(ByteBuffer.wrap(negative)));
        assertEquals("long of -1 bytes runs past the end of the input at byte offset 2", e.getMessage());
        // protocol 6 does not exist
        byte[] protocol6 = {(byte) 0x80, 6, 'N', '.'};
        e = assertThrows(IllegalArgumentException.class, () -> PickleDecoder.decode(ByteBuffer.wrap(protocol6)));
        assertEquals("unsupported pickle protocol at byte offset 0", e.getMessage());
        r = assertThrows(SnapshotFormatException.class, () -> SnapshotReader.read(protocol6, "p.pickle"));
        assertEquals("p.pickle: unsupported pickle protocol 6 at byte offset 0 (Python writes protocols 0 to 5)",
                r.getMessage());
        // GLOBAL os.system: refused, never executed
        byte[] global = {(byte) 0x80, 2, 'c', 'o', 's', '\n', 's', 'y', 's', 't', 'e', 'm', '\n', '.'};
        e = assertThrows(IllegalArgumentException.class, () -> PickleDecoder.decode(ByteBuffer.wrap(global)));
        assertEquals("opcode GLOBAL is not supported at byte offset 2", e.getMessage());
        r = assertThrows(SnapshotFormatException.class, () -> SnapshotReader.read(global, "g.pickle"));
        assertTrue(r.getMessage().startsWith("g.pickle: unsupported pickle opcode GLOBAL at byte offset 2: "),
                r.getMessage());
    }

    /**
     * Trace entry dicts go to the hook as they complete, and only those of the top-level {@code device_traces}
     * (every device's list): the same dicts under a nested {@code device_traces} key, the segments and their blocks
     * stay dicts. The reader's hook then gives the same snapshot as reading the plain tree.
     */
    @Test
    void onlyTopLevelTraceEntriesGoToTheHook() {
        Map<String, Object> doc = BadInputTest.doc();
        @SuppressWarnings("unchecked")
        List<Object> trace = (List<Object>) ((List<?>) doc.get("device_traces")).get(0);
        List<Object> device1 = BadInputTest.list(trace.get(0), trace.get(1));
        doc.put("device_traces", BadInputTest.list(trace, device1));
        doc.put("nested", BadInputTest.dict("device_traces", BadInputTest.list(BadInputTest.list(trace.get(0)))));
        byte[] p = BadInputTest.pickle(doc);

        List<Object> handed = new java.util.ArrayList<>();
        Set<Object> stacks = Collections.newSetFromMap(new IdentityHashMap<>());
        Map<?, ?> root = (Map<?, ?>) PickleDecoder.decode(ByteBuffer.wrap(p), stacks, d -> {
            handed.add(d);
            return "entry " + handed.size();
        });
        assertEquals(5, handed.size(), "3 entries of device 0, 2 of device 1");
        for (Object d : handed) {
            assertTrue(d instanceof Map<?, ?> m && m.containsKey("action"), String.valueOf(d));
        }
        assertEquals(List.of(List.of("entry 1", "entry 2", "entry 3"), List.of("entry 4", "entry 5")),
                root.get("device_traces"));
        Object nested = ((List<?>) ((Map<?, ?>) root.get("nested")).get("device_traces")).get(0);
        assertTrue(((List<?>) nested).get(0) instanceof Map<?, ?>, "a nested device_traces keeps its dicts");
        Object segment = ((List<?>) root.get("segments")).get(0);
        assertTrue(segment instanceof Map<?, ?> m && ((List<?>) m.get("blocks")).get(0) instanceof Map<?, ?>);

        // through the reader: the same model as from the plain tree
        MemorySnapshot read = SnapshotReader.read(p, "two-devices.pickle");
        MemorySnapshot plain = new SnapshotDecoder("two-devices.pickle").decode(PickleDecoder.decode(ByteBuffer.wrap(p)).root());
        assertEquals(plain, read);
        assertEquals(3, read.trace(0).size());
        assertEquals(2, read.trace(1).size());
    }

    /** An entry the hook cannot turn into a {@link TraceEntry} stays a dict and is reported with its path. */
    @Test
    void aBadEntryAmongGoodOnesIsReportedWithItsPath() {
        Map<String, Object> doc = BadInputTest.doc();
        @SuppressWarnings("unchecked")
        Map<String, Object> second = (Map<String, Object>) ((List<?>) ((List<?>) doc.get("device_traces")).get(0)).get(1);
        second.put("stream", "s");
        SnapshotFormatException e = assertThrows(SnapshotFormatException.class,
                () -> SnapshotReader.read(BadInputTest.pickle(doc), "bad.pickle"));
        assertEquals("bad.pickle: device_traces[0][1]: field 'stream' must be an integer, got str 's'", e.getMessage());
    }
}
