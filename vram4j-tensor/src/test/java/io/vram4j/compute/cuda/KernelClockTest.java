package io.vram4j.compute.cuda;

import io.vram4j.alloc.CachingAllocator;
import io.vram4j.device.cuda.CudaDevice;
import io.vram4j.testsupport.NativeTestBuild;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code VRAM4J_KERNEL_TIMES} on {@code cuda} over the stand-in driver, whose clock advances one microsecond per kernel
 * launch (so a launch between two timing events measures 0.001 ms, and a cuBLAS product, which the stand-in runs
 * without a launch, 0): every launch, product, copy and fill is timed under its name, and closing the kernels appends
 * the table, largest total first; the events are all destroyed.
 */
class KernelClockTest {
    private static MemorySegment block(CachingAllocator alloc, long floats) {
        return MemorySegment.ofAddress(alloc.malloc(floats * Float.BYTES)).reinterpret(floats * Float.BYTES);
    }

    private static Map<String, String> env(Path report) {
        return Map.of("VRAM4J_LIBCUBLAS", NativeTestBuild.fakeCublas().toString(), KernelClock.ENV, report.toString());
    }

    /** @return the report's row for {@code name}: {calls, total ms, mean us} */
    private static double[] row(List<String> lines, String name) {
        for (String l : lines) {
            if (l.startsWith(name + " ")) {
                String[] f = l.substring(name.length()).trim().split("\\s+");
                return new double[] {Double.parseDouble(f[0].replace(",", "")), Double.parseDouble(f[1]),
                        Double.parseDouble(f[2])};
            }
        }
        throw new AssertionError("no row for " + name + " in\n" + String.join("\n", lines));
    }

    @Test
    void everyCallIsTimedByNameAndTheTableIsWrittenAtClose(@TempDir Path tmp) throws IOException {
        Path report = tmp.resolve("kernels.txt");
        long events;
        try (CudaDevice gpu = CudaDevice.open(NativeTestBuild.fakeDriver().toString(), 0);
             CachingAllocator alloc = CachingAllocator.create(gpu)) {
            events = NativeTestBuild.fakeDriverLive("events");
            try (CudaKernels k = CudaKernels.create(alloc, gpu.defaultStream(), env(report))) {
                MemorySegment a = block(alloc, 1024);
                MemorySegment b = block(alloc, 1024);
                MemorySegment c = block(alloc, 1024);
                for (int i = 0; i < 3; i++) {
                    k.add(1024, a, 0, b, 0, c, 0);
                }
                k.fill(1024, 1f, a, 0);
                k.sgemm(false, false, 8, 8, 8, 1f, a, 0, 8, b, 0, 8, 0f, c, 0, 8);
                k.copyBytes(64, a, 0, b, 0);
                k.fillBytes(64, (byte) 0, c, 0);
                assertFalse(Files.exists(report), "written when the kernels close");
                for (MemorySegment s : new MemorySegment[] {a, b, c}) {
                    alloc.free(s.address());
                }
            }
            assertEquals(events, NativeTestBuild.fakeDriverLive("events"), "every timing event destroyed");
        }
        List<String> lines = Files.readAllLines(report);
        assertTrue(lines.get(0).startsWith("# GPU time by kernel on ") && lines.get(0).contains("7 calls"), lines.get(0));
        double[] add = row(lines, "v4j_add_f32");
        assertEquals(3, add[0]);
        assertEquals(0.003, add[1], 1e-6, "three launches of the stand-in's microsecond");
        assertEquals(1.0, add[2], 1e-3, "mean in microseconds");
        assertEquals(1, row(lines, "v4j_fill_f32")[0]);
        assertEquals(0, row(lines, "cublasGemmEx f32")[1], 1e-9, "the stand-in's product launches nothing");
        assertEquals(1, row(lines, "cuMemcpyDtoDAsync")[0]);
        assertEquals(1, row(lines, "cuMemsetD8Async")[0]);
        assertTrue(lines.get(2).startsWith("v4j_add_f32 "), "the largest total first: " + lines.get(2));
    }

    @Test
    void aReportOutsideAWritableDirectoryIsRefusedInOneLine(@TempDir Path tmp) {
        try (CudaDevice gpu = CudaDevice.open(NativeTestBuild.fakeDriver().toString(), 0);
             CachingAllocator alloc = CachingAllocator.create(gpu)) {
            Path missing = tmp.resolve("no-such-dir").resolve("kernels.txt");
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> CudaKernels.create(alloc, gpu.defaultStream(), env(missing)));
            assertEquals(KernelClock.ENV + "=" + missing + ": expected a file in a writable directory", e.getMessage());
            assertThrows(IllegalArgumentException.class, () -> CudaKernels.create(alloc, gpu.defaultStream(), env(tmp)));
        }
    }
}
