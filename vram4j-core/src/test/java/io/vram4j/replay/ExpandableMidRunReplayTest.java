package io.vram4j.replay;

import io.vram4j.alloc.CachingAllocator;
import io.vram4j.alloc.DeviceOutOfMemoryException;
import io.vram4j.alloc.config.AllocatorConfig;
import io.vram4j.device.DeviceBackend;
import io.vram4j.device.Devices;
import io.vram4j.device.Stream;
import io.vram4j.memory.snapshot.MemorySnapshot;
import io.vram4j.memory.snapshot.SegmentInfo;
import io.vram4j.memory.snapshot.SnapshotReader;
import io.vram4j.memory.snapshot.SnapshotWriter;
import io.vram4j.memory.snapshot.TraceAction;
import io.vram4j.memory.snapshot.TraceEntry;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.function.Consumer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Replays of vram4j's own expandable-segment recordings whose history starts mid-run: the pages mapped and the
 * blocks live before the first entry are rebuilt from the dump minus the trace (TraceReplayer Note [Expandable
 * mid-run]), and the replay must reproduce the recording exactly.
 */
class ExpandableMidRunReplayTest {
    private static final long MiB = 1L << 20;

    /** What was recorded, and the allocator's state when the history started. */
    private record Recording(MemorySnapshot snapshot, long reservedAtStart, int liveAtStart,
                             List<SegmentInfo> segmentsAtStart) {
    }

    /**
     * Runs {@code before} without history, starts the history, runs {@code during}, optionally fails one
     * allocation of the whole capacity (an oom entry gives the replay the recorded capacity), takes the snapshot
     * and passes it through the pickle writer and reader.
     */
    private static Recording record(long capacity, boolean oom, Consumer<Workload> before, Consumer<Workload> during) {
        try (DeviceBackend device = Devices.open("sim:" + capacity)) {
            CachingAllocator a = CachingAllocator.create(device, AllocatorConfig.DEFAULT.parse("expandable_segments:True"));
            Workload w = new Workload(a, device.defaultStream(), device.newStream());
            before.accept(w);
            long reservedAtStart = a.memoryReserved();
            int liveAtStart = w.live.size();
            List<SegmentInfo> segmentsAtStart = a.snapshot().segments();
            a.recordMemoryHistory(1_000_000);
            during.accept(w);
            if (oom) {
                assertThrows(DeviceOutOfMemoryException.class, () -> a.malloc(capacity));
            }
            MemorySnapshot s = a.snapshot();
            for (long p : List.copyOf(w.live)) {
                w.free(p);
            }
            a.close();
            MemorySnapshot back = SnapshotReader.read(SnapshotWriter.toPickle(s), "mid-run.pickle");
            return new Recording(back, reservedAtStart, liveAtStart, segmentsAtStart);
        }
    }

    /** Allocations kept by address, in allocation order. */
    private static final class Workload {
        final CachingAllocator a;
        final Stream main;
        final Stream side;
        final List<Long> live = new ArrayList<>();

        Workload(CachingAllocator a, Stream main, Stream side) {
            this.a = a;
            this.main = main;
            this.side = side;
        }

        long malloc(long size) {
            long p = a.malloc(size, main);
            live.add(p);
            return p;
        }

        void free(long p) {
            assertTrue(live.remove(p));
            a.free(p);
        }

        /** Random allocations (small and large, two streams) and frees, with an empty_cache half way. */
        void random(long seed, int steps, long maxLarge) {
            Random rnd = new Random(seed);
            for (int i = 0; i < steps; i++) {
                if (live.size() < 30 && (live.isEmpty() || rnd.nextInt(3) > 0)) {
                    long size = rnd.nextInt(3) == 0 ? MiB + rnd.nextLong(maxLarge) : 1 + rnd.nextLong(MiB);
                    try {
                        live.add(a.malloc(size, rnd.nextInt(5) == 0 ? side : main));
                    } catch (DeviceOutOfMemoryException e) {
                        // keeps going, as a program that catches OOM would
                    }
                } else {
                    a.free(live.remove(rnd.nextInt(live.size())));
                }
                if (i == steps / 2) {
                    a.emptyCache();
                    if (!live.isEmpty()) {
                        // An empty_cache directly followed by a malloc that maps pages reads as the out-of-memory
                        // path's release (TraceAnalysis cannot tell them apart); a free in between keeps it explicit.
                        a.free(live.remove(live.size() - 1));
                    }
                }
            }
        }
    }

    private static ReplayReport replayExactly(Recording rec) {
        List<TraceEntry> t = rec.snapshot().deviceTraces().get(0);
        assertTrue(t.stream().anyMatch(e -> e.action() == TraceAction.SEGMENT_MAP), "the trace maps pages");
        assertTrue(rec.snapshot().segments().stream().allMatch(SegmentInfo::isExpandable));
        ReplayReport r = Replayer.replay(rec.snapshot(), ReplayOptions.EXACT).get(0);
        assertFalse(r.fromEmpty());
        assertEquals(rec.reservedAtStart(), r.initialReserved(), "bytes mapped before the first entry");
        assertEquals(rec.liveAtStart(), r.initialLiveBlocks(), "blocks live before the first entry");
        assertEquals(r.recordedSegmentSizes(), r.replayedSegmentSizes(), "the same segment_map sequence");
        assertEquals(0, r.allocsAtOtherAddress(), "every alloc at its recorded address");
        assertEquals(r.recordedPeakReserved(), r.replayedPeakReserved());
        assertEquals(r.recordedPeakRequested(), r.replayedPeakRequested());
        assertEquals(r.recordedPeakAllocated(), r.replayedPeakAllocated());
        assertEquals(r.recordedOoms(), r.predictedOoms());
        assertEquals(0, r.skipped());
        assertTrue(r.finalStateEqual(), String.join("\n", r.finalStateDifferences()));
        assertTrue(r.exact());
        return r;
    }

