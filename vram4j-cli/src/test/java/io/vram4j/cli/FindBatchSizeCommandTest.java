package io.vram4j.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

class FindBatchSizeCommandTest {
    static final String TEXT = TrainTransformerCommandTest.TEXT.toString();

    @Test
    void dryRunTableForTheFourSettings() throws Exception {
        CliRunner.Result r = CliRunner.run("find-batch-size", "--device", "sim:64MiB", "--hidden", "32", "--heads", "2",
                "--layers", "4", "--block-size", "64", "--data", TEXT, "--json");
        assertEquals(0, r.exitCode(), r.err());
        JsonNode json = new ObjectMapper().readTree(r.out());
        JsonNode results = json.get("results");
        assertEquals(4, results.size());
        assertEquals(List.of("baseline", "checkpointing (4 segments)", "bf16 autocast", "checkpointing (4 segments), bf16 autocast"),
                List.of(results.get(0).get("technique").asText(), results.get(1).get("technique").asText(),
                        results.get(2).get("technique").asText(), results.get(3).get("technique").asText()));
        int base = results.get(0).get("largest_batch").asInt();
        assertTrue(base > 1, r.out());
        assertTrue(results.get(3).get("largest_batch").asInt() > base, r.out());
        for (JsonNode res : results) {
            assertTrue(res.get("peak_reserved_bytes").asLong() <= 64L << 20);
            assertTrue(res.get("tries").size() > 2);
        }
        assertTrue(r.err().contains("dry run, nothing computed"), r.err());
        assertTrue(r.err().contains("largest batch"), r.err());
    }

    @Test
    void realSearchOnASmallHostDeviceAgreesWithTheDryRun() throws Exception {
        String[] model = {"--hidden", "32", "--heads", "2", "--layers", "2", "--block-size", "32", "--data", TEXT, "--json"};
        CliRunner.Result real = CliRunner.run(concat(new String[] {"find-batch-size", "--device", "host:8MiB"}, model));
        assertEquals(0, real.exitCode(), real.err());
        assertTrue(real.err().contains("find-batch-size on host:8MiB (real run)"), real.err());
        JsonNode results = new ObjectMapper().readTree(real.out()).get("results");
        assertEquals(4, results.size());
        for (JsonNode res : results) {
            int largest = res.get("largest_batch").asInt();
            assertTrue(largest > 1 && largest < 65536, res.toString());
            assertTrue(res.get("peak_reserved_bytes").asLong() <= 8L << 20, res.toString());
            boolean largestFits = false;
            boolean largerFails = false;
            for (JsonNode t : res.get("tries")) {
                int b = t.get("batch_size").asInt();
                largestFits |= b == largest && t.get("fits").asBoolean();
                largerFails |= b == largest + 1 && !t.get("fits").asBoolean();
                assertTrue(t.get("fits").asBoolean() == (b <= largest), "every batch up to the largest fits, none above: " + t);
            }
            assertTrue(largestFits && largerFails, "the search tried the largest batch and the next one: " + res);
        }
        assertTrue(results.get(3).get("largest_batch").asInt() > results.get(0).get("largest_batch").asInt(), real.out());

        // the dry run on a simulated device of the same size predicts the same batches and peak reserved bytes,
        // for every setting (host places segments as sim does, so best fit breaks ties alike)
        CliRunner.Result dry = CliRunner.run(concat(new String[] {"find-batch-size", "--device", "sim:8MiB"}, model));
        assertEquals(0, dry.exitCode(), dry.err());
        JsonNode predicted = new ObjectMapper().readTree(dry.out()).get("results");
        assertEquals(results.size(), predicted.size());
        for (int i = 0; i < results.size(); i++) {
            assertEquals(results.get(i).get("largest_batch").asInt(), predicted.get(i).get("largest_batch").asInt(),
                    results.get(i).get("technique").asText());
            assertEquals(results.get(i).get("peak_reserved_bytes").asLong(), predicted.get(i).get("peak_reserved_bytes").asLong(),
                    results.get(i).get("technique").asText());
        }
    }

    /** --memory-fraction caps reserved memory at floor(F x total), as torch.cuda.set_per_process_memory_fraction. */
    @Test
    void aMemoryFractionCapsTheSearch() throws Exception {
        CliRunner.Result r = CliRunner.run("find-batch-size", "--device", "sim:64MiB", "--memory-fraction", "0.5",
                "--hidden", "32", "--heads", "2", "--layers", "2", "--block-size", "32", "--data", TEXT, "--json");
        assertEquals(0, r.exitCode(), r.err());
        JsonNode json = new ObjectMapper().readTree(r.out());
        assertEquals(0.5, json.get("memory_fraction").asDouble());
        for (JsonNode res : json.get("results")) {
            assertTrue(res.get("peak_reserved_bytes").asLong() <= 32L << 20, res.toString());
            assertTrue(res.get("largest_batch").asInt() > 1, res.toString());
        }
        assertTrue(r.err().contains("memory limit: 32.00 MiB (33,554,432 bytes), per-process memory fraction 0.5 of the "
                + "device's 67,108,864 bytes"), r.err());
        CliRunner.Result whole = CliRunner.run("find-batch-size", "--device", "sim:64MiB", "--hidden", "32", "--heads", "2",
                "--layers", "2", "--block-size", "32", "--data", TEXT, "--json");
        assertTrue(new ObjectMapper().readTree(whole.out()).get("results").get(0).get("largest_batch").asInt()
                > json.get("results").get(0).get("largest_batch").asInt(), "half the memory, a smaller batch");
        assertFalse(new ObjectMapper().readTree(whole.out()).has("memory_fraction"));
    }

