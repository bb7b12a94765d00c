package io.vram4j.tensor;

import io.vram4j.alloc.CachingAllocator;
import io.vram4j.nn.Safetensors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Tensors in device memory the host cannot dereference ({@link OpaqueDevice}: addresses where no page can be
 * mapped, so a single host access through one would crash this JVM): every host path to the bytes (creation
 * from arrays, reads, printing, fills, cross-device copies, safetensors) must go through the device's copy
 * calls, give the values the same calls give on {@code host}, and ops without device kernels must refuse in
 * one clear line and leave the memory as it was.
 */
class DeviceMemoryTensorTest {
    OpaqueDevice backend;
    CachingAllocator alloc;
    Device dev;
    Device host;

    @TempDir
    Path tmp;

    @BeforeEach
    void open() {
        backend = new OpaqueDevice(64L << 20);
        alloc = CachingAllocator.create(backend);
        dev = Device.of(alloc);
        host = Device.open("host:64MiB");
    }

    @AfterEach
    void close() {
        host.close();
        alloc.close();
        backend.close();
    }

    @Test
    void storageIsDeviceMemoryTheHostCannotView() {
        try (Tensor t = dev.zeros(4)) {
            assertTrue(t.storage().address() >= OpaqueDevice.BASE, Long.toHexString(t.storage().address()));
            assertTrue(dev.hasStorage());
            assertFalse(dev.hostAccessible());
            UnsupportedOperationException e = assertThrows(UnsupportedOperationException.class, t::data);
            assertTrue(e.getMessage().contains("copyBytesTo"), e.getMessage());
        }
    }

    @Test
    void valuesGoInAndComeBackThroughTheCopyCalls() {
        try (MemoryScope s = MemoryScope.open()) {
            Tensor f = dev.tensor(new float[] {1, 2, 3, 4, 5, 6}, 2, 3);
            assertEquals(1, backend.toDevice.get());
            assertArrayEquals(new float[] {1, 2, 3, 4, 5, 6}, f.toFloatArray());
            assertEquals(6f, f.getFloat(1, 2));
            assertArrayEquals(new float[] {1, 4, 2, 5, 3, 6}, f.t().toFloatArray());
            assertArrayEquals(new float[] {2, 5}, f.narrow(1, 1, 1).toFloatArray());
            assertEquals(5f, f.t().getFloat(1, 1));
            assertArrayEquals(new long[] {7, -8}, dev.tensor(new int[] {7, -8}).toLongArray());
            assertEquals(Long.MIN_VALUE, dev.tensor(new long[] {Long.MIN_VALUE}).getLong(0));
            assertEquals(0.5f, dev.scalar(0.5f).item());
            assertArrayEquals(new float[] {1, -2.5f}, dev.tensor(DType.BFLOAT16, new float[] {1, -2.5f}).toFloatArray());
            assertTrue(dev.tensor(new float[] {3, 4}).toString().contains("values=[3.0, 4.0]"));
            assertTrue(backend.toHost.get() >= 10, "reads: " + backend.toHost.get());
        }
    }

    @Test
    void fillsGoThroughTheDevice() {
        try (MemoryScope s = MemoryScope.open()) {
            Tensor z = dev.full(DType.FLOAT32, 7, 3);
            long fills = backend.fills.get();
            z.zero();
            assertEquals(fills + 1, backend.fills.get(), "zeroing a contiguous tensor is one memset");
            assertArrayEquals(new float[] {0, 0, 0}, z.toFloatArray());
            Tensor m = dev.full(DType.FLOAT32, 1, 2, 3);
            m.t().narrow(0, 1, 1).fill(9);   // the middle column, a strided view: the rest must stay
            assertArrayEquals(new float[] {1, 9, 1, 1, 9, 1}, m.toFloatArray());
            Tensor r = dev.randn(new Generator(42), 5);
            Tensor h = host.randn(new Generator(42), 5);
            assertArrayEquals(h.toFloatArray(), r.toFloatArray());
        }
    }

    @Test
    void toDeviceCopiesAcrossDevicesExplicitly() {
        try (MemoryScope s = MemoryScope.open()) {
            Tensor h = host.tensor(new float[] {1.5f, -2, 3, 4}, 2, 2);
            Tensor d = h.to(dev);
            assertSame(dev.allocator(), d.device().allocator());
            assertArrayEquals(new int[] {2, 2}, d.shape());
            Tensor back = d.t().to(host);   // a strided view comes back contiguous
            assertArrayEquals(new float[] {1.5f, 3, -2, 4}, back.toFloatArray());
            assertTrue(back.isContiguous());
            Tensor same = d.to(dev);
            assertSame(d.storage(), same.storage());
            long d2d = backend.withinDevice.get();
            Tensor c = dev.empty(DType.FLOAT32, 2, 2).copyFrom(d);
            assertEquals(d2d + 1, backend.withinDevice.get(), "same dtype and layout: one device-to-device copy");
            assertNotSame(d.storage(), c.storage());
            assertArrayEquals(h.toFloatArray(), c.toFloatArray());
            Tensor half = dev.empty(DType.FLOAT16, 2, 2).copyFrom(h);   // converting while crossing devices
            assertArrayEquals(h.to(DType.FLOAT16).toFloatArray(), half.toFloatArray());
            Tensor bcast = dev.empty(DType.FLOAT32, 2, 2).copyFrom(host.tensor(new float[] {5, 6}));
            assertArrayEquals(new float[] {5, 6, 5, 6}, bcast.toFloatArray());
        }
    }

