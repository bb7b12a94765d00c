package io.vram4j.device.host;

import io.vram4j.device.AbstractDevice;
import io.vram4j.device.ByteSize;
import io.vram4j.device.Devices;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.management.ManagementFactory;
import java.lang.management.OperatingSystemMXBean;
import java.util.Locale;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;

/**
 * A device whose memory is real off-heap memory of this process, obtained from the kernel through the
 * Foreign Function &amp; Memory API, with a capacity that behaves like a GPU's. Linux only. Usually opened
 * with {@link Devices#open(String) Devices.open("host")} or {@code "host:8GiB"}.
 *
 * <ul>
 *   <li>{@link #malloc} maps fresh anonymous private memory ({@code mmap} with {@code MAP_NORESERVE}), so a
 *       segment is page-aligned (hence 512-byte aligned), reads as zero, and takes physical memory only
 *       where it is written. A page-aligned address hint is passed on to {@code mmap}, which uses it when the
 *       range is free. {@link #free} unmaps it.</li>
 *   <li>Expandable segments use real virtual memory: {@link #reserveAddressRange} maps an inaccessible
 *       ({@code PROT_NONE}) range aligned to 2 MiB; {@link #map} makes part of it readable and writable
 *       ({@code mprotect}); {@link #unmap} gives the pages back ({@code madvise(MADV_DONTNEED)}) and makes them
 *       inaccessible again, so a later {@link #map} of the same range reads zeros;
 *       {@link #releaseAddressRange} unmaps the range.</li>
 *   <li>{@link #segment} returns a view of a live segment or of a mapped range. A view of a {@link #malloc}
 *       segment is invalidated by {@link #free} (accessing it then throws {@link IllegalStateException}); a
 *       view into a reservation is invalidated by {@link #releaseAddressRange}. Accessing a view over pages
 *       that have since been {@linkplain #unmap unmapped} is, as on a GPU, an illegal memory access: here it
 *       kills the JVM with a segmentation fault.</li>
 * </ul>
 * The capacity is accounted as in {@link AbstractDevice}, with the sizes asked for (the kernel rounds
 * segments up to whole pages). Failures of the system calls raise {@link IllegalStateException} naming the
 * call and its {@code errno}, except {@code ENOMEM}, which is reported as lack of memory (0 or false).
 *
 * <p>Thread-safe.
 */
public final class HostDevice extends AbstractDevice {
    /** The share of the physical memory a plain {@code host} device gets: one half. */
    public static final double DEFAULT_CAPACITY_FRACTION = 0.5;

    private static final int SEGMENT_FLAGS = Libc.MAP_PRIVATE | Libc.MAP_ANONYMOUS | Libc.MAP_NORESERVE;

    private final long pageSize;
    /** Base of each live segment and reservation to the arena that scopes the views into it. */
    private final ConcurrentMap<Long, Arena> arenas = new ConcurrentHashMap<>();

    /**
     * @param index the device index
     * @param capacity the capacity in bytes, in {@code (0, MAX_CAPACITY]}
     * @param description a short description, e.g. {@code "host:8GiB"}
     * @throws UnsupportedOperationException when not running on Linux
     * @throws IllegalArgumentException if the index or capacity is out of range
     */
    public HostDevice(int index, long capacity, String description) {
        requireLinux();
        super("host", index, capacity, description);
        this.pageSize = Libc.pageSize();
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
            Arena scope = arenas.get(base);
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
        long length = roundUp(size, pageSize);
        long hint = addressHint > 0 && addressHint % pageSize == 0 ? addressHint : 0;
        long base;
        try {
            base = Libc.mmap(hint, length, Libc.PROT_READ | Libc.PROT_WRITE, SEGMENT_FLAGS);
        } catch (LibcException e) {
            if (e.errno() == Libc.ENOMEM) {
                return 0;
            }
            throw e;
        }
        arenas.put(base, Arena.ofShared());
        return base;
    }

    @Override
    protected void releaseSegment(long base, long size) {
        closeScope(base);
        Libc.munmap(base, roundUp(size, pageSize));
    }

    @Override
    protected long allocateReservation(long size, long addressHint) {
        if (size > Long.MAX_VALUE - GRANULARITY) {
            return 0;
        }
        try {
            long base = 0;
            if (addressHint > 0 && addressHint % GRANULARITY == 0) {
                long at = Libc.mmap(addressHint, size, Libc.PROT_NONE, SEGMENT_FLAGS);
                if (at == addressHint) {
                    base = at;
                } else {
                    Libc.munmap(at, size);
                }
            }
            if (base == 0) {
                base = reserveAligned(size);
            }
            arenas.put(base, Arena.ofShared());
            return base;
        } catch (LibcException e) {
            if (e.errno() == Libc.ENOMEM) {
                return 0;
            }
            throw e;
        }
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
        Libc.munmap(base, size);
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
        Libc.madvise(address, size, Libc.MADV_DONTNEED);
        Libc.mprotect(address, size, Libc.PROT_NONE);
    }

    /**
     * Invalidates the views into a segment or reservation. If a native call is using one of them, closing
     * fails with {@link IllegalStateException} and the memory is deliberately left mapped (leaked) rather than
     * pulled from under that call.
     */
    private void closeScope(long base) {
        Arena scope = arenas.remove(base);
        if (scope != null) {
            scope.close();
        }
    }

    private static long roundUp(long value, long alignment) {
        return (value + alignment - 1) / alignment * alignment;
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
