package io.vram4j.device.host;

import io.vram4j.device.AbstractDevice;
import io.vram4j.device.ByteSize;
import io.vram4j.device.Devices;
import io.vram4j.device.FreeRanges;
import io.vram4j.device.sim.SimDevice;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.management.ManagementFactory;
import java.lang.management.OperatingSystemMXBean;
import java.util.HashMap;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;

/**
 * A device whose memory is real off-heap memory of this process, obtained from the kernel through the
 * Foreign Function &amp; Memory API, with a capacity that behaves like a GPU's. Linux only. Usually opened
 * with {@link Devices#open(String) Devices.open("host")} or {@code "host:8GiB"}.
 *
 * <p><b>Placement.</b> On opening, the device reserves one large <em>arena</em> of address space
 * ({@code mmap} of {@link #arenaSize()} bytes, {@code PROT_NONE} and {@code MAP_NORESERVE}: no memory, only
 * addresses; see the constructor for its size) and places every segment and reservation inside it by the
 * policy {@link SimDevice} uses from its base: the <em>lowest</em> free range that fits (first fit), freed
 * ranges reused and merged with free neighbours; segments of at least 2 MiB and all reservations aligned to
 * 2 MiB, smaller segments to 512 bytes; a segment occupies its size rounded up to 512 bytes.
 * <b>Guarantee:</b> the same sequence of device calls (without address hints) on a {@code host} and a
 * {@code sim} device yields addresses that differ by one constant offset,
 * {@link #arenaBase()} {@code -} {@link SimDevice#BASE_ADDRESS}, as long as the arena has room, so the
 * caching allocator, whose best fit breaks ties by address, makes the same choices on both: a dry run on
 * {@code sim} predicts a real run here. Only when the arena is full do further ranges go wherever
 * {@code mmap} puts them (the guarantee ends there).
 * <ul>
 *   <li>{@link #malloc} takes a range of the arena and makes its pages readable and writable
 *       ({@code mprotect}); {@link #free} gives the pages back to the system ({@code madvise(MADV_DONTNEED)})
 *       and makes them inaccessible again. A segment is 512-byte aligned and reads as zero, also when it
 *       reuses freed memory, and takes physical memory only where it is written. Segments smaller than a page
 *       may share a page (as on {@code sim}, they pack at 512 bytes); such a page is given back when its last
 *       segment is freed, and the bytes a new segment gets in a page still in use are zeroed.</li>
 *   <li>An address hint inside the arena is honoured, as on {@code sim}, when it is 512-byte aligned (2 MiB
 *       for reservations) and the whole range there is free. A page-aligned hint outside the arena is passed
 *       on to {@code mmap}, and the range is mapped there when it is free. Otherwise the hint is ignored.</li>
 *   <li>Expandable segments use real virtual memory: {@link #reserveAddressRange} takes an inaccessible
 *       range of the arena aligned to 2 MiB; {@link #map} makes part of it readable and writable
 *       ({@code mprotect}); {@link #unmap} gives the pages back ({@code madvise(MADV_DONTNEED)}) and makes them
 *       inaccessible again, so a later {@link #map} of the same range reads zeros;
 *       {@link #releaseAddressRange} returns the range to the arena.</li>
 *   <li>{@link #segment} returns a view of a live segment or of a mapped range. A view of a {@link #malloc}
 *       segment is invalidated by {@link #free} (accessing it then throws {@link IllegalStateException}); a
 *       view into a reservation is invalidated by {@link #releaseAddressRange}. Accessing a view over pages
 *       that have since been {@linkplain #unmap unmapped} is, as on a GPU, an illegal memory access: here it
 *       kills the JVM with a segmentation fault.</li>
 *   <li>{@link #close()} frees everything and unmaps the arena.</li>
 * </ul>
 * The capacity is accounted as in {@link AbstractDevice}, with the sizes asked for. Failures of the system
 * calls raise {@link IllegalStateException} naming the call and its {@code errno}, except {@code ENOMEM},
 * which is reported as lack of memory (0 or false).
 *
 * <p>Thread-safe: placement in the arena is serialized by a lock of the device.
 */
