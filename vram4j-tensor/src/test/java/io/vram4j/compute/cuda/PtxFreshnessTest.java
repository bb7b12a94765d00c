package io.vram4j.compute.cuda;

import org.junit.jupiter.api.Assertions;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * The committed PTX ({@code src/main/resources/io/vram4j/compute/cuda/vram4j_kernels.ptx}) is what
 * {@code src/main/cuda/build-ptx.sh} makes of {@code vram4j_kernels.cu}: where nvcc is installed the test compiles
 * the source again and compares. With the nvcc release that wrote the committed file (named in its header) the
 * texts must be equal; with another release the code differs in detail, so only the entries and their parameters
 * must be. Without nvcc the test is skipped with the reason (and fails under {@code CI=true}, where nvcc is part
 * of the machine).
 */
class PtxFreshnessTest {
    private static final Path SCRIPT = Path.of("src", "main", "cuda", "build-ptx.sh");

    @Test
    void committedPtxIsWhatTheSourceCompilesTo(@TempDir Path tmp) throws IOException, InterruptedException {
        Path nvcc = nvcc();
        if (!Files.isExecutable(nvcc)) {
            String reason = "no nvcc at " + nvcc + " (set NVCC or CUDA_HOME)";
            if ("true".equalsIgnoreCase(System.getenv("CI"))) {
                Assertions.fail(reason + "; under CI=true the PTX freshness check fails instead of skipping");
            }
            Assumptions.abort(reason + "; skipped (it would fail under CI=true)");
        }
        Path out = tmp.resolve("fresh.ptx");
        ProcessBuilder pb = new ProcessBuilder("sh", SCRIPT.toString(), out.toString()).redirectErrorStream(true);
        pb.environment().put("NVCC", nvcc.toString());
        Process p = pb.start();
        String log = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!p.waitFor(300, TimeUnit.SECONDS) || p.exitValue() != 0) {
            Assertions.fail(SCRIPT + " failed:\n" + log);
        }
        String fresh = Files.readString(out, StandardCharsets.US_ASCII);
        String committed = new String(CudaKernelTable.ptx(), StandardCharsets.US_ASCII);
        String stale = "the committed PTX is stale: run vram4j-tensor/src/main/cuda/build-ptx.sh and commit the result";
        if (release(fresh).equals(release(committed))) {
            assertEquals(committed, fresh, stale);
        } else {
            assertEquals(PtxEntries.parse(committed, "committed").entries(), PtxEntries.parse(fresh, "fresh").entries(),
                    stale + " (nvcc " + release(fresh) + " here, " + release(committed) + " wrote it)");
        }
    }

    private static Path nvcc() {
        String v = System.getenv("NVCC");
        if (v != null && !v.isBlank()) {
            return Path.of(v);
        }
        String home = System.getenv("CUDA_HOME");
        return Path.of(home != null && !home.isBlank() ? home : "/usr/local/cuda", "bin", "nvcc");
    }

    /** @return the "Cuda compilation tools, release ..." line of a PTX header, or "" */
    private static String release(String ptx) {
        return ptx.lines().filter(l -> l.startsWith("// Cuda compilation tools")).findFirst().orElse("");
    }
}