    @Test
    void byteCopiesCheckTheirHostMemory() {
        try (MemoryScope s = MemoryScope.open(); Arena arena = Arena.ofConfined()) {
            Tensor t = dev.tensor(new float[] {1, 2, 3});
            MemorySegment small = arena.allocate(8);
            long writes = backend.toDevice.get();
            IndexOutOfBoundsException e = assertThrows(IndexOutOfBoundsException.class, () -> t.copyBytesFrom(small));
            assertTrue(e.getMessage().contains("8 bytes") && e.getMessage().contains("12 bytes"), e.getMessage());
            assertEquals(writes, backend.toDevice.get());
            assertThrows(IllegalStateException.class, () -> t.t().unsqueeze(0).expand(2, 3).copyBytesTo(small));
            MemorySegment out = arena.allocate(12);
            t.copyBytesTo(out);
            assertEquals(3f, out.getAtIndex(ValueLayout.JAVA_FLOAT, 2));
            out.setAtIndex(ValueLayout.JAVA_FLOAT, 0, -1f);
            t.copyBytesFrom(out);
            assertArrayEquals(new float[] {-1, 2, 3}, t.toFloatArray());
        }
    }

    @Test
    void safetensorsSaveAndLoadDeviceMemory() throws IOException {
        Path f = tmp.resolve("d.safetensors");
        Map<String, Tensor> all = new LinkedHashMap<>();
        try (MemoryScope s = MemoryScope.open()) {
            all.put("w", dev.tensor(new float[] {1, 2, 3, 4, 5, 6}, 2, 3));
            all.put("wt", dev.tensor(new float[] {1, 2, 3, 4}, 2, 2).to(host).t().to(dev));
            all.put("ids", dev.tensor(new long[] {9, -1}));
            all.put("empty", dev.zeros(0, 2));
            Safetensors.save(f, all, Map.of());
            Map<String, Tensor> onHost = Safetensors.load(f, host);
            Map<String, Tensor> onDev = Safetensors.load(f, dev);
            for (String k : all.keySet()) {
                assertArrayEquals(all.get(k).toLongArray(), onHost.get(k).toLongArray(), k);
                assertArrayEquals(all.get(k).toLongArray(), onDev.get(k).toLongArray(), k);
            }
            assertArrayEquals(new float[] {1, 3, 2, 4}, onHost.get("wt").toFloatArray());
            Map<String, Tensor> targets = new LinkedHashMap<>();
            targets.put("w", dev.zeros(2, 3));
            targets.put("wt", dev.zeros(DType.BFLOAT16, 2, 2));
            targets.put("ids", dev.zeros(DType.INT64, 2));
            targets.put("empty", dev.zeros(0, 2));
            Safetensors.loadInto(f, targets);
            assertArrayEquals(new float[] {1, 2, 3, 4, 5, 6}, targets.get("w").toFloatArray());
            assertArrayEquals(new float[] {1, 3, 2, 4}, targets.get("wt").toFloatArray());
            onHost.values().forEach(Tensor::close);
            onDev.values().forEach(Tensor::close);
        }
    }

    @Test
    void opsWithoutDeviceKernelsRefuseAndLeaveMemoryAsItWas() {
        try (MemoryScope s = MemoryScope.open()) {
            Tensor a = dev.tensor(new float[] {1, 2});
            Tensor b = dev.tensor(new float[] {3, 4});
            long allocated = dev.memoryAllocated();
            UnsupportedOperationException e = assertThrows(UnsupportedOperationException.class, () -> a.add(b));
            assertTrue(e.getMessage().startsWith("this operation has no kernel for tensors on opaque:"), e.getMessage());
            assertFalse(e.getMessage().contains("\n"));
            assertEquals(allocated, dev.memoryAllocated());
            assertArrayEquals(new float[] {1, 2}, a.toFloatArray());
            assertThrows(UnsupportedOperationException.class, () -> a.addInPlace(b));
            assertArrayEquals(new float[] {1, 2}, a.toFloatArray());
            IllegalArgumentException mixed = assertThrows(IllegalArgumentException.class,
                    () -> a.add(host.tensor(new float[] {1, 1})));
            assertTrue(mixed.getMessage().contains("different devices"), mixed.getMessage());
        }
    }
}
