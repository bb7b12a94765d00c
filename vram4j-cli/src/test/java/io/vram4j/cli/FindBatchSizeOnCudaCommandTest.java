package io.vram4j.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * What a user runs to compare a search on a GPU with its dry run: {@code find-batch-size --device cuda
 * --memory-fraction F}, which prints the sim spec of its dry run, then {@code find-batch-size --device <that spec>
 * --memory-fraction F}. Here the GPU is core's stand-in driver with the stand-in cuBLAS, named to a CLI process of
 * its own ({@link StandInGpuCli}), as a user would name a driver: the two
 * commands print the same results (every try, largest batches and peaks), and a sim standing for host does not.
 */
class FindBatchSizeOnCudaCommandTest {
    private static final String[] MODEL = {"--model", "transformer", "--hidden", "32", "--heads", "2", "--layers", "2",
            "--block-size", "32", "--data", FindBatchSizeCommandTest.TEXT, "--memory-fraction", "0.0625", "--json"};
    private static final Pattern DRY_RUN = Pattern.compile("the same search as a dry run: --device (\\S+) --memory-fraction (\\S+)");

    private static StandInGpuCli.Run cli(String... args) throws IOException, InterruptedException {
        return StandInGpuCli.run(false, args);
    }

    private static String[] with(String device) {
        String[] a = new String[MODEL.length + 3];
        a[0] = "find-batch-size";
        a[1] = "--device";
        a[2] = device;
        System.arraycopy(MODEL, 0, a, 3, MODEL.length);
        return a;
    }

    /** @return the results without wall times */
    private static JsonNode results(StandInGpuCli.Run r) throws IOException {
        JsonNode results = new ObjectMapper().readTree(r.out()).get("results");
        for (JsonNode res : results) {
            ((ObjectNode) res).remove("seconds");
            for (JsonNode t : res.get("tries")) {
                ((ObjectNode) t).remove("seconds");
            }
        }
        return results;
    }

    @Test
    void aSearchOnCudaAndTheDryRunItPrintsAgree() throws Exception {
        StandInGpuCli.Run cuda = cli(with("cuda"));
        assertEquals(0, cuda.exit(), cuda.err());
        assertTrue(cuda.err().contains("find-batch-size on cuda:0 (real run)"), cuda.err());
        assertTrue(cuda.err().contains("memory limit: 64.00 MiB (67,108,864 bytes), per-process memory fraction 0.0625 of "
                + "the device's 1,073,741,824 bytes"), cuda.err());
        Matcher m = DRY_RUN.matcher(cuda.err());
        assertTrue(m.find(), cuda.err());
        assertEquals("sim:1073741824:cc9.0", m.group(1), "the fake GPU's total and compute capability");
        assertEquals("0.0625", m.group(2));
        assertEquals(0.0625, new ObjectMapper().readTree(cuda.out()).get("memory_fraction").asDouble());

        StandInGpuCli.Run sim = cli(with(m.group(1)));
        assertEquals(0, sim.exit(), sim.err());
        assertTrue(sim.err().contains("find-batch-size on sim:1GiB:cc9.0 (dry run standing for the CUDA GPU, nothing "
                + "computed)"), sim.err());
        JsonNode onCuda = results(cuda);
        assertEquals(4, onCuda.size());
        for (JsonNode res : onCuda) {
            int largest = res.get("largest_batch").asInt();
            assertTrue(largest > 1 && largest < 65536, res.toString());
        }
        assertEquals(onCuda, results(sim), "the same tries, largest batches and peaks");

        StandInGpuCli.Run host = cli(with("sim:1073741824"));
        assertEquals(0, host.exit(), host.err());
        assertNotEquals(onCuda, results(host), "a sim standing for host leaves out the CUDA kernels' memory");
    }

    @Test
    void devicesPrintsTheDryRunSpecOfEachGpu() throws Exception {
        StandInGpuCli.Run r = cli("devices");
        assertEquals(0, r.exit(), r.err());
        assertTrue(r.out().contains("cuda:0         vram4j fake GPU, compute capability 9.0, 1024.00 MiB total, "), r.out());
        assertTrue(r.out().contains("; dry run: --device sim:1073741824:cc9.0\n"), r.out());
    }

    @Test
    void withoutAFractionTheCudaSearchSaysWhatItRunsInto() throws Exception {
        StandInGpuCli.Run cuda = cli("find-batch-size", "--device", "cuda", "--model", "mlp", "--hidden", "16", "--layers", "1",
                "--max-batch", "4", "--json");
        assertEquals(0, cuda.exit(), cuda.err());
        assertTrue(cuda.err().contains("memory limit: the GPU's free memory, "), cuda.err());
        assertTrue(cuda.err().contains("set one, e.g. --memory-fraction 0.9, to compare with one"), cuda.err());
        assertTrue(cuda.err().contains("the same search as a dry run: --device sim:1073741824:cc9.0\n"), cuda.err());
        assertTrue(!new ObjectMapper().readTree(cuda.out()).has("memory_fraction"), cuda.out());
    }
}
