package io.vram4j.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import io.vram4j.alloc.CachingAllocator;
import io.vram4j.alloc.config.AllocatorConfig;
import io.vram4j.device.Stream;
import io.vram4j.device.sim.SimDevice;
import io.vram4j.memory.snapshot.MemorySnapshot;
import io.vram4j.memory.snapshot.SegmentInfo;
import io.vram4j.memory.snapshot.SnapshotWriter;
import io.vram4j.memory.snapshot.TraceAction;
import io.vram4j.memory.snapshot.TraceEntry;
import io.vram4j.testsupport.SharedData;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

class ReplayCommandTest {

    private static Path real(String name) {
        return SharedData.snapshot(name);
    }

    @Test
    void exactReplayOfDecomfl() {
        CliRunner.Result r = CliRunner.run("replay", real("decomfl-opt-zo-finetune_from-empty.pickle").toString());
        assertEquals(0, r.exitCode(), r.err());
        assertTrue(r.out().contains("EXACT: the replay reproduces the recording"), r.out());
        assertTrue(r.out().contains("identical (first 61 of 61 agree)"), r.out());
    }

    /**
     * {@code replay FILE} alone runs without picocli (Main's fast path); {@code replay -- FILE} is the same command
     * line read by picocli. Both must print the same report, the same error lines and return the same exit codes:
     * a replay, a segments-only file, a missing file, a corrupt file, a directory, an empty name.
     */
    @Test
    void plainReplayWithoutPicocliActsAsThroughPicocli(@TempDir Path dir) throws Exception {
        Path corrupt = Files.write(dir.resolve("corrupt.pickle"), new byte[] {(byte) 0x80, 2, 'X', 1, 2});
        String[] files = {real("decomfl-opt-zo-finetune_from-empty.pickle").toString(),
            real("verl-megatron-vllm_segments-only.pickle").toString(), dir.resolve("missing.pickle").toString(),
            corrupt.toString(), dir.toString(), ""};
        for (String f : files) {
            CliRunner.Result plain = CliRunner.run("replay", f);
            CliRunner.Result picocli = CliRunner.run("replay", "--", f);
            assertEquals(picocli.exitCode(), plain.exitCode(), f + ": " + plain.err() + " / " + picocli.err());
            assertEquals(withoutRate(picocli.out()), withoutRate(plain.out()), f);
            assertEquals(picocli.err(), plain.err(), f);
        }
        assertEquals(2, CliRunner.run("replay", dir.resolve("missing.pickle").toString()).exitCode());
        assertTrue(CliRunner.run("replay", files[0]).out().contains("EXACT"));
    }

    /** The replay loop's rate, the one figure of the report that differs between two runs. */
    private static String withoutRate(String report) {
        return report.replaceAll("replayed at [0-9,]+ events/s", "replayed at N events/s");
    }

    @Test
    void jsonReportHasPytorchKeys() throws Exception {
        CliRunner.Result r = CliRunner.run("replay", "--json", real("cs336-medium-ctx512_train-step_steady-state.pickle").toString());
        assertEquals(0, r.exitCode(), r.err());
        JsonNode n = new ObjectMapper().readTree(r.out()).get(0);
        assertEquals(12_660_506_624L, n.get("replayed_peak_reserved").asLong());
        assertTrue(n.get("exact").asBoolean());
        assertEquals(122, n.get("memory_stats").size());
        assertTrue(n.get("memory_stats_at_peak").has("allocated_bytes.all.current"));
    }

    @Test
    void segmentsOnlyFilePrintsState() {
        CliRunner.Result r = CliRunner.run("replay", real("verl-megatron-vllm_segments-only.pickle").toString());
        assertEquals(0, r.exitCode(), r.err());
        assertTrue(r.out().contains("127 (84 large, 43 small), 638 blocks"), r.out());
    }

