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

/** {@code train --pin-memory/--no-pin-memory} where no GPU is: host keeps its behaviour, bad combinations refused. */
class TrainPinMemoryCommandTest {
    private static final String WARNING = "vram4j train: warning: --pin-memory: 'pin_memory' argument is set as true but no accelerator "
            + "is found, then device pinned memory won't be used.";

    private static JsonNode train(Path out, String... extra) throws Exception {
        String[] base = {"train", "--epochs", "1", "--limit", "600", "--batch-size", "100", "--hidden", "32",
                "--history-steps", "0", "--progress", "none", "--json", "--data", TrainCommandTest.BUNDLED.toString(),
                "--out", out.toString(), "--device", "host:256MiB"};
        String[] args = java.util.Arrays.copyOf(base, base.length + extra.length);
        System.arraycopy(extra, 0, args, base.length, extra.length);
        CliRunner.Result r = CliRunner.run(args);
        assertEquals(0, r.exitCode(), r.err());
        assertEquals(extra.length == 1 && extra[0].equals("--pin-memory"), r.err().contains(WARNING), r.err());
        assertFalse(r.err().contains("data loader: pinned memory"), "nothing is pinned on host: " + r.err());
        return new ObjectMapper().readTree(r.out());
    }

    @Test
    void onHostItWarnsAsPyTorchDoesAndChangesNothing(@TempDir Path tmp) throws Exception {
        JsonNode plain = train(tmp.resolve("a"));
        JsonNode pinned = train(tmp.resolve("b"), "--pin-memory");
        JsonNode off = train(tmp.resolve("c"), "--no-pin-memory");
        for (JsonNode other : new JsonNode[] {pinned, off}) {
            assertEquals(plain.get("loss").asDouble(), other.get("loss").asDouble(), "bit for bit");
            assertEquals(plain.get("accuracy").asDouble(), other.get("accuracy").asDouble());
            assertEquals(plain.get("train_loss").asDouble(), other.get("train_loss").asDouble());
            assertEquals(plain.get("peak_allocated_bytes").asLong(), other.get("peak_allocated_bytes").asLong());
        }
    }

    @Test
    void pinnedBatchesForTheTransformerAreRefusedInOneLine(@TempDir Path tmp) {
        CliRunner.Result r = CliRunner.run("train", "--model", "transformer", "--pin-memory", "--out",
                tmp.resolve("never").toString());
        assertEquals(2, r.exitCode(), r.err());
        assertEquals("vram4j train: error: --pin-memory: the transformer cuts its inputs and targets from token windows on the host, so its "
                + "batches are not pinned; use it with --model mlp, or leave it out", r.err().strip().lines()
                .filter(l -> !l.startsWith("WARNING")).reduce((a, b) -> a + "\n" + b).orElse(""));
        assertFalse(Files.exists(tmp.resolve("never")));
    }

    @Test
    void theOptionIsDocumented() {
        CliRunner.Result r = CliRunner.run("train", "--help");
        assertEquals(0, r.exitCode());
        assertTrue(r.out().contains("--[no-]pin-memory"), r.out());
    }
}
