package io.vram4j.alloc;

import io.vram4j.device.DeviceBackend;
import io.vram4j.device.Stream;

import java.util.BitSet;

/**
 * One growable virtual-address range of an expandable segment (spec section 6): a reservation of
 * {@code pageSize × ceil(1.125 · capacity / pageSize)} bytes, backed page by page (2 MiB pages for the small
 * pool, 20 MiB for the large pool) through the device's map/unmap calls, one call per page, as PyTorch maps one
 * physical allocation handle per page (on {@code cuda} a page is one {@code cuMemCreate} handle, and the driver
 * unmaps only whole mappings). Guarded by the allocator's lock.
 */
final class ExpandableSegment {
    final DeviceBackend device;
    final Stream stream;
    final long base;
    final long pageSize;
    final int pageCount;
    /** Pages mapped now; a BitSet grows only as far as the highest page mapped, so a reservation for an
     *  unlimited what-if device (petabytes of address space) costs nothing until pages are mapped. */
    private final BitSet mapped;

    private ExpandableSegment(DeviceBackend device, Stream stream, long base, long pageSize, int pageCount) {
        this.device = device;
        this.stream = stream;
        this.base = base;
        this.pageSize = pageSize;
        this.pageCount = pageCount;
        this.mapped = new BitSet();
    }

    /**
     * Reserves the address range.
     *
     * @return the segment, or null when the device has no address range left
     */
    static ExpandableSegment reserve(DeviceBackend device, Stream stream, long pageSize, long addressHint) {
        long size = SizeRules.expandableReservationSize(device.totalMemory(), pageSize);
        long base = device.reserveAddressRange(size, addressHint);
        if (base == 0) {
            return null;
        }
        return new ExpandableSegment(device, stream, base, pageSize, (int) (size / pageSize));
    }

    long size() {
        return pageSize * pageCount;
    }

    boolean contains(long ptr) {
        return ptr >= base && ptr < base + size();
    }

    /**
     * Maps the pages covering [ptr, ptr + size): the first page is the one holding {@code ptr}, the last the
     * one holding the last byte.
     *
     * @return the length of the mapped range starting at the first page, or 0 when the device had no room
     *     (nothing mapped then)
     */
    long map(long ptr, long size) {
        if (size == 0) {
            return 0;
        }
        int begin = (int) ((ptr - base) / pageSize);
        int end = (int) ((ptr + size - 1 - base) / pageSize) + 1;
        for (int i = begin; i < end; i++) {
            if (!device.map(base + i * pageSize, pageSize)) {
                for (int j = begin; j < i; j++) { // all or nothing, as PyTorch releases the handles it made
                    device.unmap(base + j * pageSize, pageSize);
                    mapped.clear(j);
                }
                return 0;
            }
            mapped.set(i);
        }
        return (end - begin) * pageSize;
    }

    /**
     * Unmaps every page lying entirely inside [ptr, ptr + size), after synchronizing the segment's stream.
     *
     * @return {start, length} of the unmapped range; length 0 when no whole page lies inside
     */
    long[] unmap(long ptr, long size) {
        long beginOff = ceilDiv(ptr - base, pageSize);
        long endOff = (ptr + size - base) / pageSize;
        if (beginOff >= endOff) {
            return new long[] {ptr, 0};
        }
        stream.synchronize();
        long start = base + beginOff * pageSize;
        long length = (endOff - beginOff) * pageSize;
        for (long i = beginOff; i < endOff; i++) {
            device.unmap(base + i * pageSize, pageSize);
            mapped.clear((int) i);
        }
        return new long[] {start, length};
    }

    /** Unmaps every page still mapped (closing the allocator). */
    void unmapAll() {
        for (int i = mapped.nextSetBit(0); i >= 0; i = mapped.nextSetBit(i + 1)) {
            device.unmap(base + i * pageSize, pageSize);
        }
        mapped.clear();
    }

    /** Releases the reservation; all pages must be unmapped. */
    void release() {
        device.releaseAddressRange(base, size());
    }

    private static long ceilDiv(long a, long b) {
        return (a + b - 1) / b;
    }
}