    @Test
    void sweepRecommends() {
        CliRunner.Result r = CliRunner.run("replay", "--sweep", "--capacity", "12GiB",
                real("cs336-medium-ctx512_train-step_steady-state.pickle").toString());
        assertEquals(0, r.exitCode(), r.err());
        assertTrue(r.out().contains("recommendation:"), r.out());
    }

    @Test
    void badInputIsOneClearLine(@TempDir Path tmp) throws Exception {
        CliRunner.Result missing = CliRunner.run("replay", tmp.resolve("nope.pickle").toString());
        assertEquals(2, missing.exitCode());
        assertTrue(missing.err().contains("nope.pickle: no such file"), missing.err());
        assertFalse(missing.err().contains("\tat "), "no stack trace");

        Path junk = tmp.resolve("junk.pickle");
        Files.write(junk, new byte[] {(byte) 0x80, 2, ']', '(', 'K'});
        CliRunner.Result corrupt = CliRunner.run("replay", junk.toString());
        assertEquals(2, corrupt.exitCode());
        assertTrue(corrupt.err().contains("junk.pickle"), corrupt.err());
        assertFalse(corrupt.err().contains("\tat "));

        Path png = tmp.resolve("image.png");
        Files.write(png, new byte[] {(byte) 0x89, 'P', 'N', 'G', 13, 10, 26, 10});
        CliRunner.Result foreign = CliRunner.run("replay", png.toString());
        assertEquals(2, foreign.exitCode());
        assertTrue(foreign.err().contains("image.png"), foreign.err());
    }

    @Test
    void badOptionsNameTheOption() {
        Path f = real("decomfl-opt-zo-finetune_from-empty.pickle");
        CliRunner.Result cap = CliRunner.run("replay", "--capacity", "lots", f.toString());
        assertEquals(2, cap.exitCode());
        assertTrue(cap.err().contains("--capacity"), cap.err());
        CliRunner.Result conf = CliRunner.run("replay", "--conf", "foo:1", f.toString());
        assertEquals(2, conf.exitCode());
        assertTrue(conf.err().contains("Unrecognized key 'foo' in CUDA allocator config."), conf.err());
        CliRunner.Result unknown = CliRunner.run("replay", "--frobnicate", f.toString());
        assertEquals(2, unknown.exitCode());
    }

    @Test
    void refusesCapacitiesAndSettingsPyTorchWouldRefuse() {
        Path f = real("decomfl-opt-zo-finetune_from-empty.pickle");
        for (String cap : List.of("0", "-1GiB", "0B", "2PiB")) {
            CliRunner.Result r = CliRunner.run("replay", "--capacity", cap, f.toString());
            assertEquals(2, r.exitCode(), cap + ": " + r.out());
            assertTrue(r.err().contains("--capacity") && r.err().contains("'" + cap + "'"), r.err());
            assertEquals(1, r.err().lines().filter(l -> l.startsWith("vram4j")).count(), r.err());
        }
        Path segmentsOnly = real("verl-megatron-vllm_segments-only.pickle");
        CliRunner.Result conf = CliRunner.run("replay", "--conf", "max_split_size_mb:5", segmentsOnly.toString());
        assertEquals(2, conf.exitCode(), conf.out());
        assertTrue(conf.err().contains("--conf: ") && conf.err().contains("max_split_size_mb"), conf.err());
        CliRunner.Result sweep = CliRunner.run("replay", "--sweep", segmentsOnly.toString());
        assertEquals(2, sweep.exitCode(), sweep.out());
        assertTrue(sweep.err().contains("has no trace (segments only): --sweep needs one"), sweep.err());
    }

    @Test
    void anEmptySnapshotSaysWhatItFound(@TempDir Path tmp) throws Exception {
        Path empty = tmp.resolve("empty.json");
        Files.writeString(empty, "[]");
        CliRunner.Result r = CliRunner.run("replay", empty.toString());
        assertEquals(0, r.exitCode(), r.err());
        assertTrue(r.out().contains("empty.json: an empty snapshot: no segments and no trace"), r.out());
    }

