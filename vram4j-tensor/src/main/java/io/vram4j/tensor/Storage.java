package io.vram4j.tensor;

import java.lang.foreign.MemorySegment;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * One block of device memory from a {@link Device}'s caching allocator, shared by a tensor and its views and
 * reference-counted: every tensor handle over it holds one reference, and the block is freed through
 * {@link io.vram4j.alloc.CachingAllocator#free} when the last one is released. A storage of 0 bytes holds no
 * block (address 0).
 *
 * <p>The reference count is thread-safe; everything else about tensors is not.
 */
public final class Storage {
    private final Device device;
    private final long address;
    private final long bytes;
    private final MemorySegment segment;
    private final boolean deviceMemory;
    private final AtomicInteger refs = new AtomicInteger(1);
    private final LeakDetector.Tracker tracker;
    /** What the memory holds, for the live-tensor registry (which keeps it without keeping the storage). */
    final StorageInfo info;

    /** The start of the one-line refusal of an operation that has no kernel for device memory. */
    static final String NO_KERNEL = "this operation has no kernel for tensors on ";

    private Storage(Device device, long address, long bytes) {
        this.device = device;
        this.address = address;
        this.bytes = bytes;
        this.deviceMemory = device.backend().hasDeviceMemory();
        this.segment = address == 0 ? MemorySegment.NULL
                : device.hostAccessible() ? device.allocator().segment(address) : null;
        this.tracker = address == 0 ? null : LeakDetector.track(this, device.description(), address, bytes);
        this.info = new StorageInfo(device, address, bytes);
    }

    /**
     * Allocates {@code bytes} on {@code stream} (the device's, or another of it: the block then belongs to that
     * stream's pool, as an allocation under {@code with torch.cuda.stream(s)}, the storage to {@code device}); the
     * new storage has one reference. Called straight from {@code Tensor.allocate}: no frame between, so that
     * recorded Java stacks keep their first frames.
     *
     * @param shape the allocating tensor's shape, kept for the live-tensor report
     * @param dtype its element type
     */
    static Storage allocate(Device device, io.vram4j.device.Stream stream, long bytes, int[] shape, DType dtype) {
        long ptr = device.allocator().malloc(bytes, stream);
        Storage s;
        try {
            s = new Storage(device, ptr, bytes);
        } catch (RuntimeException | Error e) {
            device.allocator().free(ptr);
            throw e;
        }
        s.info.shape = shape;
        s.info.dtype = dtype;
        if (ptr != 0) {
            LiveTensors.added(s.info);
            MemoryProfiler p = MemoryProfiler.active;
            if (p != null) {
                p.afterAllocate(device.allocator());
            }
        }
        return s;
    }



    /** @return whether the {@link LeakDetector} tracks this storage (chosen by its level when it was allocated) */
    boolean tracked() {
        return tracker != null;
    }

    void retain() {
        int r = refs.getAndUpdate(v -> v == 0 ? 0 : v + 1);
        if (r == 0) {
            throw new IllegalStateException("storage at 0x" + Long.toHexString(address) + " was already freed");
        }
    }

    void release() {
        int r = refs.decrementAndGet();
        if (r == 0) {
            if (tracker != null) {
                tracker.released();
            }
            if (address != 0) {
                LiveTensors.removed(info);
            }
            device.allocator().free(address);
        } else if (r < 0) {
            refs.set(0);
            throw new IllegalStateException("storage at 0x" + Long.toHexString(address) + " released more often than retained");
        }
    }

    /**
     * The bytes, for devices whose memory the host views ({@code host}). Device memory ({@code cuda}) is never
     * handed out as a host view: Java code reaches it through {@link HostAccess} only.
     *
     * @throws UnsupportedOperationException on {@code sim} (no data) and on device memory
     */
    MemorySegment segment() {
        if (segment == null) {
            if (deviceMemory) {
                throw new UnsupportedOperationException(NO_KERNEL + device.description()
                        + " (this step reads the bytes from the host, which device memory does not allow)");
            }
            throw new UnsupportedOperationException("device " + device.description()
                    + " has no storage (sim): tensors there have shapes and memory but no data");
        }
        return segment;
    }

    /**
     * The memory as the device's {@link io.vram4j.compute.Kernels} take it: the host view on {@code host}; on device
     * memory ({@code cuda}) the device address presented as a segment of {@link #byteSize()} bytes
     * ({@code MemorySegment.ofAddress(address).reinterpret(bytes)}), which only device kernels may be given:
     * Java code never dereferences it (a host load or store through it would crash the JVM).
     *
     * @throws UnsupportedOperationException on {@code sim} (no data)
     */
    MemorySegment kernelSegment() {
        if (deviceMemory) {
            return address == 0 ? MemorySegment.NULL : MemorySegment.ofAddress(address).reinterpret(bytes);
        }
        return segment();
    }

    /** @return true when the bytes are device memory the host cannot view ({@code cuda}) */
    boolean deviceMemory() {
        return deviceMemory;
    }

    /** @return the device the memory belongs to */
    public Device device() {
        return device;
    }

    /** @return the block's device address; 0 for an empty storage */
    public long address() {
        return address;
    }

    /** @return the size in bytes (exactly numel × element size of the tensor that allocated it) */
    public long byteSize() {
        return bytes;
    }

    /** @return the number of tensor handles (and saved autograd references) holding this storage; 0 once freed */
    public int refCount() {
        return refs.get();
    }

    /** @return true once the block went back to the allocator */
    public boolean isFreed() {
        return refs.get() == 0;
    }

    @Override
    public String toString() {
        return "Storage(0x" + Long.toHexString(address) + ", " + bytes + " bytes, refs=" + refs.get() + ", " + device.description() + ")";
    }
}
