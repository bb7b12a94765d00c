package io.vram4j.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

class BenchCommandTest {
    static final String TEXT = TrainTransformerCommandTest.TEXT.toString();

    @Test
    void techniquesTableForTinyModels() throws Exception {
        CliRunner.Result r = CliRunner.run("bench", "techniques", "--steps", "1", "--layers", "2", "--hidden", "32", "--heads", "2",
                "--block-size", "32", "--batch-size", "8", "--mlp-hidden", "32", "--mlp-layers", "2", "--mlp-batch", "16",
                "--device", "host:1GiB", "--finder-device", "sim:32MiB", "--data", TEXT, "--json");
        assertEquals(0, r.exitCode(), r.err());
        JsonNode json = new ObjectMapper().readTree(r.out());
        assertEquals(2, json.get("models").size());
        for (JsonNode m : json.get("models")) {
            JsonNode rows = m.get("rows");
            boolean lm = m.get("model").asText().equals("transformer");
            assertEquals(lm ? 7 : 6, rows.size());
            assertEquals("baseline", rows.get(0).get("technique").asText());
            if (lm) {   // the baseline's attention is fused; the unfused path is the last row
                assertEquals("unfused (math) attention", rows.get(6).get("technique").asText());
                assertTrue(rows.get(6).get("peak_allocated_bytes").asLong() > rows.get(0).get("peak_allocated_bytes").asLong());
            }
            assertEquals("accumulation x4", rows.get(5).get("technique").asText());
            assertEquals(4, rows.get(5).get("options").get("accumulate").asInt());
            assertEquals(rows.get(0).get("options").get("batch_size").asInt() / 4, rows.get(5).get("options").get("batch_size").asInt());
            assertTrue(rows.get(3).has("skipped_steps"), "fp16 reports skipped steps");
            for (JsonNode row : rows) {
                assertTrue(row.get("peak_reserved_bytes").asLong() >= row.get("peak_allocated_bytes").asLong());
                assertTrue(row.get("step_seconds_median").asDouble() > 0);
            }
        }
        assertEquals(4, json.get("batch_size_finder").get("results").size());
        for (String s : List.of("target checkpointing cuts peak activation memory", "target bf16 autocast cuts peak allocated",
                "target accumulation x4 cuts activation memory", "target batch-size finder")) {
            assertTrue(r.err().contains(s), s + " in " + r.err());
        }
    }

    @Test
    void attentionTableOnHostAndTheTargetOnSim() throws Exception {
        CliRunner.Result r = CliRunner.run("bench", "attention", "--contexts", "16,40", "--steps", "1", "--layers", "1",
                "--hidden", "16", "--heads", "2", "--batch-size", "2", "--device", "host:1GiB", "--data", TEXT, "--json");
        assertEquals(0, r.exitCode(), r.err());
        JsonNode rows = new ObjectMapper().readTree(r.out()).get("rows");
        assertEquals(4, rows.size());
        for (int i = 0; i < 4; i += 2) {
            JsonNode math = rows.get(i);
            JsonNode flash = rows.get(i + 1);
            assertEquals("math", math.get("attention").asText());
            assertEquals("flash", flash.get("attention").asText());
            assertEquals(math.get("context").asInt(), flash.get("context").asInt());
            assertTrue(flash.get("peak_allocated_bytes").asLong() < math.get("peak_allocated_bytes").asLong(), rows.toString());
            assertEquals(1 - flash.get("peak_allocated_bytes").asDouble() / math.get("peak_allocated_bytes").asDouble(),
                    flash.get("peak_allocated_cut").asDouble(), 1e-12);
            assertTrue(math.get("step_seconds_median").asDouble() > 0);
        }
        assertFalse(r.err().contains("target"), "no context 1024, no target: " + r.err());

        CliRunner.Result sim = CliRunner.run("bench", "attention", "--contexts", "1024", "--steps", "1", "--layers", "2",
                "--hidden", "64", "--heads", "4", "--batch-size", "2", "--device", "sim:8GiB", "--data", TEXT, "--json");
        assertEquals(0, sim.exitCode(), sim.err());
        JsonNode json = new ObjectMapper().readTree(sim.out());
        assertEquals(1024, json.get("target_context").asInt());
        assertEquals(json.get("rows").get(1).get("peak_allocated_cut").asDouble(), json.get("target_peak_allocated_cut").asDouble());
        String line = sim.err().lines().filter(l -> l.contains("target fused attention")).findFirst().orElseThrow();
        assertEquals(json.get("target_peak_allocated_cut").asDouble() >= 0.3, line.contains(" MET "), line);
    }

    @Test
    void lossCurvesForThreePrecisions() throws Exception {
        CliRunner.Result r = CliRunner.run("bench", "loss-curves", "--steps", "6", "--every", "3", "--layers", "1", "--hidden", "32",
                "--batch-size", "4", "--device", "host:1GiB", "--data", TEXT, "--json");
        assertEquals(0, r.exitCode(), r.err());
        JsonNode json = new ObjectMapper().readTree(r.out());
        for (String k : List.of("float32", "bf16", "fp16")) {
            assertEquals(6, json.get(k).size(), k);
        }
        // same start, same batches: the first losses agree to low precision
        assertEquals(json.get("float32").get(0).asDouble(), json.get("bf16").get(0).asDouble(), 0.05);
        assertTrue(r.err().contains("bf16-fp32"), r.err());
    }

    @Test
    void badValuesExitWithCode2() {
        String[][] cases = {
                {"bench", "techniques", "--steps", "0"},
                {"bench", "techniques", "--model", "rnn"},
                {"bench", "techniques", "--batch-size", "6"},
                {"bench", "loss-curves", "--every", "0"},
                {"bench", "loss-curves", "--data", "/nonexistent.txt"},
                {"bench", "attention", "--steps", "0"},
                {"bench", "attention", "--contexts", "0"},
                {"bench", "attention", "--heads", "3"},
        };
        String[] expected = {"--steps", "--model", "--batch-size", "--every", "--data", "--steps", "--contexts", "--heads"};
        for (int i = 0; i < cases.length; i++) {
            CliRunner.Result r = CliRunner.run(cases[i]);
            String what = String.join(" ", cases[i]);
            assertEquals(2, r.exitCode(), what + ": " + r.err());
            List<String> lines = r.err().lines().filter(l -> !l.startsWith("WARNING")).toList();
            assertEquals(1, lines.size(), what + ": " + r.err());
            assertTrue(lines.getFirst().contains(expected[i]), what + ": " + lines.getFirst());
            assertFalse(r.err().contains("\tat "), what);
        }
    }
}
