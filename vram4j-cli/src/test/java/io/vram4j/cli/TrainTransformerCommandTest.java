package io.vram4j.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** {@code train --model transformer} and the flags of the memory-saving techniques. */
class TrainTransformerCommandTest {
    /** The bundled text in the source tree, so the test does not depend on the machine's fortunes. */
    static final Path TEXT = Path.of("../vram4j-tensor/src/main/resources/io/vram4j/data/text/jargon-lexicon.txt.gz");
    /** A tiny model: 1 block of width 32, 2 heads, context 16; 4 steps of 16 windows. */
    static final String[] TINY = {"train", "--model", "transformer", "--hidden", "32", "--layers", "1", "--heads", "2",
            "--block-size", "16", "--batch-size", "16", "--limit", "64", "--history-steps", "0", "--progress", "none",
            "--data", TEXT.toString(), "--device", "host:1GiB"};

    static CliRunner.Result run(Path out, String... extra) {
        List<String> args = new ArrayList<>(List.of(TINY));
        if (List.of(extra).contains("--device")) {
            int i = args.indexOf("--device");
            args.subList(i, i + 2).clear();
        }
        args.addAll(List.of(extra));
        args.add("--out");
        args.add(out.toString());
        return CliRunner.run(args.toArray(String[]::new));
    }

    @Test
    void trainsTheLanguageModelAndPrintsASample(@TempDir Path tmp) throws Exception {
        CliRunner.Result r = run(tmp.resolve("run"), "--json", "--sample", "30");
        assertEquals(0, r.exitCode(), r.err());
        JsonNode json = new ObjectMapper().readTree(r.out());
        assertEquals("ok", json.get("status").asText());
        assertTrue(json.get("model").asText().startsWith("transformer 1 block of width 32, 2 heads, context 16, vocabulary 96"),
                json.get("model").asText());
        double loss = json.get("loss").asDouble();
        assertEquals(loss / Math.log(2), json.get("bits_per_char").asDouble(), 1e-9);
        assertTrue(loss > 0 && loss < Math.log(96) + 0.5, "validation loss " + loss);
        String sample = json.get("sample").asText();
        assertEquals(31, sample.length(), sample); // the newline prompt and 30 characters
        assertEquals("file", json.get("data").get("origin").asText());
        assertEquals(64, json.get("data").get("train_samples").asInt());
        assertTrue(r.err().contains("bits/char"), r.err());
        assertTrue(r.err().contains("sample (temperature 0.8):"), r.err());
        assertTrue(Files.exists(tmp.resolve("run").resolve("result.json")));
    }

    /** Runs TINY with {@code extra} and returns the JSON summary, after checking the run succeeded. */
    static JsonNode runJson(Path out, String... extra) throws Exception {
        List<String> args = new ArrayList<>(List.of(extra));
        args.addAll(List.of("--json", "--sample", "0"));
        CliRunner.Result r = run(out, args.toArray(String[]::new));
        assertEquals(0, r.exitCode(), String.join(" ", extra) + ": " + r.err());
        JsonNode json = new ObjectMapper().readTree(r.out());
        assertEquals("ok", json.get("status").asText(), json.toString());
        double loss = json.get("loss").asDouble();
        assertTrue(Double.isFinite(loss) && loss > 0 && loss < Math.log(96) + 0.5, String.join(" ", extra) + ": validation loss " + loss);
        ((com.fasterxml.jackson.databind.node.ObjectNode) json).put("stderr", r.err());
        return json;
    }