public final class HostDevice extends AbstractDevice {
    /** The share of the physical memory a plain {@code host} device gets: one half. */
    public static final double DEFAULT_CAPACITY_FRACTION = 0.5;

    private static final int SEGMENT_FLAGS = Libc.MAP_PRIVATE | Libc.MAP_ANONYMOUS | Libc.MAP_NORESERVE;

    /** How many times the capacity the arena spans (so that several expandable reservations fit too). */
    static final long ARENA_CAPACITY_MULTIPLE = 16;
    /** Address space the arena spans beyond {@link #ARENA_CAPACITY_MULTIPLE} times the capacity: 1 GiB. */
    static final long ARENA_SLACK = ByteSize.GIB;
    /** The largest arena tried: 64 TiB, half of the 47-bit user address space of x86-64. */
    static final long MAX_ARENA = 64L << 40;

    private final long pageSize;
    /** Base of each live segment and reservation to the FFM arena that scopes the views into it. */
    private final ConcurrentMap<Long, Arena> scopes = new ConcurrentHashMap<>();

    private final Object arenaLock = new Object();
    private final long arenaBase;
    private final long arenaSize;
    /** The free ranges of the arena. Guarded by arenaLock. */
    private final FreeRanges free = new FreeRanges(MIN_ALIGNMENT, GRANULARITY);
    /** Pages (by start) that live segments cover only in part, to the number of segments using each. */
    private final Map<Long, Integer> sharedPageUsers = new HashMap<>(); // guarded by arenaLock
    private boolean arenaUnmapped; // guarded by arenaLock
    private volatile boolean leaked;

    /**
     * Opens the device and reserves its arena: {@link #ARENA_CAPACITY_MULTIPLE} times the capacity plus
     * {@link #ARENA_SLACK}, at most {@link #MAX_ARENA}, halved until the system grants it (inaccessible and
     * not backed by memory, it costs address space only). Without any arena every range goes wherever the
     * kernel puts it.
     *
     * @param index the device index
     * @param capacity the capacity in bytes, in {@code (0, MAX_CAPACITY]}
     * @param description a short description, e.g. {@code "host:8GiB"}
     * @throws UnsupportedOperationException when not running on Linux
     * @throws IllegalArgumentException if the index or capacity is out of range
     * @throws IllegalStateException if reserving the arena fails other than for lack of memory
     */
    public HostDevice(int index, long capacity, String description) {
        requireLinux();
        super("host", index, capacity, description);
        this.pageSize = Libc.pageSize();
        long size = capacity > (MAX_ARENA - ARENA_SLACK) / ARENA_CAPACITY_MULTIPLE ? MAX_ARENA
                : roundUp(capacity * ARENA_CAPACITY_MULTIPLE + ARENA_SLACK, GRANULARITY);
        long base = 0;
        while (base == 0 && size >= GRANULARITY) {
            try {
                base = reserveAligned(size);
            } catch (LibcException e) {
                if (e.errno() != Libc.ENOMEM) {
                    throw e;
                }
                size = size / 2 / GRANULARITY * GRANULARITY;
            }
        }
        this.arenaBase = base;
        this.arenaSize = base == 0 ? 0 : size;
        if (base != 0) {
            free.give(base, size);
        }
    }

    /**
     * @return the start of the arena, the address range in which segments and reservations are placed as
     *         {@code sim} places them from {@link SimDevice#BASE_ADDRESS}; a multiple of
     *         2 MiB, or 0 if the system granted no arena
     */
    public long arenaBase() {
        return arenaBase;
    }

    /** @return the length of the arena in bytes, a multiple of 2 MiB (0 if there is none) */
    public long arenaSize() {
        return arenaSize;
    }

