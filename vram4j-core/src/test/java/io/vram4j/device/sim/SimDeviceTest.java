package io.vram4j.device.sim;

import io.vram4j.device.AbstractDeviceBackendTest;
import io.vram4j.device.ByteSize;
import io.vram4j.device.DeviceBackend;
import io.vram4j.device.Devices;
import io.vram4j.device.MemInfo;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.TreeMap;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class SimDeviceTest extends AbstractDeviceBackendTest {
    private static final long BASE = SimDevice.BASE_ADDRESS;

    @Override
    protected DeviceBackend open(long capacity) {
        return new SimDevice(0, capacity, "sim:" + ByteSize.format(capacity));
    }

    @Override
    protected String expectedType() {
        return "sim";
    }

    @Test
    void hasNoStorage() {
        assertFalse(device.hasStorage());
        long a = device.malloc(4096);
        UnsupportedOperationException e = assertThrows(UnsupportedOperationException.class,
                () -> device.segment(a, 4096));
        assertTrue(e.getMessage().startsWith("the sim device has no storage; "), e.getMessage());
    }

    @Test
    void handsOutTheLowestFreeRangeFromTheBase() {
        assertEquals(0x7f00_0000_0000L, BASE);
        long a = device.malloc(G);
        long b = device.malloc(G);
        long c = device.malloc(G);
        assertEquals(BASE, a);
        assertEquals(BASE + G, b);
        assertEquals(BASE + 2 * G, c);

        device.free(a);
        device.free(c);
        assertEquals(BASE, device.malloc(G), "the lowest freed range is reused first");
        device.free(BASE);
        device.free(b);
        assertEquals(BASE, device.malloc(6 * MIB), "freed neighbours merge into one range");
    }

    @Test
    void smallSegmentsPackAt512BytesAndLargeOnesAlignTo2MiB() {
        assertEquals(BASE, device.malloc(100));
        assertEquals(BASE + 512, device.malloc(100));
        assertEquals(BASE + G, device.malloc(3 * MIB), "at least 2 MiB: the next 2 MiB boundary");
        assertEquals(BASE + 1024, device.malloc(513), "small sizes fill the gap below it");
        assertEquals(BASE + 2048, device.malloc(1));
        // just under 2 MiB: 512-byte aligned, but its 2 MiB footprint no longer fits below BASE + 2 MiB
        assertEquals(BASE + 5 * MIB, device.malloc(G - 1));
    }

    @Test
    void aFreeHintIsHonouredAndAnOccupiedOneIgnored() {
        long recorded = 139_937_017_020_416L; // 0x7f45a030c000, a real PyTorch segment address
        assertEquals(recorded, device.malloc(20 * MIB, recorded));
        long other = device.malloc(4 * MIB, recorded);
        assertNotEquals(recorded, other);
        assertTrue(other + 4 * MIB <= recorded || other >= recorded + 20 * MIB, "overlaps the hinted segment");
        assertEquals(recorded + 20 * MIB, device.malloc(MIB, recorded + 20 * MIB), "right after it is free");
        long overlapping = device.malloc(MIB, recorded + 19 * MIB);
        assertEquals(BASE + 4 * MIB, overlapping, "placed first-fit after the 4 MiB segment at the base");
    }

    @Test
    void hintsFarOutsideTheDefaultRegionWork() {
        long low = 0x10_0000_0000L;
        long high = 0x7000_0000_0000_0000L;
        assertEquals(low, device.malloc(4 * MIB, low));
        assertEquals(high, device.malloc(4 * MIB, high));
        long straddling = BASE - MIB;
        assertEquals(straddling, device.malloc(4 * MIB, straddling));
        assertEquals(BASE + 4 * MIB, device.malloc(G), "the range across the base is occupied");
        device.free(straddling);
        assertEquals(BASE, device.malloc(G), "and is free again after free()");
        device.free(low);
        device.free(high);
        assertEquals(low, device.malloc(8 * MIB, low));
        assertEquals(CAPACITY - 8 * MIB - 2 * G, device.memGetInfo().free());
    }

    @Test
    void unusableHintsAreIgnored() {
        assertEquals(BASE, device.malloc(512, BASE + 100), "hint not 512-byte aligned");
        assertEquals(BASE + 512, device.malloc(512, 512), "hint below the address space");
        assertEquals(BASE + 1024, device.malloc(512, -4096), "negative hint");
        assertEquals(BASE + 1536, device.malloc(4096, Long.MAX_VALUE & -512), "range would pass the end");
    }

    @Test
    void reservationsHonourAlignedHints() {
        long hint = 0x7f10_0000_0000L;
        assertEquals(hint, device.reserveAddressRange(8 * MIB, hint));
        long second = device.reserveAddressRange(8 * MIB, hint);
        assertNotEquals(hint, second);
        assertEquals(BASE, second);
        assertEquals(BASE + 8 * MIB, device.reserveAddressRange(4 * MIB, hint + 8 * MIB + MIB),
                "a hint off the 2 MiB grid is ignored");
        assertEquals(hint + 8 * MIB, device.reserveAddressRange(4 * MIB, hint + 8 * MIB));
        assertTrue(device.map(hint, 8 * MIB));
        assertEquals(CAPACITY - 8 * MIB, device.memGetInfo().free());
    }

    @Test
    void simulatesCapacitiesFarBeyondThisMachine() {
        try (DeviceBackend d = Devices.open("sim:80GiB")) {
            long a = d.malloc(40 * ByteSize.GIB);
            long b = d.malloc(40 * ByteSize.GIB);
            assertEquals(BASE, a);
            assertEquals(BASE + 40 * ByteSize.GIB, b);
            assertEquals(0, d.malloc(1));
            d.free(a);
            assertEquals(new MemInfo(40 * ByteSize.GIB, 80 * ByteSize.GIB), d.memGetInfo());
        }
        try (DeviceBackend d = Devices.open("sim:1PiB")) {
            long base = d.reserveAddressRange(ByteSize.PIB, 0);
            assertTrue(d.map(base, ByteSize.PIB / 2));
            assertNotEquals(0, d.malloc(ByteSize.PIB / 2));
            assertEquals(0, d.memGetInfo().free());
        }
    }

    @Test
    void replayScaleMallocAndFreeStayCorrect() {
        // many live segments at once, as a long replay has; checks placement and accounting throughout
        try (DeviceBackend d = Devices.open("sim:80GiB")) {
            SplittableRandom random = new SplittableRandom(7);
            TreeMap<Long, Long> live = new TreeMap<>();
            List<Long> order = new ArrayList<>();
            long used = 0;
            for (int i = 0; i < 200_000; i++) {
                if (order.size() < 20_000 && (order.isEmpty() || random.nextInt(5) < 3)) {
                    long size = random.nextInt(4) == 0 ? G * (1 + random.nextInt(10)) : 512L * (1 + random.nextInt(64));
                    long hint = random.nextInt(8) == 0 ? BASE + 512L * random.nextInt(1 << 20) : 0;
                    long a = d.malloc(size, hint);
                    assertNotEquals(0, a);
                    assertEquals(0, a % (size >= G && hint == 0 ? G : 512));
                    Map.Entry<Long, Long> below = live.floorEntry(a);
                    Map.Entry<Long, Long> above = live.ceilingEntry(a);
                    assertTrue(below == null || below.getKey() + below.getValue() <= a, "overlap below");
                    assertTrue(above == null || above.getKey() >= a + size, "overlap above");
                    live.put(a, size);
                    order.add(a);
                    used += size;
                } else {
                    int victim = random.nextInt(order.size());
                    long a = order.get(victim);
                    order.set(victim, order.getLast());
                    order.removeLast();
                    used -= live.remove(a);
                    d.free(a);
                }
            }
            assertEquals(80 * ByteSize.GIB - used, d.memGetInfo().free());
            for (long a : order) {
                d.free(a);
            }
            assertEquals(BASE, d.malloc(G), "everything merged back");
        }
    }
}
