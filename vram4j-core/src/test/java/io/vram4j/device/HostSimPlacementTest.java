package io.vram4j.device;

import io.vram4j.device.host.HostDevice;
import io.vram4j.device.sim.SimDevice;
import org.junit.jupiter.api.Test;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The placement guarantee of {@link HostDevice} and {@link SimDevice}: the same sequence of device calls gives
 * addresses that differ by one constant offset, so the allocator's address tie-breaks agree.
 */
class HostSimPlacementTest {
    private static final long MIB = ByteSize.MIB;
    private static final long G = AbstractDevice.GRANULARITY;

    /** A reservation on both devices, with the granules mapped (by index). */
    private record Reservation(long sim, long host, int granules, boolean[] mapped) {
    }

    @Test
    void aRandomSequenceOfCallsGivesAddressesAtOneConstantOffset() {
        for (long seed : new long[] {1, 2, 3}) {
            runSequence(seed);
        }
    }

    private static void runSequence(long seed) {
        long capacity = 96 * MIB;
        try (SimDevice sim = new SimDevice(0, capacity, "sim:96MiB");
                HostDevice host = new HostDevice(0, capacity, "host:96MiB")) {
            assertTrue(host.arenaSize() >= 16 * capacity, "arena of " + host.arenaSize() + " bytes");
            assertEquals(0, host.arenaBase() % G);
            long offset = host.arenaBase() - SimDevice.BASE_ADDRESS;
            SplittableRandom rnd = new SplittableRandom(seed);
            Map<Long, Long> segments = new LinkedHashMap<>(); // sim base -> size
            List<Reservation> reservations = new ArrayList<>();
            int successes = 0;
            int failures = 0;
            for (int step = 0; step < 3000; step++) {
                String where = "seed " + seed + ", step " + step;
                int op = rnd.nextInt(100);
                if (op < 40) {
                    long size = randomSize(rnd);
                    long s = sim.malloc(size);
                    long h = host.malloc(size);
                    assertEquals(s == 0 ? 0 : s + offset, h, where + ": malloc(" + size + ")");
                    if (s != 0) {
                        successes++;
                        MemorySegment view = host.segment(h, size);
                        assertEquals(0, view.get(JAVA_BYTE, 0), where + ": fresh first byte");
                        assertEquals(0, view.get(JAVA_BYTE, size - 1), where + ": fresh last byte");
                        mark(view, s);
                        segments.put(s, size);
                    } else {
                        failures++;
                    }
                } else if (op < 70 && !segments.isEmpty()) {
                    long s = pick(rnd, new ArrayList<>(segments.keySet()));
                    long size = segments.remove(s);
                    checkMark(host.segment(s + offset, size), s, where);
                    sim.free(s);
                    host.free(s + offset);
                } else if (op < 78 && reservations.size() < 4) {
                    int granules = 1 + rnd.nextInt(24);
                    long s = sim.reserveAddressRange(granules * G, 0);
                    long h = host.reserveAddressRange(granules * G, 0);
                    assertEquals(s + offset, h, where + ": reserveAddressRange(" + granules * G + ")");
                    reservations.add(new Reservation(s, h, granules, new boolean[granules]));
                } else if (op < 92 && !reservations.isEmpty()) {
                    Reservation r = pick(rnd, reservations);
                    int i = rnd.nextInt(r.granules);
                    if (r.mapped[i]) {
                        sim.unmap(r.sim + i * G, G);
                        host.unmap(r.host + i * G, G);
                        r.mapped[i] = false;
                    } else {
                        boolean s = sim.map(r.sim + i * G, G);
                        assertEquals(s, host.map(r.host + i * G, G), where + ": map");
                        r.mapped[i] = s;
                        if (s) {
                            MemorySegment view = host.segment(r.host + i * G, G);
                            assertEquals(0, view.get(JAVA_BYTE, rnd.nextLong(G)), where + ": freshly mapped byte");
                        }
                    }
                } else if (!reservations.isEmpty()) {
                    Reservation r = reservations.remove(rnd.nextInt(reservations.size()));
                    for (int i = 0; i < r.granules; i++) {
                        if (r.mapped[i]) {
                            sim.unmap(r.sim + i * G, G);
                            host.unmap(r.host + i * G, G);
                        }
                    }
                    sim.releaseAddressRange(r.sim, r.granules * G);
                    host.releaseAddressRange(r.host, r.granules * G);
                }
                assertEquals(sim.memGetInfo(), host.memGetInfo(), where);
            }
            assertTrue(successes > 500 && failures > 10, "the sequence exercises both outcomes: " + successes
                    + " successful, " + failures + " failed mallocs");
            for (Map.Entry<Long, Long> e : segments.entrySet()) {
                checkMark(host.segment(e.getKey() + offset, e.getValue()), e.getKey(), "seed " + seed + ", end");
            }
        }
    }

    /** Mostly sub-page and odd sizes, which share pages on host, and whole or odd multiples of 2 MiB. */
    private static long randomSize(SplittableRandom rnd) {
        return switch (rnd.nextInt(4)) {
            case 0 -> 1 + rnd.nextInt(4096);
            case 1 -> 1 + rnd.nextLong(G);
            case 2 -> (1 + rnd.nextInt(6)) * G;
            default -> G + rnd.nextLong(10 * G);
        };
    }

    private static <T> T pick(SplittableRandom rnd, List<T> list) {
        return list.get(rnd.nextInt(list.size()));
    }

    /** Writes a tag derived from {@code tag} into the first and (if it is another) the last byte of the segment. */
    private static void mark(MemorySegment s, long tag) {
        s.set(JAVA_BYTE, 0, (byte) (tag >>> 9));
        if (s.byteSize() > 1) {
            s.set(JAVA_BYTE, s.byteSize() - 1, (byte) ~(tag >>> 9));
        }
    }

    private static void checkMark(MemorySegment s, long tag, String where) {
        assertEquals((byte) (tag >>> 9), s.get(JAVA_BYTE, 0), where + ": first byte of the segment was overwritten");
        if (s.byteSize() > 1) {
            assertEquals((byte) ~(tag >>> 9), s.get(JAVA_BYTE, s.byteSize() - 1),
                    where + ": last byte of the segment was overwritten");
        }
    }
}
