package io.vram4j.tensor;

import io.vram4j.alloc.CachingAllocator;
import io.vram4j.compute.Kernels;

import java.util.concurrent.atomic.AtomicLong;

/**
 * A tensor {@link Device} on an {@link OpaqueDevice} (memory the host cannot dereference, as a GPU's) computing with
 * {@link OpaqueKernels} over the scalar CPU kernels, with its caching allocator; {@link #close()} closes the
 * allocator and the memory. For tests that run the same code on {@code host}, here and on {@code cuda}: any host
 * load or store of a tensor's bytes that does not go through the device's copy calls crashes the JVM.
 */
public final class OpaqueTensorDevice implements AutoCloseable {
    private final OpaqueDevice backend;
    private final CachingAllocator allocator;
    private final OpaqueKernels.Counters counters = new OpaqueKernels.Counters();
    private final AtomicLong deviceSegments = new AtomicLong();
    private final Device device;

    private OpaqueTensorDevice(long capacity) {
        backend = new OpaqueDevice(capacity);
        allocator = CachingAllocator.create(backend);
        device = Device.of(allocator).withKernels(OpaqueKernels.over(backend, Kernels.scalar(), deviceSegments, counters));
    }

    /**
     * @param capacity bytes of device memory
     * @return the opened device
     */
    public static OpaqueTensorDevice open(long capacity) {
        return new OpaqueTensorDevice(capacity);
    }

    /** @return the tensor device (not owning its allocator: close this instead) */
    public Device device() {
        return device;
    }

    /** @return the opaque memory, with its copy counters */
    public OpaqueDevice backend() {
        return backend;
    }

    /** @return kernel calls given device memory (launches, values read back, by kernel) */
    public OpaqueKernels.Counters counters() {
        return counters;
    }

    /** @return how many segment arguments of kernel calls were device memory */
    public AtomicLong deviceSegments() {
        return deviceSegments;
    }

    /**
     * @param t an open tensor
     * @return whether its bytes lie in opaque device memory (addresses the host can never dereference)
     */
    public static boolean inDeviceMemory(Tensor t) {
        return Long.compareUnsigned(t.storage().address(), OpaqueDevice.BASE) >= 0;
    }

    @Override
    public void close() {
        try {
            allocator.close();
        } finally {
            backend.close();
        }
    }
}
