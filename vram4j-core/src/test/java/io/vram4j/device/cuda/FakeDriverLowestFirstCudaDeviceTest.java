package io.vram4j.device.cuda;

import io.vram4j.alloc.CachingAllocator;
import io.vram4j.device.Devices;
import io.vram4j.device.sim.SimDevice;
import io.vram4j.testsupport.NativeTestBuild;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The {@code cuda} device contract with {@link CudaSegments#LOWEST_ADDRESS_FIRST} through the test driver, and what
 * that placement promises: segments lie where {@code sim} would put them, shifted by one constant, so the
 * allocator's best fit breaks ties the same way on both.
 */
@SuppressWarnings("restricted")
class FakeDriverLowestFirstCudaDeviceTest extends FakeDriverContract {
    @Override
    CudaDevice open() {
        return CudaDevice.open(driver, 0, CudaSegments.LOWEST_ADDRESS_FIRST);
    }

    @Test
    void segmentsLieWhereSimPutsThemShiftedByOneConstant() {
        // the sim has what the GPU lets one use: its total less the 8 MiB the fake's context takes
        try (CudaDevice cuda = open(); SimDevice sim = new SimDevice(0, TOTAL - 8 * MiB, "sim")) {
            assertEquals(CudaSegments.LOWEST_ADDRESS_FIRST, cuda.segments());
            long shift = cuda.arenaBase() - SimDevice.BASE_ADDRESS;
            SplittableRandom r = new SplittableRandom(7);
            List<long[]> live = new ArrayList<>();   // {cuda address, sim address}
            for (int step = 0; step < 400; step++) {
                if (!live.isEmpty() && r.nextInt(3) == 0) {
                    long[] p = live.remove(r.nextInt(live.size()));
                    cuda.free(p[0]);
                    sim.free(p[1]);
                } else {
                    long size = (1 + r.nextInt(12)) * (2 * MiB);
                    long c = cuda.malloc(size);
                    long s = sim.malloc(size);
                    assertEquals(s == 0, c == 0, "step " + step + ": both have room or neither");
                    if (c != 0) {
                        assertEquals(s + shift, c, "step " + step + ": " + size + " bytes");
                        live.add(new long[] {c, s});
                    }
                }
            }
            for (long[] p : live) {
                cuda.free(p[0]);
                sim.free(p[1]);
            }
        }
        assertEquals(0, FakeDriverCudaDeviceTest.live("handles"), "every physical allocation released");
        assertEquals(0, FakeDriverCudaDeviceTest.live("reservations"), "the arena released");
    }

    @Test
    void hintsInTheArenaAreHonouredOthersAndOddSizesGoToCuMemAlloc() {
        try (CudaDevice cuda = open()) {
            long base = cuda.arenaBase();
            long at = base + 64 * MiB;
            assertEquals(at, cuda.malloc(4 * MiB, at), "a free, aligned hint inside the arena");
            assertEquals(base, cuda.malloc(2 * MiB, at), "taken: the lowest free range instead");
            assertEquals(base + 2 * MiB, cuda.malloc(2 * MiB, at + 512), "misaligned: the lowest free range");
            long odd = cuda.malloc(MiB);
            assertNotEquals(0, odd);
            assertTrue(odd < base || odd >= base + 16 * TOTAL, "not a multiple of 2 MiB: cuMemAlloc_v2's place");
            cuda.free(odd);
            // 8 MiB live and the fake's context takes 8 MiB: the device's own count allows this, the driver refuses
            assertEquals(0, cuda.malloc(TOTAL - 14 * MiB), "the driver's out of memory: 0");
            assertEquals(base + 4 * MiB, cuda.malloc(2 * MiB), "the failed range was given back");
        }
        assertEquals(0, FakeDriverCudaDeviceTest.live("handles"));
        assertEquals(0, FakeDriverCudaDeviceTest.live("allocs"));
    }

    @Test
    void theDefaultAndDevicesOpenKeepTheDriversPlacement() {
        try (CudaDevice d = CudaDevice.open(driver, 0)) {
            assertEquals(CudaSegments.DRIVER, d.segments());
            assertEquals(0, d.arenaBase());
        }
    }

    @Test
    void theCachingAllocatorLaysOutAsOnSim() {
        try (CudaDevice cuda = open(); SimDevice sim = (SimDevice) Devices.open("sim:1GiB:cc9.0");
             CachingAllocator a = CachingAllocator.create(cuda); CachingAllocator b = CachingAllocator.create(sim)) {
            long shift = cuda.arenaBase() - SimDevice.BASE_ADDRESS;
            long[] sizes = {25 * MiB, 3 * MiB, 25 * MiB, 200_000, 25 * MiB, 7 * MiB};
            long[] pa = new long[sizes.length];
            long[] pb = new long[sizes.length];
            for (int i = 0; i < sizes.length; i++) {
                pa[i] = a.malloc(sizes[i]);
                pb[i] = b.malloc(sizes[i]);
            }
            a.free(pa[0]);
            b.free(pb[0]);
            a.free(pa[2]);
            b.free(pb[2]);
            long ta = a.malloc(25 * MiB);
            long tb = b.malloc(25 * MiB);
            assertEquals(tb + shift, ta, "the tie between two free 25 MiB blocks went the same way");
            for (int i = 1; i < sizes.length; i++) {
                if (i != 2) {
                    assertEquals(pb[i] + shift, pa[i]);
                    a.free(pa[i]);
                    b.free(pb[i]);
                }
            }
            a.free(ta);
            b.free(tb);
        }
    }
}
