package io.vram4j.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The main job as a user runs it on a GPU, {@code ./vram4j train --device cuda}, on the emulated GPU (core's stand-in
 * driver and cuBLAS, of 1 GiB, with the kernels run on the CPU; {@link StandInGpuCli}): it trains, with the batches
 * pinned and copied on a side stream, to the accuracy the same command reaches on {@code host}, and writes the run
 * folder; a model that cannot fit ends with exit code 3 and PyTorch's "CUDA out of memory" text.
 */
class TrainOnEmulatedCudaCommandTest {
    private static final String[] JOB = {"train", "--epochs", "1", "--limit", "2000", "--json",
            "--hidden", "128", "--history-steps", "2", "--data", TrainCommandTest.BUNDLED.toString(), "--progress", "lines"};

    private static String[] job(String device, Path out) {
        List<String> args = new java.util.ArrayList<>(List.of(JOB));
        args.addAll(List.of("--device", device, "--out", out.toString()));
        return args.toArray(String[]::new);
    }

    @Test
    void trainsOnCudaAsOnHostAndWritesTheRunFolder(@TempDir Path tmp) throws Exception {
        Path runDir = tmp.resolve("cuda");
        StandInGpuCli.Run cuda = StandInGpuCli.run(true, job("cuda", runDir));
        assertEquals(0, cuda.exit(), cuda.err());
        CliRunner.Result host = CliRunner.run(job("host:1GiB", tmp.resolve("host")));
        assertEquals(0, host.exitCode(), host.err());
        ObjectMapper mapper = new ObjectMapper();
        JsonNode onCuda = mapper.readTree(cuda.out());
        JsonNode onHost = mapper.readTree(host.out());
        assertEquals("ok", onCuda.get("status").asText());
        assertTrue(onCuda.get("device").toString().contains("cuda"), onCuda.get("device").toString());
        double accuracy = onCuda.get("accuracy").asDouble();
        assertTrue(accuracy > 0.3, "well above chance (0.1) after 16 steps: " + accuracy);
        assertEquals(onHost.get("accuracy").asDouble(), accuracy, 0.005, "the host's accuracy, up to a few images");
        assertEquals(onHost.get("loss").asDouble(), onCuda.get("loss").asDouble(), 1e-3 * onHost.get("loss").asDouble());
        JsonNode stats = onCuda.get("memory_stats");
        assertEquals(onCuda.get("peak_reserved_bytes").asLong(), stats.get("reserved_bytes.all.peak").asLong());
        for (String f : List.of("memory_summary.txt", "memory_stats.json", "memory_snapshot.pickle",
                "memory_timeline.html", "result.json")) {
            assertTrue(Files.size(runDir.resolve(f)) > 0, f);
        }
        assertTrue(cuda.err().contains("data loader: pinned memory, batches copied one ahead on a side stream"),
                cuda.err());
        assertTrue(cuda.err().contains("epoch 1/1 [16/16] loss "), cuda.err());
    }

    @Test
    void aModelThatCannotFitEndsWithExitCode3(@TempDir Path tmp) throws Exception {
        StandInGpuCli.Run r = StandInGpuCli.run(false, "train", "--device", "cuda", "--hidden", "16384", "--epochs",
                "1", "--limit", "1000", "--batch-size", "100", "--data", TrainCommandTest.BUNDLED.toString(), "--out", tmp.toString());
        assertEquals(3, r.exit(), r.err());
        assertTrue(r.err().contains("CUDA out of memory. Tried to allocate"), r.err());
        assertTrue(r.err().lines().noneMatch(l -> l.startsWith("\tat ")), "no stack trace: " + r.err());
    }
}
