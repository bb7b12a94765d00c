package io.vram4j.compute.cuda;

import io.vram4j.compute.Half;
import io.vram4j.device.cuda.CudaDevice;
import io.vram4j.device.cuda.CudaException;
import io.vram4j.device.cuda.CudaModule;
import io.vram4j.device.cuda.KernelArgs;
import io.vram4j.testsupport.KernelEmulator;
import io.vram4j.testsupport.NativeTestBuild;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_FLOAT;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Holds the kernel emulator (the CPU run of CUDA kernels behind the emulated GPU run) to a GPU's rules, on kernels
 * written to break them ({@code src/test/c/emulator_selftest.cu}): thread and block indices, barriers that wait for
 * the whole block, warp shuffles and barriers that wait for the warp, a race that reads differently in index and reverse
 * order, and the errors it must report (divergent barriers, shared memory written past the launch's size,
 * parameters of the wrong size, a trap, which the stand-in driver turns into a sticky launch failure). And its table
 * of the project's kernels is exactly the committed PTX's entries.
 */
@SuppressWarnings("restricted")
class KernelEmulatorTest {
    private static final Path SELFTEST = Path.of("src", "test", "c", "emulator_selftest.cu");
    private static MethodHandle launch;
    private static MethodHandle setReverse;
    private static Path selftest;

    @BeforeAll
    static void build() {
        selftest = KernelEmulator.build(SELFTEST,
                Path.of("target", "native-test", "libemulator-selftest.so").toAbsolutePath());
        SymbolLookup lib = SymbolLookup.libraryLookup(selftest, Arena.global());
        launch = Linker.nativeLinker().downcallHandle(lib.find("emu_launch").orElseThrow(), FunctionDescriptor.of(
                JAVA_INT, ADDRESS, ADDRESS, ADDRESS, ADDRESS, JAVA_INT, ADDRESS, JAVA_LONG));
        setReverse = Linker.nativeLinker().downcallHandle(lib.find("emu_set_reverse").orElseThrow(),
                FunctionDescriptor.ofVoid(JAVA_INT));
    }

    /** A launch's outcome: 0, 1 (trap) or 2 (error), and the emulator's message. */
    record Outcome(int code, String message) {
    }

    /**
     * @param dims grid x y z, block x y z, dynamic shared bytes
     * @param params each parameter's bytes (a long for pointers)
     */
    private static Outcome run(Arena a, String kernel, int[] dims, Object... params) throws Throwable {
        MemorySegment pointers = a.allocate(ADDRESS, Math.max(1, params.length));
        MemorySegment sizes = a.allocate(JAVA_INT, Math.max(1, params.length));
        for (int i = 0; i < params.length; i++) {
            MemorySegment value = switch (params[i]) {
                case Long l -> a.allocateFrom(JAVA_LONG, l);
                case Integer n -> a.allocateFrom(JAVA_INT, n);
                case Float f -> a.allocateFrom(JAVA_FLOAT, f);
                default -> throw new IllegalArgumentException(String.valueOf(params[i]));
            };
            pointers.setAtIndex(ADDRESS, i, value);
            sizes.setAtIndex(JAVA_INT, i, (int) value.byteSize());
        }
        MemorySegment error = a.allocate(512);
        int code = (int) launch.invokeExact(a.allocateFrom(kernel), a.allocateFrom(JAVA_INT, dims), pointers, sizes,
                params.length, error, 512L);
        return new Outcome(code, error.getString(0));
    }

    @Test
    void everyThreadSeesItsOwnIndicesInEveryDimensionInEitherOrder() throws Throwable {
        for (int reverse = 0; reverse < 2; reverse++) {
            setReverse.invokeExact(reverse);
            try (Arena a = Arena.ofConfined()) {
                int blocks = 2 * 3 * 1;
                int threads = 4 * 2 * 3;
                MemorySegment out = a.allocate(JAVA_INT, (long) blocks * threads);
                assertEquals(new Outcome(0, ""), run(a, "t_indices", new int[] {2, 3, 1, 4, 2, 3, 0}, out.address()));
                for (int b = 0; b < blocks; b++) {
                    for (int t = 0; t < threads; t++) {
                        assertEquals((b << 16) | (t << 4) | blocks, out.getAtIndex(JAVA_INT, (long) b * threads + t),
                                "block " + b + " thread " + t + (reverse == 1 ? " (reverse order)" : ""));
                    }
                }
            } finally {
                setReverse.invokeExact(0);
            }
        }
    }