    @Test
    void techniqueFlagsTrainForReal(@TempDir Path tmp) throws Exception {
        JsonNode base = runJson(tmp.resolve("base"));
        assertEquals("", base.get("techniques").asText());
        assertFalse(base.has("skipped_steps"), "no GradScaler without fp16");

        // checkpointing recomputes the same activations: the same gradients, so the same model and loss, bit for bit
        JsonNode ckpt = runJson(tmp.resolve("ckpt"), "--checkpoint");
        assertEquals("checkpointing (1 segment)", ckpt.get("techniques").asText());
        assertEquals(base.get("loss").asDouble(), ckpt.get("loss").asDouble(), 0.0);
        assertEquals(base.get("train_loss").asDouble(), ckpt.get("train_loss").asDouble(), 0.0);

        JsonNode fp16 = runJson(tmp.resolve("fp16"), "--amp", "fp16");
        assertEquals("fp16 autocast with GradScaler", fp16.get("techniques").asText());
        long skipped = fp16.get("skipped_steps").asLong();
        assertTrue(skipped >= 0 && skipped < 4, "4 steps, at most all but one skipped: " + skipped);
        assertTrue(fp16.get("stderr").asText().contains("fp16 GradScaler: " + skipped + " optimizer step"), fp16.get("stderr").asText());
        assertTrue(Math.abs(fp16.get("loss").asDouble() - base.get("loss").asDouble()) < 0.1,
                "fp16 " + fp16.get("loss") + " vs float32 " + base.get("loss"));

        // micro-batches of 8 sum to the gradient of the batch of 16 (up to float32 rounding): nearly the same loss
        JsonNode micro = runJson(tmp.resolve("micro"), "--micro-batch", "8");
        assertEquals("micro-batches of 8", micro.get("techniques").asText());
        assertEquals(base.get("loss").asDouble(), micro.get("loss").asDouble(), 1e-3);

        // accumulation over 2 batches of 16: 2 optimizer steps instead of 4, so a different (but trained) model
        JsonNode acc = runJson(tmp.resolve("acc"), "--accumulate", "2");
        assertEquals("accumulation x2", acc.get("techniques").asText());
        assertEquals(64, acc.get("data").get("train_samples").asInt());
        assertTrue(acc.get("loss").asDouble() != base.get("loss").asDouble(), "fewer optimizer steps change the model");
    }

    @Test
    void dryRunOnASimulatedDeviceComputesNothing(@TempDir Path tmp) throws Exception {
        long[] peaks = new long[2];
        String[] backends = {"math", "flash"};
        for (int i = 0; i < 2; i++) {
            CliRunner.Result r = CliRunner.run("train", "--model", "transformer", "--dry-run", "--device", "sim:A100-80GB",
                    "--data", TEXT.toString(), "--layers", "12", "--block-size", "256", "--batch-size", "64",
                    "--attention", backends[i], "--out", tmp.resolve(backends[i]).toString(), "--json");
            assertEquals(0, r.exitCode(), r.err());
            JsonNode json = new ObjectMapper().readTree(r.out());
            assertEquals(64, json.get("batch_size").asInt());
            assertEquals(i == 0 ? "unfused (math) attention" : "", json.get("techniques").asText());
            peaks[i] = json.get("peak_allocated_bytes").asLong();
        }
        // unfused, 12 blocks keep at least their 4 heads' attention probabilities: 12 x 64 x 4 x 256 x 256 floats
        long probabilities = 12L * 64 * 4 * 256 * 256 * 4;
        assertTrue(peaks[0] > probabilities, "math peak " + peaks[0]);
        // fused, they are never stored (the fused op keeps its output [64, 4, 256, 32] and log-sum-exps instead)
        assertTrue(peaks[0] - peaks[1] >= probabilities - 12L * 64 * 256 * (128 + 4) * 4,
                "peaks: math " + peaks[0] + ", flash " + peaks[1]);
    }

    @Test
    void badValuesExitWithCode2AndNameTheOption(@TempDir Path tmp) {
        String[][] cases = {
                {"--heads", "3"},
                {"--block-size", "0"},
                {"--amp", "fp8"},
                {"--checkpoint", "0"},
                {"--checkpoint", "two"},
                {"--accumulate", "0"},
                {"--micro-batch", "-1"},
                {"--micro-batch", "17"},
                {"--model", "rnn"},
                {"--data", "/nonexistent/text.txt"},
                {"--block-size", "500000"},
                {"--attention", "efficient"},
        };
        String[] expected = {"--heads", "--block-size", "--amp", "--checkpoint", "--checkpoint", "--accumulate", "--micro-batch",
                "--micro-batch", "--model", "--data", "--block-size", "--attention"};
        for (int i = 0; i < cases.length; i++) {
            CliRunner.Result r = run(tmp.resolve("never"), cases[i]);
            String what = String.join(" ", cases[i]);
            assertEquals(2, r.exitCode(), what + ": " + r.err());
            List<String> lines = r.err().lines().filter(l -> !l.startsWith("WARNING")).toList();
            assertEquals(1, lines.size(), what + ": " + r.err());
            assertTrue(lines.getFirst().startsWith("vram4j train: error: ") && lines.getFirst().contains(expected[i]),
                    what + ": " + lines.getFirst());
            assertFalse(r.err().contains("\tat "), what + ": no stack trace");
        }
        assertFalse(Files.exists(tmp.resolve("never")), "no run folder for a failed run");
    }
}
