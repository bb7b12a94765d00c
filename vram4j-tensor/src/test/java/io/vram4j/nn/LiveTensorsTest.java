package io.vram4j.nn;

import io.vram4j.tensor.DType;
import io.vram4j.tensor.Device;
import io.vram4j.tensor.Generator;
import io.vram4j.tensor.LiveTensors;
import io.vram4j.tensor.MemoryCategory;
import io.vram4j.tensor.MemoryScope;
import io.vram4j.tensor.Tensor;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

class LiveTensorsTest {
    @Test
    void reportGroupsLiveTensorsBySiteLargestFirst() {
        LiveTensors.captureSites(true);
        try (Device dev = Device.open("host:256MiB")) {
            Tensor big = dev.zeros(256, 1024);                      // 1 MiB, allocated here
            Tensor small1 = dev.zeros(DType.BFLOAT16, 8, 8);
            Tensor small2 = dev.zeros(DType.BFLOAT16, 8, 8);
            List<LiveTensors.Entry> entries = LiveTensors.entries(dev.allocator());
            assertEquals(3, entries.size());
            LiveTensors.Entry first = entries.getFirst();
            assertArrayEquals(new int[] {256, 1024}, first.shape());
            assertEquals(DType.FLOAT32, first.dtype());
            assertEquals(1L << 20, first.bytes());
            assertEquals(dev.description(), first.device());
            assertTrue(first.site().startsWith("LiveTensorsTest.reportGroupsLiveTensorsBySiteLargestFirst(LiveTensorsTest.java:"),
                    first.site());
            assertEquals(MemoryCategory.TEMPORARIES, first.category());
            List<LiveTensors.Group> groups = LiveTensors.bySite(dev.allocator());
            assertEquals(3, groups.size(), "three lines, three sites");
            assertEquals(1L << 20, groups.getFirst().bytes());
            String report = LiveTensors.report(dev.allocator(), 10);
            assertTrue(report.contains("live tensors: 3 storages"), report);
            assertTrue(report.contains("[256, 1024] float32"), report);
            assertTrue(report.indexOf("[256, 1024]") < report.indexOf("[8, 8]"), "largest first: " + report);
            big.close();
            small1.close();
            small2.close();
            assertTrue(LiveTensors.entries(dev.allocator()).isEmpty(), "closed tensors leave the registry");
        } finally {
            LiveTensors.captureSites(false);
        }
    }

    @Test
    void categoriesFollowWhatHoldsTheStorage() {
        LiveTensors.captureSites(true);
        try (Device dev = Device.open("host:256MiB"); Linear fc = new Linear(dev, 64, 32, new Generator(1))) {
            try (MemoryScope scope = MemoryScope.open()) {
                Tensor x = dev.randn(new Generator(2), 16, 64);
                Tensor h = fc.call(x);
                Tensor y = h.relu();                                // saves its output for backward
                List<LiveTensors.Entry> e = LiveTensors.entries(dev.allocator());
                assertEquals(2, e.stream().filter(t -> t.category() == MemoryCategory.PARAMETERS).count());
                assertTrue(e.stream().anyMatch(t -> t.category() == MemoryCategory.ACTIVATIONS), e.toString());
                // the linear layer's output was allocated in its forward, at a site inside the nn package
                assertTrue(e.stream().anyMatch(t -> t.context().equals("forward (model)") && t.site().startsWith("Linear.forward")),
                        e.toString());
                Tensor loss = y.sum();
                loss.backward();
                List<LiveTensors.Entry> after = LiveTensors.entries(dev.allocator());
                assertEquals(2, after.stream().filter(t -> t.category() == MemoryCategory.GRADIENTS).count(), after.toString());
                assertTrue(after.stream().noneMatch(t -> t.category() == MemoryCategory.ACTIVATIONS), "backward freed them");
                fc.zeroGrad(true);
            }
            assertEquals(2, LiveTensors.entries(dev.allocator()).size(), "only the parameters are left");
        } finally {
            LiveTensors.captureSites(false);
        }
    }
}
