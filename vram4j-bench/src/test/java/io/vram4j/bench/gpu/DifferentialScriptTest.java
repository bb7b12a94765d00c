package io.vram4j.bench.gpu;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The parts of the differential test against PyTorch that need no GPU: the Python and Java operation generators
 * agree (record_stream frees included), vram4j's side runs (here on {@code sim}) and writes what the comparison
 * reads, recorded frees stay pending exactly until the next malloc or empty_cache, and the comparison finds value,
 * layout and key-set differences and refuses bad input. Needs {@code python3} (fails under {@code CI=true} without it).
 */
class DifferentialScriptTest {
    private static final Path SCRIPT = Path.of("..", "gpu", "differential.py");
    private static final ObjectMapper JSON = new ObjectMapper();

    record Result(int code, String out) {
    }

    @Test
    void pythonAndJavaGenerateTheSameOperations() {
        for (long seed : new long[] {1, 7, 20}) {
            List<OpSequence.Op> ops = OpSequence.generate(seed, 3_000, DifferentialRun.CAP);
            List<String> expected = ops.stream().map(OpSequence.Op::toString).toList();
            Result r = python("ops", "--seed", Long.toString(seed), "--ops", "3000");
            assertEquals(0, r.code(), r.out());
            assertEquals(expected, r.out().strip().lines().toList(), "seed " + seed);
            for (String kind : List.of("malloc ", "malloc_tensor ", "free ", "free_recorded ", "empty_cache")) {
                assertTrue(expected.stream().anyMatch(s -> s.startsWith(kind)), kind + "in seed " + seed);
            }
        }
    }

    @Test
    void everyRecordedBlockIsFreedExactlyOnceWithRecordStream() {
        for (long seed = 1; seed <= 20; seed++) {
            List<OpSequence.Op> ops = OpSequence.generate(seed, 2_000, DifferentialRun.CAP);
            List<Boolean> tensor = new ArrayList<>();
            long recorded = 0;
            for (OpSequence.Op op : ops) {
                switch (op.kind()) {
                    case MALLOC, MALLOC_TENSOR -> tensor.add(op.kind() == OpSequence.Kind.MALLOC_TENSOR);
                    case FREE -> assertFalse(tensor.remove(op.index()), "seed " + seed + ": " + op);
                    case FREE_RECORDED -> {
                        assertTrue(tensor.remove(op.index()), "seed " + seed + ": " + op);
                        recorded++;
                    }
                    case EMPTY_CACHE -> { }
                }
            }
            assertTrue(recorded > 0 && recorded < 100, "seed " + seed + ": " + recorded + " recorded frees");
        }
    }

    /**
     * Both drivers make the same allocator calls in the same order: {@code differential.py pytorch} against a
     * stand-in torch that logs them ({@code src/test/python/fake_torch}), vram4j's side on {@code sim} through
     * its trace, addresses replaced by allocation numbers. Checks in particular that a recorded free is
     * record_stream, then the free itself (the tensor's last reference dropped), then the synchronization, and
     * that both sides clean up between seeds alike. After the runs the Python side checks once that a uint8
     * tensor of n bytes allocates exactly as caching_allocator_alloc(n) (the last four lines).
     */
    @Test
    void bothSidesMakeTheSameAllocatorCalls(@TempDir Path dir) throws IOException {
        List<String> expected = new ArrayList<>();
        Map<Long, Integer> ids = new HashMap<>();
        int[] next = {0};
        DifferentialRun.run("sim:H100-80GB", "", 3, 400, 100, dir.resolve("vram4j.jsonl"), call -> {
            String[] f = call.split(" ");
            expected.add(switch (f[0]) {
                case "malloc" -> {
                    ids.put(Long.parseLong(f[1]), next[0]);
                    yield "malloc " + next[0]++ + " " + f[2];
                }
                case "record" -> "record " + ids.get(Long.parseLong(f[1]));
                case "free" -> "free " + ids.remove(Long.parseLong(f[1]));
                default -> call;
            });
        });
        int n = next[0];
        expected.addAll(List.of("malloc " + n + " 12345", "free " + n, "malloc " + (n + 1) + " 12345",
                "free " + (n + 1)));
        Path log = dir.resolve("calls.log");
        Result r = python(Map.of("PYTHONPATH", Path.of("src", "test", "python", "fake_torch").toAbsolutePath()
                        .toString(), "FAKE_TORCH_LOG", log.toString()),
                "pytorch", "--conf", "", "--seeds", "3", "--ops", "400", "--every", "100",
                "--out", dir.resolve("pytorch.jsonl").toString());
        assertEquals(0, r.code(), r.out());
        assertEquals("fake", r.out().strip());
        List<String> actual = Files.readAllLines(log);
        int i = 0;
        while (i < expected.size() && i < actual.size() && expected.get(i).equals(actual.get(i))) {
            i++;
        }
        if (i < expected.size() || i < actual.size()) {
            throw new AssertionError("call " + (i + 1) + " differs: vram4j "
                    + expected.subList(Math.max(0, i - 3), Math.min(expected.size(), i + 3)) + ", differential.py "
                    + actual.subList(Math.max(0, i - 3), Math.min(actual.size(), i + 3)));
        }
        assertTrue(expected.stream().filter(c -> c.startsWith("record ")).count() >= 3, "recorded frees");
        assertEquals(Files.readAllLines(dir.resolve("vram4j.jsonl")).size(),
                Files.readAllLines(dir.resolve("pytorch.jsonl")).size());
    }

