package io.vram4j.tensor;

import io.vram4j.alloc.CachingAllocator;
import io.vram4j.compute.Kernels;
import io.vram4j.testsupport.GpuTests;

import java.util.concurrent.atomic.AtomicLong;

/**
 * A tensor device that a test suite runs the same checks on, whatever it is: {@code host}; device memory the host
 * cannot dereference ({@link #opaque}: an {@link OpaqueDevice} computing with {@link OpaqueKernels} over the scalar
 * CPU kernels, where any host load or store of a tensor's bytes outside the device's copy calls crashes the JVM);
 * or a real GPU ({@link #cuda}), which may be unavailable here. {@link #close()} closes what it opened.
 */
public final class TestDevice implements AutoCloseable {
    private final Device device;
    private final String unavailable;
    private final OpaqueDevice opaque;
    private final CachingAllocator opaqueAllocator;
    private final OpaqueKernels.Counters counters;

    private TestDevice(Device device, String unavailable, OpaqueDevice opaque, CachingAllocator opaqueAllocator,
                       OpaqueKernels.Counters counters) {
        this.device = device;
        this.unavailable = unavailable;
        this.opaque = opaque;
        this.opaqueAllocator = opaqueAllocator;
        this.counters = counters;
    }

    /**
     * @param spec e.g. {@code host:256MiB}
     * @return that device, opened with {@link Device#open(String)}
     */
    public static TestDevice host(String spec) {
        return new TestDevice(Device.open(spec), null, null, null, null);
    }

    /**
     * @param capacity bytes of opaque device memory
     * @return a device whose tensors live in memory Java never dereferences, counting the kernel launches on it
     */
    public static TestDevice opaque(long capacity) {
        OpaqueDevice backend = new OpaqueDevice(capacity);
        CachingAllocator alloc = CachingAllocator.create(backend);
        OpaqueKernels.Counters counters = new OpaqueKernels.Counters();
        Device dev = Device.of(alloc).withKernels(OpaqueKernels.over(backend, Kernels.scalar(),
                new AtomicLong(), counters));
        return new TestDevice(dev, null, backend, alloc, counters);
    }

    /**
     * @return {@code Device.open("cuda")}, or, where no GPU opens, a device that is {@link #unavailableReason()
     *     unavailable} with the reason
     */
    public static TestDevice cuda() {
        String reason = GpuTests.unavailableReason();
        return reason != null ? new TestDevice(null, reason, null, null, null)
                : new TestDevice(Device.open("cuda"), null, null, null, null);
    }

    /** @return the device; null when {@link #unavailableReason()} is not */
    public Device device() {
        return device;
    }

    /** @return null when the device opened, else why not */
    public String unavailableReason() {
        return unavailable;
    }

    /**
     * Skips the calling test where the device is unavailable (fails it instead under {@code VRAM4J_REQUIRE_GPU=1});
     * see {@link GpuTests#require}.
     */
    public void require() {
        GpuTests.require(unavailable);
    }

    /** @return whether tensors here live in device memory (opaque or {@code cuda}) rather than host memory */
    public boolean hasDeviceMemory() {
        return device != null && !device.hostAccessible();
    }

    /**
     * @param t an open tensor
     * @return whether its bytes are device memory: on the opaque device, at an address the host can never
     *     dereference; on {@code cuda}, on a device the host cannot view; never on {@code host}
     */
    public boolean inDeviceMemory(Tensor t) {
        if (opaque != null) {
            return Long.compareUnsigned(t.storage().address(), OpaqueDevice.BASE) >= 0;
        }
        return !t.device().hostAccessible();
    }

    /** @return kernel launches on device memory so far on the opaque device; -1 elsewhere (not counted) */
    public long deviceLaunches() {
        return counters == null ? -1 : counters.launches().get();
    }

    @Override
    public void close() {
        if (opaque != null) {
            try {
                opaqueAllocator.close();
            } finally {
                opaque.close();
            }
        } else if (device != null) {
            device.close();
        }
    }
}