    /** A race (a read of another thread's write with no barrier between) reads differently in the two orders. */
    @Test
    void aRaceShowsAsADifferenceBetweenTheOrders() throws Throwable {
        int n = 8;
        float[][] seen = new float[2][n];
        for (int reverse = 0; reverse < 2; reverse++) {
            setReverse.invokeExact(reverse);
            try (Arena a = Arena.ofConfined()) {
                MemorySegment out = a.allocate(JAVA_FLOAT, n);
                assertEquals(0, run(a, "t_race", new int[] {1, 1, 1, n, 1, 1, n * 4}, out.address()).code());
                seen[reverse] = out.toArray(JAVA_FLOAT);
            } finally {
                setReverse.invokeExact(0);
            }
        }
        for (int t = 0; t < n - 1; t++) {
            assertTrue(Float.isNaN(seen[0][t]), "index order: thread " + t + " read before its neighbour wrote");
            assertEquals(t + 1, seen[1][t], "reverse order: thread " + t + " read after its neighbour wrote");
        }
        assertEquals(0, seen[0][n - 1]);
        assertTrue(Float.isNaN(seen[1][n - 1]));
    }

    /**
     * The warp matrix functions: a 16 x 16 x 16 product of one warp, each thread storing its lane's elements (so the
     * whole tile is there only once all 32 did), and a misaligned pointer reported by name, as the CUDA programming
     * guide requires 256-bit aligned tiles.
     */
    @Test
    void warpMatrixProductsComputeAndCheckAlignment() throws Throwable {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment ma = a.allocate(2 * 16 * 16 + 64, 32);
            MemorySegment mb = a.allocate(2 * 16 * 16, 32);
            MemorySegment mc = a.allocate(4 * 16 * 16, 32);
            int[][] x = new int[16][16];
            int[][] y = new int[16][16];
            for (int i = 0; i < 16; i++) {
                for (int j = 0; j < 16; j++) {
                    x[i][j] = (i * 3 + j * 5) % 7 - 3;
                    y[i][j] = (i * 2 + j) % 5 - 2;
                    ma.setAtIndex(JAVA_SHORT, i * 16 + j, Half.floatToFp16(x[i][j]));
                    mb.setAtIndex(JAVA_SHORT, i + j * 16, Half.floatToFp16(y[i][j]));   // column-major
                }
            }
            assertEquals(new Outcome(0, ""), run(a, "t_wmma", new int[] {1, 1, 1, 32, 1, 1, 0}, ma.address(),
                    mb.address(), mc.address(), 0));
            for (int i = 0; i < 16; i++) {
                for (int j = 0; j < 16; j++) {
                    int s = 1;
                    for (int k = 0; k < 16; k++) {
                        s += x[i][k] * y[k][j];
                    }
                    assertEquals(s, mc.getAtIndex(JAVA_FLOAT, i * 16 + j), "c[" + i + "][" + j + "]");
                }
            }
            Outcome misaligned = run(a, "t_wmma", new int[] {1, 1, 1, 32, 1, 1, 0}, ma.address(), mb.address(),
                    mc.address(), 8);
            assertEquals(2, misaligned.code(), misaligned.message());
            assertTrue(misaligned.message().contains("load_matrix_sync") && misaligned.message().contains(
                    "not 32-byte aligned"), misaligned.message());
        }
    }

    /**
     * A fragment's own elements (x[i], as the tensor-core attention scales its output rows): every lane reaches its
     * 8, the row of each read from a fragment of row numbers, so each row of a tile is scaled by its factor in
     * either order; a ninth element is reported by name.
     */
    @Test
    void aFragmentsElementsAreItsLanesAndTheirRowsCanBeFound() throws Throwable {
        for (int reverse = 0; reverse < 2; reverse++) {
            setReverse.invokeExact(reverse);
            try (Arena a = Arena.ofConfined()) {
                MemorySegment c = a.allocate(4 * 16 * 16, 32);
                MemorySegment rows = a.allocate(4 * 16 * 16, 32);
                for (int e = 0; e < 256; e++) {
                    c.setAtIndex(JAVA_FLOAT, e, e);
                }
                assertEquals(new Outcome(0, ""), run(a, "t_wmma_elements", new int[] {1, 1, 1, 32, 1, 1, 0},
                        c.address(), rows.address(), 0));
                for (int e = 0; e < 256; e++) {
                    assertEquals(e * (e / 16 + 1), c.getAtIndex(JAVA_FLOAT, e), "element " + e + " (row " + e / 16
                            + "), order " + reverse);
                }
                Outcome ninth = run(a, "t_wmma_elements", new int[] {1, 1, 1, 32, 1, 1, 0}, c.address(),
                        rows.address(), 8);
                assertEquals(2, ninth.code(), ninth.message());
                assertTrue(ninth.message().contains("fragment x[8]"), ninth.message());
            } finally {
                setReverse.invokeExact(0);
            }
        }
    }

    @Test
    void aBarrierWaitsForTheWholeBlock() throws Throwable {
        try (Arena a = Arena.ofConfined()) {
            int threads = 256;
            int blocks = 3;
            MemorySegment in = a.allocate(JAVA_FLOAT, (long) threads * blocks);
            MemorySegment out = a.allocate(JAVA_FLOAT, (long) threads * blocks);
            for (int i = 0; i < threads * blocks; i++) {
                in.setAtIndex(JAVA_FLOAT, i, i);
            }
            assertEquals(0, run(a, "t_reverse", new int[] {blocks, 1, 1, threads, 1, 1, threads * 4},
                    in.address(), out.address()).code());
            for (int b = 0; b < blocks; b++) {
                for (int t = 0; t < threads; t++) {
                    assertEquals(b * threads + threads - 1 - t, out.getAtIndex(JAVA_FLOAT, (long) b * threads + t));
                }
            }
        }
    }

    /**
     * Shuffles across a warp (a butterfly sum, a broadcast) give every lane its warp's values in either order, and
     * {@code __syncwarp()} waits for the warp's lanes and for nothing else: warp 0 passes it while warp 1 waits at
     * {@code __syncthreads()}.
     */
    @Test
    void warpShufflesAndWarpBarriersSeeTheWholeWarpOnly() throws Throwable {
        for (int reverse = 0; reverse < 2; reverse++) {
            setReverse.invokeExact(reverse);
            String order = reverse == 1 ? " (reverse order)" : "";
            try (Arena a = Arena.ofConfined()) {
                int threads = 64;
                MemorySegment out = a.allocate(JAVA_FLOAT, 2L * threads);
                assertEquals(new Outcome(0, ""), run(a, "t_shuffle", new int[] {1, 1, 1, threads, 1, 1, 0},
                        out.address()));
                for (int t = 0; t < threads; t++) {
                    int warp = t / 32;
                    assertEquals(528f * (warp + 1), out.getAtIndex(JAVA_FLOAT, 2L * t), "sum, thread " + t + order);
                    assertEquals(10f * (warp * 32 + 5), out.getAtIndex(JAVA_FLOAT, 2L * t + 1),
                            "broadcast, thread " + t + order);
                }
                MemorySegment reversed = a.allocate(JAVA_FLOAT, threads);
                assertEquals(new Outcome(0, ""), run(a, "t_syncwarp", new int[] {1, 1, 1, threads, 1, 1, 128},
                        reversed.address()));
                for (int t = 0; t < threads; t++) {
                    assertEquals(t < 32 ? 31 - t : t - 32, reversed.getAtIndex(JAVA_FLOAT, t), "thread " + t + order);
                }
            } finally {
                setReverse.invokeExact(0);
            }
        }
    }

    @Test
    void sharedMemoryNobodyWroteReadsAsNaN() throws Throwable {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment out = a.allocate(JAVA_FLOAT, 32);
            assertEquals(0, run(a, "t_shared_unwritten", new int[] {1, 1, 1, 32, 1, 1, 128}, out.address()).code());
            for (int t = 0; t < 32; t++) {
                assertTrue(Float.isNaN(out.getAtIndex(JAVA_FLOAT, t)), "thread " + t);
            }
        }
    }

    @Test
    void whatAGpuWouldNotDoIsReportedByName() throws Throwable {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment out = a.allocate(JAVA_INT, 64);
            Outcome divergent = run(a, "t_divergent_barrier", new int[] {1, 1, 1, 64, 1, 1, 0}, out.address());
            assertEquals(new Outcome(2, "block (0, 0, 0): 1 threads returned while 63 wait at __syncthreads()"),
                    divergent);

            assertEquals(new Outcome(2, "block (0, 0, 0) warp 0: 1 lanes returned while 31 wait at __syncwarp()"),
                    run(a, "t_divergent_syncwarp", new int[] {1, 1, 1, 32, 1, 1, 0}, out.address()));
            Outcome partialWarp = run(a, "t_shuffle", new int[] {1, 1, 1, 16, 1, 1, 0}, out.address());
            assertEquals(2, partialWarp.code(), partialWarp.message());
            assertTrue(partialWarp.message().endsWith("a warp-wide operation in a block of 16 threads, not whole"
                    + " warps"), partialWarp.message());

            assertEquals(0, run(a, "t_shared_store", new int[] {1, 1, 1, 1, 1, 1, 64}, 15, out.address()).code());
            assertEquals(new Outcome(2, "t_shared_store: a block wrote shared memory at byte 64, past the launch's 64"
                    + " bytes"), run(a, "t_shared_store", new int[] {1, 1, 1, 1, 1, 1, 64}, 16, out.address()));

            assertEquals(new Outcome(2, "t_shared_store: parameter 0 is 8 bytes in the PTX, 4 in the source"),
                    run(a, "t_shared_store", new int[] {1, 1, 1, 1, 1, 1, 64}, 16L, out.address()));
            assertEquals(new Outcome(2, "t_shared_store: 1 parameters in the PTX, 2 in the source"),
                    run(a, "t_shared_store", new int[] {1, 1, 1, 1, 1, 1, 64}, out.address()));
            assertEquals(new Outcome(2, "t_nothing: not a kernel of vram4j_kernels.cu"),
                    run(a, "t_nothing", new int[] {1, 1, 1, 1, 1, 1, 0}));

            MemorySegment flags = a.allocate(JAVA_INT, 4);
            assertEquals(new Outcome(1, "block (1, 0, 0) thread (0, 0, 0): __trap()"),
                    run(a, "t_trap", new int[] {4, 1, 1, 1, 1, 1, 0}, flags.address()));
            assertEquals(1, flags.getAtIndex(JAVA_INT, 0), "blocks before the trap ran");
            assertEquals(0, flags.getAtIndex(JAVA_INT, 3), "blocks after the trap did not");
        }
    }

    /** On a GPU a trap fails the context for good: the launch returns, the next synchronizing call reports it. */
    @Test
    void aTrapThroughTheStandInDriverFailsTheNextSynchronize() throws Throwable {
        MethodHandle load = NativeTestBuild.fakeDriverHook("fake_cuda_load_kernels",
                FunctionDescriptor.of(JAVA_INT, ADDRESS));
        MethodHandle clear = NativeTestBuild.fakeDriverHook("fake_cuda_clear_error", FunctionDescriptor.ofVoid());
        String ptx = ".version 8.0\n.target sm_80\n.address_size 64\n.visible .entry t_trap(\n.param .u64 p\n)\n{\n}\n";
        try (Arena a = Arena.ofConfined();
             CudaDevice gpu = CudaDevice.open(NativeTestBuild.fakeDriver().toString(), 0)) {
            assertEquals(0, (int) load.invokeExact(a.allocateFrom(selftest.toString())));
            try {
                long flags = gpu.malloc(16);
                gpu.fill(flags, 16, (byte) 0);
                try (CudaModule module = gpu.loadModule(ptx.getBytes(StandardCharsets.US_ASCII))) {
                    module.function("t_trap").launch(4, 1, 1, 0, gpu.defaultStream(), KernelArgs.of().ptr(flags));
                    CudaException e = assertThrows(CudaException.class, gpu::synchronize);
                    assertTrue(e.getMessage().contains("CUDA_ERROR_LAUNCH_FAILED"), e.getMessage());
                    clear.invokeExact();
                }
                gpu.free(flags);
            } finally {
                clear.invokeExact();
                assertEquals(0, (int) load.invokeExact(MemorySegment.NULL));
            }
        }
    }

    @Test
    void theTableHoldsExactlyThePtxEntries() throws Throwable {
        SymbolLookup lib = SymbolLookup.libraryLookup(KernelEmulator.library(), Arena.global());
        MethodHandle count = Linker.nativeLinker().downcallHandle(lib.find("emu_kernel_count").orElseThrow(),
                FunctionDescriptor.of(JAVA_INT));
        MethodHandle name = Linker.nativeLinker().downcallHandle(lib.find("emu_kernel_name").orElseThrow(),
                FunctionDescriptor.of(ADDRESS, JAVA_INT));
        List<String> names = new ArrayList<>();
        for (int i = 0, n = (int) count.invokeExact(); i < n; i++) {
            names.add(((MemorySegment) name.invokeExact(i)).reinterpret(256).getString(0));
        }
        PtxEntries ptx = PtxEntries.parse(new String(CudaKernelTable.ptx(), StandardCharsets.US_ASCII),
                CudaKernelTable.PTX_RESOURCE);
        assertEquals(ptx.entries().keySet().stream().sorted().toList(), names.stream().sorted().toList());
        assertEquals(KernelEmulator.entries(Files.readString(KernelEmulator.KERNELS)), names);
    }

    @Test
    void onlyTheDynamicSharedFormIsRewritten() {
        assertEquals("float *sh = (float *) emu::dynamic_shared();",
                KernelEmulator.hostSource("extern __shared__ float sh[];"));
        AssertionError e = assertThrows(AssertionError.class,
                () -> KernelEmulator.hostSource("__shared__ float tile[32];"));
        assertTrue(e.getMessage().contains("kernel_emulator.cpp knows only that form"), e.getMessage());
    }
}
