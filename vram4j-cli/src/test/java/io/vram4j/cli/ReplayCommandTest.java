package io.vram4j.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

class ReplayCommandTest {

    static Path snapshots() {
        for (Path p = Path.of("").toAbsolutePath(); p != null; p = p.getParent()) {
            Path c = p.resolve("shared/data/snapshots");
            if (Files.isDirectory(c)) {
                return c;
            }
        }
        return null;
    }

    private static Path real(String name) {
        Path dir = snapshots();
        assumeTrue(dir != null && Files.exists(dir.resolve(name)), "shared/data/snapshots not present");
        return dir.resolve(name);
    }

    @Test
    void exactReplayOfDecomfl() {
        CliRunner.Result r = CliRunner.run("replay", real("decomfl-opt-zo-finetune_from-empty.pickle").toString());
        assertEquals(0, r.exitCode(), r.err());
        assertTrue(r.out().contains("EXACT: the replay reproduces the recording"), r.out());
        assertTrue(r.out().contains("identical (first 61 of 61 agree)"), r.out());
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
        assertTrue(conf.err().contains("Unrecognized CachingAllocator option: foo"), conf.err());
        CliRunner.Result unknown = CliRunner.run("replay", "--frobnicate", f.toString());
        assertEquals(2, unknown.exitCode());
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
}