    @Test
    void aCapacityBelowThePreTraceStateIsAnsweredInOneLine() {
        Path f = real("cs336-medium-ctx512_train-step_steady-state.pickle");
        CliRunner.Result r = CliRunner.run("replay", "--capacity", "4GiB", f.toString());
        assertEquals(0, r.exitCode(), r.err());
        assertEquals(1, r.out().lines().count(), r.out());
        assertTrue(r.out().contains("capacity 4.00 GiB is below the 11.73 GiB reserved before the trace began"), r.out());
        assertTrue(r.out().contains("the first allocation that cannot be served comes before the trace"), r.out());
        assertFalse(r.out().contains("0x") || r.out().contains("--lenient"), r.out());
    }

    @Test
    void aPredictedOomIsTheAnswerWithItsStack() {
        Path f = real("decomfl-opt-zo-finetune_from-empty.pickle");
        CliRunner.Result r = CliRunner.run("replay", "--capacity", "1GiB", f.toString());
        assertEquals(0, r.exitCode(), r.err());
        assertTrue(r.out().contains("answer: OUT OF MEMORY at entry "), r.out());
        assertTrue(r.out().contains("adam_forward.py"), "the Python frames of that allocation: " + r.out());
        assertTrue(r.out().contains("the figures below come from a replay that continued past it"), r.out());
    }

    @Test
    void demoPrintsSummary() {
        CliRunner.Result r = CliRunner.run("demo", "--device", "sim:4GiB", "--steps", "2");
        assertEquals(0, r.exitCode(), r.err());
        assertTrue(r.out().contains("PyTorch CUDA memory summary, device ID 0"), r.out());
        CliRunner.Result bad = CliRunner.run("demo", "--device", "gpu:1");
        assertEquals(2, bad.exitCode());
        assertTrue(bad.err().contains("gpu:1"), bad.err());
    }

    private static final long MiB = 1L << 20;

    /** A from-empty recording by vram4j's own allocator on sim device {@code index}: two streams, no OOM. */
    static MemorySnapshot record(int index, long seed) {
        try (SimDevice device = new SimDevice(index, 1L << 30, "sim:test")) {
            CachingAllocator a = CachingAllocator.create(device, AllocatorConfig.DEFAULT);
            a.recordMemoryHistory(100_000);
            Stream side = device.newStream();
            Random rnd = new Random(seed);
            List<Long> live = new ArrayList<>();
            for (int i = 0; i < 600; i++) {
                if (live.size() < 30 && (live.isEmpty() || rnd.nextInt(3) > 0)) {
                    long size = rnd.nextInt(4) == 0 ? MiB + rnd.nextLong(30 * MiB) : 1 + rnd.nextLong(MiB);
                    live.add(a.malloc(size, rnd.nextInt(5) == 0 ? side : device.defaultStream()));
                } else {
                    a.free(live.remove(rnd.nextInt(live.size())));
                }
            }
            MemorySnapshot s = a.snapshot();
            live.forEach(a::free);
            a.close();
            return s;
        }
    }

    private static Path write(Path dir, String name, MemorySnapshot s) throws Exception {
        Path f = dir.resolve(name);
        SnapshotWriter.write(s, f);
        return f;
    }

    /** The recording with {@code extra} inserted into device 0's trace at {@code at}. */
    private static MemorySnapshot withEntry(MemorySnapshot s, int at, TraceEntry extra) {
        List<TraceEntry> t = new ArrayList<>(s.deviceTraces().get(0));
        t.add(at, extra);
        return new MemorySnapshot(s.segments(), List.of(t), s.allocatorSettings(), List.of());
    }

    private static TraceEntry free(long addr, long size) {
        return TraceEntry.of(TraceAction.FREE_COMPLETED, addr, size, 0, TraceEntry.NO_TIME, List.of());
    }

