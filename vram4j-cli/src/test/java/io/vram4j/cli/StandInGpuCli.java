package io.vram4j.cli;

import io.vram4j.testsupport.KernelEmulator;
import io.vram4j.testsupport.NativeTestBuild;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Runs the CLI in a JVM of its own with core's stand-in driver and the stand-in cuBLAS named in its environment
 * ({@code VRAM4J_LIBCUDA}, {@code VRAM4J_LIBCUBLAS}), as a user names a driver, so that {@code --device cuda} opens
 * the stand-in. With kernels, the kernel emulator is named too ({@code VRAM4J_FAKE_KERNELS}): every launch and
 * product then computes on the CPU, and the commands train for real. The allocator and workspace settings of this
 * process's environment are removed.
 */
final class StandInGpuCli {
    private StandInGpuCli() {
    }

    /** A finished command: its exit code, standard output and standard error. */
    record Run(int exit, String out, String err) {
    }

    /**
     * @param kernels whether kernels and products compute (the emulated GPU) or run nothing
     * @param args the command line after {@code vram4j}
     * @return how it ended, within 5 minutes
     */
    static Run run(boolean kernels, String... args) throws IOException, InterruptedException {
        List<String> cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "--enable-native-access=ALL-UNNAMED", "--add-modules", "jdk.incubator.vector",
                "-cp", System.getProperty("java.class.path"), "io.vram4j.cli.Main"));
        cmd.addAll(List.of(args));
        ProcessBuilder pb = new ProcessBuilder(cmd);
        Map<String, String> env = pb.environment();
        env.put("VRAM4J_LIBCUDA", NativeTestBuild.fakeDriver().toString());
        env.put("VRAM4J_LIBCUBLAS", NativeTestBuild.fakeCublas().toString());
        if (kernels) {
            env.put("VRAM4J_FAKE_KERNELS", KernelEmulator.library().toString());
        } else {
            env.remove("VRAM4J_FAKE_KERNELS");
        }
        env.remove("CUBLAS_WORKSPACE_CONFIG");
        env.remove("VRAM4J_ALLOC_CONF");
        env.remove("PYTORCH_ALLOC_CONF");
        env.remove("PYTORCH_CUDA_ALLOC_CONF");
        Path err = Files.createTempFile("vram4j-cli", ".err");
        pb.redirectError(err.toFile());
        Process p = pb.start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(5, TimeUnit.MINUTES), "the command ended");
        String e = Files.readString(err);
        Files.delete(err);
        return new Run(p.exitValue(), out, e);
    }
}
