package io.vram4j.compute.cuda;

import io.vram4j.testsupport.GpuTests;
import io.vram4j.testsupport.KernelEmulator;
import io.vram4j.testsupport.NativeTestBuild;
import org.junit.platform.launcher.LauncherSession;
import org.junit.platform.launcher.LauncherSessionListener;
import org.opentest4j.TestAbortedException;

import java.nio.file.Path;

/**
 * Sets up the emulated GPU run of this module's {@code gpu}-tagged tests (the surefire execution
 * {@code emulated-gpu} of vram4j-tensor's pom): before any test, it builds the stand-in driver, the stand-in cuBLAS
 * and the {@link KernelEmulator kernel emulator} at the paths that run named to the JVM ({@code vram4j.libcuda},
 * {@code VRAM4J_LIBCUBLAS}, {@code VRAM4J_FAKE_KERNELS}), so that {@code CudaDevice.open(0)} opens the stand-in
 * and every kernel launch and cuBLAS product computes on the CPU (in reverse block and thread order under
 * {@code VRAM4J_FAKE_KERNELS_ORDER=reverse}, which it checks the emulator took). That run also sets
 * {@link GpuTests#REQUIRE_GPU_PROPERTY}: a GPU test that cannot open its device fails instead of skipping. Where
 * {@code gcc}, {@code g++} or the CUDA headers are missing on a developer's machine (never under {@code CI=true},
 * where that fails), the requirement is lifted and the GPU tests skip with the reason. Does nothing in any other
 * run (registered for every test run of the module through {@code META-INF/services}).
 */
public final class EmulatedGpuSession implements LauncherSessionListener {
    /** Set to {@code true} by the emulated GPU run. */
    public static final String PROPERTY = "vram4j.test.emulatedGpu";

    @Override
    public void launcherSessionOpened(LauncherSession session) {
        if (!Boolean.getBoolean(PROPERTY)) {
            return;
        }
        try {
            expect("the system property vram4j.libcuda", System.getProperty("vram4j.libcuda"), NativeTestBuild.fakeDriver());
            expect("VRAM4J_LIBCUBLAS", System.getenv("VRAM4J_LIBCUBLAS"), NativeTestBuild.fakeCublas());
            expect("VRAM4J_FAKE_KERNELS", System.getenv("VRAM4J_FAKE_KERNELS"), KernelEmulator.library());
            boolean reverse = "reverse".equals(System.getenv("VRAM4J_FAKE_KERNELS_ORDER"));
            if (KernelEmulator.reverseOrder() != reverse) {
                throw new IllegalStateException("emulated GPU run: the kernel emulator does not run in the order "
                        + "VRAM4J_FAKE_KERNELS_ORDER asks for");
            }
        } catch (TestAbortedException e) {
            System.err.println("emulated GPU run: " + e.getMessage() + "; the GPU tests skip");
            System.clearProperty(GpuTests.REQUIRE_GPU_PROPERTY);
        }
    }

    private static void expect(String what, String named, Path built) {
        if (named == null || !Path.of(named).toAbsolutePath().normalize().equals(built.toAbsolutePath().normalize())) {
            throw new IllegalStateException("emulated GPU run: " + what + " is " + named + ", expected " + built);
        }
    }
}
