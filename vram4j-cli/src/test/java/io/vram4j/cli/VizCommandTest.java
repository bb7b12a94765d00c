package io.vram4j.cli;

import io.vram4j.testsupport.SharedData;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

class VizCommandTest {

    private static Path real(String name) {
        return SharedData.snapshot(name);
    }

    private static long field(String page, String name) {
        Matcher m = Pattern.compile("\"" + name + "\":(-?\\d+)").matcher(page);
        assertTrue(m.find(), name);
        return Long.parseLong(m.group(1));
    }

    @Test
    void writesThePageOfDecomfl(@TempDir Path tmp) throws Exception {
        Path out = tmp.resolve("decomfl.html");
        CliRunner.Result r = CliRunner.run("viz", real("decomfl-opt-zo-finetune_from-empty.pickle").toString(), "-o", out.toString());
        assertEquals(0, r.exitCode(), r.err());
        assertTrue(r.out().contains("wrote " + out + " (device 0: 23,105 entries, 7,946 allocations"), r.out());
        String page = Files.readString(out);
        assertTrue(page.startsWith("<!DOCTYPE html>"));
        assertEquals(1_897_922_560L, field(page, "peak_reserved"));
        assertFalse(page.contains("https://") || page.contains("http://"), "no network");
    }

    @Test
    void gzippedSnapshotsAreReadByVizAndReplay(@TempDir Path tmp) throws Exception {
        Path gz = tmp.resolve("decomfl.pickle.gz");
        try (var out = new java.util.zip.GZIPOutputStream(Files.newOutputStream(gz))) {
            Files.copy(real("decomfl-opt-zo-finetune_from-empty.pickle"), out);
        }
        CliRunner.Result r = CliRunner.run("viz", gz.toString(), "-o", tmp.resolve("d.html").toString());
        assertEquals(0, r.exitCode(), r.err());
        assertTrue(r.out().contains("(device 0: 23,105 entries, 7,946 allocations"), r.out());
        assertEquals(1_897_922_560L, field(Files.readString(tmp.resolve("d.html")), "peak_reserved"));
        CliRunner.Result replay = CliRunner.run("replay", gz.toString(), "--json");
        assertEquals(0, replay.exitCode(), replay.err());
        assertTrue(replay.out().contains("1897922560"), replay.out());
        // a truncated one: one line, exit 2
        Path cut = tmp.resolve("cut.pickle.gz");
        byte[] bytes = Files.readAllBytes(gz);
        Files.write(cut, java.util.Arrays.copyOf(bytes, bytes.length / 3));
        for (String cmd : new String[] {"viz", "replay"}) {
            CliRunner.Result bad = CliRunner.run(cmd, cut.toString());
            assertEquals(2, bad.exitCode(), cmd + ": " + bad.err());
            assertEquals("vram4j " + cmd + ": error: cut.pickle.gz: truncated gzip data: the compressed stream ends"
                    + " before its end marker (" + bytes.length / 3 + " bytes read)", bad.err().strip(), cmd);
        }
    }

    @Test
    void maxEntriesLimitsTheBandsAndDeviceSelectsOne(@TempDir Path tmp) throws Exception {
        Path out = tmp.resolve("t.html");
        CliRunner.Result r = CliRunner.run("viz", real("cs336-medium-ctx512_train-step_steady-state.pickle").toString(),
                "--max-entries", "100", "--device", "0", "--output", out.toString());
        assertEquals(0, r.exitCode(), r.err());
        assertTrue(r.out().contains(", 100 drawn one by one)"), r.out());
        assertEquals(100, field(Files.readString(out), "max_entries"));
    }

    @Test
    void segmentsOnlySnapshotGivesAStatePage(@TempDir Path tmp) throws Exception {
        Path out = tmp.resolve("verl.html");
        CliRunner.Result r = CliRunner.run("viz", real("verl-megatron-vllm_segments-only.pickle").toString(), "-o", out.toString());
        assertEquals(0, r.exitCode(), r.err());
        assertTrue(r.out().contains("0 entries, 0 allocations"), r.out());
        assertTrue(Files.size(out) > 10_000);
    }

