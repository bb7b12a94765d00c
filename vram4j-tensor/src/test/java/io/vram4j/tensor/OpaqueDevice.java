package io.vram4j.tensor;

import io.vram4j.device.AbstractDevice;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A test device with memory of its own that the host cannot dereference, as a GPU's: its addresses lie in the
 * non-canonical hole of x86-64 / AArch64 virtual addresses (from {@code 0x4000_0000_0000_0000}), where no page
 * can ever be mapped, so any host load or store through one of them kills the JVM (the test run fails with a
 * crash). The bytes live in off-heap blocks that only the copy calls reach, and each call is counted.
 * Expandable segments are not supported (no reservations).
 */
public final class OpaqueDevice extends AbstractDevice {
    static final long BASE = 0x4000_0000_0000_0000L;

    public final AtomicLong toDevice = new AtomicLong();
    public final AtomicLong toHost = new AtomicLong();
    public final AtomicLong withinDevice = new AtomicLong();
    public final AtomicLong fills = new AtomicLong();

    private final Arena arena = Arena.ofShared();
    private final TreeMap<Long, MemorySegment> blocks = new TreeMap<>();
    private long next = BASE;

    public OpaqueDevice(long capacity) {
        super("opaque", 0, capacity, "opaque:" + capacity);
    }

    @Override
    public boolean hasStorage() {
        return false;
    }

    @Override
    public boolean hasDeviceMemory() {
        return true;
    }

    @Override
    public MemorySegment segment(long address, long size) {
        throw new UnsupportedOperationException("opaque memory cannot be viewed from the host");
    }

    /** The backing bytes of {@code [address, address + size)}, which must lie inside one block. */
    private synchronized MemorySegment backing(long address, long size) {
        Map.Entry<Long, MemorySegment> e = blocks.floorEntry(address);
        if (e == null || size < 0 || address - e.getKey() + size > e.getValue().byteSize()) {
            throw new IllegalArgumentException("range 0x" + Long.toHexString(address) + " + " + size
                    + " is not inside a segment of " + description());
        }
        return e.getValue().asSlice(address - e.getKey(), size);
    }

    /**
     * @param deviceMemory a segment over opaque addresses (as the tensor ops hand device memory to kernels)
     * @return the host bytes that back it, at the same offsets; only test kernels use this
     */
    MemorySegment mirror(MemorySegment deviceMemory) {
        return backing(deviceMemory.address(), deviceMemory.byteSize());
    }

    @Override
    public void copyFromHost(MemorySegment src, long dst) {
        toDevice.incrementAndGet();
        backing(dst, src.byteSize()).copyFrom(src);
    }

    @Override
    public void copyToHost(long src, MemorySegment dst) {
        toHost.incrementAndGet();
        dst.copyFrom(backing(src, dst.byteSize()));
    }

    @Override
    public void copyDeviceToDevice(long src, long dst, long size) {
        withinDevice.incrementAndGet();
        backing(dst, size).copyFrom(backing(src, size));
    }

    @Override
    public void fill(long dst, long size, byte value) {
        fills.incrementAndGet();
        backing(dst, size).fill(value);
    }

    @Override
    protected synchronized long allocateSegment(long size, long addressHint) {
        long base = next;
        long footprint = (size + MIN_ALIGNMENT - 1) / MIN_ALIGNMENT * MIN_ALIGNMENT;
        next += footprint;
        MemorySegment block = arena.allocate(footprint, MIN_ALIGNMENT);
        block.fill((byte) 0x5a);   // what a reused GPU block may hold: not zeros
        blocks.put(base, block);
        return base;
    }

    @Override
    protected synchronized void releaseSegment(long base, long size) {
        blocks.remove(base);
    }

    @Override
    protected long allocateReservation(long size, long addressHint) {
        return 0;
    }

    @Override
    protected void releaseReservation(long base, long size) {
        throw new AssertionError("no reservations are handed out");
    }

    @Override
    protected boolean commit(long address, long size) {
        throw new AssertionError("no reservations are handed out");
    }

    @Override
    protected void decommit(long address, long size) {
        throw new AssertionError("no reservations are handed out");
    }

    @Override
    public void close() {
        super.close();
        arena.close();
    }
}