    /**
     * The default capacity: {@link #DEFAULT_CAPACITY_FRACTION} of {@link #physicalMemory()}, rounded down to
     * the granularity (2 MiB).
     *
     * @return bytes
     */
    public static long defaultCapacity() {
        long bytes = (long) (physicalMemory() * DEFAULT_CAPACITY_FRACTION);
        return Math.max(GRANULARITY, bytes - bytes % GRANULARITY);
    }

    /**
     * @return the physical memory of the machine, or the memory limit of the container the JVM runs in, in bytes
     *         (as {@code com.sun.management.OperatingSystemMXBean.getTotalMemorySize()})
     */
    public static long physicalMemory() {
        OperatingSystemMXBean os = ManagementFactory.getOperatingSystemMXBean();
        if (os instanceof com.sun.management.OperatingSystemMXBean sun) {
            return sun.getTotalMemorySize();
        }
        throw new IllegalStateException("the JVM does not report the physical memory size "
                + "(module jdk.management missing?); give the host device a capacity, e.g. host:8GiB");
    }

    /** @return true: segments are real memory */
    @Override
    public boolean hasStorage() {
        return true;
    }

    /**
     * {@inheritDoc}
     *
     * @throws IllegalArgumentException if the range is not inside a live segment or a mapped range
     * @throws IllegalStateException if the device is closed
     */
    @Override
    @SuppressWarnings("restricted")
    public MemorySegment segment(long address, long size) {
        return resolve(address, size, (base, inReservation) -> {
            Arena scope = scopes.get(base);
            if (scope == null) {
                throw new IllegalArgumentException("segment(" + hex(address) + ", " + size + "): "
                        + (inReservation ? "the reservation" : "the segment") + " at " + hex(base)
                        + " is being released");
            }
            return MemorySegment.ofAddress(address).reinterpret(size, scope, null);
        });
    }

    @Override
    protected long allocateSegment(long size, long addressHint) {
        long footprint = segmentFootprint(size);
        if (!inArena(addressHint, footprint) && addressHint > 0 && addressHint % pageSize == 0) {
            long at = mapOutside(addressHint, roundUp(footprint, pageSize), Libc.PROT_READ | Libc.PROT_WRITE, true);
            if (at != 0) {
                scopes.put(at, Arena.ofShared());
                return at;
            }
        }
        long base;
        synchronized (arenaLock) {
            base = hintOrFirstFit(footprint, segmentAlignment(size), addressHint, MIN_ALIGNMENT);
            if (base != 0 && !commitSegment(base, footprint)) {
                free.give(base, footprint);
                return 0;
            }
        }
        if (base == 0) { // the arena is full: wherever the kernel puts it
            base = mapOutside(0, roundUp(footprint, pageSize), Libc.PROT_READ | Libc.PROT_WRITE, false);
            if (base == 0) {
                return 0;
            }
        }
        scopes.put(base, Arena.ofShared());
        return base;
    }

    @Override
    protected void releaseSegment(long base, long size) {
        closeScope(base);
        long footprint = segmentFootprint(size);
        if (inArena(base, footprint)) {
            synchronized (arenaLock) {
                decommitSegment(base, footprint);
                free.give(base, footprint);
            }
        } else {
            Libc.munmap(base, roundUp(footprint, pageSize));
        }
    }

    @Override
    protected long allocateReservation(long size, long addressHint) {
        if (size > Long.MAX_VALUE - GRANULARITY) {
            return 0;
        }
        long base = 0;
        if (!inArena(addressHint, size) && addressHint > 0 && addressHint % GRANULARITY == 0) {
            base = mapOutside(addressHint, size, Libc.PROT_NONE, true);
        }
        if (base == 0) {
            synchronized (arenaLock) {
                base = hintOrFirstFit(size, GRANULARITY, addressHint, GRANULARITY);
            }
        }
        if (base == 0) { // the arena is full: wherever the kernel puts it
            try {
                base = reserveAligned(size);
            } catch (LibcException e) {
                if (e.errno() == Libc.ENOMEM) {
                    return 0;
                }
                throw e;
            }
        }
        scopes.put(base, Arena.ofShared());
        return base;
    }

