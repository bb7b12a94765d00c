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
 *       with {@link DeviceBackend#copyToHost} (as {@code tensor.cpu()} does), and {@link #commit()} copies it
 *       back with {@link DeviceBackend#copyFromHost}. The device address is never dereferenced.</li>
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

    /** Makes the writes made through the view the tensor's values (copies the staged span back to the device). */
    void commit() {
        if (arena != null) {
            storage.device().stream().synchronize();   // kernels queued before must not see the new bytes early
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

    /** Sets {@code bytes} bytes of device memory from {@code byteOffset} of a storage to zero ({@code cuMemsetD8}). */
    static void zero(Storage s, long byteOffset, long bytes) {
        s.device().stream().synchronize();
        backend(s).fill(s.address() + byteOffset, bytes, (byte) 0);
    }

    /**
     * Copies {@code bytes} bytes between two storages of device memory on one device, or of host memory: the
     * device's own copy ({@code cuMemcpyDtoD}) or a memory copy.
     */
    static void copyWithin(Storage src, long srcByte, Storage dst, long dstByte, long bytes) {
        if (bytes == 0) {
            return;
        }
        if (src.deviceMemory()) {
            dst.device().stream().synchronize();
            backend(dst).copyDeviceToDevice(src.address() + srcByte, dst.address() + dstByte, bytes);
        } else {
            MemorySegment.copy(src.segment(), srcByte, dst.segment(), dstByte, bytes);
        }
    }
}
