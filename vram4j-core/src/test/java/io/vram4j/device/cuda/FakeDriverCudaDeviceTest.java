package io.vram4j.device.cuda;

import io.vram4j.alloc.CachingAllocator;
import io.vram4j.device.DeviceUnavailableException;
import io.vram4j.device.Event;
import io.vram4j.device.Stream;
import io.vram4j.testsupport.NativeTestBuild;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;

import static java.lang.foreign.ValueLayout.JAVA_INT;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The {@code cuda} device and its bindings on every build machine, through the test driver
 * {@code src/test/c/fake_libcuda.c} (compiled against the real {@code cuda.h}, so the bindings' symbol names and
 * prototypes are the real driver's). The fake requires a current context on every calling thread, refuses to
 * split mappings, runs queued work only when the program waits for it (so events stay pending until then, and work
 * ordered wrongly across streams reads stale bytes), and counts live objects, so these
 * tests also check what a GPU would not show directly: nothing leaks, and the context is made current.
 */
@SuppressWarnings("restricted")
class FakeDriverCudaDeviceTest extends FakeDriverContract {
    @Override
    CudaDevice open() {
        return CudaDevice.open(driver, 0);
    }

    static long live(String what) {
        return NativeTestBuild.fakeDriverLive(what);
    }

    @Test
    void closeGivesEverythingBack() {
        CudaDevice d = open();
        CachingAllocator alloc = CachingAllocator.create(d, io.vram4j.alloc.config.AllocatorConfig.DEFAULT
                .parse("expandable_segments:True"));
        alloc.free(alloc.malloc(30 * MiB)); // leaves a mapped expandable segment in the cache
        d.malloc(MiB); // a segment the allocator does not know of
        Stream s = d.newStream();
        s.recordEvent();
        assertTrue(live("contexts") > 0);
        alloc.close();
        d.close();
        d.close(); // idempotent
        for (String what : new String[] {"allocs", "streams", "handles", "reservations", "mappings", "contexts", "used"}) {
            assertEquals(0, live(what), what + " left after close");
        }
    }

    @Test
    void eventsArePendingUntilTheStreamPassesThemAndArePooled() {
        try (CudaDevice d = open()) {
            Stream s = d.newStream();
            long eventsBefore = live("events");
            Event e = s.recordEvent();
            assertFalse(e.query(), "the fake completes work only when the stream is synchronized");
            assertFalse(s.query());
            s.synchronize();
            assertTrue(e.query());
            assertTrue(e.query(), "stays complete");
            for (int i = 0; i < 100; i++) {
                Event f = s.recordEvent();
                f.synchronize();
                assertTrue(f.query());
            }
            assertEquals(eventsBefore + 1, live("events"), "completed events are reused, not created anew");
        }
    }

    @Test
    void recordStreamWaitsForRealEvents() {
        try (CudaDevice d = open()) {
            CachingAllocator alloc = CachingAllocator.create(d);
            Stream side = d.newStream();
            long p = alloc.malloc(4 * MiB);
            alloc.recordStream(p, side);
            alloc.free(p);
            long q = alloc.malloc(4 * MiB);
            assertNotEquals(p, q, "the side stream has not passed the free: the block must not be reused");
            side.synchronize();
            long r = alloc.malloc(4 * MiB);
            assertEquals(p, r, "once the side stream passed the free, the block (lowest address) is reused");
            alloc.free(q);
            alloc.free(r);
            alloc.close();
        }
    }

    @Test
    void theContextIsMadeCurrentOncePerThread() {
        try (CudaDevice d = open()) {
            long before = live("set_current");
            for (int i = 0; i < 50; i++) {
                d.free(d.malloc(MiB));
            }
            assertTrue(live("set_current") - before <= 1, "cuCtxSetCurrent once, not per call");
        }
    }

    @Test
    void pinnedBuffersComeFromTheDriverAndWaitForTheirCopies() {
        try (CudaDevice d = open()) {
            io.vram4j.alloc.CachingHostAllocator pinned = io.vram4j.alloc.CachingHostAllocator.create(d.pinnedMemory());
            Stream copies = d.newStream();
            long dst = d.malloc(MiB);
            io.vram4j.alloc.PinnedBuffer b = pinned.allocate(MiB);
            assertEquals(1, live("host"), "cuMemHostAlloc");
            b.segment().fill((byte) 9);
            d.copyFromHostAsync(b.segment(), dst, copies);
            pinned.recordEvent(b, copies);
            pinned.free(b);
            io.vram4j.alloc.PinnedBuffer c = pinned.allocate(MiB);
            assertNotEquals(b.segment().address(), c.segment().address(), "the copy has not passed the free");
            copies.synchronize();
            pinned.free(c);
            pinned.emptyCache();
            assertEquals(0, live("host"), "cuMemFreeHost for both blocks");
            assertEquals(2, pinned.hostMemoryStats().get("num_host_free"));
            pinned.close();
            d.free(dst);
        }
    }

    @Test
    void aStreamWaitsForAnEventOfAnotherWithoutBlockingTheHost() {
        try (CudaDevice d = open()) {
            Stream side = d.newStream();
            Stream compute = d.defaultStream();
            long dst = d.malloc(MiB);
            try (Arena a = Arena.ofConfined()) {
                NativeTestBuild.fakeDriverTraceStart();
                d.copyFromHostAsync(a.allocate(MiB), dst, side);
                Event copied = side.recordEvent();
                compute.waitEvent(copied);
                String s = "0x" + Long.toHexString(side.handle());
                assertEquals(java.util.List.of("cuMemcpyHtoDAsync " + s, "cuEventRecord " + s, "cuStreamWaitEvent 0x0"),
                        NativeTestBuild.fakeDriverTrace());
                assertFalse(copied.query(), "the host did not wait");
                compute.synchronize();
                assertTrue(copied.query(), "the default stream ran after the copy, so the copy is done");
                NativeTestBuild.fakeDriverTraceStart();
                compute.waitEvent(copied);
                assertEquals(java.util.List.of(), NativeTestBuild.fakeDriverTrace(), "nothing to wait for any more");
            }
            CudaDevice other = open();
            try {
                Event foreign = other.newStream().recordEvent();
                assertThrows(IllegalArgumentException.class, () -> new Stream(1, 0).waitEvent(foreign));
            } finally {
                other.close();
            }
            d.free(dst);
        }
    }

    /** The bytes at a device address, read through a synchronous copy (which waits for the default stream only). */
    private static byte[] read(CudaDevice d, long src, int n) {
        try (Arena a = Arena.ofConfined()) {
            java.lang.foreign.MemorySegment back = a.allocate(n);
            d.copyToHost(src, back);
            return back.toArray(java.lang.foreign.ValueLayout.JAVA_BYTE);
        }
    }

    private static byte[] filled(int n, int value) {
        byte[] b = new byte[n];
        java.util.Arrays.fill(b, (byte) value);
        return b;
    }

    @Test
    void sideStreamWorkRunsOnlyOnceTheProgramWaitsForIt() {
        try (CudaDevice d = open(); Arena a = Arena.ofConfined()) {
            io.vram4j.alloc.CachingHostAllocator pinned = io.vram4j.alloc.CachingHostAllocator.create(d.pinnedMemory());
            Stream side = d.newStream();
            Stream compute = d.defaultStream();
            long dst = d.malloc(4096);
            d.fill(dst, 4096, (byte) 1);
            io.vram4j.alloc.PinnedBuffer b = pinned.allocate(4096);
            b.segment().fill((byte) 2);
            d.copyFromHostAsync(b.segment(), dst, side);
            Event copied = side.recordEvent();
            b.segment().fill((byte) 3); // too early: the copy engine reads page-locked memory when the copy runs
            assertTrue(live("queued") >= 2, "the copy and the record wait on the side stream");
            assertArrayEquals(filled(4096, 1), read(d, dst, 4096), "a read on the default stream does not wait for"
                    + " a non-blocking stream's copy");
            compute.waitEvent(copied);
            assertArrayEquals(filled(4096, 3), read(d, dst, 4096), "once the default stream waits, the copy ran,"
                    + " reading the page-locked bytes as they were then");
            assertTrue(copied.query());

            java.lang.foreign.MemorySegment pageable = a.allocate(4096);
            pageable.fill((byte) 4);
            d.copyFromHostAsync(pageable, dst, side);
            pageable.fill((byte) 5); // fine: the driver staged pageable memory at the call
            d.fillAsync(dst + 1024, 1024, (byte) 6, side);
            side.synchronize();
            byte[] expected = filled(4096, 4);
            java.util.Arrays.fill(expected, 1024, 2048, (byte) 6);
            assertArrayEquals(expected, read(d, dst, 4096), "the side stream's copy and fill ran in its order");

            d.copyToHostAsync(dst, b.segment(), side);
            assertEquals(3, b.segment().get(java.lang.foreign.ValueLayout.JAVA_BYTE, 0), "not copied back yet");
            d.copyToHostAsync(dst, pageable, side);
            assertEquals(4, pageable.get(java.lang.foreign.ValueLayout.JAVA_BYTE, 0),
                    "a copy to pageable memory is done when the call returns, the stream's earlier work with it");
            assertEquals(0, live("queued"), "the stream ran up to that copy, its earlier copy to pinned memory too");
            assertEquals(6, b.segment().get(java.lang.foreign.ValueLayout.JAVA_BYTE, 1024));

            d.fillAsync(dst, 4096, (byte) 7, side);
            d.free(dst); // the driver finishes queued work before it frees
            assertEquals(0, live("queued"));
            pinned.free(b);
            pinned.close();
        }
    }

    @Test
    void aContextSynchronizeRunsEveryStreamsWork() {
        try (CudaDevice d = open()) {
            Stream one = d.newStream();
            Stream two = d.newStream();
            long dst = d.malloc(2048);
            d.fillAsync(dst, 1024, (byte) 8, one);
            d.fillAsync(dst + 1024, 1024, (byte) 9, two);
            Event e = two.recordEvent();
            assertFalse(e.query());
            long runsBefore = live("deferred_runs");
            d.synchronize();
            assertEquals(0, live("queued"));
            assertEquals(runsBefore + 2, live("deferred_runs"), "both fills ran at the synchronize");
            assertTrue(e.query());
            byte[] expected = filled(2048, 8);
            java.util.Arrays.fill(expected, 1024, 2048, (byte) 9);
            assertArrayEquals(expected, read(d, dst, 2048));
            d.free(dst);
        }
    }

    @Test
    void theDevicesHostAllocatorIsPinnedAndClosedWithIt() {
        CudaDevice d = open();
        io.vram4j.alloc.CachingHostAllocator host = d.hostAllocator();
        assertTrue(host == d.hostAllocator(), "one per device");
        assertEquals("cuMemHostAlloc", host.source().name());
        Stream copies = d.newStream();
        io.vram4j.alloc.PinnedBuffer b = host.allocate(1000);
        host.recordEvent(b, copies);
        host.free(b);
        assertEquals(1, live("host"));
        d.close();
        assertEquals(0, live("host"), "the block waiting for its event went back with the device");
        assertEquals(0, live("events"), "its event too");
        assertThrows(IllegalStateException.class, d::hostAllocator);
    }

    @Test
    void listDescribesEveryDevice() throws Throwable {
        configure.invokeExact(2, TOTAL);
        java.util.List<CudaDeviceInfo> list = CudaDevice.list(driver);
        assertEquals(2, list.size());
        CudaDeviceInfo second = list.get(1);
        assertEquals(new CudaDeviceInfo(1, "vram4j fake GPU", 9, 0, TOTAL, TOTAL - 8 * MiB - live("used"),
                13000, true), second);
        assertEquals("13.0", second.driverVersionString());
        assertEquals(0, live("contexts"), "listing retains no context");
        configure.invokeExact(0, TOTAL);
        assertEquals(java.util.List.of(), CudaDevice.list(driver));
    }

    @Test
    void driverErrorsNameTheCallAndTheError() {
        try (CudaDevice d = open()) {
            d.memGetInfo(); // makes the context current on this thread
            CudaException e = assertThrows(CudaException.class, () -> driver.memFree(0x1234));
            assertEquals("cuMemFree_v2(0x1234): CUDA_ERROR_INVALID_VALUE (invalid argument)", e.getMessage());
            assertEquals("CUDA_ERROR_INVALID_VALUE", e.errorName());
            assertEquals(1, e.result());
        }
    }

    @Test
    void missingDevicesAreOneClearLine() throws Throwable {
        DeviceUnavailableException past = assertThrows(DeviceUnavailableException.class,
                () -> CudaDevice.open(driver, 3));
        assertEquals("no CUDA device cuda:3: this machine has 1 (cuda:0)", past.getMessage());
        configure.invokeExact(0, TOTAL);
        DeviceUnavailableException none = assertThrows(DeviceUnavailableException.class,
                () -> CudaDevice.open(driver, 0));
        assertTrue(none.getMessage().startsWith("no CUDA device: the driver ("), none.getMessage());
    }

    @Test
    void aFailingCuInitIsOneClearLine() throws Throwable {
        SymbolLookup lookup = SymbolLookup.libraryLookup(driver.library(), Arena.global());
        MethodHandle failInit = Linker.nativeLinker().downcallHandle(lookup.find("fake_cuda_fail_init").orElseThrow(),
                FunctionDescriptor.ofVoid(JAVA_INT));
        failInit.invokeExact(34); // CUDA_ERROR_STUB_LIBRARY: the toolkit's stub libcuda, not a driver
        try {
            CudaDriver old = CudaDriver.load(driver.library());
            DeviceUnavailableException e = assertThrows(DeviceUnavailableException.class, () -> CudaDevice.open(old, 0));
            assertEquals("no usable CUDA driver: cuInit(0) in " + driver.library() + " failed with "
                    + "CUDA_ERROR_STUB_LIBRARY (CUDA driver is a stub library)",
                    e.getMessage());
        } finally {
            failInit.invokeExact(0);
        }
    }

    @Test
    void aMissingDriverIsOneClearLine() {
        DeviceUnavailableException e = assertThrows(DeviceUnavailableException.class,
                () -> CudaDriver.load("libcuda-that-is-not-there.so.1"));
        assertEquals("no CUDA driver: libcuda-that-is-not-there.so.1 not found", e.getMessage());
        DeviceUnavailableException noSymbols = assertThrows(DeviceUnavailableException.class,
                () -> CudaDriver.load("libm.so.6"));
        assertEquals("no usable CUDA driver: libm.so.6 has no cuGetErrorName (a driver for CUDA 12 or newer is needed)",
                noSymbols.getMessage());
    }

    @Test
    void theDevicesMemoryInfoIsTheDriversNotAnAccount() {
        try (CudaDevice d = open()) {
            assertEquals(TOTAL, d.totalMemory());
            // the fake's context takes 8 MiB, as a real context takes some of the GPU
            assertEquals(TOTAL - 8 * MiB - live("used"), d.memGetInfo().free());
            assertEquals("cuda:0", d.description());
            assertEquals("cuda", d.type());
            assertTrue(d.supportsVirtualMemory());
            long p = d.malloc(512);
            assertThrows(UnsupportedOperationException.class, () -> d.segment(p, 512));
            d.free(p);
        }
    }
}