    /** Maps {@code size + GRANULARITY} inaccessible bytes and trims them to an aligned range of {@code size}. */
    private static long reserveAligned(long size) {
        long raw = Libc.mmap(0, size + GRANULARITY, Libc.PROT_NONE, SEGMENT_FLAGS);
        long base = roundUp(raw, GRANULARITY);
        long head = base - raw;
        long tail = GRANULARITY - head;
        if (head > 0) {
            Libc.munmap(raw, head);
        }
        if (tail > 0) {
            Libc.munmap(base + size, tail);
        }
        return base;
    }

    @Override
    protected void releaseReservation(long base, long size) {
        closeScope(base);
        if (inArena(base, size)) {
            synchronized (arenaLock) {
                release(base, size); // close() releases reservations with pages still mapped
                free.give(base, size);
            }
        } else {
            Libc.munmap(base, size);
        }
    }

    @Override
    protected boolean commit(long address, long size) {
        try {
            Libc.mprotect(address, size, Libc.PROT_READ | Libc.PROT_WRITE);
            return true;
        } catch (LibcException e) {
            if (e.errno() == Libc.ENOMEM) {
                return false;
            }
            throw e;
        }
    }

    @Override
    protected void decommit(long address, long size) {
        release(address, size);
    }

    /**
     * Frees every segment and reservation, as {@link AbstractDevice#close()}, then unmaps the arena, unless a
     * view was in use by a native call when its segment had to be freed (the arena is then left mapped).
     *
     * @throws RuntimeException the first failure, after trying every release
     */
    @Override
    public void close() {
        try {
            super.close();
        } finally {
            synchronized (arenaLock) {
                if (arenaSize > 0 && !arenaUnmapped && !leaked) {
                    arenaUnmapped = true;
                    Libc.munmap(arenaBase, arenaSize);
                }
            }
        }
    }

    // ---- placement in the arena (guarded by arenaLock) ----------------------------------------------------

    /** @return true if {@code [address, address + length)} lies in the arena */
    private boolean inArena(long address, long length) {
        return address >= arenaBase && length <= arenaSize && address - arenaBase <= arenaSize - length && arenaSize > 0;
    }

    /**
     * Takes {@code length} bytes of the arena, as {@code sim} takes them from its address space: at the hint
     * when it is a multiple of {@code hintAlignment} and free, else the lowest free range at {@code alignment}.
     *
     * @return the start, or 0 when the arena has no such range
     */
    private long hintOrFirstFit(long length, long alignment, long hint, long hintAlignment) {
        if (arenaSize == 0 || length > arenaSize) {
            return 0;
        }
        long at;
        if (hint % hintAlignment == 0 && inArena(hint, length) && free.isFree(hint, length)) {
            at = hint;
        } else {
            at = free.firstFit(length, alignment);
            if (at < 0) {
                return 0;
            }
        }
        free.take(at, length);
        return at;
    }

    /**
     * Makes the pages under {@code [base, base + footprint)} readable and writable and zeroes the bytes of the
     * range that lie in pages another live segment shares (their other bytes may hold old data).
     *
     * @return false if the system has no memory for it (nothing changes then)
     */
    @SuppressWarnings("restricted")
    private boolean commitSegment(long base, long footprint) {
        long end = base + footprint;
        long lo = roundDown(base, pageSize);
        long hi = roundUp(end, pageSize);
        try {
            Libc.mprotect(lo, hi - lo, Libc.PROT_READ | Libc.PROT_WRITE);
        } catch (LibcException e) {
            if (e.errno() != Libc.ENOMEM) {
                throw e;
            }
            long[] own = ownPages(base, end);
            if (own[0] < own[1]) {
                release(own[0], own[1] - own[0]);
            }
            return false;
        }
        for (long page : sharedPages(base, end)) {
            if (sharedPageUsers.merge(page, 1, Integer::sum) > 1) {
                long from = Math.max(base, page);
                long to = Math.min(end, page + pageSize);
                MemorySegment.ofAddress(from).reinterpret(to - from).fill((byte) 0);
            }
        }
        return true;
    }

