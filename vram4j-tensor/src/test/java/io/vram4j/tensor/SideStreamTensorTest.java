package io.vram4j.tensor;

import io.vram4j.alloc.CachingAllocator;
import io.vram4j.device.DeviceBackend;
import io.vram4j.device.Devices;
import io.vram4j.device.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/**
 * {@link Device#empty(Stream, DType, int...)} and {@link Tensor#recordStream} on {@code host}, whose streams follow
 * the counting model (an event completes when its stream is synchronized): a block allocated on a side stream
 * belongs to that stream's pool, and a block used by another stream is not handed out again before that stream
 * has passed its free, as PyTorch's caching allocator does.
 */
class SideStreamTensorTest {
    private DeviceBackend backend;
    private CachingAllocator alloc;
    private Device dev;
    private Stream side;

    @BeforeEach
    void open() {
        backend = Devices.open("host:64MiB");
        alloc = CachingAllocator.create(backend);
        dev = Device.of(alloc);
        side = backend.newStream();
    }

    @AfterEach
    void close() {
        dev.close();
        alloc.close();
        backend.close();
    }

    @Test
    void aBlockAllocatedOnASideStreamGoesBackToThatStreamsPool() {
        long first;
        try (Tensor t = dev.empty(side, DType.FLOAT32, 4, 2)) {
            first = t.storage().address();
        }
        try (Tensor onCompute = dev.empty(DType.FLOAT32, 4, 2)) {
            assertNotEquals(first, onCompute.storage().address(), "the compute stream's pool does not hold it");
        }
        try (Tensor again = dev.empty(side, DType.FLOAT32, 4, 2)) {
            assertEquals(first, again.storage().address(), "reused from the side stream's pool");
        }
    }

    @Test
    void aRecordedStreamDelaysReuseUntilItHasPassedTheFree() {
        long first;
        try (Tensor t = dev.empty(DType.FLOAT32, 4, 2)) {
            first = t.storage().address();
            t.recordStream(side);
        }
        try (Tensor t = dev.empty(DType.FLOAT32, 4, 2)) {
            assertNotEquals(first, t.storage().address(), "the side stream has not passed the free");
        }
        side.synchronize();
        try (Tensor t = dev.empty(DType.FLOAT32, 4, 2)) {
            assertEquals(first, t.storage().address(), "reused once the side stream passed it");
        }
    }

    @Test
    void aStreamOfAnotherDeviceIsRefusedAndNothingChanges() {
        Stream elsewhere = new Stream(backend.index() + 1, 7);
        long allocated = dev.memoryAllocated();
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> dev.empty(elsewhere, DType.FLOAT32, 4, 2));
        assertEquals(elsewhere + " does not belong to " + dev.description(), e.getMessage());
        assertEquals(allocated, dev.memoryAllocated());

        long first;
        try (Tensor t = dev.empty(DType.FLOAT32, 4, 2)) {
            first = t.storage().address();
            e = assertThrows(IllegalArgumentException.class, () -> t.recordStream(elsewhere));
            assertEquals("recordStream: " + elsewhere + " does not belong to " + dev.description(), e.getMessage());
        }
        try (Tensor t = dev.empty(DType.FLOAT32, 4, 2)) {
            assertEquals(first, t.storage().address(), "no stream use was recorded: reused at once");
        }
    }

    @Test
    void aClosedTensorIsRefused() {
        Tensor t = dev.empty(DType.FLOAT32, 4, 2);
        t.close();
        assertThrows(IllegalStateException.class, () -> t.recordStream(side));
    }
}
