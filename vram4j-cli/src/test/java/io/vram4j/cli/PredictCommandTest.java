package io.vram4j.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.vram4j.memory.snapshot.SnapshotReader;
import io.vram4j.replay.ReplayOptions;
import io.vram4j.replay.Replayer;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

class PredictCommandTest {
    @TempDir
    static Path runs;

    /** The first three steps of a small MLP at batch {@code b}, recorded by {@code train}. */
    static Path record(int b) {
        Path out = runs.resolve("b" + b + "-" + System.nanoTime());
        CliRunner.Result r = CliRunner.run("train", "--hidden", "64", "--batch-size", "" + b, "--history-steps", "3", "--epochs", "1",
                "--limit", "" + 3 * b, "--progress", "none", "--device", "host:256MiB", "--data", TrainCommandTest.BUNDLED.toString(),
                "--out", out.toString());
        assertEquals(0, r.exitCode(), r.err());
        return out.resolve("memory_snapshot.pickle");
    }

    static Path b2;
    static Path b4;
    static Path b32;

    @BeforeAll
    static void recordRuns() {
        // from one call site, as one script run with other arguments: the stack frames match
        java.util.Map<Integer, Path> files = new java.util.HashMap<>();
        for (int b : new int[] {2, 4, 32}) {
            files.put(b, record(b));
        }
        b2 = files.get(2);
        b4 = files.get(4);
        b32 = files.get(32);
    }

    @Test
    void predictsTheRecordedRunAt8xTheLargerBatch() throws Exception {
        CliRunner.Result r = CliRunner.run("predict", b2 + "@2", b4 + "@4", "--at", "32", "--json");
        assertEquals(0, r.exitCode(), r.err());
        JsonNode p = new ObjectMapper().readTree(r.out()).get("prediction");
        var truth = Replayer.replay(SnapshotReader.read(b32), ReplayOptions.EXACT).getFirst();
        assertEquals(truth.recordedPeakReserved(), p.get("peak_reserved_bytes").asLong());
        assertEquals(truth.replayedPeakAllocated(), p.get("peak_allocated_bytes").asLong());
        assertTrue(p.get("fits").asBoolean());
        CliRunner.Result text = CliRunner.run("predict", b2 + "@2", b4 + "@4", "--at", "32");
        assertTrue(text.out().contains("2 recordings at 2, 4 aligned (affine model, 0 one-off allocations passed over)"), text.out());
        assertTrue(text.out().contains("capacity: unbounded"), text.out());
    }

    @Test
    void outOfMemoryVerdictAndTheLargestBatchThatFits() throws Exception {
        long peak = new ObjectMapper().readTree(CliRunner.run("predict", b2 + "@2", b4 + "@4", "--at", "4096", "--json").out())
                .get("prediction").get("peak_reserved_bytes").asLong();
        String small = (peak / 2 >> 20) + "MiB";
        CliRunner.Result oom = CliRunner.run("predict", b2 + "@2", b4 + "@4", "--at", "4096", "--capacity", small, "--max");
        assertEquals(0, oom.exitCode(), oom.err());
        assertTrue(oom.out().contains("OUT OF MEMORY on "), oom.out());
        assertTrue(oom.out().contains("(io/vram4j/"), "the frames of the allocation: " + oom.out());
        assertTrue(oom.out().contains("largest value that fits on "), oom.out());
        JsonNode max = new ObjectMapper().readTree(CliRunner.run("predict", b2 + "@2", b4 + "@4", "--capacity", small, "--max", "--json")
                .out()).get("max");
        int largest = max.get("largest").asInt();
        assertTrue(largest > 4 && largest < 4096, max.toString());
        for (JsonNode t : max.get("tries")) {
            assertEquals(t.get("value").asInt() <= largest, t.get("fits").asBoolean(), t.toString());
        }
    }

    @Test
    void badInputExitsWithCode2AndOneLine(@TempDir Path tmp) throws Exception {
        Path notes = Files.writeString(tmp.resolve("notes.txt"), "not a snapshot");
        String[][] cases = {
                {b2 + "@2", b4 + "@4"},
                {b2 + "@2", b4 + "@4", "--at", "0"},
                {b2 + "@2", b4.toString(), "--at", "8"},
                {b2 + "@2", b4 + "@four", "--at", "8"},
                {b2 + "@2", b4 + "@-4", "--at", "8"},
                {b2 + "@2", b2 + "@2", "--at", "8"},
                {b2 + "@2", tmp.resolve("missing.pickle") + "@4", "--at", "8"},
                {b2 + "@2", notes + "@4", "--at", "8"},
                {b2 + "@2", b4 + "@4", "--max"},
                {b2 + "@2", b4 + "@4", "--at", "8", "--in", "width"},
                {b2 + "@2", b4 + "@4", "--at", "8", "--in", "sequence"},
                {b2 + "@2", b4 + "@4", "--at", "8", "--conf", "max_split_size_mb:1"},
                {b2 + "@2", b4 + "@4", "--at", "8", "--capacity", "huge"},
        };
        for (String[] c : cases) {
            String[] args = new String[c.length + 1];
            args[0] = "predict";
            System.arraycopy(c, 0, args, 1, c.length);
            CliRunner.Result r = CliRunner.run(args);
            assertEquals(2, r.exitCode(), String.join(" ", c) + ": " + r.err());
            assertEquals(1, r.err().strip().lines().count(), String.join(" ", c) + ": " + r.err());
            assertFalse(r.err().contains("Exception"), r.err());
        }
    }

    @Test
    void tracesWithOtherStackFramesAreRefused() {
        // the same model at batch 4 but from another call site: other frames, a different program for predict
        Path other = record(4);
        CliRunner.Result r = CliRunner.run("predict", b2 + "@2", other + "@4", "--at", "32");
        assertEquals(2, r.exitCode(), r.err());
        assertTrue(r.err().contains("do not align"), r.err());
    }
}