    /** Gives back the pages under {@code [base, base + footprint)} that no other live segment uses. */
    private void decommitSegment(long base, long footprint) {
        long end = base + footprint;
        for (long page : sharedPages(base, end)) {
            sharedPageUsers.merge(page, -1, (a, b) -> a + b == 0 ? null : a + b);
        }
        long[] own = ownPages(base, end);
        if (own[0] < own[1]) {
            release(own[0], own[1] - own[0]);
        }
    }

    /**
     * @return {@code {lo, hi}}: the pages under {@code [base, end)} that no live segment other than the one there
     *         uses, given the current {@link #sharedPageUsers} (which must not count that segment)
     */
    private long[] ownPages(long base, long end) {
        long lo = roundDown(base, pageSize);
        long hi = roundUp(end, pageSize);
        if (lo < base && sharedPageUsers.containsKey(lo)) {
            lo += pageSize;
        }
        long last = hi - pageSize;
        if (last >= lo && end < hi && sharedPageUsers.containsKey(last)) {
            hi = last;
        }
        return new long[] {lo, Math.max(lo, hi)};
    }

    /**
     * @return the pages (by start) under {@code [base, end)} that it does not cover whole, so that other segments
     *         may use them too: none, one or two
     */
    private long[] sharedPages(long base, long end) {
        long first = roundDown(base, pageSize);
        long last = roundDown(end - 1, pageSize);
        boolean firstPartial = first < base || end < first + pageSize;
        boolean lastPartial = last != first && end < last + pageSize;
        if (firstPartial && lastPartial) {
            return new long[] {first, last};
        }
        return firstPartial ? new long[] {first} : lastPartial ? new long[] {last} : new long[0];
    }

    /** Returns the pages of {@code [address, address + size)} to the system and makes them inaccessible. */
    private static void release(long address, long size) {
        Libc.madvise(address, size, Libc.MADV_DONTNEED);
        Libc.mprotect(address, size, Libc.PROT_NONE);
    }

    /**
     * Maps {@code length} bytes outside the arena, at {@code hint} when {@code exact}.
     *
     * @return the address, or 0 if the system has no room (or, when {@code exact}, the hint was not free)
     */
    private static long mapOutside(long hint, long length, int prot, boolean exact) {
        try {
            long at = Libc.mmap(hint, length, prot, SEGMENT_FLAGS);
            if (exact && at != hint) {
                Libc.munmap(at, length);
                return 0;
            }
            return at;
        } catch (LibcException e) {
            if (e.errno() == Libc.ENOMEM) {
                return 0;
            }
            throw e;
        }
    }

    /**
     * Invalidates the views into a segment or reservation. If a native call is using one of them, closing
     * fails with {@link IllegalStateException} and the memory is deliberately left mapped (leaked) rather than
     * pulled from under that call.
     */
    private void closeScope(long base) {
        Arena scope = scopes.remove(base);
        if (scope != null) {
            try {
                scope.close();
            } catch (IllegalStateException e) {
                leaked = true;
                throw e;
            }
        }
    }

    private static long roundUp(long value, long alignment) {
        return (value + alignment - 1) / alignment * alignment;
    }

    private static long roundDown(long value, long alignment) {
        return value - value % alignment;
    }

    private static void requireLinux() {
        String os = System.getProperty("os.name", "").toLowerCase(Locale.ROOT);
        if (!os.startsWith("linux")) {
            throw new UnsupportedOperationException("the host device needs Linux (it maps memory with mmap, "
                    + "mprotect and madvise), not " + System.getProperty("os.name") + "; use a sim device, e.g. sim:"
                    + ByteSize.format(Devices.SIM_DEFAULT_CAPACITY));
        }
    }
}
