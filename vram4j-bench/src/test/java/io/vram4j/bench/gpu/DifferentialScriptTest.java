package io.vram4j.bench.gpu;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The parts of the differential test against PyTorch that need no GPU: the Python and Java operation generators
 * agree, vram4j's side runs (here on {@code sim}) and writes what the comparison reads, and the comparison finds a
 * value, layout and key-set differences and refuses bad input. Needs {@code python3} (fails under {@code CI=true} without it).
 */
class DifferentialScriptTest {
    private static final Path SCRIPT = Path.of("..", "gpu", "differential.py");

    record Result(int code, String out) {
    }

    @Test
    void pythonAndJavaGenerateTheSameOperations() {
        for (long seed : new long[] {1, 7, 20}) {
            List<OpSequence.Op> ops = OpSequence.generate(seed, 3_000, DifferentialRun.CAP);
            List<String> expected = new ArrayList<>();
            for (OpSequence.Op op : ops) {
                expected.add(switch (op.kind()) {
                    case MALLOC -> "malloc " + op.size();
                    case FREE -> "free " + op.index();
                    case EMPTY_CACHE -> "empty_cache";
                });
            }
            Result r = python("ops", "--seed", Long.toString(seed), "--ops", "3000");
            assertEquals(0, r.code(), r.out());
            assertEquals(expected, r.out().strip().lines().toList(), "seed " + seed);
            assertTrue(expected.stream().anyMatch(s -> s.startsWith("free")) && expected.contains("empty_cache"));
        }
    }

    @Test
    void comparisonFindsDifferencesAndRefusesBadInput(@TempDir Path dir) throws IOException {
        Path ours = dir.resolve("ours.jsonl");
        DifferentialRun.run("sim:H100-80GB", "expandable_segments:True", 2, 300, 100, ours);
        List<String> lines = Files.readAllLines(ours);
        assertEquals(2 * 3, lines.size(), "checkpoints at 100, 200, 300 for two seeds");
        Result same = python("compare", ours.toString(), ours.toString());
        assertEquals(0, same.code(), same.out());
        assertTrue(same.out().startsWith("checkpoints 6  stat differences 0  layout differences 0"), same.out());

        Path changed = dir.resolve("changed.jsonl");
        List<String> stat = new ArrayList<>(lines);
        stat.set(4, stat.get(4).replaceFirst("\"num_alloc_retries\":0", "\"num_alloc_retries\":1"));
        Files.write(changed, stat);
        Result diff = python("compare", ours.toString(), changed.toString());
        assertEquals(1, diff.code(), diff.out());
        assertTrue(diff.out().startsWith("checkpoints 6  stat differences 1  layout differences 0  keys only in"
                + " pytorch 0  keys only in vram4j 0\n"), diff.out());
        assertTrue(diff.out().contains("\n  seed 2 step 200: num_alloc_retries 0 vs 1\n"), diff.out());

        // a block's state changed in one checkpoint: a layout difference, located to the segment and block
        List<String> layout = new ArrayList<>(lines);
        assertTrue(layout.get(1).contains("\"active_allocated\""));
        layout.set(1, layout.get(1).replaceFirst("\"active_allocated\"", "\"inactive\""));
        Files.write(changed, layout);
        diff = python("compare", ours.toString(), changed.toString());
        assertEquals(1, diff.code(), diff.out());
        assertTrue(diff.out().startsWith("checkpoints 6  stat differences 0  layout differences 1  "), diff.out());
        assertTrue(diff.out().matches("(?s).*\n  seed 1 step 200: layout: segment \\d+ \\(\\w+ \\d+ vs \\w+ \\d+\\)"
                + " block \\d+ \\[offset, size, state\\]: \\[\\d+, \\d+, \"active_allocated\"\\] vs"
                + " \\[\\d+, \\d+, \"inactive\"\\]\n.*"), diff.out());

        // keys on one side only (a PyTorch version's new or dropped statistic) are named, apart from values
        List<String> keys = new ArrayList<>();
        for (String line : lines) {
            keys.add(line.replaceFirst("\"num_ooms\":\\d+,", "").replace("\"stats\":{", "\"stats\":{\"num_new_stat\":0,"));
        }
        Files.write(changed, keys);
        diff = python("compare", changed.toString(), ours.toString());
        assertEquals(1, diff.code(), diff.out());
        assertTrue(diff.out().startsWith("checkpoints 6  stat differences 0  layout differences 0  keys only in"
                + " pytorch 1  keys only in vram4j 1\n"), diff.out());
        assertTrue(diff.out().contains("changed.jsonl: num_new_stat\n"), diff.out());
        assertTrue(diff.out().contains("ours.jsonl: num_ooms\n"), diff.out());

        Path broken = dir.resolve("broken.jsonl");
        Files.writeString(broken, "{\"seed\": 1}\n");
        Result bad = python("compare", ours.toString(), broken.toString());
        assertEquals(2, bad.code());
        assertEquals(1, bad.out().strip().lines().count(), bad.out());
        assertTrue(bad.out().contains("broken.jsonl:1: no 'step' field"), bad.out());

        Files.write(broken, lines.subList(0, 4));
        bad = python("compare", ours.toString(), broken.toString());
        assertEquals(2, bad.code());
        assertEquals(1, bad.out().strip().lines().count(), bad.out());
        assertTrue(bad.out().contains("broken.jsonl (4) do not have the same checkpoints: checkpoint 5 is seed 2"
                + " step 200 in the first, its end in the second"), bad.out());
    }

    private static Result python(String... args) {
        List<String> cmd = new ArrayList<>(List.of("python3", SCRIPT.toString()));
        cmd.addAll(List.of(args));
        try {
            Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            assertTrue(p.waitFor(60, TimeUnit.SECONDS), "python3 did not finish");
            return new Result(p.exitValue(), out);
        } catch (IOException e) {
            String reason = "no python3 on this machine (" + e.getMessage() + ")";
            if ("true".equals(System.getenv("CI"))) {
                throw new AssertionError(reason + " (required under CI=true)");
            }
            Assumptions.abort(reason);
            throw new AssertionError(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        }
    }
}
