package io.vram4j.data;

import io.vram4j.alloc.CachingAllocator;
import io.vram4j.alloc.CachingHostAllocator;
import io.vram4j.device.Stream;
import io.vram4j.device.cuda.CudaDevice;
import io.vram4j.tensor.Device;
import io.vram4j.tensor.Tensor;
import io.vram4j.testsupport.NativeTestBuild;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code pinMemory} and {@link DeviceLoader} on {@code cuda} through core's stand-in driver ({@code fake_libcuda.c},
 * built by {@link NativeTestBuild}): its copies move real bytes, its events complete only when their stream is
 * synchronized (or a synchronized stream waited on them), and it traces the calls a GPU would receive, in order.
 */
class PinnedDeviceLoaderTest {
    /** 12 samples of {i, i + 0.5}, label i % 10: three batches of 4, 32 bytes of features and 32 of labels each. */
    private static final DataLoaderTest.Counting DATA = new DataLoaderTest.Counting(12);

    private CudaDevice cuda;
    private Device dev;
    private Stream side;

    @BeforeEach
    void open() {
        cuda = CudaDevice.open(NativeTestBuild.fakeDriver().toString(), 0);
        dev = Device.of(CachingAllocator.create(cuda));
        side = cuda.newStream();
    }

    @AfterEach
    void close() {
        CachingAllocator alloc = dev.allocator();
        dev.close();
        alloc.close();
        cuda.close();
    }

    private DataLoader pinnedLoader() {
        return DataLoader.builder(DATA).batchSize(4).prefetch(0).pinMemory(true).pinMemoryDevice(dev).build();
    }

    @Test
    void theDriverSeesHostAllocCopiesOnTheSideStreamEventWaitThenCompute() {
        String s = "0x" + Long.toHexString(side.handle());
        NativeTestBuild.fakeDriverTraceStart();
        try (DeviceLoader batches = DeviceLoader.of(pinnedLoader().epoch(0), dev, side)) {
            List<String> staged0 = List.of("cuMemHostAlloc 0x0", "cuMemHostAlloc 0x0", // batch 0 pinned by the loader
                    "cuMemcpyHtoDAsync " + s, "cuMemcpyHtoDAsync " + s, // features, labels
                    "cuEventRecord " + s, // the copies' event, for the compute stream
                    "cuEventRecord " + s, "cuEventRecord " + s); // the host blocks' events (free after recordEvent)
            assertEquals(staged0, NativeTestBuild.fakeDriverTrace(), "queued before the first batch is asked for");
            NativeTestBuild.fakeDriverTraceStart();
            try (DeviceBatch b = batches.next(); Tensor doubled = b.x().add(b.x())) {
                List<String> expected = new ArrayList<>(List.of("cuStreamWaitEvent 0x0"));
                expected.addAll(staged0); // batch 1 staged before batch 0 is computed on; batch 0's blocks still busy
                expected.add("cuLaunchKernel 0x0");
                assertEquals(expected, NativeTestBuild.fakeDriverTrace());
            }
        }
    }

    @Test
    void aPinnedBlockIsHandedOutAgainOnlyAfterItsCopyCompleted() {
        CachingHostAllocator host = cuda.hostAllocator();
        try (DeviceLoader batches = DeviceLoader.of(pinnedLoader().epoch(0), dev, side)) {
            batches.next().close(); // stages batch 1 while batch 0's copies are pending: new blocks
            assertEquals(4, host.hostMemoryStats().get("num_host_alloc"));
            side.synchronize(); // the copies of batches 0 and 1 are done
            batches.next().close(); // stages batch 2: batch 0's and 1's blocks are free again
            assertEquals(4, host.hostMemoryStats().get("num_host_alloc"), "reused, not allocated");
            batches.next().close();
            assertFalse(batches.hasNext());
        }
    }