    @Test
    void ourOwnDemoSnapshot(@TempDir Path tmp) throws Exception {
        // a vram4j snapshot written as JSON by the snapshot writer
        Path json = tmp.resolve("ours.json");
        io.vram4j.device.DeviceBackend device = io.vram4j.device.Devices.open("sim:16GiB");
        try {
            io.vram4j.alloc.CachingAllocator a = io.vram4j.alloc.CachingAllocator.create(device);
            a.recordMemoryHistory(10_000);
            long p = a.malloc(3 << 20);
            a.malloc(1000);
            a.free(p);
            a.malloc(40 << 20);
            try (var o = Files.newOutputStream(json)) {
                io.vram4j.memory.snapshot.SnapshotWriter.writeJson(a.snapshot(), o);
            }
        } finally {
            device.close();
        }
        Path out = tmp.resolve("ours.html");
        CliRunner.Result r = CliRunner.run("viz", json.toString(), "-o", out.toString());
        assertEquals(0, r.exitCode(), r.err());
        String page = Files.readString(out);
        assertEquals((40L << 20) + 1024, field(page, "peak_allocated"), "3 MiB + 1 KiB, then (3 MiB freed) 40 MiB + 1 KiB");
    }

    @Test
    void demoSnapshotThroughTheCli(@TempDir Path tmp) throws Exception {
        Path snap = tmp.resolve("demo.pickle");
        CliRunner.Result d = CliRunner.run("demo", "--device", "sim:8GiB", "--steps", "2", "--snapshot", snap.toString());
        assertEquals(0, d.exitCode(), d.err());
        Path out = tmp.resolve("demo.html");
        CliRunner.Result r = CliRunner.run("viz", snap.toString(), "-o", out.toString());
        assertEquals(0, r.exitCode(), r.err());
        assertTrue(r.out().contains("drawn one by one"), r.out());
        String page = Files.readString(out);
        assertTrue(field(page, "peak_allocated") > 2L * 784 * 1024 * 4, "at least the first layer's weights and momentum");
        assertEquals(0, field(page, "inconsistencies"));
    }

    @Test
    void severalDevicesDefaultToTheFirstWithATrace(@TempDir Path tmp) throws Exception {
        long base = 0x7f0000000000L;
        var seg0 = new io.vram4j.memory.snapshot.SegmentInfo(0, base, 2 << 20, 0, 0, 0, 0, "small",
                io.vram4j.memory.snapshot.PoolId.DEFAULT, false, java.util.List.of(), java.util.List.of(
                        new io.vram4j.memory.snapshot.BlockInfo(base, 2 << 20, 0, io.vram4j.memory.snapshot.BlockState.INACTIVE,
                                java.util.List.of())));
        var trace1 = java.util.List.of(
                io.vram4j.memory.snapshot.TraceEntry.of(io.vram4j.memory.snapshot.TraceAction.SEGMENT_ALLOC, base, 20 << 20, 0,
                        io.vram4j.memory.snapshot.TraceEntry.NO_TIME, java.util.List.of()),
                io.vram4j.memory.snapshot.TraceEntry.of(io.vram4j.memory.snapshot.TraceAction.ALLOC, base, 5 << 20, 0,
                        io.vram4j.memory.snapshot.TraceEntry.NO_TIME, java.util.List.of()));
        var snap = new io.vram4j.memory.snapshot.MemorySnapshot(java.util.List.of(seg0),
                java.util.List.of(java.util.List.of(), trace1), java.util.Map.of(), java.util.List.of());
        Path file = tmp.resolve("two.pickle");
        io.vram4j.memory.snapshot.SnapshotWriter.write(snap, file);
        CliRunner.Result r = CliRunner.run("viz", file.toString(), "-o", tmp.resolve("d1.html").toString());
        assertEquals(0, r.exitCode(), r.err());
        assertTrue(r.out().contains("(device 1: 2 entries, 1 allocations"), r.out());
        String page = Files.readString(tmp.resolve("d1.html"));
        assertTrue(page.contains("<title>two.pickle · device 1 · memory timeline</title>"), "the title names the device");
        assertEquals(5L << 20, field(page, "peak_allocated"));
        r = CliRunner.run("viz", file.toString(), "--device", "0", "-o", tmp.resolve("d0.html").toString());
        assertEquals(0, r.exitCode(), r.err());
        assertTrue(r.out().contains("(device 0: 0 entries"), r.out());
        assertEquals(2L << 20, field(Files.readString(tmp.resolve("d0.html")), "peak_reserved"));
    }

