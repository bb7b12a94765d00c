package io.vram4j.device;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The bookkeeping every device backend shares, so that a backend only supplies the address space and, where
 * it has one, the storage:
 * <ul>
 *   <li><b>capacity accounting</b>: the bytes of live {@link #malloc} segments plus the bytes currently
 *       {@link #map mapped} never exceed {@link #totalMemory()}; {@link #malloc} returns 0 and {@link #map}
 *       returns false when they would. A segment counts with the size asked for, not rounded up;</li>
 *   <li>the <b>registry</b> of live segments and of reservations with their mapped ranges, which validates
 *       every call (unknown addresses, double frees, overlapping maps) before the backend sees it;</li>
 *   <li>the <b>streams</b> ({@link #defaultStream()}, {@link #newStream()}, {@link #stream(long)}).</li>
 * </ul>
 * Lookups are O(log n) in the number of live segments and reservations.
 *
 * <p>Subclasses implement the protected hooks, which this class calls only with validated arguments:
 * {@link #allocateSegment}/{@link #releaseSegment} obtain and return the address range of a segment,
 * {@link #allocateReservation}/{@link #releaseReservation} those of a reservation, and {@link #commit}/
 * {@link #decommit} back or un-back part of a reservation with memory.
 *
 * <p>Thread-safe: every public method may be called from any thread. {@link #close()} must not race with
 * other calls; after it, memory operations throw {@link IllegalStateException}, while the streams and
 * {@link #memGetInfo()} keep working.
 *
 * <p>Exceptions: sizes that are not positive, addresses that are not what the call needs (an unknown segment
 * base, a range outside a reservation, misaligned values) raise {@link IllegalArgumentException}; releasing
 * a reservation that still has mapped pages raises {@link IllegalStateException}. Lack of memory is never an
 * exception.
 */
public abstract class AbstractDevice implements DeviceBackend {
    /** The mapping granularity of expandable segments: 2 MiB, as CUDA reports for current GPUs. */
    public static final long GRANULARITY = 2 * ByteSize.MIB;
    /** The least alignment of a {@link #malloc} base address: 512 bytes, as {@code cudaMalloc} guarantees. */
    public static final long MIN_ALIGNMENT = 512;
    /** The largest capacity a device may have: 1 PiB, far above any GPU, so that absurd specs fail early. */
    public static final long MAX_CAPACITY = ByteSize.PIB;

    private final String type;
    private final int index;
    private final long capacity;
    private final String description;
    private final AtomicLong used = new AtomicLong();
    private final StreamRegistry streams;

    private final Object lock = new Object();
    private final TreeMap<Long, Long> segments = new TreeMap<>(); // base -> size, guarded by lock
    private final TreeMap<Long, Reservation> reservations = new TreeMap<>(); // base -> reservation, guarded by lock
    private volatile boolean closed;

    /**
     * @param type the backend type, e.g. {@code "host"}
     * @param index the device index, at least 0
     * @param capacity the capacity in bytes, in {@code (0, MAX_CAPACITY]}
     * @param description a short description, e.g. {@code "host:8GiB"}
     * @throws IllegalArgumentException if the index or the capacity is out of range
     */
    protected AbstractDevice(String type, int index, long capacity, String description) {
        if (index < 0) {
            throw new IllegalArgumentException("device index must not be negative: " + index);
        }
        if (capacity <= 0 || capacity > MAX_CAPACITY) {
            throw new IllegalArgumentException("device capacity must be positive and at most "
                    + ByteSize.format(MAX_CAPACITY) + ", got " + capacity + " bytes");
        }
        this.type = type;
        this.index = index;
        this.capacity = capacity;
        this.description = description;
        this.streams = new StreamRegistry(index, this::createStream, this::adoptStream);
    }

    // ---- hooks --------------------------------------------------------------------------------------------

    /**
     * Obtains the address range of a new segment.
     *
     * @param size bytes, positive
     * @param addressHint the wanted base address, or 0; the backend may ignore it
     * @return the base, a non-zero multiple of {@link #MIN_ALIGNMENT}, or 0 when no range can be had
     */
    protected abstract long allocateSegment(long size, long addressHint);

    /**
     * Returns a segment's range. Called once per segment, after it left the registry.
     *
     * @param base the base {@link #allocateSegment} returned
     * @param size the size it was asked for
     */
    protected abstract void releaseSegment(long base, long size);

    /**
     * Obtains a reserved address range with nothing mapped in it.
     *
     * @param size bytes, a positive multiple of {@link #GRANULARITY}
     * @param addressHint the wanted base, or 0; the backend may ignore it
     * @return the base, a non-zero multiple of {@link #GRANULARITY}, or 0 when no range can be had
     */
    protected abstract long allocateReservation(long size, long addressHint);

    /**
     * Returns a reservation's range; nothing in it is mapped any more (except on {@link #close()}, which
     * releases reservations whatever they hold).
     *
     * @param base the base {@link #allocateReservation} returned
     * @param size its size
     */
    protected abstract void releaseReservation(long base, long size);

    /**
     * Backs {@code [address, address + size)}, an unmapped, granularity-aligned part of a reservation, with
     * memory. The capacity is already charged.
     *
     * @param address start of the range
     * @param size bytes, a positive multiple of {@link #GRANULARITY}
     * @return false if the system has no memory for it (nothing is committed then)
     */
    protected abstract boolean commit(long address, long size);

    /**
     * Gives back the memory behind {@code [address, address + size)}, a mapped part of a reservation.
     *
     * @param address start of the range
     * @param size bytes, a positive multiple of {@link #GRANULARITY}
     */
    protected abstract void decommit(long address, long size);

    /**
     * Creates the stream {@link #newStream()} returns. The default returns null: a counting-model stream
     * ({@link StreamQueue#counting()}) with the next free handle 1, 2, 3, ... Backends with real queues override
     * it. Called lazily, never from the constructor.
     *
     * @return a new stream of this device with a handle not in use, or null for the default
     */
    protected Stream createStream() {
        return null;
    }

    /**
     * Makes the stream of a handle this device sees for the first time: handle 0 on the first call of
     * {@link #defaultStream()}, or a handle from a recorded trace passed to {@link #stream(long)}. The default
     * makes a counting-model stream. Called lazily, never from the constructor.
     *
     * @param handle the raw handle
     * @return the stream
     * @throws IllegalArgumentException if the backend cannot have a stream with that handle
     */
    protected Stream adoptStream(long handle) {
        return new Stream(index, handle);
    }

    // ---- DeviceBackend ------------------------------------------------------------------------------------

    @Override
    public final String type() {
        return type;
    }

    @Override
    public final int index() {
        return index;
    }

    @Override
    public final String description() {
        return description;
    }

    @Override
    public final long totalMemory() {
        return capacity;
    }

    /**
     * {@inheritDoc} Here: free = capacity minus the bytes of live segments and mapped ranges; total = capacity.
     * A backend over a real device overrides it with the device's own figures.
     */
    @Override
    public MemInfo memGetInfo() {
        return new MemInfo(capacity - used.get(), capacity);
    }

    @Override
    public final long granularity() {
        return GRANULARITY;
    }

    /**
     * {@inheritDoc}
     *
     * @throws IllegalArgumentException if {@code size} is not positive
     * @throws IllegalStateException if the device is closed
     */
    @Override
    public final long malloc(long size) {
        return malloc(size, 0);
    }

    /**
     * {@inheritDoc}
     *
     * @throws IllegalArgumentException if {@code size} is not positive
     * @throws IllegalStateException if the device is closed
     */
    @Override
    public final long malloc(long size, long addressHint) {
        checkOpen();
        if (size <= 0) {
            throw new IllegalArgumentException("malloc size must be positive, got " + size);
        }
        if (!tryCharge(size)) {
            return 0;
        }
        long base;
        try {
            base = allocateSegment(size, addressHint);
        } catch (RuntimeException e) {
            used.addAndGet(-size);
            throw e;
        }
        if (base == 0) {
            used.addAndGet(-size);
            return 0;
        }
        synchronized (lock) {
            if (!closed) {
                segments.put(base, size);
                return base;
            }
        }
        releaseSegment(base, size); // close() ran meanwhile
        throw closedException();
    }

    /**
     * {@inheritDoc}
     *
     * @throws IllegalStateException if the device is closed
     */
    @Override
    public final void free(long address) {
        checkOpen();
        long size;
        synchronized (lock) {
            Long s = segments.remove(address);
            if (s == null) {
                throw new IllegalArgumentException("free(" + hex(address) + "): not the base of a live segment"
                        + segmentHint(address));
            }
            size = s;
        }
        try {
            releaseSegment(address, size);
        } finally {
            used.addAndGet(-size);
        }
    }

    @Override
    public final Stream defaultStream() {
        return streams.defaultStream();
    }

    @Override
    public final Stream newStream() {
        return streams.newStream();
    }

    @Override
    public final Stream stream(long handle) {
        return streams.stream(handle);
    }

    /**
     * Waits for every event recorded so far on every stream of this device. Backends whose device runs work of
     * its own (a GPU) override it to wait for that too.
     */
    @Override
    public void synchronize() {
        streams.synchronizeAll();
    }

    /**
     * {@inheritDoc}
     *
     * @throws IllegalArgumentException if {@code size} is not a positive multiple of the granularity
     * @throws IllegalStateException if the device is closed
     */
    @Override
    public final long reserveAddressRange(long size, long addressHint) {
        checkOpen();
        requireGranular("reserveAddressRange size", size);
        long base = allocateReservation(size, addressHint);
        if (base == 0) {
            return 0;
        }
        synchronized (lock) {
            if (!closed) {
                reservations.put(base, new Reservation(base, size));
                return base;
            }
        }
        releaseReservation(base, size);
        throw closedException();
    }

    /**
     * {@inheritDoc}
     *
     * @throws IllegalArgumentException if {@code base} is not the base of a reservation of {@code size} bytes
     * @throws IllegalStateException if part of the reservation is still mapped, or the device is closed
     */
    @Override
    public final void releaseAddressRange(long base, long size) {
        checkOpen();
        synchronized (lock) {
            Reservation r = reservations.get(base);
            if (r == null) {
                throw new IllegalArgumentException("releaseAddressRange(" + hex(base) + ", " + size
                        + "): not the base of a reservation");
            }
            if (r.size != size) {
                throw new IllegalArgumentException("releaseAddressRange(" + hex(base) + ", " + size
                        + "): the reservation has " + r.size + " bytes");
            }
            if (!r.mapped.isEmpty()) {
                throw new IllegalStateException("releaseAddressRange(" + hex(base) + ", " + size + "): "
                        + r.mapped.total() + " bytes are still mapped; unmap them first");
            }
            reservations.remove(base);
        }
        releaseReservation(base, size);
    }

    /**
     * {@inheritDoc}
     *
     * @throws IllegalArgumentException if the range is misaligned, not inside one reservation, or partly mapped
     * @throws IllegalStateException if the device is closed
     */
    @Override
    public final boolean map(long address, long size) {
        checkOpen();
        requireGranular("map size", size);
        synchronized (lock) {
            Reservation r = reservationContaining("map", address, size);
            if (r.mapped.intersects(address, address + size)) {
                throw new IllegalArgumentException("map(" + hex(address) + ", " + size
                        + "): part of the range is already mapped");
            }
            if (!tryCharge(size)) {
                return false;
            }
            boolean committed = false;
            try {
                committed = commit(address, size);
            } finally {
                if (!committed) {
                    used.addAndGet(-size);
                }
            }
            if (committed) {
                r.mapped.add(address, address + size);
            }
            return committed;
        }
    }

    /**
     * {@inheritDoc}
     *
     * @throws IllegalArgumentException if the range is misaligned or not entirely mapped
     * @throws IllegalStateException if the device is closed
     */
    @Override
    public final void unmap(long address, long size) {
        checkOpen();
        requireGranular("unmap size", size);
        synchronized (lock) {
            Reservation r = reservationContaining("unmap", address, size);
            if (!r.mapped.containsAll(address, address + size)) {
                throw new IllegalArgumentException("unmap(" + hex(address) + ", " + size
                        + "): part of the range is not mapped");
            }
            decommit(address, size);
            r.mapped.remove(address, address + size);
            used.addAndGet(-size);
        }
    }

    /**
     * Frees every live segment and releases every reservation (mapped pages included). Idempotent.
     *
     * @throws RuntimeException the first failure of a backend hook, after trying every release
     */
    @Override
    public void close() {
        List<Map.Entry<Long, Long>> liveSegments = new ArrayList<>();
        List<Reservation> liveReservations;
        synchronized (lock) {
            if (closed) {
                return;
            }
            closed = true;
            liveSegments.addAll(segments.entrySet());
            liveReservations = new ArrayList<>(reservations.values());
            segments.clear();
            reservations.clear();
        }
        RuntimeException failure = null;
        for (Map.Entry<Long, Long> s : liveSegments) {
            try {
                releaseSegment(s.getKey(), s.getValue());
            } catch (RuntimeException e) {
                failure = first(failure, e);
            }
        }
        for (Reservation r : liveReservations) {
            try {
                releaseReservation(r.base, r.size);
            } catch (RuntimeException e) {
                failure = first(failure, e);
            }
        }
        used.set(0);
        if (failure != null) {
            throw failure;
        }
    }

    @Override
    public String toString() {
        return description;
    }

    // ---- for subclasses -----------------------------------------------------------------------------------

    /**
     * The bytes of address space a segment of {@code size} bytes occupies under the placement policy that
     * {@code sim} and {@code host} share: its size rounded up to {@link #MIN_ALIGNMENT}.
     *
     * @param size bytes, positive
     * @return bytes, a multiple of {@link #MIN_ALIGNMENT}
     */
    protected static long segmentFootprint(long size) {
        return (size + MIN_ALIGNMENT - 1) & -MIN_ALIGNMENT;
    }

    /**
     * The alignment of a segment's base under the shared placement policy: {@link #GRANULARITY} (2 MiB) for
     * segments of at least 2 MiB, {@link #MIN_ALIGNMENT} (512 bytes) for smaller ones. Reservations are always
     * aligned to {@link #GRANULARITY}.
     *
     * @param size bytes, positive
     * @return bytes, a power of two
     */
    protected static long segmentAlignment(long size) {
        return size >= GRANULARITY ? GRANULARITY : MIN_ALIGNMENT;
    }

    /**
     * What a validated range lies in.
     *
     * @param <T> the result type
     */
    @FunctionalInterface
    protected interface RangeOwner<T> {
        /**
         * @param base the base of the live segment or of the reservation holding the range
         * @param inReservation true for a mapped range of a reservation, false for a {@link #malloc} segment
         * @return the result of {@link #resolve}
         */
        T apply(long base, boolean inReservation);
    }

    /**
     * Checks that {@code [address, address + size)} lies inside one live segment or inside the mapped part of
     * one reservation, and calls {@code owner} with its base while holding the registry lock (so the owner
     * cannot be freed meanwhile; keep the function short).
     *
     * @param <T> the result type
     * @param address start of the range
     * @param size bytes, not negative; 0 still requires {@code address} to be inside
     * @param owner called with the owner of the range
     * @return what {@code owner} returns
     * @throws IllegalArgumentException naming the range and why it is not valid
     * @throws IllegalStateException if the device is closed
     */
    protected final <T> T resolve(long address, long size, RangeOwner<T> owner) {
        checkOpen();
        if (size < 0) {
            throw new IllegalArgumentException(call(address, size) + ": size must not be negative");
        }
        if (address <= 0 || Math.max(size, 1) > Long.MAX_VALUE - address) {
            throw new IllegalArgumentException(call(address, size) + ": not inside a live segment or a mapped range");
        }
        long end = address + Math.max(size, 1);
        synchronized (lock) {
            Map.Entry<Long, Long> seg = segments.floorEntry(address);
            if (seg != null && address - seg.getKey() < seg.getValue()) {
                long segEnd = seg.getKey() + seg.getValue();
                if (end > segEnd) {
                    throw new IllegalArgumentException(call(address, size) + ": runs " + (end - segEnd)
                            + " bytes past the end of the segment at " + hex(seg.getKey()) + " ("
                            + seg.getValue() + " bytes)");
                }
                return owner.apply(seg.getKey(), false);
            }
            Map.Entry<Long, Reservation> res = reservations.floorEntry(address);
            if (res != null && res.getValue().contains(address, 1)) {
                Reservation r = res.getValue();
                if (!r.mapped.containsAll(address, end)) {
                    throw new IllegalArgumentException(call(address, size) + ": not entirely mapped in the reservation at "
                            + hex(r.base) + " (mapped: " + r.describeMapped() + ")");
                }
                return owner.apply(r.base, true);
            }
        }
        throw new IllegalArgumentException(call(address, size) + ": not inside a live segment or a mapped range");
    }

    /** The call a range check names in its message (built only when the check fails: ranges are checked per copy). */
    private static String call(long address, long size) {
        return "segment(" + hex(address) + ", " + size + ")";
    }

    /** @throws IllegalStateException if the device is closed */
    protected final void checkOpen() {
        if (closed) {
            throw closedException();
        }
    }

    /**
     * @param address an address
     * @return {@code "0x"} and the address in hex
     */
    protected static String hex(long address) {
        return "0x" + Long.toHexString(address);
    }

    // ---- internals ----------------------------------------------------------------------------------------

    private boolean tryCharge(long bytes) {
        while (true) {
            long current = used.get();
            if (bytes > capacity - current) {
                return false;
            }
            if (used.compareAndSet(current, current + bytes)) {
                return true;
            }
        }
    }

    private Reservation reservationContaining(String call, long address, long size) {
        if (address % GRANULARITY != 0) {
            throw new IllegalArgumentException(call + "(" + hex(address) + ", " + size
                    + "): the address is not aligned to the granularity (" + GRANULARITY + " bytes)");
        }
        Map.Entry<Long, Reservation> e = reservations.floorEntry(address);
        if (e == null || !e.getValue().contains(address, size)) {
            throw new IllegalArgumentException(call + "(" + hex(address) + ", " + size
                    + "): the range is not inside a reservation");
        }
        return e.getValue();
    }

    private String segmentHint(long address) {
        Map.Entry<Long, Long> seg = segments.floorEntry(address);
        if (seg != null && address - seg.getKey() < seg.getValue()) {
            return "; it lies " + (address - seg.getKey()) + " bytes inside the segment at " + hex(seg.getKey());
        }
        return "";
    }

    private static void requireGranular(String what, long size) {
        if (size <= 0 || size % GRANULARITY != 0) {
            throw new IllegalArgumentException(what + " must be a positive multiple of the granularity ("
                    + GRANULARITY + " bytes), got " + size);
        }
    }

    private IllegalStateException closedException() {
        return new IllegalStateException("device " + description + " is closed");
    }

    private static RuntimeException first(RuntimeException failure, RuntimeException e) {
        if (failure == null) {
            return e;
        }
        failure.addSuppressed(e);
        return failure;
    }

    /** A reserved address range and the parts of it that are mapped. */
    private static final class Reservation {
        final long base;
        final long size;
        final RangeSet mapped = new RangeSet();

        Reservation(long base, long size) {
            this.base = base;
            this.size = size;
        }

        boolean contains(long address, long length) {
            return address >= base && length <= size && address - base <= size - length;
        }

        String describeMapped() {
            if (mapped.isEmpty()) {
                return "nothing";
            }
            StringBuilder sb = new StringBuilder();
            for (Map.Entry<Long, Long> e : mapped.ranges().entrySet()) {
                if (!sb.isEmpty()) {
                    sb.append(", ");
                }
                if (sb.length() > 200) {
                    sb.append("...");
                    break;
                }
                sb.append('[').append(hex(e.getKey())).append(", ").append(hex(e.getValue())).append(')');
            }
            return sb.toString();
        }
    }
}
