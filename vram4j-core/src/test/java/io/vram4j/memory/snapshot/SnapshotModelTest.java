package io.vram4j.memory.snapshot;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import org.junit.jupiter.api.Test;

/** The records and enums of the snapshot model. */
class SnapshotModelTest {
    @Test
    void pytorchNames() {
        for (BlockState s : BlockState.values()) {
            assertEquals(s, BlockState.fromPytorchName(s.pytorchName()));
        }
        assertEquals("active_pending_free", BlockState.ACTIVE_PENDING_FREE.pytorchName());
        assertTrue(BlockState.ACTIVE_PENDING_FREE.isActive());
        assertFalse(BlockState.INACTIVE.isActive());
        assertThrows(IllegalArgumentException.class, () -> BlockState.fromPytorchName("free"));
        for (TraceAction a : TraceAction.values()) {
            assertEquals(a, TraceAction.fromPytorchName(a.pytorchName()));
        }
        assertEquals("segment_unmap", TraceAction.SEGMENT_UNMAP.pytorchName());
        assertThrows(IllegalArgumentException.class, () -> TraceAction.fromPytorchName("ALLOC"));
    }

    @Test
    void recordsValidateAndCopy() {
        List<Frame> frames = new ArrayList<>(List.of(new Frame("f", "a.py", 1)));
        BlockInfo b = new BlockInfo(0, 512, 500, BlockState.ACTIVE_ALLOCATED, frames);
        frames.clear();
        assertEquals(1, b.frames().size(), "defensive copy");
        assertThrows(UnsupportedOperationException.class, () -> b.frames().clear());
        assertThrows(NullPointerException.class, () -> new Frame(null, "a.py", 1));
        assertThrows(NullPointerException.class, () -> new BlockInfo(0, 1, 1, null, List.of()));
        assertThrows(IllegalArgumentException.class, () -> new SegmentInfo(0, 0, 0, 0, 0, 0, 0, "medium",
                PoolId.DEFAULT, false, List.of(), List.of()));
        assertEquals("a.py:1:f", new Frame("f", "a.py", 1).toString());
        assertEquals("(0, 18446744073709551615)", new PoolId(0, -1).toString());
        assertTrue(PoolId.DEFAULT.isDefault());
        assertFalse(new PoolId(0, 1).isDefault());
    }

    /** Frame writes its equals and hashCode out (start-up): they must mean what a record's mean, all three components. */
    @Test
    void framesAreEqualByNameFileAndLine() {
        Frame f = new Frame("forward", "model.py", 12);
        Frame same = new Frame(new String("forward"), new String("model.py"), 12);
        assertEquals(f, same);
        assertEquals(f.hashCode(), same.hashCode());
        assertFalse(f.equals(new Frame("forward", "model.py", 13)));
        assertFalse(f.equals(new Frame("backward", "model.py", 12)));
        assertFalse(f.equals(new Frame("forward", "other.py", 12)));
        assertFalse(new Frame("a", "b", 1).equals(new Frame("b", "a", 1)));
        assertFalse(f.equals(null));
        assertFalse(f.equals("model.py:12:forward"));
        assertEquals(2, new java.util.HashSet<>(List.of(f, same, new Frame("forward", "model.py", 0))).size());
    }

    @Test
    void segmentSizesFromBlocksAsPytorchSums() {
        List<BlockInfo> blocks = List.of(
                new BlockInfo(0x1000, 512, 500, BlockState.ACTIVE_ALLOCATED, List.of()),
                new BlockInfo(0x1200, 1024, 1000, BlockState.ACTIVE_PENDING_FREE, List.of()),
                new BlockInfo(0x1600, 2048, 7, BlockState.INACTIVE, List.of()));
        SegmentInfo s = SegmentInfo.of(3, 0x1000, 42, SegmentInfo.SMALL, PoolId.DEFAULT, false, List.of(), blocks);
        assertEquals(3, s.device());
        assertEquals(0x1000, s.address());
        assertEquals(512 + 1024 + 2048, s.totalSize(), "total_size: every block");
        assertEquals(512, s.allocatedSize(), "allocated_size: active_allocated blocks only");
        assertEquals(512 + 1024, s.activeSize(), "active_size: allocated and pending-free blocks");
        assertEquals(500 + 1000, s.requestedSize(), "requested_size: active blocks only, an inactive one's is stale");
        assertEquals(42, s.stream());
        assertFalse(s.isLarge());
        assertEquals(0x1000 + 3584, s.endAddress());
        assertEquals(blocks, s.blocks());

        SegmentInfo empty = SegmentInfo.of(0, 0, 0, SegmentInfo.LARGE, PoolId.DEFAULT, true, List.of(), List.of());
        assertEquals(0, empty.totalSize());
        assertTrue(empty.isExpandable());
        assertThrows(IllegalArgumentException.class, () -> SegmentInfo.of(0, 0, 0, "huge", PoolId.DEFAULT, false,
                List.of(), blocks));
        assertThrows(NullPointerException.class, () -> SegmentInfo.of(0, 0, 0, SegmentInfo.SMALL, null, false,
                List.of(), blocks));
    }