    @Test
    void missingFileIsOneClearLine(@TempDir Path tmp) {
        CliRunner.Result r = CliRunner.run("viz", tmp.resolve("nope.pickle").toString(), "-o", tmp.resolve("x.html").toString());
        assertEquals(2, r.exitCode());
        assertTrue(r.err().contains("nope.pickle: no such file"), r.err());
        assertFalse(r.err().contains("\tat "), "no stack trace");
        assertFalse(Files.exists(tmp.resolve("x.html")));
    }

    @Test
    void notASnapshotNamesTheFile(@TempDir Path tmp) throws Exception {
        Path bad = tmp.resolve("notes.txt");
        Files.writeString(bad, "hello, not a snapshot");
        CliRunner.Result r = CliRunner.run("viz", bad.toString(), "-o", tmp.resolve("x.html").toString());
        assertEquals(2, r.exitCode());
        assertTrue(r.err().startsWith("vram4j viz: error: notes.txt"), r.err());
        Path json = tmp.resolve("wrong.json");
        Files.writeString(json, "{\"segments\": 3}");
        r = CliRunner.run("viz", json.toString(), "-o", tmp.resolve("x.html").toString());
        assertEquals(2, r.exitCode());
        assertTrue(r.err().contains("wrong.json") && r.err().contains("segments"), r.err());
        assertFalse(r.err().contains("\tat "));
    }

    @Test
    void truncatedPickleNamesTheFile(@TempDir Path tmp) throws Exception {
        byte[] full = Files.readAllBytes(real("decomfl-opt-zo-finetune_from-empty.pickle"));
        Path cut = tmp.resolve("cut.pickle");
        Files.write(cut, java.util.Arrays.copyOf(full, 5000));
        CliRunner.Result r = CliRunner.run("viz", cut.toString(), "-o", tmp.resolve("x.html").toString());
        assertEquals(2, r.exitCode());
        assertTrue(r.err().startsWith("vram4j viz: error: cut.pickle"), r.err());
        assertFalse(r.err().contains("\tat "));
        assertFalse(Files.exists(tmp.resolve("x.html")), "no page for a bad snapshot");
    }

    @Test
    void unwritableOutputIsOneClearLine(@TempDir Path tmp) throws Exception {
        Path snap = real("decomfl-opt-zo-finetune_from-empty.pickle");
        CliRunner.Result r = CliRunner.run("viz", snap.toString(), "-o", tmp.resolve("no/such/dir/x.html").toString());
        assertEquals(2, r.exitCode());
        assertTrue(r.err().contains("cannot write the page: folder") && r.err().contains("does not exist"), r.err());
        r = CliRunner.run("viz", snap.toString(), "-o", tmp.toString());
        assertEquals(2, r.exitCode());
        assertTrue(r.err().contains("it is a folder"), r.err());
        Path ro = Files.createDirectory(tmp.resolve("ro"));
        assumeTrue(ro.toFile().setWritable(false) && !Files.isWritable(ro), "cannot make a read-only folder here (root?)");
        r = CliRunner.run("viz", snap.toString(), "-o", ro.resolve("x.html").toString());
        assertEquals(2, r.exitCode());
        assertTrue(r.err().contains("permission denied"), r.err());
    }

    @Test
    void badOptionsAreRefused(@TempDir Path tmp) {
        Path snap = real("decomfl-opt-zo-finetune_from-empty.pickle");
        CliRunner.Result r = CliRunner.run("viz", snap.toString(), "--device", "5", "-o", tmp.resolve("x.html").toString());
        assertEquals(2, r.exitCode());
        assertTrue(r.err().contains("--device 5") && r.err().contains("devices: [0]"), r.err());
        r = CliRunner.run("viz", snap.toString(), "--max-entries", "0");
        assertEquals(2, r.exitCode());
        assertTrue(r.err().contains("--max-entries: expected a positive number, got 0"), r.err());
        r = CliRunner.run("viz", snap.toString(), "--max-entries", "many");
        assertEquals(2, r.exitCode());
        assertTrue(r.err().contains("--max-entries"), r.err());
        r = CliRunner.run("viz");
        assertEquals(2, r.exitCode());
        assertTrue(r.err().contains("FILE"), r.err());
    }
}