    @Test
    void lenientCountsSkippedEntriesStrictStopsWithOneLine(@TempDir Path tmp) throws Exception {
        MemorySnapshot s = record(0, 1);
        List<TraceEntry> t = s.deviceTraces().get(0);
        // a double free: the second free_completed of an address freed in the trace
        int firstFree = 0;
        while (t.get(firstFree).action() != TraceAction.FREE_COMPLETED) {
            firstFree++;
        }
        TraceEntry again = t.get(firstFree);
        int at = firstFree + 1;
        MemorySnapshot bad = withEntry(s, at, free(again.addr(), again.size()));
        Path f = write(tmp, "double-free.pickle", bad);

        CliRunner.Result strict = CliRunner.run("replay", f.toString());
        assertEquals(2, strict.exitCode());
        String line = strict.err().strip();
        assertEquals(1, line.lines().count(), line);
        assertTrue(line.contains("double-free.pickle"), line);
        assertTrue(line.contains("entry " + at + ": free_completed of unknown address 0x" + Long.toHexString(again.addr())), line);
        assertTrue(line.contains("--lenient"), line);
        assertFalse(line.contains("\tat "), "no stack trace");

        CliRunner.Result lenient = CliRunner.run("replay", "--lenient", f.toString());
        assertEquals(0, lenient.exitCode(), lenient.err());
        assertTrue(lenient.out().contains("skipped              1 inconsistent or failed entries (lenient)"), lenient.out());
        assertTrue(lenient.out().contains("final state          equal to the dump"), lenient.out());
        CliRunner.Result json = CliRunner.run("replay", "--lenient", "--json", f.toString());
        JsonNode n = new ObjectMapper().readTree(json.out()).get(0);
        assertEquals(1, n.get("skipped").asInt());
        assertFalse(n.get("exact").asBoolean(), "a replay that skipped entries is not exact");
    }

    @Test
    void freeOfAnUnknownAddressNamesFileEntryAndAddress(@TempDir Path tmp) throws Exception {
        MemorySnapshot s = record(0, 2);
        int at = s.deviceTraces().get(0).size() / 2;
        Path f = write(tmp, "unknown-free.pickle", withEntry(s, at, free(0x7f00deadb000L, 4096)));
        CliRunner.Result r = CliRunner.run("replay", f.toString());
        assertEquals(2, r.exitCode());
        assertEquals("vram4j replay: error: unknown-free.pickle: device 0: entry " + at + ": free_completed of unknown address 0x7f00deadb000"
                        + " (not allocated in the trace, and in no segment that existed before it) (use --lenient to continue past it)",
                r.err().strip().replace(f.toString(), "unknown-free.pickle"));
        CliRunner.Result lenient = CliRunner.run("replay", "--lenient", f.toString());
        assertEquals(0, lenient.exitCode(), lenient.err());
        assertTrue(lenient.out().contains("skipped              1 "), lenient.out());
    }

    @Test
    void whatIfConfAndPresetCapacity(@TempDir Path tmp) throws Exception {
        Path f = write(tmp, "own.pickle", record(0, 3));
        CliRunner.Result conf = CliRunner.run("replay", "--conf", "expandable_segments:True", f.toString());
        assertEquals(0, conf.exitCode(), conf.err());
        assertTrue(conf.out().contains("(expandable_segments:True, capacity"), conf.out());
        assertFalse(conf.out().contains("alloc addresses"), "what-if replays use the device's own addresses");
        assertTrue(conf.out().contains("OOMs                               0               0"), conf.out());

        CliRunner.Result preset = CliRunner.run("replay", "--capacity", "a100-40gb", "--json", f.toString());
        assertEquals(0, preset.exitCode(), preset.err());
        JsonNode n = new ObjectMapper().readTree(preset.out()).get(0);
        assertEquals(io.vram4j.device.Devices.presets().get("A100-40GB").longValue(), n.get("capacity").asLong());
        assertEquals("--capacity", n.get("capacity_source").asText());
        assertFalse(n.get("recorded_addresses").asBoolean());
        assertEquals(0, n.get("predicted_ooms").asInt());
    }