    @Test
    void badMemoryFractionsAreOneLineAndExitTwo() {
        for (String[] bad : new String[][] {
                {"abc", "--memory-fraction: 'abc' is not a number; expected a fraction of the device's memory in (0, 1], e.g. 0.9"},
                {"", "--memory-fraction: '' is not a number"},
                {"1.5", "--memory-fraction: 1.5 is outside (0, 1]"},
                {"0", "--memory-fraction: 0 is outside (0, 1]; expected a fraction of the device's memory, e.g. 0.9 (0 would let nothing fit)"},
                {"-0.25", "--memory-fraction: -0.25 is outside (0, 1]"},
                {"NaN", "--memory-fraction: NaN is outside (0, 1]"},
                {"Infinity", "--memory-fraction: Infinity is outside (0, 1]"}}) {
            CliRunner.Result f = CliRunner.run("find-batch-size", "--device", "sim:64MiB", "--memory-fraction", bad[0]);
            assertEquals(2, f.exitCode(), f.err());
            assertTrue(f.err().contains(bad[1]), f.err());
            assertEquals(1, f.err().strip().lines().filter(l -> !l.startsWith("WARNING")).count(), "one line: " + f.err());
            CliRunner.Result t = CliRunner.run("train", "--dry-run", "--device", "sim:64MiB", "--memory-fraction", bad[0],
                    "--data", TrainCommandTest.BUNDLED.toString());
            assertEquals(2, t.exitCode(), t.err());
            assertTrue(t.err().contains(bad[1]), t.err());
        }
    }

    static String[] concat(String[] a, String[] b) {
        String[] c = java.util.Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, c, a.length, b.length);
        return c;
    }

    @Test
    void trainFindsTheBatchThenTrainsWithIt(@TempDir Path tmp) throws Exception {
        CliRunner.Result r = TrainTransformerCommandTest.run(tmp.resolve("run"), "--find-batch-size", "--dry-run", "--device", "sim:8MiB",
                "--checkpoint", "--amp", "bf16", "--json");
        assertEquals(0, r.exitCode(), r.err());
        JsonNode json = new ObjectMapper().readTree(r.out());
        JsonNode search = json.get("batch_size_search");
        assertEquals(4, search.size(), "these settings are one of the four");
        int found = search.get(3).get("largest_batch").asInt();
        assertEquals(found, json.get("batch_size").asInt(), "the dry run used the batch that was found");
        assertTrue(r.err().contains("training with the largest batch that fits these settings: "), r.err());
    }

    @Test
    void profileMemoryPrintsTheCategories(@TempDir Path tmp) throws Exception {
        CliRunner.Result r = TrainTransformerCommandTest.run(tmp.resolve("run"), "--profile-memory", "--json", "--sample", "0");
        assertEquals(0, r.exitCode(), r.err());
        JsonNode p = new ObjectMapper().readTree(r.out()).get("memory_profile");
        long sum = 0;
        for (String c : List.of("parameters", "gradients", "optimizer_state", "activations", "temporaries", "untracked")) {
            sum += p.get(c).asLong();
        }
        assertEquals(p.get("peak_allocated").asLong(), sum);
        assertTrue(p.get("parameters").asLong() > 0 && p.get("activations").asLong() > 0, p.toString());
        assertTrue(r.err().contains("peak memory by category"), r.err());
        assertTrue(r.err().contains("reached in: "), r.err());
        assertTrue(r.err().contains("live tensors: "), r.err());
    }

    @Test
    void badValuesExitWithCode2(@TempDir Path tmp) {
        String[][] cases = {
                {"--max-batch", "0"},
                {"--amp", "fp8"},
                {"--device", "gpu:1"},
                {"--checkpoint", "0"},
                {"--model", "cnn"},
                {"--alloc-conf", "nonsense:1"},
        };
        String[] expected = {"--max-batch", "--amp", "--device", "--checkpoint", "--model", "--alloc-conf"};
        for (int i = 0; i < cases.length; i++) {
            String[] args = new String[cases[i].length + 3];
            args[0] = "find-batch-size";
            System.arraycopy(cases[i], 0, args, 1, cases[i].length);
            args[args.length - 2] = "--data";
            args[args.length - 1] = TEXT;
            CliRunner.Result r = CliRunner.run(args);
            String what = String.join(" ", cases[i]);
            assertEquals(2, r.exitCode(), what + ": " + r.err());
            List<String> lines = r.err().lines().filter(l -> !l.startsWith("WARNING")).toList();
            assertEquals(1, lines.size(), what + ": " + r.err());
            assertTrue(lines.getFirst().contains(expected[i]), what + ": " + lines.getFirst());
            assertFalse(r.err().contains("\tat "), what);
        }
    }

    /** The MLP's header names its 784 inputs, each try has its line, and a search that fits its bound says so. */
    @Test
    void mlpSearchShowsTheModelEachTryAndTheUpperBound() {
        CliRunner.Result r = CliRunner.run("find-batch-size", "--model", "mlp", "--hidden", "64", "--device", "sim:1GiB",
                "--max-batch", "64");
        assertEquals(0, r.exitCode(), r.err());
        assertTrue(r.out().contains("mlp 784-64-64-10 relu"), r.out());
        for (int b = 1; b <= 64; b *= 2) {
            assertTrue(r.out().contains("  baseline: batch " + b + " fits, peak reserved "), r.out());
        }
        assertTrue(r.out().contains("baseline: the search stopped at its upper bound (--max-batch 64), which fits"), r.out());
        CliRunner.Result small = CliRunner.run("find-batch-size", "--model", "mlp", "--device", "sim:4MiB");
        assertEquals(0, small.exitCode(), small.err());
        assertTrue(small.out().contains("out of memory in training"), small.out());
        assertFalse(small.out().contains("upper bound"), small.out());
    }
}