    @Test
    void traceEntryTime() {
        TraceEntry withTime = TraceEntry.of(TraceAction.ALLOC, 1, 2, 0, 1234, List.of());
        assertTrue(withTime.hasTimeUs());
        assertEquals(OptionalLong.of(1234), withTime.time());
        TraceEntry without = TraceEntry.of(TraceAction.ALLOC, 1, 2, 0, TraceEntry.NO_TIME, List.of());
        assertFalse(without.hasTimeUs());
        assertEquals(OptionalLong.empty(), without.time());
        TraceEntry oom = TraceEntry.oom(4096, 0, 5, 777, List.of());
        assertEquals(TraceAction.OOM, oom.action());
        assertEquals(777, oom.deviceFree());
    }

    @Test
    void snapshotViewsAndNormalization() {
        SegmentInfo a = new SegmentInfo(0, 0x1000_0000L, 2 << 20, 512, 1024, 1000, 0, SegmentInfo.SMALL,
                PoolId.DEFAULT, false, List.of(), List.of(
                        new BlockInfo(0x1000_0000L, 512, 500, BlockState.ACTIVE_ALLOCATED, List.of()),
                        new BlockInfo(0x1000_0200L, 512, 500, BlockState.ACTIVE_PENDING_FREE, List.of()),
                        new BlockInfo(0x1000_0400L, (2 << 20) - 1024, 0, BlockState.INACTIVE, List.of())));
        SegmentInfo b = new SegmentInfo(2, 0x2000_0000L, 20 << 20, 0, 0, 0, 5, SegmentInfo.LARGE,
                new PoolId(1, 0), false, List.of(), List.of(
                        new BlockInfo(0x2000_0000L, 20 << 20, 0, BlockState.INACTIVE, List.of())));
        List<List<TraceEntry>> traces = List.of(
                List.of(TraceEntry.of(TraceAction.ALLOC, 0x1000_0000L, 500, 0, 1, List.of())), List.of(), List.of());
        MemorySnapshot s = new MemorySnapshot(List.of(a, b), traces, Map.of("n", 1, "t", new Object[] {1, "x"}),
                List.of());
        assertEquals((2 << 20) + (20 << 20), s.reservedBytes());
        assertEquals(512, s.allocatedBytes());
        assertEquals(1024, s.activeBytes());
        assertEquals(1000, s.requestedBytes());
        assertEquals(2 << 20, s.reservedBytes(0));
        assertEquals(20 << 20, s.reservedBytes(2));
        assertEquals(0, s.reservedBytes(1));
        assertEquals(java.util.Set.of(0, 2), s.devices());
        assertEquals(List.of(b), s.segments(2));
        assertEquals(1, s.trace(0).size());
        assertTrue(s.trace(7).isEmpty());
        assertTrue(s.trace(-1).isEmpty());
        assertEquals(4, s.blockCount());
        assertTrue(s.hasTraces());
        assertEquals(1L, s.allocatorSettings().get("n"));
        assertEquals(List.of(1L, "x"), s.allocatorSettings().get("t"), "tuples become lists");
        assertEquals(s, new MemorySnapshot(List.of(a, b), traces, Map.of("n", 1L, "t", List.of(1L, "x")), List.of()));
        assertThrows(UnsupportedOperationException.class, () -> s.allocatorSettings().put("x", 1));
        assertThrows(IllegalArgumentException.class,
                () -> new MemorySnapshot(List.of(), List.of(), Map.of("bad", new Object()), List.of()));
        assertFalse(MemorySnapshot.ofSegments(List.of(a)).hasTraces());
    }
}