    @Test
    void hostMemoryStatsAfterAnEpoch() {
        CachingHostAllocator host = cuda.hostAllocator();
        try (DeviceLoader batches = DeviceLoader.of(pinnedLoader().epoch(0), dev, side)) {
            while (batches.hasNext()) {
                batches.next().close();
            }
        }
        side.synchronize();
        host.emptyCache();
        Map<String, Long> m = host.hostMemoryStats();
        assertEquals(6, m.get("num_host_alloc"), "two blocks per batch, none free while the epoch ran unsynchronized");
        assertEquals(6, m.get("num_host_free"));
        assertEquals(0, m.get("allocations.current"));
        assertEquals(6, m.get("active_requests.allocated"));
        assertEquals(0, m.get("active_requests.current"));
        assertEquals(6 * 32, m.get("allocated_bytes.peak"), "six 32-byte blocks: features 4 x 2 float32, labels 4 int64");
        assertEquals(6 * 32, m.get("active_bytes.peak"));
    }

    @Test
    void theDataArriveIntactAndMatchThePageablePath() {
        DataLoader pageable = DataLoader.builder(DATA).batchSize(4).build();
        try (DeviceLoader pinned = DeviceLoader.of(pinnedLoader().epoch(0), dev, side);
             DeviceLoader plain = DeviceLoader.of(pageable.epoch(0), dev, side)) {
            int batch = 0;
            while (pinned.hasNext()) {
                try (DeviceBatch p = pinned.next(); DeviceBatch q = plain.next()) {
                    assertEquals(batch, p.index());
                    float[] x = new float[8];
                    long[] y = new long[4];
                    for (int i = 0; i < 4; i++) {
                        int sample = 4 * batch + i;
                        x[2 * i] = sample;
                        x[2 * i + 1] = sample + 0.5f;
                        y[i] = sample % 10;
                    }
                    assertArrayEquals(x, p.x().toFloatArray());
                    assertArrayEquals(y, p.y().toLongArray());
                    assertArrayEquals(new int[] {4, 2}, p.x().shape());
                    assertArrayEquals(x, q.x().toFloatArray());
                    assertArrayEquals(y, q.y().toLongArray());
                }
                batch++;
            }
            assertEquals(3, batch);
            assertFalse(plain.hasNext());
        }
    }

    @Test
    void theBatchTensorsAreNotReusedBeforeTheComputeStreamIsDone() {
        long first;
        try (DeviceLoader batches = DeviceLoader.of(pinnedLoader().epoch(0), dev, side)) {
            DeviceBatch b = batches.next();
            first = b.x().storage().address();
            b.close(); // freed while the compute stream (legacy default) may still read it: record_stream
            batches.next().close();
            try (Tensor t = dev.empty(side, io.vram4j.tensor.DType.FLOAT32, 4, 2)) {
                assertTrue(t.storage().address() != first, "the compute stream has not passed the free");
            }
            dev.stream().synchronize();
            try (Tensor t = dev.empty(side, io.vram4j.tensor.DType.FLOAT32, 4, 2)) {
                assertEquals(first, t.storage().address(), "reused once the compute stream passed it");
            }
        }
    }

    @Test
    void closingEarlyGivesEverythingBack() {
        CachingHostAllocator host = cuda.hostAllocator();
        DataLoader prefetching = DataLoader.builder(DATA).batchSize(4).prefetch(2).pinMemory(true).pinMemoryDevice(dev)
                .build();
        long allocated = dev.memoryAllocated();
        try (DeviceLoader batches = DeviceLoader.of(prefetching.epoch(0), dev, side)) {
            batches.next().close();
        }
        side.synchronize();
        dev.stream().synchronize();
        host.emptyCache();
        assertEquals(0, host.hostMemoryStats().get("active_requests.current"), "queued pinned batches released");
        assertEquals(0, host.hostMemoryStats().get("allocations.current"));
        assertEquals(allocated, dev.memoryAllocated(), "the staged batch freed");
    }

    @Test
    void theCopyStreamMustBeASideStream() {
        DataLoader.Epoch epoch = pinnedLoader().epoch(0);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> DeviceLoader.of(epoch, dev, dev.stream()));
        assertEquals("copyStream must be a side stream of cuda:0 (not its compute stream " + dev.stream()
                + "), got " + dev.stream(), e.getMessage());
        assertFalse(epoch.hasNext(), "the epoch was closed");
    }
}
