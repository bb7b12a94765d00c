package io.vram4j.data;

import io.vram4j.alloc.CachingHostAllocator;
import io.vram4j.alloc.HostMemorySource;
import io.vram4j.tensor.Device;
import org.junit.jupiter.api.Test;

import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** {@code pinMemory} without a GPU: PyTorch's warning on host, option checks, and the pinned batches' life cycle. */
class DataLoaderPinMemoryTest {
    private static final DataLoaderTest.Counting DATA = new DataLoaderTest.Counting(10);

    @Test
    void offByDefault() {
        DataLoader loader = DataLoader.builder(DATA).build();
        assertFalse(loader.pinMemory());
        try (DataLoader.Epoch e = loader.epoch(0)) {
            assertNull(e.next().pinned());
        }
    }

    @Test
    void withoutAnAcceleratorItWarnsOnceInPyTorchsWordsAndPinsNothing() {
        for (String spec : new String[] {"host:64MiB", "sim:A100-80GB"}) {
            try (Device host = Device.open(spec)) {
                List<String> warnings = new ArrayList<>();
                DataLoader loader = DataLoader.builder(DATA).batchSize(4).pinMemory(true).pinMemoryDevice(host)
                        .warnings(warnings::add).build();
                assertEquals(List.of("'pin_memory' argument is set as true but no accelerator is found, then device "
                        + "pinned memory won't be used."), warnings, spec);
                assertFalse(loader.pinMemory());
                try (DataLoader.Epoch e = loader.epoch(0)) {
                    Batch b = e.next();
                    assertNull(b.pinned());
                    assertArrayEquals(new float[] {0, 0.5f, 1, 1.5f, 2, 2.5f, 3, 3.5f}, b.x());
                }
                assertEquals(1, warnings.size(), "once, at build");
            }
        }
        List<String> none = new ArrayList<>();
        assertFalse(DataLoader.builder(DATA).pinMemory(true).warnings(none::add).build().pinMemory(),
                "no current device at all");
        assertEquals(1, none.size());
    }

    @Test
    void aPinMemoryDeviceWithoutPinMemoryIsRefusedInOneLine() {
        try (Device host = Device.open("host:64MiB")) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> DataLoader.builder(DATA).pinMemoryDevice(host).build());
            assertEquals("pinMemoryDevice(host:64MiB) is set but pinMemory is false: set pinMemory(true) or leave "
                    + "the device out", e.getMessage());
        }
    }

    @Test
    void pinnedSamplesHoldTheBatchAsFloat32AndInt64() {
        try (CachingHostAllocator host = CachingHostAllocator.create(HostMemorySource.pageable())) {
            DataLoader loader = DataLoader.builder(DATA).batchSize(4).prefetch(0).build(host);
            assertTrue(loader.pinMemory());
            try (DataLoader.Epoch e = loader.epoch(0)) {
                e.next();
                Batch b = e.next();
                PinnedSamples p = b.pinned();
                assertArrayEquals(b.x(), p.features().toArray(ValueLayout.JAVA_FLOAT));
                assertArrayEquals(new long[] {4, 5, 6, 7}, p.labels().toArray(ValueLayout.JAVA_LONG));
                assertEquals(32, p.features().byteSize());
                assertTrue(p.release());
                assertFalse(p.release(), "idempotent");
            }
        }
    }

    @Test
    void batchesTheLoaderStillHeldAreReleasedWhenTheEpochCloses() throws InterruptedException {
        try (CachingHostAllocator host = CachingHostAllocator.create(HostMemorySource.pageable())) {
            DataLoader loader = DataLoader.builder(new DataLoaderTest.Counting(1000)).batchSize(4).prefetch(3).build(host);
            Batch first;
            try (DataLoader.Epoch e = loader.epoch(0)) {
                first = e.next();
                e.hasNext(); // the next batch is taken from the queue, not handed out
                Thread.sleep(50); // let the worker fill the queue
            }
            assertEquals(2, host.hostMemoryStats().get("active_requests.current"),
                    "only the batch handed out is still pinned");
            first.pinned().release();
            assertEquals(0, host.hostMemoryStats().get("active_requests.current"));
        }
    }

    @Test
    void pinnedBatchesForADeviceOtherThanCudaAreRefusedAndGivenBack() {
        try (CachingHostAllocator host = CachingHostAllocator.create(HostMemorySource.pageable());
             Device dev = Device.open("host:64MiB")) {
            DataLoader.Epoch epoch = DataLoader.builder(DATA).batchSize(4).prefetch(0).build(host).epoch(0);
            long allocated = dev.memoryAllocated();
            IllegalStateException e = assertThrows(IllegalStateException.class,
                    () -> DeviceLoader.of(epoch, dev, dev.backend().newStream()));
            assertEquals("pinned batches are copied to a cuda device, not host:64MiB", e.getMessage());
            assertEquals(0, host.hostMemoryStats().get("active_requests.current"), "the batch's blocks given back");
            assertEquals(allocated, dev.memoryAllocated(), "no tensor left on the device");
            assertFalse(epoch.hasNext(), "the epoch was closed");
        }
    }
}