    @Test
    void jsonListsReplayedSegmentSizes(@TempDir Path tmp) throws Exception {
        Path f = write(tmp, "own.pickle", record(0, 4));
        CliRunner.Result r = CliRunner.run("replay", "--json", f.toString());
        assertEquals(0, r.exitCode(), r.err());
        JsonNode n = new ObjectMapper().readTree(r.out()).get(0);
        JsonNode sizes = n.get("replayed_segment_sizes");
        assertTrue(sizes.isArray() && sizes.size() > 0, r.out());
        assertEquals(n.get("recorded_segment_sizes"), sizes);
        for (JsonNode size : sizes) {
            assertTrue(size.asLong() % (2 * MiB) == 0, "segments are multiples of 2 MiB: " + size);
        }
        assertTrue(n.get("exact").asBoolean());
        assertTrue(n.get("recorded_peak_allocated").asLong() > 0);
        assertTrue(n.get("recorded_peak_allocated").asLong() <= n.get("replayed_peak_allocated").asLong());
        // nested records are written in snake_case like the top-level keys
        JsonNode frag = n.get("fragmentation_at_peak");
        assertEquals(n.get("replayed_peak_allocated").asLong(), frag.get("allocated").asLong(), r.out());
        assertTrue(frag.has("largest_free_block") && frag.has("free_blocks") && frag.has("non_releasable"), frag.toString());
        assertFalse(frag.has("largestFreeBlock"), frag.toString());
    }

    @Test
    void sweepRanksByPeakReservedAndRecommendsTheBestRowThatFits(@TempDir Path tmp) throws Exception {
        Path f = write(tmp, "own.pickle", record(0, 5));
        CliRunner.Result js = CliRunner.run("replay", "--sweep", "--json", "--capacity", "1GiB", f.toString());
        assertEquals(0, js.exitCode(), js.err());
        JsonNode root = new ObjectMapper().readTree(js.out()).get("devices").get(0);
        JsonNode results = root.get("results");
        assertEquals(12, results.size(), "each setting once: the recorded settings are the defaults");
        assertEquals(1, results.findValues("recorded").stream().filter(JsonNode::asBoolean).count());
        int lastOoms = 0;
        long lastPeak = -1;
        for (JsonNode row : results) {
            int ooms = row.get("ooms").asInt();
            assertTrue(ooms >= lastOoms, "ordered by OOMs: rows that fit come first");
            if (ooms != lastOoms) {
                lastPeak = -1;
            }
            lastOoms = ooms;
            assertTrue(row.get("peak_reserved").asLong() >= lastPeak, "then by peak reserved");
            lastPeak = row.get("peak_reserved").asLong();
        }
        assertEquals(0, results.get(0).get("ooms").asInt());
        assertEquals(results.get(0).get("conf").asText(), root.get("recommendation").asText());
        assertFalse(root.has("recommendation_reason"));

        CliRunner.Result text = CliRunner.run("replay", "--sweep", "--capacity", "1GiB", f.toString());
        assertEquals(0, text.exitCode(), text.err());
        List<String> rows = text.out().lines().filter(l -> l.matches("^\\d+ +.*")).toList();
        assertEquals(12, rows.size(), text.out());
        for (int i = 0; i < rows.size(); i++) {
            String[] cols = rows.get(i).trim().split(" +");
            assertEquals(String.valueOf(i + 1), cols[0]);
            String conf = results.get(i).get("conf").asText();
            assertEquals(conf.isEmpty() ? "(default)" : conf, cols[1], "text and JSON rank alike");
            assertEquals(results.get(i).get("alloc_retries").asLong(), Long.parseLong(cols[cols.length - 2]));
            assertEquals(results.get(i).get("segment_frees").asLong(), Long.parseLong(cols[cols.length - 1]));
        }
        String best = root.get("recommendation").asText();
        assertTrue(text.out().contains("recommendation: " + (best.isEmpty() ? "(default) [recorded]" : best) + " (peak reserved"),
                text.out());
    }