    /**
     * vram4j's side on {@code sim}, a checkpoint after every operation: a block freed after {@code record_stream}
     * on the side stream stays {@code active_pending_free} (counted in {@code active}, not in {@code allocation})
     * until the next malloc's {@code process_events} or {@code empty_cache} returns it, as PyTorch's allocator
     * does once the event has completed (the device synchronization after the free sees to that on a GPU).
     */
    @Test
    void recordedFreesStayPendingUntilTheNextMallocOrEmptyCache(@TempDir Path dir) throws IOException {
        for (String conf : List.of("", "expandable_segments:True")) {
            Path out = dir.resolve("every-op.jsonl");
            int count = 1_500;
            DifferentialRun.run("sim:H100-80GB", conf, 1, count, 1, out);
            List<String> lines = Files.readAllLines(out);
            assertEquals(count, lines.size());
            List<OpSequence.Op> ops = OpSequence.generate(1, count, DifferentialRun.CAP);
            int pending = 0;
            int live = 0;
            int emptyCaches = 0;
            int seenPending = 0;
            for (int i = 0; i < count; i++) {
                OpSequence.Op op = ops.get(i);
                switch (op.kind()) {
                    case MALLOC, MALLOC_TENSOR -> {
                        pending = 0;
                        live++;
                    }
                    case FREE -> live--;
                    case FREE_RECORDED -> {
                        pending++;
                        live--;
                    }
                    case EMPTY_CACHE -> {
                        pending = 0;
                        emptyCaches++;
                    }
                }
                JsonNode row = JSON.readTree(lines.get(i));
                JsonNode stats = row.get("stats");
                String where = "[" + conf + "] step " + (i + 1) + " (" + op + ")";
                assertEquals(i + 1, row.get("step").asInt());
                assertEquals(live, stats.get("allocation.all.current").asLong(), where);
                assertEquals(live + pending, stats.get("active.all.current").asLong(), where);
                assertEquals(emptyCaches, stats.get("num_sync_all_streams").asLong(), where);
                int pendingBlocks = 0;
                long pendingBytes = 0;
                for (JsonNode segment : row.get("segments")) {
                    for (JsonNode block : segment.get("blocks")) {
                        if (block.get(2).asText().equals("active_pending_free")) {
                            pendingBlocks++;
                            pendingBytes += block.get(1).asLong();
                        }
                    }
                }
                assertEquals(pending, pendingBlocks, where);
                assertEquals(stats.get("active_bytes.all.current").asLong()
                        - stats.get("allocated_bytes.all.current").asLong(), pendingBytes, where);
                seenPending += pendingBlocks > 0 ? 1 : 0;
            }
            assertTrue(seenPending > 10, "[" + conf + "] checkpoints with a pending block: " + seenPending);
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
        return python(Map.of(), args);
    }

    private static Result python(Map<String, String> env, String... args) {
        List<String> cmd = new ArrayList<>(List.of("python3", SCRIPT.toString()));
        cmd.addAll(List.of(args));
        try {
            ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true);
            pb.environment().putAll(env);
            Process p = pb.start();
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
