package io.vram4j.device.host;

import io.vram4j.device.AbstractDeviceBackendTest;
import io.vram4j.device.ByteSize;
import io.vram4j.device.DeviceBackend;
import io.vram4j.device.Devices;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.MemorySegment;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class HostDeviceTest extends AbstractDeviceBackendTest {

    @Override
    protected DeviceBackend open(long capacity) {
        return new HostDevice(0, capacity, "host:" + ByteSize.format(capacity));
    }

    @Override
    protected String expectedType() {
        return "host";
    }

    @Override
    protected void mark(DeviceBackend d, long address, long size, long tag) {
        MemorySegment s = d.segment(address, size);
        s.set(JAVA_BYTE, 0, (byte) tag);
        s.set(JAVA_BYTE, size - 1, (byte) (tag >>> 8));
    }

    @Override
    protected void checkMark(DeviceBackend d, long address, long size, long tag) {
        MemorySegment s = d.segment(address, size);
        assertEquals((byte) tag, s.get(JAVA_BYTE, 0), "first byte of 0x" + Long.toHexString(address));
        assertEquals((byte) (tag >>> 8), s.get(JAVA_BYTE, size - 1), "last byte of 0x" + Long.toHexString(address));
    }

    @Test
    void hasStorage() {
        assertTrue(device.hasStorage());
    }

    @Test
    void freshSegmentsReadZeroAndKeepTheirOwnPatterns() {
        long[] sizes = {8, 1000, 4096, 65536 + 8, 3 * MIB, 5 * MIB};
        Map<Long, Long> segments = new LinkedHashMap<>();
        for (long size : sizes) {
            long address = device.malloc(size);
            assertNotEquals(0, address);
            segments.put(address, size);
        }
        for (Map.Entry<Long, Long> e : segments.entrySet()) {
            MemorySegment s = device.segment(e.getKey(), e.getValue());
            assertEquals(e.getValue(), s.byteSize());
            assertEquals(e.getKey(), s.address());
            for (long off = 0; off + 8 <= e.getValue(); off += 8) {
                assertEquals(0L, s.get(JAVA_LONG, off), "fresh memory at offset " + off);
            }
        }
        for (Map.Entry<Long, Long> e : segments.entrySet()) {
            fill(device.segment(e.getKey(), e.getValue()), e.getKey());
        }
        for (Map.Entry<Long, Long> e : segments.entrySet()) {
            verify(device.segment(e.getKey(), e.getValue()), e.getKey());
        }
    }

    @Test
    void segmentsArePlacedInTheArenaLowestFreeRangeFirst() {
        HostDevice host = (HostDevice) device;
        long arena = host.arenaBase();
        assertEquals(0, arena % G);
        assertTrue(host.arenaSize() >= 16 * CAPACITY, "arena of " + host.arenaSize() + " bytes");
        long a = device.malloc(3 * MIB);
        long b = device.malloc(100);
        long c = device.malloc(100);
        assertEquals(arena, a);
        assertEquals(arena + 3 * MIB, b, "small segments pack at 512 bytes");
        assertEquals(arena + 3 * MIB + 512, c);
        assertEquals(arena + 4 * MIB, device.malloc(G), "at least 2 MiB: the next 2 MiB boundary");
        assertEquals(arena + 6 * MIB, device.reserveAddressRange(4 * MIB, 0));
        device.free(a);
        assertEquals(arena, device.malloc(G), "the lowest freed range is reused first");
        assertEquals(arena + G + 512, device.malloc(512 * 1024, arena + G + 512), "a free hint in the arena is honoured");
        assertEquals(arena + G, device.malloc(512, arena + G + 512),
                "an occupied one is ignored: first fit takes the 512 bytes below it");
    }

    @Test
    void freedSegmentsReturnTheirPagesAndReadZeroWhenReused() {
        long a = device.malloc(4 * MIB);
        fill(device.segment(a, 4 * MIB), a);
        assertEquals("rw-p", permissionsAt(a));
        device.free(a);
        assertEquals("---p", permissionsAt(a), "inaccessible after free");
        assertEquals("---p", permissionsAt(a + 4 * MIB - 1));
        long b = device.malloc(4 * MIB);
        assertEquals(a, b, "first fit reuses the range");
        MemorySegment s = device.segment(b, 4 * MIB);
        for (long off = 0; off < 4 * MIB; off += 8) {
            assertEquals(0L, s.get(JAVA_LONG, off), "reused memory at offset " + off);
        }
    }

    @Test
    void smallSegmentsSharingAPageKeepTheirBytesAndReadZeroWhenReused() {
        long a = device.malloc(1000);
        long b = device.malloc(700);
        assertEquals(a + 1024, b, "both in one page");
        fill(device.segment(a, 1000), a);
        fill(device.segment(b, 700), b);
        device.free(a);
        assertEquals("rw-p", permissionsAt(b), "the page stays while b uses it");
        verify(device.segment(b, 700), b);
        long c = device.malloc(1000);
        assertEquals(a, c);
        MemorySegment reused = device.segment(c, 1000);
        for (long off = 0; off + 8 <= 1000; off += 8) {
            assertEquals(0L, reused.get(JAVA_LONG, off), "reused bytes in a shared page at offset " + off);
        }
        verify(device.segment(b, 700), b);
        device.free(b);
        device.free(c);
        assertEquals("---p", permissionsAt(a), "the page goes when its last segment is freed");
    }

    @Test
    void aFreeHintOutsideTheArenaIsPassedToMmap() {
        HostDevice host = (HostDevice) device;
        long probe = device.malloc(8 * MIB);
        device.free(probe);
        long outside = host.arenaBase() + host.arenaSize() + 64 * G;
        long a = device.malloc(MIB, outside);
        if (a != outside) { // the kernel had something there: it must at least be in the arena then
            assertEquals(host.arenaBase(), a);
        } else {
            assertEquals("rw-p", permissionsAt(a));
            fill(device.segment(a, MIB), a);
            device.free(a);
            assertNull(permissionsAt(a), "unmapped on free");
        }
    }

    @Test
    void aViewOfAFreedSegmentCannotBeUsed() {
        long a = device.malloc(4096);
        MemorySegment view = device.segment(a, 4096);
        view.set(JAVA_LONG, 0, 42L);
        device.free(a);
        assertThrows(IllegalStateException.class, () -> view.get(JAVA_LONG, 0));
        assertThrows(IllegalArgumentException.class, () -> device.segment(a, 8));
    }

    @Test
    void segmentChecksItsBounds() {
        long size = 4096 + 100;
        long a = device.malloc(size);
        assertEquals(size, device.segment(a, size).byteSize());
        assertEquals(1, device.segment(a + size - 1, 1).byteSize());
        IllegalArgumentException past = assertThrows(IllegalArgumentException.class, () -> device.segment(a, size + 1));
        assertTrue(past.getMessage().contains("past the end"), past.getMessage());
        assertTrue(past.getMessage().contains(Long.toHexString(a)), past.getMessage());
        assertThrows(IllegalArgumentException.class, () -> device.segment(a + size, 1), "just after the end");
        assertThrows(IllegalArgumentException.class, () -> device.segment(a - 1, 1), "just before the start");
        assertThrows(IllegalArgumentException.class, () -> device.segment(a, -1));
        assertThrows(IllegalArgumentException.class, () -> device.segment(0, 1));
        assertThrows(IllegalArgumentException.class, () -> device.segment(a, Long.MAX_VALUE));

        long base = device.reserveAddressRange(8 * MIB, 0);
        IllegalArgumentException unmapped = assertThrows(IllegalArgumentException.class,
                () -> device.segment(base, 8));
        assertTrue(unmapped.getMessage().contains("not entirely mapped"), unmapped.getMessage());
        assertTrue(device.map(base, G));
        assertTrue(device.map(base + G, G));
        assertEquals(4 * MIB, device.segment(base, 4 * MIB).byteSize(), "a view may span adjacent maps");
        assertThrows(IllegalArgumentException.class, () -> device.segment(base + 4 * MIB - 8, 16));
    }

    @Test
    void mappedPagesAreWritableAndUnmappedPagesComeBackZeroed() {
        long base = device.reserveAddressRange(8 * MIB, 0);
        assertTrue(device.map(base, 3 * G));
        MemorySegment view = device.segment(base, 3 * G);
        fill(view, base);
        verify(view, base);

        device.unmap(base + G, G); // the middle granule
        assertTrue(device.map(base + G, G));
        MemorySegment remapped = device.segment(base + G, G);
        for (long off = 0; off < G; off += 8) {
            assertEquals(0L, remapped.get(JAVA_LONG, off), "remapped memory at offset " + off);
        }
        verify(device.segment(base, G), base); // the granules around it keep their contents
        verify(device.segment(base + 2 * G, G), base + 2 * G);
    }

    @Test
    void reservationsAreInaccessibleUntilMapped() {
        long base = device.reserveAddressRange(8 * MIB, 0);
        assertEquals(0, base % G);
        assertEquals("---p", permissionsAt(base));
        assertTrue(device.map(base, 4 * MIB));
        assertEquals("rw-p", permissionsAt(base));
        assertEquals("rw-p", permissionsAt(base + 4 * MIB - 1));
        assertEquals("---p", permissionsAt(base + 4 * MIB));
        device.unmap(base, 4 * MIB);
        assertEquals("---p", permissionsAt(base));
        device.releaseAddressRange(base, 8 * MIB);
    }

    @Test
    void closeUnmapsEverything() {
        DeviceBackend d = open(CAPACITY);
        long a = d.malloc(MIB);
        long base = d.reserveAddressRange(8 * MIB, 0);
        assertTrue(d.map(base, G));
        assertEquals("rw-p", permissionsAt(a));
        assertEquals("rw-p", permissionsAt(base));
        d.close();
        assertNull(permissionsAt(a), "segment still mapped");
        assertNull(permissionsAt(base), "reservation still mapped");
        assertNull(permissionsAt(base + 8 * MIB - 1), "reservation still mapped");
    }

    @Test
    void defaultCapacityIsHalfThePhysicalMemoryInWholeGranules() {
        long physical = ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean())
                .getTotalMemorySize();
        long expected = physical / 2 / G * G;
        assertEquals(physical, HostDevice.physicalMemory());
        assertEquals(expected, HostDevice.defaultCapacity());
        try (DeviceBackend d = Devices.open("host")) {
            assertEquals(expected, d.totalMemory());
            assertEquals("host:" + ByteSize.format(expected), d.description());
        }
    }

    @Test
    void aCapacityAboveThePhysicalMemoryIsAllowed() {
        long big = HostDevice.physicalMemory() * 4 / G * G;
        try (DeviceBackend d = assertDoesNotThrow(() -> open(big))) {
            assertEquals(big, d.totalMemory());
            long a = d.malloc(G);
            assertNotEquals(0, a);
            d.segment(a, G).set(JAVA_LONG, G - 8, 7L);
        }
    }

    private static void fill(MemorySegment s, long seed) {
        for (long off = 0; off + 8 <= s.byteSize(); off += 8) {
            s.set(JAVA_LONG, off, pattern(seed, off));
        }
    }

    private static void verify(MemorySegment s, long seed) {
        for (long off = 0; off + 8 <= s.byteSize(); off += 8) {
            long value = s.get(JAVA_LONG, off);
            if (value != pattern(seed, off)) {
                assertEquals(pattern(seed, off), value, "pattern of 0x" + Long.toHexString(seed) + " at offset " + off);
            }
        }
    }

    private static long pattern(long seed, long offset) {
        return (seed + offset) * 0x9E37_79B9_7F4A_7C15L;
    }

    /** @return the permissions ("rw-p", "---p", ...) of the mapping holding {@code address}, or null if none */
    private static String permissionsAt(long address) {
        try {
            List<String> lines = Files.readAllLines(Path.of("/proc/self/maps"));
            for (String line : lines) {
                String[] fields = line.split("\\s+");
                String[] range = fields[0].split("-");
                long start = Long.parseUnsignedLong(range[0], 16);
                long end = Long.parseUnsignedLong(range[1], 16);
                if (Long.compareUnsigned(address, start) >= 0 && Long.compareUnsigned(address, end) < 0) {
                    return fields[1];
                }
            }
            return null;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
