package io.vram4j.compute.cuda;

import io.vram4j.testsupport.NativeTestBuild;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Optional;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Where cuBLASLt is looked for ({@link CublasLt#load}): {@code libcublasLt} beside the cuBLAS found, else that cuBLAS
 * library itself where it has the entry points (the stand-in), nowhere under {@code VRAM4J_CUBLASLT=0}, and no
 * failure where neither has them (the products with a bias then go through cuBLAS). The products themselves are
 * checked on the (emulated) GPU, in {@code GpuCudaKernelsTest}.
 */
class CublasLtTest {

    @Test
    void theStandInCublasStandsInForCublasLtToo() {
        Path cublas = NativeTestBuild.fakeCublas();
        Optional<CublasLt> lt = CublasLt.load(cublas, Map.of());
        assertTrue(lt.isPresent(), "the stand-in exports cuBLASLt's entry points");
        assertEquals(cublas, lt.get().library());
    }

    @Test
    void libcublasLtBesideCublasIsPreferred(@TempDir Path dir) throws Exception {
        Path cublas = Files.copy(NativeTestBuild.fakeCublas(), dir.resolve("libcublas.so.13"));
        Path beside = Files.copy(NativeTestBuild.fakeCublas(), dir.resolve("libcublasLt.so.13"));
        assertEquals(beside, CublasLt.load(cublas, Map.of()).orElseThrow().library());
    }

    @Test
    void aLibcublasLtBesideThatDoesNotLoadIsLeftOut(@TempDir Path dir) throws Exception {
        Path cublas = Files.copy(NativeTestBuild.fakeCublas(), dir.resolve("libcublas.so.13"));
        Files.writeString(dir.resolve("libcublasLt.so.13"), "not a shared library");
        assertTrue(CublasLt.load(cublas, Map.of()).isEmpty(), "left out (with a warning), not taken from elsewhere");
    }

    @Test
    void turnedOffOrMissingItIsLeftOutWithoutAFailure() {
        assertTrue(CublasLt.load(NativeTestBuild.fakeCublas(), Map.of(CublasLt.ENV, "0")).isEmpty(),
                CublasLt.ENV + "=0");
        // the stand-in driver has none of cuBLASLt's entry points, and nothing named libcublasLt lies beside it
        assertTrue(CublasLt.load(NativeTestBuild.fakeDriver(), Map.of()).isEmpty(), "a library without them");
    }

    /** The alignment cuBLASLt is told of a pointer: the largest power of two up to 256 dividing it. */
    @Test
    void aPointersAlignmentIsItsLargestPowerOfTwoUpTo256() {
        long[][] cases = {{0, 256}, {512, 256}, {0x7f00_0000_0100L, 256}, {0x7f00_0000_0180L, 128}, {48, 16}, {6, 2},
                          {4, 4}, {1, 1}, {0x7f00_0000_0003L, 1}};
        for (long[] c : cases) {
            assertEquals(c[1], CublasLt.alignment(c[0]), "address " + Long.toHexString(c[0]));
        }
    }
}
