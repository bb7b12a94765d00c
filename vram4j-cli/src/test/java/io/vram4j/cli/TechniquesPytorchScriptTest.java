package io.vram4j.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The side-by-side comparison with PyTorch ({@code gpu/techniques_pytorch.py compare}) reads what
 * {@code bench techniques --json} writes: the model configs carry what the script builds PyTorch's models from,
 * the rows line up by technique, the targets are computed from both files, a parameter-count mismatch is found and
 * bad input is refused with the file and field named. The PyTorch file is made here from vram4j's own rows with
 * known ratios (the script's {@code run} half needs PyTorch and runs on the GPU machine). Needs {@code python3}.
 */
class TechniquesPytorchScriptTest {
    private static final PythonScript SCRIPT = PythonScript.gpu("techniques_pytorch.py");
    private static final ObjectMapper JSON = new ObjectMapper();
    private static JsonNode vram4j;

    @BeforeAll
    static void benchTinyModels() throws IOException {
        CliRunner.Result r = CliRunner.run("bench", "techniques", "--steps", "1", "--layers", "1", "--hidden", "16",
                "--heads", "2", "--block-size", "16", "--batch-size", "4", "--mlp-hidden", "16", "--mlp-layers", "1",
                "--mlp-batch", "8", "--device", "host:1GiB", "--finder-device", "none", "--json");
        assertEquals(0, r.exitCode(), r.err());
        vram4j = JSON.readTree(r.out());
    }

    @Test
    void configsDescribeTheModelsExactly() {
        JsonNode mlp = vram4j.get("models").get(0).get("config");
        assertEquals("mlp", mlp.get("kind").asText());
        assertEquals(List.of(784, 16, 10), ints(mlp.get("widths")));
        assertEquals(784 * 16 + 16 + 16 * 10 + 10, mlp.get("parameters").asLong());
        assertEquals("sgd", mlp.get("optimizer").asText());

        JsonNode lm = vram4j.get("models").get(1).get("config");
        assertEquals("transformer", lm.get("kind").asText());
        long v = lm.get("vocabulary").asLong();
        long c = 16;
        // GPT-2's layout: embeddings, per block 2 norms, qkv, projection and the 4x MLP with biases, final norm, head
        assertEquals(v * c + 16 * c + (12 * c * c + 13 * c) + 2 * c + c * v, lm.get("parameters").asLong());
        assertEquals("adamw", lm.get("optimizer").asText());
        JsonNode rows = vram4j.get("models").get(1).get("rows");
        assertTrue(rows.get(1).get("options").get("checkpoint").asInt() > 0);
        assertEquals("bf16", rows.get(2).get("options").get("amp").asText());
        assertEquals("fp16", rows.get(3).get("options").get("amp").asText());
        assertEquals("flash", rows.get(0).get("options").get("attention").asText());
        assertEquals("math", rows.get(6).get("options").get("attention").asText());
    }

    @Test
    void rowsSideBySideWithTheTargets(@TempDir Path dir) throws IOException {
        Path ours = write(dir.resolve("vram4j.json"), vram4j);
        PythonScript.Result r = python("compare", ours.toString(), write(dir.resolve("torch.json"), pytorch(0)).toString());
        assertEquals(0, r.code(), r.out());
        for (JsonNode m : vram4j.get("models")) {
            String name = m.get("model").asText();
            assertTrue(r.out().contains(String.format(Locale.ROOT, "parameters: vram4j %,d, PyTorch %,d",
                    m.get("config").get("parameters").asLong(), m.get("config").get("parameters").asLong())), r.out());
            for (JsonNode row : m.get("rows")) {
                assertTrue(r.out().contains("  " + row.get("technique").asText()), row.get("technique") + " in " + r.out());
            }
            // made with PyTorch's baseline twice as fast, every other row 0.8x vram4j's time, reserved bytes equal
            assertTrue(r.out().matches("(?s).*target " + name + " baseline: step time <= 1\\.5x PyTorch eager: +MISSED 2\\.00x.*"), r.out());
            assertTrue(r.out().matches("(?s).*target " + name + " accumulation x4: step time <= 1\\.5x PyTorch eager: +MET +1\\.25x.*"), r.out());
            assertTrue(r.out().matches("(?s).*target " + name + " baseline: peak reserved within 10% of PyTorch's: +MET +\\+0\\.0%.*"), r.out());
            assertTrue(r.out().contains("target " + name + " checkpointing: <= +35% step time"), r.out());
        }
        assertTrue(r.out().contains("target transformer fused attention's peak >= 30% below unfused (context 16)"), r.out());
        assertTrue(r.out().contains("target transformer bf16 at least 25% faster than float32"), r.out());
    }

    @Test
    void eagerAndCompileRunsMadeApartAreMerged(@TempDir Path dir) throws IOException {
        // gpu/run.sh runs eager and torch.compile as two processes (compile under its own time limit)
        ObjectNode eagerOnly = (ObjectNode) pytorch(0);
        ObjectNode compileOnly = (ObjectNode) pytorch(0);
        for (JsonNode m : eagerOnly.get("models")) {
            ((ObjectNode) m.get("modes")).remove("compile");
        }
        for (JsonNode m : compileOnly.get("models")) {
            ObjectNode modes = (ObjectNode) m.get("modes");
            modes.remove("eager");
            for (JsonNode row : modes.get("compile")) {
                ((ObjectNode) row).remove("error");
                ((ObjectNode) row).put("step_seconds_median", 0.123456);
            }
        }
        Path ours = write(dir.resolve("vram4j.json"), vram4j);
        PythonScript.Result r = python("compare", ours.toString(), write(dir.resolve("eager.json"), eagerOnly).toString(),
                write(dir.resolve("compile.json"), compileOnly).toString());
        assertEquals(0, r.code(), r.out());
        assertTrue(r.out().contains("0.1235"), "the compile column comes from the second file: " + r.out());
        assertTrue(r.out().matches("(?s).*target mlp baseline: step time <= 1\\.5x PyTorch eager: +MISSED 2\\.00x.*"),
                "the eager targets from the first: " + r.out());

        ObjectNode other = (ObjectNode) pytorch(5);
        PythonScript.Result clash = python("compare", ours.toString(), dir.resolve("eager.json").toString(),
                write(dir.resolve("other.json"), other).toString());
        assertEquals(2, clash.code(), clash.out());
        assertTrue(clash.out().strip().startsWith("techniques_pytorch.py: " + dir.resolve("other.json") + ": models[1]: "
                + "parameters"), clash.out());
    }

    @Test
    void differentModelsAreFound(@TempDir Path dir) throws IOException {
        PythonScript.Result r = python("compare", write(dir.resolve("vram4j.json"), vram4j).toString(),
                write(dir.resolve("torch.json"), pytorch(1)).toString());
        assertEquals(1, r.code(), r.out());
        assertTrue(r.out().contains("MISMATCH: not the same model"), r.out());
    }

    @Test
    void badInputIsRefusedNamingTheFileAndField(@TempDir Path dir) throws IOException {
        Path torch = write(dir.resolve("torch.json"), pytorch(0));
        ObjectNode broken = vram4j.deepCopy();
        ((ObjectNode) broken.get("models").get(1).get("rows").get(2)).remove("options");
        Path bad = write(dir.resolve("bad.json"), broken);
        PythonScript.Result r = python("compare", bad.toString(), torch.toString());
        assertEquals(2, r.code(), r.out());
        assertEquals("techniques_pytorch.py: " + bad + ": models[1].rows[2]: field 'options' missing or not a dict",
                r.out().strip());

        Path notJson = dir.resolve("torch.txt");
        Files.writeString(notJson, "step 1 0.1 s\n");
        PythonScript.Result t = python("compare", write(dir.resolve("vram4j.json"), vram4j).toString(), notJson.toString());
        assertEquals(2, t.code(), t.out());
        assertTrue(t.out().startsWith("techniques_pytorch.py: " + notJson + ": not a readable techniques_pytorch.py run JSON file"), t.out());

        PythonScript.Result mode = python("run", write(dir.resolve("vram4j.json"), vram4j).toString(), "--modes", "eager,jit");
        assertEquals(2, mode.code(), mode.out());
        assertEquals("techniques_pytorch.py: --modes: unknown mode 'jit'; expected eager and/or compile", mode.out().strip());
    }

    /** A PyTorch result file made from vram4j's rows: baseline 0.5x vram4j's step time, the rest 0.8x. */
    private static JsonNode pytorch(long parameterOffset) {
        ObjectNode doc = JSON.createObjectNode().put("torch", "test").put("device", "test").put("steps", 1);
        ArrayNode models = doc.putArray("models");
        for (JsonNode m : vram4j.get("models")) {
            ObjectNode out = models.addObject().put("model", m.get("model").asText())
                    .put("parameters", m.get("config").get("parameters").asLong()
                            + (m.get("model").asText().equals("transformer") ? parameterOffset : 0));
            ObjectNode modes = out.putObject("modes");
            ArrayNode eager = modes.putArray("eager");
            ArrayNode compiled = modes.putArray("compile");
            for (JsonNode row : m.get("rows")) {
                boolean base = row.get("technique").asText().equals("baseline");
                eager.addObject().put("technique", row.get("technique").asText())
                        .put("step_seconds_median", row.get("step_seconds_median").asDouble() * (base ? 0.5 : 0.8))
                        .put("peak_allocated_bytes", row.get("peak_allocated_bytes").asLong())
                        .put("peak_reserved_bytes", row.get("peak_reserved_bytes").asLong());
                compiled.addObject().put("technique", row.get("technique").asText()).put("error", "not here");
            }
        }
        return doc;
    }

    private static Path write(Path file, JsonNode doc) throws IOException {
        JSON.writeValue(file.toFile(), doc);
        return file;
    }

    private static List<Integer> ints(JsonNode array) {
        List<Integer> out = new ArrayList<>();
        array.forEach(n -> out.add(n.asInt()));
        return out;
    }

    private static PythonScript.Result python(String... args) {
        return SCRIPT.run(args);
    }
}
