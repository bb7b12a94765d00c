package io.vram4j.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

class TrainCommandTest {
    /** The bundled subset's folder in the source tree, so the test does not depend on the machine's data. */
    static final Path BUNDLED = Path.of("../vram4j-tensor/src/main/resources/io/vram4j/data/fashion-mnist");

    static CliRunner.Result run(String... args) {
        return CliRunner.run(args);
    }

    @Test
    void shortRunPrintsJsonAndWritesTheRunFolder(@TempDir Path tmp) throws Exception {
        Path runDir = tmp.resolve("run");
        CliRunner.Result r = run("train", "--epochs", "1", "--limit", "2000", "--json", "--hidden", "128", "--history-steps", "2",
                "--data", BUNDLED.toString(), "--out", runDir.toString(), "--progress", "lines", "--device", "host:1GiB");
        assertEquals(0, r.exitCode(), r.err());
        JsonNode json = new ObjectMapper().readTree(r.out()); // stdout is only the JSON
        for (String key : List.of("accuracy", "loss", "train_loss", "train_accuracy", "samples_per_sec",
                "peak_allocated_bytes", "peak_reserved_bytes", "allocated_bytes", "reserved_bytes", "memory_stats",
                "run_dir", "epochs", "model", "parameters", "device", "data", "files")) {
            assertTrue(json.has(key), "missing " + key);
        }
        assertEquals("ok", json.get("status").asText());
        assertTrue(json.get("accuracy").asDouble() > 0.3, "accuracy well above chance (0.1) after 16 steps: " + json.get("accuracy"));
        assertEquals(2000, json.get("data").get("train_samples").asInt());
        assertEquals(2000, json.get("data").get("test_samples").asInt());
        assertEquals(1, json.get("epochs").size());
        JsonNode stats = json.get("memory_stats");
        assertEquals(json.get("peak_allocated_bytes").asLong(), stats.get("allocated_bytes.all.peak").asLong());
        assertEquals(json.get("peak_reserved_bytes").asLong(), stats.get("reserved_bytes.all.peak").asLong());
        assertTrue(stats.has("num_alloc_retries"));
        assertEquals(runDir.toString(), json.get("run_dir").asText());
        for (String f : List.of("memory_summary.txt", "memory_stats.json", "memory_snapshot.pickle", "memory_timeline.html",
                "result.json")) {
            assertTrue(Files.size(runDir.resolve(f)) > 0, f);
        }
        assertTrue(Files.readString(runDir.resolve("memory_summary.txt")).contains("Allocated memory"));
        // the snapshot is a pickle (protocol 2)
        byte[] pickle = Files.readAllBytes(runDir.resolve("memory_snapshot.pickle"));
        assertEquals((byte) 0x80, pickle[0]);
        String page = Files.readString(runDir.resolve("memory_timeline.html"));
        assertTrue(page.contains("<canvas id=\"timeline\"") && page.contains("\"peak_allocated\":"), "the timeline page of the run");
        assertEquals(runDir.resolve("memory_timeline.html").toString(), json.get("files").get("memory_timeline").asText());
        // human output went to stderr
        assertTrue(r.err().contains("data: Fashion-MNIST from"), r.err());
        assertTrue(r.err().contains("epoch 1: allocated "), r.err());
        assertTrue(r.err().contains("peak reserved "), r.err());
        assertTrue(r.err().contains("epoch 1/1 [16/16] loss "), r.err());
    }

    @Test
    void mlpTrainsWithCheckpointingAndBf16Autocast(@TempDir Path tmp) throws Exception {
        CliRunner.Result r = run("train", "--model", "mlp", "--checkpoint", "--amp", "bf16", "--epochs", "1", "--limit", "1000",
                "--batch-size", "50", "--hidden", "64", "--history-steps", "0", "--progress", "none", "--json",
                "--data", BUNDLED.toString(), "--out", tmp.resolve("run").toString(), "--device", "host:256MiB");
        assertEquals(0, r.exitCode(), r.err());
        JsonNode json = new ObjectMapper().readTree(r.out());
        assertEquals("ok", json.get("status").asText());
        assertTrue(json.get("techniques").asText().matches("checkpointing \\(\\d+ segments?\\), bf16 autocast"),
                json.get("techniques").asText());
        assertFalse(json.has("skipped_steps"), "bf16 needs no GradScaler");
        assertTrue(json.get("accuracy").asDouble() > 0.3, "accuracy well above chance (0.1) after 20 steps: " + json.get("accuracy"));
        assertTrue(json.get("loss").asDouble() < Math.log(10), "below the loss of a uniform guess: " + json.get("loss"));
        assertEquals(json.get("peak_allocated_bytes").asLong(), json.get("memory_stats").get("allocated_bytes.all.peak").asLong());
    }

