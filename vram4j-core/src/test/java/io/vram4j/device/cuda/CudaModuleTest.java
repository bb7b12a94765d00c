package io.vram4j.device.cuda;

import io.vram4j.device.DeviceUnavailableException;
import io.vram4j.device.Stream;
import io.vram4j.testsupport.NativeTestBuild;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.nio.charset.StandardCharsets;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Module loading and kernel launches through the bindings, on the test driver: it finds functions only where the
 * PTX declares them and records each launch with the parameter values it would pass to the GPU, read with the
 * sizes of the entry's {@code .param} types.
 */
class CudaModuleTest {
    private static final String PTX = """
            //
            // Cuda compilation tools, release 13.0, V13.0.88
            //
            .version 9.0
            .target sm_80
            .address_size 64

            .visible .entry v4j_axpy_f32(
            \t.param .f32 v4j_axpy_f32_param_0,
            \t.param .u64 v4j_axpy_f32_param_1,
            \t.param .u64 v4j_axpy_f32_param_2,
            \t.param .u64 v4j_axpy_f32_param_3
            )
            {
            \tret;
            }
            .visible .entry v4j_rows(
            \t.param .u64 v4j_rows_param_0,
            \t.param .u32 v4j_rows_param_1,
            \t.param .u32 v4j_rows_param_2
            )
            {
            \tret;
            }
            """;

    private static CudaDriver driver;
    private static MethodHandle lastLaunch;
    private static MethodHandle failModuleLoad;
    private static MethodHandle setDriverVersion;
    private CudaDevice device;

