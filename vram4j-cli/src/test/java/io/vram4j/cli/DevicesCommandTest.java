package io.vram4j.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.vram4j.device.Devices;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeFalse;

/** {@code vram4j devices}, and what {@code --device cuda} does on a machine with or without a GPU. */
class DevicesCommandTest {

    @Test
    void listsHostThePresetsAndTheCudaSituation() {
        CliRunner.Result r = CliRunner.run("devices");
        assertEquals(0, r.exitCode(), r.err());
        assertTrue(r.out().startsWith("host "), r.out());
        for (String preset : Devices.presets().keySet()) {
            assertTrue(r.out().contains("sim:" + preset + " "), preset);
        }
        assertTrue(r.out().contains("(85,028,896,768 bytes), compute capability 9.0\n"), "a preset stands for its GPU: "
                + r.out());
        assertTrue(r.out().contains("sim:SIZE stands for host, sim:SIZE:ccX.Y and the presets for a CUDA GPU"), r.out());
        assertTrue(r.out().contains("\ncuda           none: ") || r.out().contains("\ncuda:0 "), r.out());
        if (r.out().contains("\ncuda:0 ")) {
            assertTrue(r.out().matches("(?s).*\ncuda:0 .*; dry run: --device sim:\\d+:cc\\d+\\.\\d\n.*"), r.out());
        }
    }

    @Test
    void jsonHasTheFiguresAndSaysWhyThereIsNoGpu() throws Exception {
        CliRunner.Result r = CliRunner.run("devices", "--json");
        assertEquals(0, r.exitCode(), r.err());
        JsonNode doc = new ObjectMapper().readTree(r.out());
        assertEquals(Devices.hostDefaultCapacity(), doc.path("host").path("capacity_bytes").asLong());
        assertEquals(Devices.presets().size(), doc.path("sim").path("presets").size());
        assertEquals(Devices.presets().get("H100-80GB"), doc.path("sim").path("presets").path("H100-80GB").asLong());
        assertEquals("9.0", doc.path("sim").path("preset_compute_capabilities").path("H100-80GB").asText());
        assertEquals("8.0", doc.path("sim").path("preset_compute_capabilities").path("A100-40GB").asText());
        JsonNode cuda = doc.path("cuda");
        assertTrue(cuda.isArray());
        if (cuda.isEmpty()) {
            assertFalse(doc.path("cuda_unavailable").asText().isBlank(), r.out());
        } else {
            assertEquals("cuda:0", cuda.get(0).path("spec").asText());
            assertTrue(cuda.get(0).path("total_memory_bytes").asLong() > 0);
            assertEquals("sim:" + cuda.get(0).path("total_memory_bytes").asLong() + ":cc"
                    + cuda.get(0).path("compute_capability").asText(), cuda.get(0).path("dry_run_spec").asText());
        }
    }

    @Test
    void trainOnCudaWithoutAGpuIsAUserErrorInOneLine() throws Exception {
        assumeFalse(cudaAvailable(), "a CUDA device is present: training on it is not a user error there");
        CliRunner.Result r = CliRunner.run("train", "--device", "cuda", "--epochs", "1", "--limit", "200", "--batch-size", "8");
        assertEquals(2, r.exitCode(), r.out() + r.err());
        assertEquals(1, r.err().strip().lines().count(), r.err());
        assertTrue(r.err().contains("no CUDA driver") || r.err().contains("no CUDA device"), r.err());
    }

    /** Whether {@code vram4j devices --json} lists a CUDA device. */
    private static boolean cudaAvailable() throws Exception {
        CliRunner.Result r = CliRunner.run("devices", "--json");
        assertEquals(0, r.exitCode(), r.err());
        return !new ObjectMapper().readTree(r.out()).path("cuda").isEmpty();
    }

    @Test
    void aBadCudaIndexNamesTheSpec() {
        CliRunner.Result r = CliRunner.run("demo", "--device", "cuda:x");
        assertEquals(2, r.exitCode());
        assertTrue(r.err().contains("invalid device 'cuda:x': 'x' is not a device index"), r.err());
    }
}
