package io.vram4j.alloc;

import io.vram4j.memory.snapshot.BlockInfo;
import io.vram4j.memory.snapshot.BlockState;
import io.vram4j.memory.snapshot.Frame;
import io.vram4j.memory.snapshot.MemorySnapshot;
import io.vram4j.memory.snapshot.PoolId;
import io.vram4j.memory.snapshot.SegmentInfo;
import io.vram4j.memory.snapshot.TraceAction;
import io.vram4j.memory.snapshot.TraceEntry;

import java.util.ArrayList;
import java.util.List;

/**
 * Builds PyTorch's {@code torch.cuda.memory._snapshot()} structure (spec 10.2) from the engine's state and
 * history. The one place where the engine's blocks become {@link SegmentInfo}s. Runs under the engine's lock.
 */
final class SnapshotBuilder {
    private SnapshotBuilder() {
    }

    static MemorySnapshot build(DeviceCachingAllocator engine) {
        return engine.locked(() -> {
            int device = engine.device().index();
            List<SegmentInfo> segments = segments(engine);
            List<List<TraceEntry>> traces = new ArrayList<>();
            HistoryRecorder h = engine.history();
            List<TraceEntry> trace = new ArrayList<>();
            if (h != null) {
                h.snapshotTaken(engine.activeBytes(), engine.device().defaultStream());
                for (HistoryRecorder.Entry e : h.entries()) {
                    TraceAction action = TraceAction.fromPytorchName(e.action());
                    List<Frame> fr = frames(e.stack());
                    trace.add(action == TraceAction.OOM
                            ? TraceEntry.oom(e.size(), e.stream(), e.timeUs(), e.deviceFree(), fr)
                            : TraceEntry.of(action, e.addr(), e.size(), e.stream(), e.timeUs(), fr));
                }
            }
            for (int d = 0; d < device; d++) {
                traces.add(List.of());
            }
            traces.add(trace);
            return new MemorySnapshot(segments, traces, engine.config().toSettingsMap(), List.of());
        });
    }

    /**
     * The engine's segments as PyTorch's segment dicts, in address order: each block's state from its flags
     * ({@code allocated}, else pending events or stream uses: {@code active_pending_free}, else {@code inactive}),
     * its requested size and allocation stack for active blocks only (0 and none for inactive ones, where
     * PyTorch's value is stale), the segment's stack when history records one.
     */
    static List<SegmentInfo> segments(DeviceCachingAllocator engine) {
        return engine.locked(() -> {
            int device = engine.device().index();
            List<SegmentInfo> segments = new ArrayList<>();
            for (List<Block> seg : engine.segments()) {
                Block head = seg.get(0);
                List<BlockInfo> blocks = new ArrayList<>(seg.size());
                for (Block b : seg) {
                    BlockState state = b.allocated ? BlockState.ACTIVE_ALLOCATED
                            : b.isPending() ? BlockState.ACTIVE_PENDING_FREE : BlockState.INACTIVE;
                    boolean isActive = state.isActive();
                    blocks.add(new BlockInfo(b.ptr, b.size, isActive ? b.requestedSize : 0, state,
                            isActive ? frames(b.context) : List.of()));
                }
                Object segCtx = head.expandableSegment == null ? engine.segmentContext(head.ptr) : null;
                segments.add(SegmentInfo.of(device, head.ptr, head.streamKey,
                        head.pool.isSmall ? SegmentInfo.SMALL : SegmentInfo.LARGE, PoolId.DEFAULT,
                        head.expandableSegment != null, frames(segCtx), blocks));
            }
            return segments;
        });
    }

    private static List<Frame> frames(Object ctx) {
        if (!(ctx instanceof StackCapture.Stack stack)) {
            return List.of();
        }
        List<StackCapture.JavaFrame> list = stack.frames();
        List<Frame> out = new ArrayList<>(list.size());
        for (StackCapture.JavaFrame f : list) {
            out.add(new Frame(f.name(), f.filename(), f.line()));
        }
        return out;
    }

}
