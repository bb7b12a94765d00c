package io.vram4j.tensor;

import io.vram4j.device.DeviceBackend;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * The one place where Java code reaches the bytes of a tensor: a host-addressable view of the elements a
 * tensor spans, as {@code (segment, element offset)} with the tensor's own strides.
 *
 * <ul>
 *   <li>On {@code host} the view is the storage's memory itself: writes land directly, {@link #commit()} does
 *       nothing.</li>
 *   <li>On a device whose memory the host cannot view ({@code cuda}; {@link DeviceBackend#hasDeviceMemory()}),
 *       the view is a staging copy: the device's stream is synchronized and the span copied to host memory
 *       with {@link DeviceBackend#copyToHost} (as {@code tensor.cpu()} does), and {@link #commit()} queues the
 *       copy back on the device's stream ({@link io.vram4j.compute.Kernels#copyFromHost}), so writing never waits
 *       for the device; only reading does. The device address is never dereferenced.</li>
 * </ul>
 *
 * The span is the elements from the tensor's offset to its last element; for a strided view the bytes between
 * its elements are staged too, and written back unchanged unless the caller wrote them.
 *
 * <p>Not thread-safe: one access per thread, closed by the thread that opened it. Devices without data
 * ({@code sim}) are refused by {@link Storage#segment()} with its message.
 */
final class HostAccess implements AutoCloseable {
    private final Storage storage;
    private final long spanByte;
    private final MemorySegment seg;
    private final long off;
    private final Arena arena;

    private HostAccess(Storage storage, long spanByte, MemorySegment seg, long off, Arena arena) {
        this.storage = storage;
        this.spanByte = spanByte;
        this.seg = seg;
        this.off = off;
        this.arena = arena;
    }

    /** @return a view whose elements hold the tensor's current values */
    static HostAccess read(Tensor t) {
        return open(t, true);
    }

    /**
     * @return a view for writing; on device memory its elements are loaded first unless the tensor is contiguous
     *     (then the caller is expected to write every element before {@link #commit()})
     */
    static HostAccess write(Tensor t) {
        return open(t, !t.isContiguous());
    }

    /** @return a view of the one element at {@code index} (in elements of {@code dtype}) of a storage */
    static HostAccess element(Storage s, DType dtype, long index) {
        return s.deviceMemory() ? stage(s, dtype.byteSize(), index, index, index, true)
                : new HostAccess(s, 0, s.segment(), index, null);
    }

    private static HostAccess open(Tensor t, boolean load) {
        Storage s = t.storage();
        if (!s.deviceMemory()) {
            return new HostAccess(s, 0, s.segment(), t.offsetUnchecked(), null);
        }
        long first = t.offsetUnchecked();
        long last = first;
        int[] shape = t.shapeUnchecked();
        long[] strides = t.stridesUnchecked();
        for (int i = 0; i < shape.length; i++) {
            if (shape[i] == 0) {
                return new HostAccess(s, 0, MemorySegment.NULL, 0, null);
            }
            long reach = (long) (shape[i] - 1) * strides[i];
            if (reach < 0) {
                first += reach;
            } else {
                last += reach;
            }
        }
        return stage(s, t.dtype().byteSize(), t.offsetUnchecked(), first, last, load);
    }

    /** Stages elements {@code [first, last]} of device memory in host memory, loading them when asked. */
    private static HostAccess stage(Storage s, int es, long offset, long first, long last, boolean load) {
        Arena arena = Arena.ofConfined();
        try {
            MemorySegment host = arena.allocate((last - first + 1) * es, 64);
            if (load) {
                s.device().stream().synchronize();
                backend(s).copyToHost(s.address() + first * es, host);
            }
            return new HostAccess(s, first * es, host, offset - first, arena);
        } catch (RuntimeException | Error e) {
            arena.close();
            throw e;
        }
    }

    private static DeviceBackend backend(Storage s) {
        return s.device().backend();
    }

    /** @return the host memory holding the elements */
    MemorySegment seg() {
        return seg;
    }

    /** @return the element offset of the tensor's first element in {@link #seg()} */
    long off() {
        return off;
    }

    /**
     * Makes the writes made through the view the tensor's values: the staged span is copied back to the device,
     * queued behind the kernels before it (so they still see the old bytes); the host does not wait.
     */
    void commit() {
        if (arena == null) {
            return;
        }
        Device d = storage.device();
        if (d.hasKernels()) {
            d.kernels().copyFromHost(seg.byteSize(), seg, 0, storage.kernelSegment(), spanByte);
        } else {
            d.stream().synchronize();   // kernels queued before must not see the new bytes early
            backend(storage).copyFromHost(seg, storage.address() + spanByte);
        }
    }

    /** Releases the staging memory (nothing on {@code host}); uncommitted writes are lost on device memory. */
    @Override
    public void close() {
        if (arena != null) {
            arena.close();
        }
    }

    /**
     * Sets {@code bytes} bytes of device memory from {@code byteOffset} of a storage to zero: queued on the
     * device's stream behind the kernels before it ({@code cuMemsetD8Async}, {@link io.vram4j.compute.Kernels#fillBytes});
     * without kernels, after waiting for the stream.
     */
    static void zero(Storage s, long byteOffset, long bytes) {
        Device d = s.device();
        if (d.hasKernels()) {
            d.kernels().fillBytes(bytes, (byte) 0, s.kernelSegment(), byteOffset);
            return;
        }
        d.stream().synchronize();
        backend(s).fill(s.address() + byteOffset, bytes, (byte) 0);
    }

    /**
     * Copies {@code bytes} bytes between two storages of device memory on one device ({@code cuMemcpyDtoDAsync}
     * queued on the destination device's stream, {@link io.vram4j.compute.Kernels#copyBytes}; without kernels,
     * after waiting for the stream), or of host memory (a memory copy).
     */
    static void copyWithin(Storage src, long srcByte, Storage dst, long dstByte, long bytes) {
        if (bytes == 0) {
            return;
        }
        if (!src.deviceMemory()) {
            MemorySegment.copy(src.segment(), srcByte, dst.segment(), dstByte, bytes);
            return;
        }
        Device d = dst.device();
        if (d.hasKernels()) {
            d.kernels().copyBytes(bytes, src.kernelSegment(), srcByte, dst.kernelSegment(), dstByte);
            return;
        }
        d.stream().synchronize();
        backend(dst).copyDeviceToDevice(src.address() + srcByte, dst.address() + dstByte, bytes);
    }
}
