package io.vram4j.memory.snapshot;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.zip.GZIPOutputStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code .pickle.gz} / {@code .json.gz}: read through every entry point of {@link SnapshotReader}, bad gzip refused. */
class CompressedSnapshotTest {
    private static byte[] gzip(byte[] data) throws IOException {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (GZIPOutputStream out = new GZIPOutputStream(bytes)) {
            out.write(data);
        }
        return bytes.toByteArray();
    }

    private static String error(byte[] data, String name) {
        return assertThrows(SnapshotFormatException.class, () -> SnapshotReader.read(data, name)).getMessage();
    }

    @Test
    void realPickleGzipped(@TempDir Path tmp) throws IOException {
        Path plain = SnapshotTestSupport.realSnapshot("cs336-medium-ctx512_train-step_steady-state.pickle");
        MemorySnapshot expected = SnapshotReader.read(plain);
        Path gz = tmp.resolve("cs336.pickle.gz");
        Files.write(gz, gzip(Files.readAllBytes(plain)));
        assertEquals(expected, SnapshotReader.read(gz));
        try (var in = Files.newInputStream(gz)) {
            assertEquals(expected, SnapshotReader.readPickle(in, "cs336.pickle.gz"));
        }
    }

    @Test
    void jsonGzipped() throws IOException {
        Path plain = SnapshotTestSupport.realSnapshot("verl-megatron-vllm_segments-only.pickle");
        MemorySnapshot expected = SnapshotReader.read(plain);
        ByteArrayOutputStream json = new ByteArrayOutputStream();
        SnapshotWriter.writeJson(expected, json);
        byte[] gz = gzip(json.toByteArray());
        assertEquals(expected, SnapshotReader.read(gz, "verl.json.gz"));
        assertEquals(expected, SnapshotReader.readJson(new ByteArrayInputStream(gz), "verl.json.gz"));
    }

    @Test
    void truncatedGzipIsOneClearLine() throws IOException {
        Path plain = SnapshotTestSupport.realSnapshot("decomfl-opt-zo-finetune_from-empty.pickle");
        byte[] gz = gzip(Files.readAllBytes(plain));
        for (int cut : new int[] {2, 10, gz.length / 2, gz.length - 9, gz.length - 1}) {
            String m = error(Arrays.copyOf(gz, cut), "d.pickle.gz");
            assertTrue(m.startsWith("d.pickle.gz: truncated gzip data: the compressed stream ends before its end marker ("
                    + cut + " bytes read)") || m.startsWith("d.pickle.gz: corrupt gzip data: "), cut + ": " + m);
        }
        assertEquals("d.pickle.gz: truncated gzip data: the compressed stream ends before its end marker ("
                + gz.length / 2 + " bytes read)", error(Arrays.copyOf(gz, gz.length / 2), "d.pickle.gz"));
    }

    @Test
    void corruptGzip() throws IOException {
        byte[] gz = gzip("{\"segments\": []}".getBytes(StandardCharsets.UTF_8));
        byte[] badMethod = gz.clone();
        badMethod[2] = 7; // compression method other than deflate
        assertTrue(error(badMethod, "m.json.gz").startsWith("m.json.gz: corrupt gzip data: ZipException: "));
        byte[] badCrc = gz.clone();
        badCrc[gz.length - 8] ^= 0x55; // CRC-32 of the trailer
        assertEquals("c.json.gz: corrupt gzip data: ZipException: Corrupt GZIP trailer", error(badCrc, "c.json.gz"));
        byte[] garbage = {0x1f, (byte) 0x8b, 8, 0, 0, 0, 0, 0, 0, 3, (byte) 0xff, (byte) 0xff, (byte) 0xff, 1, 2, 3};
        assertTrue(error(garbage, "g.pickle.gz").startsWith("g.pickle.gz: corrupt gzip data: ZipException: "));
    }

    @Test
    void gzipOfSomethingElseNamesTheContent() throws IOException {
        assertEquals("t.pickle.gz: not a pickle or JSON snapshot (starts with bytes 68 65 6c 6c)",
                error(gzip("hello".getBytes(StandardCharsets.US_ASCII)), "t.pickle.gz"));
        assertEquals("e.pickle.gz: empty input, not a pickle or JSON snapshot", error(gzip(new byte[0]), "e.pickle.gz"));
        byte[] badJson = gzip("{\"segments\": [}".getBytes(StandardCharsets.UTF_8));
        assertTrue(error(badJson, "b.json.gz").startsWith("b.json.gz: invalid JSON at line 1, column "));
    }
}