    @Test
    void sweepRecommendsNothingWhenEverySettingRunsOutOfMemory(@TempDir Path tmp) throws Exception {
        Path f = write(tmp, "own.pickle", record(0, 6));
        CliRunner.Result js = CliRunner.run("replay", "--sweep", "--json", "--capacity", "4MiB", f.toString());
        assertEquals(0, js.exitCode(), js.err());
        JsonNode root = new ObjectMapper().readTree(js.out()).get("devices").get(0);
        for (JsonNode row : root.get("results")) {
            assertTrue(row.get("ooms").asInt() > 0, row.toString());
        }
        assertTrue(root.get("recommendation").isNull(), js.out());
        assertEquals("no setting fits on device 0", root.get("recommendation_reason").asText());
        long smallest = root.get("smallest_fitting_capacity").asLong();
        // the smallest capacity that fits does fit, and 2 MiB less does not (checked by replays of their own)
        CliRunner.Result fits = CliRunner.run("replay", "--json", "--capacity", smallest + "B", f.toString());
        assertEquals(0, new ObjectMapper().readTree(fits.out()).get(0).get("predicted_ooms").asInt(), fits.out());
        CliRunner.Result less = CliRunner.run("replay", "--json", "--capacity", (smallest - (2 << 20)) + "B", f.toString());
        assertTrue(new ObjectMapper().readTree(less.out()).get(0).get("predicted_ooms").asInt() > 0, less.out());
        CliRunner.Result text = CliRunner.run("replay", "--sweep", "--capacity", "4MiB", f.toString());
        assertTrue(text.out().contains("recommendation: none: no setting fits on device 0; the smallest capacity that fits"),
                text.out());
    }

    @Test
    void twoDevicesAreReplayedAndReportedSeparately(@TempDir Path tmp) throws Exception {
        MemorySnapshot d0 = record(0, 7);
        MemorySnapshot d1 = record(1, 8);
        List<SegmentInfo> segments = new ArrayList<>(d0.segments());
        segments.addAll(d1.segments());
        MemorySnapshot both = new MemorySnapshot(segments, List.of(d0.deviceTraces().get(0), d1.deviceTraces().get(1)),
                d0.allocatorSettings(), List.of());
        Path f = write(tmp, "two-devices.pickle", both);
        CliRunner.Result r = CliRunner.run("replay", "--json", f.toString());
        assertEquals(0, r.exitCode(), r.err());
        JsonNode reports = new ObjectMapper().readTree(r.out());
        assertEquals(2, reports.size());
        for (int d = 0; d < 2; d++) {
            MemorySnapshot own = d == 0 ? d0 : d1;
            JsonNode n = reports.get(d);
            assertEquals(d, n.get("device").asInt());
            assertEquals(own.deviceTraces().get(d).size(), n.get("events").asInt());
            assertEquals(own.segments().stream().mapToLong(SegmentInfo::totalSize).sum(),
                    n.get("memory_stats").get("reserved_bytes.all.current").asLong(), "device " + d);
            assertTrue(n.get("exact").asBoolean(), "device " + d + ": " + n.get("final_state_differences"));
        }
        assertTrue(reports.get(0).get("events").asInt() != reports.get(1).get("events").asInt()
                || !reports.get(0).get("replayed_segment_sizes").equals(reports.get(1).get("replayed_segment_sizes")));
        CliRunner.Result text = CliRunner.run("replay", f.toString());
        assertTrue(text.out().contains("device 0: ") && text.out().contains("device 1: "), text.out());
        assertEquals(2, text.out().lines().filter(l -> l.contains("EXACT: the replay reproduces the recording")).count());
    }
}