    /** Whether some segment_unmap of the trace releases pages of the pool mapped when the history started. */
    private static boolean unmapsPreTracePages(Recording rec, boolean large) {
        for (TraceEntry e : rec.snapshot().deviceTraces().get(0)) {
            if (e.action() == TraceAction.SEGMENT_UNMAP) {
                for (SegmentInfo s : rec.segmentsAtStart()) {
                    if (s.isLarge() == large && s.address() < e.addr() + e.size() && e.addr() < s.endAddress()) {
                        return true;
                    }
                }
            }
        }
        return false;
    }

    @Test
    void largeAndSmallPoolsWithPreTracePagesUnmappedDuringTheTrace() {
        long[] b = new long[2];
        Recording rec = record(512 * MiB, true, w -> {
            long a = w.malloc(30 * MiB);   // large pool: two 20 MiB pages
            w.malloc(10 * MiB);
            b[0] = w.malloc(45 * MiB);
            w.malloc(MiB);                 // small pool: two 1 MiB blocks fill the first 2 MiB page
            w.malloc(MiB);
            b[1] = w.malloc(MiB);          // at the start of a second small page
            long c = w.malloc(300 * 1024);
            w.free(a);
            w.free(c);
            w.malloc(2 * MiB);             // large: placed in the freed head
        }, w -> {
            w.free(b[0]);                   // the 45 MiB block: its pages become wholly free
            w.free(b[1]);                   // the second small page becomes wholly free
            w.a.emptyCache();               // unmaps pre-trace pages of both pools
            w.free(w.live.get(0));          // a pre-trace block (also keeps the empty_cache apart from the next map)
            long d = w.malloc(70 * MiB);    // maps pages again
            w.malloc(600 * 1024);
            w.malloc(5 * MiB);
            w.free(d);
            w.malloc(12 * MiB);
        });
        assertTrue(unmapsPreTracePages(rec, true), "large pages mapped before the trace are unmapped during it");
        assertTrue(unmapsPreTracePages(rec, false), "small pages mapped before the trace are unmapped during it");
        List<SegmentInfo> atStart = rec.segmentsAtStart();
        assertTrue(atStart.stream().anyMatch(SegmentInfo::isLarge) && atStart.stream().anyMatch(s -> !s.isLarge()),
                "both pools had expandable segments before the trace");
        ReplayReport r = replayExactly(rec);
        assertEquals(512 * MiB, r.capacity(), "capacity from the oom entry");
    }

    @Test
    void mapIntoAHoleAtTheReservationBaseFindsTheBase() {
        // Before the trace the first pages of the large reservation are unmapped; the trace maps them again,
        // which shows where the reservation begins.
        Recording rec = record(512 * MiB, true, w -> {
            long a = w.malloc(50 * MiB);
            w.malloc(30 * MiB);
            w.free(a);
            w.a.emptyCache();
        }, w -> {
            w.malloc(15 * MiB);             // maps the hole at the base
            w.malloc(3 * MiB);
        });
        long firstPreTrace = rec.segmentsAtStart().get(0).address();
        assertTrue(rec.snapshot().deviceTraces().get(0).stream().anyMatch(e -> e.action() == TraceAction.SEGMENT_MAP
                && e.addr() < firstPreTrace), "the trace maps below the first pre-trace page");
        replayExactly(rec);
    }

    @Test
    void randomWorkloadsOnTwoStreamsReplayExactly() {
        for (long seed = 1; seed <= 12; seed++) {
            long s = seed;
            Recording rec = record(512 * MiB, true, w -> w.random(s, 600, 40 * MiB), w -> w.random(s + 100, 1500, 40 * MiB));
            assertTrue(rec.liveAtStart() > 0, "seed " + seed);
            replayExactly(rec);
        }
    }

    @Test
    void withOneStreamAndPoolAndNoOomEntryTheDeviceIsUnbounded() {
        Recording rec = record(512 * MiB, false, w -> {
            w.malloc(30 * MiB);              // maps pages before the history starts
            w.malloc(10 * MiB);
        }, w -> {
            w.free(w.live.get(0));
            w.malloc(50 * MiB);
        });
        ReplayReport r = replayExactly(rec);
        assertEquals(CapacityEstimate.Source.UNBOUNDED, r.capacityEstimate().source(), r.capacitySource());
        assertTrue(r.capacity() > r.recordedPeakReserved(), "the recorded peak is never used as a limit");
        // a what-if that needs more than the recorded peak does not run out of memory on an unbounded device
        ReplayReport w = Replayer.replay(rec.snapshot(), ReplayOptions.whatIf("expandable_segments:True,"
                + "roundup_power2_divisions:4", 0)).get(0);
        assertEquals(0, w.predictedOoms());
    }

    @Test
    void theSpacingOfReservationsGivesTheDeviceTotal() {
        long capacity = 700 * MiB;
        Recording rec = record(capacity, false, w -> w.malloc(30 * MiB), w -> {
            w.malloc(5000);                                // the small pool's reservation
            w.live.add(w.a.malloc(25 * MiB, w.side));      // the side stream's
            w.malloc(40 * MiB);
        });
        ReplayReport r = replayExactly(rec);
        CapacityEstimate c = r.capacityEstimate();
        assertEquals(CapacityEstimate.Source.EXPANDABLE_SPACING, c.source(), c.describe());
        assertTrue(c.lower() <= capacity && capacity <= c.upper(), c.describe());
        assertTrue(c.upper() - c.lower() < 20 * MiB, "one page of addresses wide: " + c.describe());
    }
}