    @Test
    void dryRunOnASimulatedDevice(@TempDir Path tmp) throws Exception {
        CliRunner.Result r = run("train", "--dry-run", "--device", "sim:A100-80GB", "--batch-size", "256", "--data", BUNDLED.toString(),
                "--out", tmp.toString(), "--json");
        assertEquals(0, r.exitCode(), r.err());
        JsonNode json = new ObjectMapper().readTree(r.out());
        assertTrue(json.get("dry_run").asBoolean());
        assertEquals(256, json.get("batch_size").asInt());
        assertTrue(json.get("peak_allocated_bytes").asLong() > 3 * 4 * 669_706L);
        assertTrue(r.err().contains("dry run: training at batch 256 and evaluation at batch 256 need"), r.err());
        JsonNode peaks = json.get("peaks");
        assertEquals(256, peaks.get("evaluation_batch").asInt());
        assertTrue(peaks.get("evaluation_peak_allocated_bytes").asLong() > 0, peaks.toString());
        assertEquals(json.get("peak_allocated_bytes").asLong(), Math.max(peaks.get("training_peak_allocated_bytes").asLong(),
                peaks.get("evaluation_peak_allocated_bytes").asLong()), "the job's peak is the higher phase's");
        assertTrue(r.err().contains("dry run peaks: training steps "), r.err());
    }

    @Test
    void aBatchLargerThanTheTrainingSetIsRefused(@TempDir Path tmp) {
        CliRunner.Result r = run("train", "--batch-size", "2000", "--limit", "1000", "--data", BUNDLED.toString(),
                "--out", tmp.resolve("never").toString());
        assertEquals(2, r.exitCode(), r.err());
        assertTrue(r.err().contains("--batch-size 2,000 is larger than the training set (1,000 samples after --limit); use at most 1,000"),
                r.err());
        assertFalse(java.nio.file.Files.exists(tmp.resolve("never")));
        CliRunner.Result dry = run("train", "--dry-run", "--device", "sim:1GiB", "--batch-size", "-3", "--data", BUNDLED.toString(),
                "--out", tmp.resolve("never").toString());
        assertEquals(2, dry.exitCode(), dry.err());
        assertTrue(dry.err().contains("--batch-size"), dry.err());
    }

    @Test
    void badOptionsExitWithCode2AndOneLine(@TempDir Path tmp) {
        String out = tmp.resolve("never").toString();
        String[][] cases = {
                {"--batch-size", "0"},
                {"--device", "gpu"},
                {"--alloc-conf", "foo:1"},
                {"--data", "/nonexistent"},
                {"--epochs", "-1"},
                {"--optimizer", "adam"},
                {"--batch-size", "x"},
                {"--progress", "fancy"},
                {"--device", "sim:1GiB"},
        };
        String[] expected = {"--batch-size", "--device", "--alloc-conf", "--data", "--epochs", "--optimizer",
                "--batch-size", "--progress", "--dry-run"};
        for (int i = 0; i < cases.length; i++) {
            String[] args = new String[cases[i].length + 3];
            args[0] = "train";
            System.arraycopy(cases[i], 0, args, 1, cases[i].length);
            args[args.length - 2] = "--out";
            args[args.length - 1] = out;
            CliRunner.Result r = run(args);
            String what = String.join(" ", cases[i]);
            assertEquals(2, r.exitCode(), what + ": " + r.err());
            assertEquals("", r.out(), what);
            List<String> lines = r.err().lines().filter(l -> !l.startsWith("WARNING")).toList();
            assertEquals(1, lines.size(), what + ": " + r.err());
            assertTrue(lines.getFirst().contains(expected[i]), what + ": " + lines.getFirst());
            assertTrue(lines.getFirst().startsWith("vram4j train: error: "), what + ": " + lines.getFirst());
            assertFalse(r.err().contains("\tat "), what + ": no stack trace");
        }
        assertFalse(Files.exists(tmp.resolve("never")), "no run folder for a failed run");
    }
}
