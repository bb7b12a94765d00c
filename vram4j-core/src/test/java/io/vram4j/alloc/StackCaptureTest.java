package io.vram4j.alloc;

import io.vram4j.alloc.config.AllocatorConfig;
import io.vram4j.device.DeviceBackend;
import io.vram4j.device.Devices;
import io.vram4j.memory.snapshot.Frame;
import io.vram4j.memory.snapshot.TraceAction;
import io.vram4j.memory.snapshot.TraceEntry;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The history's stack capture (frame limit, skipped frames, lazy resolution) and its time stamps. */
class StackCaptureTest {

    private static StackCapture.Stack captureAtDepth(int depth) {
        return depth == 0 ? StackCapture.capture() : captureAtDepth(depth - 1);
    }

    @Test
    void keepsAtMostTheLimitInnermostFirst() {
        StackCapture.Stack deep = captureAtDepth(60);
        List<StackCapture.JavaFrame> frames = deep.frames();
        assertEquals(StackCapture.MAX_FRAMES, frames.size());
        for (StackCapture.JavaFrame f : frames) {
            assertEquals("StackCaptureTest.captureAtDepth", f.name(), "the innermost frames are the recursion");
            assertEquals("io/vram4j/alloc/StackCaptureTest.java", f.filename());
            assertTrue(f.line() > 0);
        }
        assertSame(frames, deep.frames(), "resolved once, then kept");

        List<StackCapture.JavaFrame> shallow = captureAtDepth(2).frames();
        assertEquals("StackCaptureTest.captureAtDepth", shallow.get(0).name());
        assertEquals("StackCaptureTest.keepsAtMostTheLimitInnermostFirst", shallow.get(3).name());
    }

    @Test
    void skipsAllocatorAndJdkFramesAndStampsEpochMicros() {
        try (DeviceBackend device = Devices.open("sim:1GiB")) {
            CachingAllocator alloc = CachingAllocator.create(device, AllocatorConfig.DEFAULT);
            long before = System.currentTimeMillis() * 1000;
            alloc.recordMemoryHistory("all", "all", "java", 1000);
            long p = alloc.malloc(4096);
            alloc.free(p);
            List<TraceEntry> trace = alloc.snapshot().deviceTraces().get(0);
            long after = System.currentTimeMillis() * 1000;
            assertFalse(trace.isEmpty());
            long last = 0;
            assertEquals(List.of(TraceAction.SEGMENT_ALLOC, TraceAction.ALLOC, TraceAction.FREE_REQUESTED,
                    TraceAction.FREE_COMPLETED, TraceAction.SNAPSHOT), trace.stream().map(TraceEntry::action).toList());
            for (TraceEntry e : trace.subList(0, 4)) {
                Frame top = e.frames().get(0);
                assertEquals("StackCaptureTest.skipsAllocatorAndJdkFramesAndStampsEpochMicros", top.name(), e.toString());
                assertTrue(e.frames().stream().noneMatch(f -> f.filename().startsWith("io/vram4j/alloc/Caching")
                        || f.filename().startsWith("java/")), e.frames().toString());
                assertTrue(e.timeUs() >= last, "time stamps never go back");
                assertTrue(e.timeUs() >= before - 1000 && e.timeUs() <= after + 1000,
                        "epoch microseconds: " + e.timeUs() + " not in [" + before + ", " + after + "]");
                last = e.timeUs();
            }
            alloc.close();
        }
    }
}