    @BeforeAll
    static void load() {
        driver = CudaDriver.load(NativeTestBuild.fakeDriver().toString());
        lastLaunch = NativeTestBuild.fakeDriverHook("fake_cuda_last_launch",
                FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, ADDRESS, ADDRESS, JAVA_INT));
        failModuleLoad = NativeTestBuild.fakeDriverHook("fake_cuda_fail_module_load", FunctionDescriptor.ofVoid(JAVA_INT));
        setDriverVersion = NativeTestBuild.fakeDriverHook("fake_cuda_set_driver_version",
                FunctionDescriptor.ofVoid(JAVA_INT));
    }

    private static long live(String what) {
        return NativeTestBuild.fakeDriverLive(what);
    }

    @BeforeEach
    void open() {
        device = CudaDevice.open(driver, 0);
    }

    @AfterEach
    void close() throws Throwable {
        failModuleLoad.invokeExact(0);
        setDriverVersion.invokeExact(13000);
        device.close();
    }

    private static byte[] ptx() {
        return PTX.getBytes(StandardCharsets.US_ASCII);
    }

    /** The last launch as {name, dims (grid xyz, block xyz, shared), params}. */
    private static Object[] last() throws Throwable {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment name = a.allocate(128);
            MemorySegment dims = a.allocate(JAVA_INT, 7);
            MemorySegment params = a.allocate(JAVA_LONG, 64);
            int n = (int) lastLaunch.invokeExact(name, 128, dims, params, 64);
            long[] p = new long[Math.max(0, n)];
            for (int i = 0; i < p.length; i++) {
                p[i] = params.getAtIndex(JAVA_LONG, i);
            }
            return new Object[] {name.getString(0), dims.toArray(JAVA_INT), p};
        }
    }

    /**
     * A {@link GpuTimer} reads the GPU time between its two records ({@code cuEventElapsedTime}); on the stand-in, whose
     * clock advances one microsecond per launch, two launches between them measure 0.002 ms. Reading before the end
     * is recorded fails naming the call; closing destroys both events.
     */
    @Test
    void aTimerMeasuresTheGpuTimeBetweenItsRecords() {
        long events = live("events");
        try (CudaModule m = device.loadModule(ptx()); GpuTimer timer = device.newTimer()) {
            assertEquals(events + 2, live("events"));
            Stream s = device.newStream();
            CudaException early = assertThrows(CudaException.class, timer::elapsedMs);
            assertTrue(early.getMessage().contains("cuEventElapsedTime"), early.getMessage());
            timer.start(s);
            CudaFunction rows = m.function("v4j_rows");
            for (int i = 0; i < 2; i++) {
                rows.launch(1, 1, 32, 0, s, KernelArgs.of().ptr(1L << 40).i32(0).i32(1));
            }
            timer.stop(s);
            assertEquals(0.002f, timer.elapsedMs(), 1e-6f);
            try (io.vram4j.device.DeviceBackend other = io.vram4j.device.Devices.open("sim:1MiB")) {
                assertThrows(IllegalArgumentException.class, () -> timer.start(other.defaultStream()),
                        "a stream of another device");
            }
        }
        assertEquals(events, live("events"));
    }

    @Test
    void launchesPassEveryParameterValueWithItsSize() throws Throwable {
        long before = live("launches");
        try (CudaModule m = device.loadModule(ptx())) {
            assertEquals(1, live("modules"));
            CudaFunction axpy = m.function("v4j_axpy_f32");
            assertEquals("v4j_axpy_f32", axpy.name());
            Stream s = device.newStream();
            axpy.launch(40, 1, 256, 0, s, KernelArgs.of().f32(-2.5f).ptr(0x7000_0000_0000L).ptr(0x7000_0000_1000L)
                    .i64(10_000L));
            Object[] l = last();
            assertEquals("v4j_axpy_f32", l[0]);
            assertArrayEquals(new int[] {40, 1, 1, 256, 1, 1, 0}, (int[]) l[1]);
            assertArrayEquals(new long[] {Float.floatToRawIntBits(-2.5f) & 0xFFFF_FFFFL, 0x7000_0000_0000L, 0x7000_0000_1000L, 10_000L},
                    (long[]) l[2]);
            m.function("v4j_rows").launch(3, 2, 64, 256, device.defaultStream(), KernelArgs.of().ptr(1L << 40).i32(-1).i32(7));
            l = last();
            assertArrayEquals(new int[] {3, 2, 1, 64, 1, 1, 256}, (int[]) l[1]);
            assertArrayEquals(new long[] {1L << 40, 0xFFFF_FFFFL, 7}, (long[]) l[2], "an int is 4 bytes, not sign-extended");
            assertEquals(before + 2, live("launches"));
        }
        assertEquals(0, live("modules"));
    }

    @Test
    void badLaunchesAndNamesAreRefusedInOneLine() throws Throwable {
        try (CudaModule m = device.loadModule(ptx())) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> m.function("v4j_missing"));
            assertEquals("no kernel 'v4j_missing' in the module loaded on cuda:0 (cuModuleGetFunction: "
                    + "CUDA_ERROR_NOT_FOUND)", e.getMessage());
            CudaFunction f = m.function("v4j_rows");
            long launches = live("launches");
            KernelArgs args = KernelArgs.of().ptr(0).i32(1).i32(1);
            e = assertThrows(IllegalArgumentException.class, () -> f.launch(1, 1, 2048, 0, device.defaultStream(), args));
            assertEquals("v4j_rows: launch dimensions out of range: grid 1x1, block 2048, shared 0 bytes", e.getMessage());
            assertThrows(IllegalArgumentException.class, () -> f.launch(0, 1, 32, 0, device.defaultStream(), args));
            assertThrows(IllegalArgumentException.class, () -> f.launch(1, 65536, 32, 0, device.defaultStream(), args));
            assertEquals(launches, live("launches"), "nothing reached the driver");
            m.close();
            IllegalStateException closed = assertThrows(IllegalStateException.class,
                    () -> f.launch(1, 1, 32, 0, device.defaultStream(), args));
            assertTrue(closed.getMessage().contains("unloaded"), closed.getMessage());
        }
    }

    @Test
    void aDriverTooOldForThePtxIsNamedInOneLine() throws Throwable {
        failModuleLoad.invokeExact(CudaDriver.CUDA_ERROR_UNSUPPORTED_PTX_VERSION);
        setDriverVersion.invokeExact(12040);
        DeviceUnavailableException e = assertThrows(DeviceUnavailableException.class, () -> device.loadModule(ptx()));
        assertEquals("the CUDA driver (version 12.4, cuDriverGetVersion 12040) cannot load PTX ISA 9.0 "
                + "(cuModuleLoadData: CUDA_ERROR_UNSUPPORTED_PTX_VERSION): vram4j's kernels are compiled by nvcc 13, "
                + "which needs a CUDA 13 driver (R580 or newer); update the driver", e.getMessage());
        assertEquals(0, live("modules"));
    }

    @Test
    void anImageThatIsNotPtxIsADriverError() {
        CudaException e = assertThrows(CudaException.class,
                () -> device.loadModule("not ptx at all".getBytes(StandardCharsets.US_ASCII)));
        assertEquals("CUDA_ERROR_INVALID_IMAGE", e.errorName());
        assertTrue(e.getMessage().startsWith("cuModuleLoadData(15 bytes): CUDA_ERROR_INVALID_IMAGE"), e.getMessage());
    }

    @Test
    void theComputeCapabilityComesFromTheDriver() {
        assertArrayEquals(new int[] {9, 0}, device.computeCapability(), "what the test driver reports");
        device.close();
        assertThrows(IllegalStateException.class, device::computeCapability);
        device = CudaDevice.open(driver, 0);
    }

    @Test
    void kernelArgsKnowTheirSizes() {
        KernelArgs a = KernelArgs.of();
        for (int i = 0; i < 20; i++) {
            a.i32(i);
        }
        a.ptr(5).f32(1f);
        assertEquals(22, a.count());
        assertEquals(4, a.size(0));
        assertEquals(8, a.size(20));
        assertEquals(4, a.size(21));
        assertThrows(IndexOutOfBoundsException.class, () -> a.size(22));
    }
}
