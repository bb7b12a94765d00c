package io.vram4j.replay;

import io.vram4j.alloc.CachingAllocator;
import io.vram4j.alloc.DeviceOutOfMemoryException;
import io.vram4j.alloc.config.AllocatorConfig;
import io.vram4j.device.DeviceBackend;
import io.vram4j.device.Devices;
import io.vram4j.device.Stream;
import io.vram4j.memory.snapshot.MemorySnapshot;
import io.vram4j.memory.snapshot.SnapshotReader;
import io.vram4j.memory.snapshot.TraceAction;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Out-of-memory forensics on failures of vram4j's own allocator, where the truth is known. */
class OomForensicsTest {
    private static final long MiB = 1L << 20;

    @Test
    void theObserverLeavesTheSnapshotWithItsOomEntryAndTheReport(@TempDir Path dir) throws Exception {
        try (DeviceBackend device = Devices.open("sim:64MiB")) {
            CachingAllocator a = CachingAllocator.create(device, AllocatorConfig.DEFAULT);
            a.recordMemoryHistory(1000);
            OomEvidenceObserver observer = OomEvidenceObserver.attach(a, dir.resolve("evidence"));
            long p = a.malloc(50 * MiB);
            assertThrows(DeviceOutOfMemoryException.class, () -> a.malloc(40 * MiB)); // 50 + 40 > 64: capacity
            assertEquals(1, observer.written());
            MemorySnapshot s = SnapshotReader.read(dir.resolve("evidence/oom-1.pickle"));
            assertTrue(s.deviceTraces().get(0).stream().anyMatch(e -> e.action() == TraceAction.OOM), "the oom entry");
            String report = Files.readString(dir.resolve("evidence/oom-1.txt"));
            assertTrue(report.contains("recorded oom entry"), report);
            assertTrue(report.contains("cause: capacity: live allocations (50.00 MiB) plus the request (40.00 MiB) exceed"
                    + " the capacity (64.00 MiB) by 26.00 MiB"), report);
            // the two segments, 50 MiB and 40 MiB, fit in 90 MiB and in nothing smaller
            assertTrue(report.contains("smallest capacity that fits: 90.00 MiB, 2 MiB less does not (the peak would have"
                    + " to be 26.00 MiB smaller at 64.00 MiB)"), report);
            a.free(p);
            a.close();
        }
    }

    private static long leakSite(CachingAllocator a) {
        return a.malloc(4 * MiB);
    }

    private static long tempSite(CachingAllocator a) {
        return a.malloc(8 * MiB);
    }

    @Test
    void aSiteThatKeepsGrowingAcrossStepsIsGrowthLeak() {
        MemorySnapshot s = null;
        try (DeviceBackend device = Devices.open("sim:256MiB")) {
            CachingAllocator a = CachingAllocator.create(device, AllocatorConfig.DEFAULT);
            a.recordMemoryHistory(100_000);
            List<Long> leaked = new ArrayList<>();
            try {
                for (int step = 0; step < 100; step++) {
                    long t = tempSite(a);
                    leaked.add(t);
                    leaked.add(leakSite(a)); // kept across steps
                    leaked.remove(t);
                    a.free(t);
                }
            } catch (DeviceOutOfMemoryException expected) {
                s = a.snapshot();
                leaked.forEach(a::free);
                a.close();
            }
        }
        assertTrue(s != null, "the leak ran out of memory");
        ReplayReport r = OomReportWriter.events(s, null, 0).get(0);
        assertEquals(1, r.oomEvents().size());
        OomForensics.Explanation x = OomForensics.explain(s, 0, r.oomEvents().get(0), null);
        assertEquals(OomForensics.Cause.GROWTH_LEAK, x.diagnosis().cause(), x.diagnosis().reason());
        assertEquals(1, x.growthSites().size(), x.growthSites().toString());
        assertTrue(x.growthSites().get(0).site().contains("leakSite"), x.growthSites().toString());
    }

    /** Three 20 MiB segments, each holding two 8 MiB blocks on {@code on}, the first of each freed again. */
    private static List<Long> splitSegments(CachingAllocator a, Stream on) {
        List<Long> kept = new ArrayList<>();
        for (int i = 0; i < 6; i++) {
            long p = a.malloc(8 * MiB, on);
            if (i % 2 == 1) {
                kept.add(p);
            } else {
                kept.add(-p);
            }
        }
        List<Long> live = new ArrayList<>();
        for (long p : kept) {
            if (p < 0) {
                a.free(-p);
            } else {
                live.add(p);
            }
        }
        return live;
    }

    @Test
    void freeBytesInBlocksTooSmallAreFragmentationAndTheMessageSaysSo() {
        try (DeviceBackend device = Devices.open("sim:64MiB")) {
            CachingAllocator a = CachingAllocator.create(device, AllocatorConfig.DEFAULT);
            List<Long> live = splitSegments(a, device.defaultStream());
            DeviceOutOfMemoryException e = assertThrows(DeviceOutOfMemoryException.class, () -> a.malloc(12 * MiB));
            // per segment: a free 8 MiB block and a free 4 MiB remainder; 4 MiB left on the device
            assertTrue(e.getMessage().endsWith("\nFragmentation: the largest free cached block is 8.00 MiB; 36.00 MiB"
                    + " is free in 6 cached blocks."), e.getMessage());
            OomState s = OomState.of(a.segments(), 64 * MiB, 12 * MiB, device.defaultStream().handle());
            OomForensics.Diagnosis d = OomForensics.diagnose(s);
            assertEquals(OomForensics.Cause.FRAGMENTATION, d.cause(), d.reason());
            assertEquals(8 * MiB, s.largestFreeBlock());
            assertEquals(36 * MiB, s.own().freeBytes());
            live.forEach(a::free);
            a.close();
        }
    }

    @Test
    void freeBytesOfAnotherStreamAreCacheHeldElsewhere() {
        try (DeviceBackend device = Devices.open("sim:64MiB")) {
            CachingAllocator a = CachingAllocator.create(device, AllocatorConfig.DEFAULT);
            Stream side = device.newStream();
            List<Long> live = splitSegments(a, side);
            assertThrows(DeviceOutOfMemoryException.class, () -> a.malloc(12 * MiB, device.defaultStream()));
            OomState s = OomState.of(a.segments(), 64 * MiB, 12 * MiB, device.defaultStream().handle());
            OomForensics.Diagnosis d = OomForensics.diagnose(s);
            assertEquals(OomForensics.Cause.CACHE_HELD_ELSEWHERE, d.cause(), d.reason());
            assertEquals(0, s.own().freeBytes());
            assertTrue(d.reason().startsWith("36.00 MiB is cached for other streams"), d.reason());
            live.forEach(a::free);
            a.close();
        }
    }
}
