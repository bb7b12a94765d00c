package io.vram4j.device.cuda;

import io.vram4j.device.AbstractDevice;
import io.vram4j.device.DeviceUnavailableException;
import io.vram4j.device.Devices;
import io.vram4j.device.FreeRanges;
import io.vram4j.device.MemInfo;
import io.vram4j.device.Stream;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentLinkedDeque;

/**
 * A CUDA GPU's memory through the driver API: the device the caching allocator manages on a GPU, opened with
 * {@link Devices#open(String) Devices.open("cuda")} or {@code "cuda:N"}. The calls are those PyTorch's CUDA
 * caching allocator makes, through the driver:
 * <ul>
 *   <li>segments: {@code cuMemAlloc_v2} / {@code cuMemFree_v2}; the driver's out-of-memory error is reported
 *       as 0, so the allocator runs its retry sequence and throws its {@code DeviceOutOfMemoryException} with
 *       PyTorch's text. Opened with {@link CudaSegments#LOWEST_ADDRESS_FIRST}, segments are placed as
 *       {@code sim} places them instead, in an address range reserved up front, each backed by a physical
 *       allocation of its own ({@code cuMemCreate}; see {@link CudaSegments});</li>
 *   <li>{@link #memGetInfo()}: {@code cuMemGetInfo_v2}, the GPU's real free and total bytes (other processes
 *       and the context's own memory included); {@link #totalMemory()}: {@code cuDeviceTotalMem_v2};</li>
 *   <li>expandable segments: {@code cuMemAddressReserve} / {@code cuMemAddressFree} for reservations, and per
 *       {@link #map} call one physical allocation ({@code cuMemCreate}, pinned memory on this device) mapped
 *       with {@code cuMemMap} and made read-write with {@code cuMemSetAccess}; {@link #unmap} undoes whole
 *       mappings ({@code cuMemUnmap}, {@code cuMemRelease}) and refuses to split one (the driver cannot);</li>
 *   <li>streams: the default stream is the legacy default stream (handle 0, as PyTorch's default stream);
 *       {@link #newStream()} creates a non-blocking stream ({@code cuStreamCreate(CU_STREAM_NON_BLOCKING)},
 *       as PyTorch's side streams) whose handle is the {@code CUstream} value; events are CUDA events with
 *       timing disabled, pooled per device;</li>
 *   <li>copies between host memory and device memory, synchronous and asynchronous on a stream, and fills.</li>
 * </ul>
 * Device memory cannot be viewed from the host: {@link #hasStorage()} is false and {@link #segment} throws;
 * use the copies.
 *
 * <p>Every call runs in the device's primary context, made current on the calling thread first. Driver errors
 * other than lack of memory raise {@link CudaException} naming the call and its arguments.
 *
 * <p>Thread-safe. {@link #close()} frees what the device still holds, destroys its streams and events and
 * releases the primary context.
 */
public final class CudaDevice extends AbstractDevice {
    private final CudaContext context;
    private final boolean vmmSupported;
    private final long vmmGranularity;
    private final ConcurrentLinkedDeque<Long> eventPool = new ConcurrentLinkedDeque<>();
    private final List<Long> createdStreams = new ArrayList<>(); // guarded by itself
    /** Mapped ranges of reservations: start to {size, allocation handle}. Guarded by itself. */
    private final TreeMap<Long, long[]> mappings = new TreeMap<>();
    private final java.util.concurrent.atomic.AtomicBoolean closed = new java.util.concurrent.atomic.AtomicBoolean();
    private io.vram4j.alloc.CachingHostAllocator hostAllocator; // made on first use; guarded by hostAllocatorLock
    private final Object hostAllocatorLock = new Object();
    /** The reserved range segments are placed in ({@link CudaSegments#LOWEST_ADDRESS_FIRST}); 0 when none. */
    private final long arenaBase;
    private final long arenaSize;
    /** The free ranges of the arena, placed as {@code sim} places them. Guarded by itself. */
    private final FreeRanges arenaFree = new FreeRanges(MIN_ALIGNMENT, GRANULARITY);

    private CudaDevice(int ordinal, long capacity, String description, CudaContext context, boolean vmmSupported,
            long vmmGranularity, long arenaBase, long arenaSize) {
        super("cuda", ordinal, capacity, description);
        this.context = context;
        this.vmmSupported = vmmSupported;
        this.vmmGranularity = vmmGranularity;
        this.arenaBase = arenaBase;
        this.arenaSize = arenaSize;
        if (arenaBase != 0) {
            arenaFree.give(arenaBase, arenaSize);
        }
    }

    /**
     * Opens CUDA device {@code ordinal} of this machine's driver.
     *
     * @param ordinal the device ordinal, 0 for the first GPU
     * @return the open device; the caller closes it
     * @throws DeviceUnavailableException without a driver ("no CUDA driver: libcuda.so.1 not found"), without a
     *     device ("no CUDA device"), or for an ordinal past the last device
     * @throws CudaException if the driver fails otherwise
     */
    public static CudaDevice open(int ordinal) {
        return open(CudaDriver.system(), ordinal, CudaSegments.DRIVER);
    }

    /**
     * Opens CUDA device {@code ordinal} of this machine's driver, placing segments by {@code segments}.
     *
     * @param ordinal the device ordinal, 0 for the first GPU
     * @param segments where segments go; {@link CudaSegments#LOWEST_ADDRESS_FIRST} falls back to
     *     {@link CudaSegments#DRIVER} on a GPU without virtual memory management ({@link #segments()})
     * @return the open device; the caller closes it
     * @throws DeviceUnavailableException as {@link #open(int)}
     * @throws CudaException if the driver fails otherwise
     */
    public static CudaDevice open(int ordinal, CudaSegments segments) {
        return open(CudaDriver.system(), ordinal, segments);
    }

    /**
     * Describes every CUDA device of this machine's driver.
     *
     * @return one entry per device, by ordinal; empty when the driver reports no device
     * @throws DeviceUnavailableException without a CUDA driver
     * @throws CudaException if the driver fails otherwise
     */
    public static java.util.List<CudaDeviceInfo> list() {
        return list(CudaDriver.system());
    }

    /**
     * Opens CUDA device {@code ordinal} of a driver library other than this machine's default: a driver installed
     * in an unusual place, or a stand-in driver in tests. The library is loaded for the life of the process.
     *
     * @param driverLibrary a path or soname of a library with the CUDA driver API (as {@code libcuda.so.1})
     * @param ordinal the device ordinal
     * @return the open device; the caller closes it
     * @throws DeviceUnavailableException when the library cannot be loaded, lacks an entry point, or has no such
     *     device (one line each, as {@link #open(int)})
     * @throws CudaException if the driver fails otherwise
     */
    public static CudaDevice open(String driverLibrary, int ordinal) {
        return open(CudaDriver.load(driverLibrary), ordinal, CudaSegments.DRIVER);
    }

    /**
     * {@link #open(String, int)} placing segments by {@code segments} (see {@link #open(int, CudaSegments)}).
     *
     * @param driverLibrary a path or soname of a library with the CUDA driver API
     * @param ordinal the device ordinal
     * @param segments where segments go
     * @return the open device; the caller closes it
     */
    public static CudaDevice open(String driverLibrary, int ordinal, CudaSegments segments) {
        return open(CudaDriver.load(driverLibrary), ordinal, segments);
    }

    static java.util.List<CudaDeviceInfo> list(CudaDriver driver) {
        java.util.List<CudaDeviceInfo> out = new ArrayList<>();
        int count = driver.deviceCount();
        int version = count == 0 ? 0 : driver.driverVersion();
        for (int i = 0; i < count; i++) {
            int dev = driver.device(i);
            CudaContext ctx = CudaContext.retain(driver, dev);
            try {
                long free = ctx.current().memGetInfo()[0];
                out.add(new CudaDeviceInfo(i, driver.deviceName(dev),
                        driver.attribute(CudaDriver.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev),
                        driver.attribute(CudaDriver.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev),
                        driver.deviceTotalMem(dev), free, version,
                        driver.attribute(CudaDriver.CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, dev) != 0));
            } finally {
                ctx.release();
            }
        }
        return out;
    }

    static CudaDevice open(CudaDriver driver, int ordinal) {
        return open(driver, ordinal, CudaSegments.DRIVER);
    }

    static CudaDevice open(CudaDriver driver, int ordinal, CudaSegments segments) {
        int count = driver.deviceCount();
        if (count == 0) {
            throw new DeviceUnavailableException("no CUDA device: the driver (" + driver.library()
                    + ") reports none" + (driver.initResult() == CudaDriver.CUDA_SUCCESS ? ""
                    : " (cuInit: " + driver.errorName(driver.initResult()) + ")"));
        }
        if (ordinal < 0 || ordinal >= count) {
            throw new DeviceUnavailableException("no CUDA device cuda:" + ordinal + ": this machine has " + count
                    + (count == 1 ? " (cuda:0)" : " (cuda:0 to cuda:" + (count - 1) + ")"));
        }
        int dev = driver.device(ordinal);
        long total = driver.deviceTotalMem(dev);
        boolean vmm = driver.attribute(CudaDriver.CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, dev) != 0;
        CudaContext ctx = CudaContext.retain(driver, dev);
        try {
            long granularity = vmm ? ctx.current().memGetAllocationGranularity(dev,
                    CudaDriver.CU_MEM_ALLOC_GRANULARITY_MINIMUM) : 0;
            long[] arena = segments == CudaSegments.LOWEST_ADDRESS_FIRST && vmm && GRANULARITY % granularity == 0
                    ? reserveArena(ctx.current(), total) : new long[2];
            return new CudaDevice(ordinal, total, "cuda:" + ordinal, ctx, vmm, granularity, arena[0], arena[1]);
        } catch (RuntimeException e) {
            ctx.release();
            throw e;
        }
    }

    /**
     * The arena of {@link CudaSegments#LOWEST_ADDRESS_FIRST}: {@link #ARENA_CAPACITY_MULTIPLE} times the GPU's
     * memory and 1 GiB more of address space (as {@code host} reserves its arena), halved until the driver grants
     * it; address space only, no memory.
     *
     * @return {base, size}, or {0, 0} when none was granted
     */
    private static long[] reserveArena(CudaDriver driver, long total) {
        long size = (total * ARENA_CAPACITY_MULTIPLE + (1L << 30) + GRANULARITY - 1) / GRANULARITY * GRANULARITY;
        while (size >= GRANULARITY) {
            long base = driver.memAddressReserve(size, GRANULARITY, 0);
            if (base != 0) {
                return new long[] {base, size};
            }
            size = size / 2 / GRANULARITY * GRANULARITY;
        }
        return new long[2];
    }

    /** The native buffer a synchronous copy from or to a heap segment goes through, at most: 16 MiB. */
    static final long STAGING_BYTES = 16L << 20;

    /** How many times the GPU's memory the arena of {@link CudaSegments#LOWEST_ADDRESS_FIRST} spans. */
    static final long ARENA_CAPACITY_MULTIPLE = 16;

    /**
     * @return where this device places segments: {@link CudaSegments#LOWEST_ADDRESS_FIRST} when it was asked for and
     *     the GPU's virtual memory management allowed it, else {@link CudaSegments#DRIVER}
     */
    public CudaSegments segments() {
        return arenaBase != 0 ? CudaSegments.LOWEST_ADDRESS_FIRST : CudaSegments.DRIVER;
    }

    /** @return the start of the address range segments are placed in (a multiple of 2 MiB), 0 without one */
    public long arenaBase() {
        return arenaBase;
    }

    /** @return false: device memory cannot be viewed from the host; use {@link #copyFromHost} and friends */
    @Override
    public boolean hasStorage() {
        return false;
    }

    /** @return true: blocks are GPU memory, reached only through the copy calls */
    @Override
    public boolean hasDeviceMemory() {
        return true;
    }

    /**
     * Always fails: GPU memory is not host memory.
     *
     * @throws UnsupportedOperationException always
     */
    @Override
    public MemorySegment segment(long address, long size) {
        throw new UnsupportedOperationException("cuda memory cannot be viewed from the host; copy it with "
                + "copyToHost / copyFromHost");
    }

    /** @return the GPU's free and total bytes from the driver ({@code cuMemGetInfo_v2}) */
    @Override
    public MemInfo memGetInfo() {
        long[] info = context.current().memGetInfo();
        return new MemInfo(info[0], info[1]);
    }

    /** @return true when the GPU supports the virtual memory management that expandable segments use */
    public boolean supportsVirtualMemory() {
        return vmmSupported;
    }

    /** Waits for all work queued on this GPU by this process ({@code cuCtxSynchronize}), then for every stream. */
    @Override
    public void synchronize() {
        context.current().ctxSynchronize();
        super.synchronize();
    }

    // ---- copies ------------------------------------------------------------------------------------------

    /**
     * {@inheritDoc} Here {@code cuMemcpyHtoD_v2}. A heap segment (an array's), which the driver cannot be handed,
     * goes through native memory in pieces of {@value #STAGING_BYTES} bytes.
     */
    @Override
    public void copyFromHost(MemorySegment src, long dst) {
        checkRange(dst, src.byteSize());
        staged(src, dst, true);
    }

    /**
     * {@inheritDoc} Here {@code cuMemcpyDtoH_v2}. A heap segment goes through native memory as in
     * {@link #copyFromHost}.
     */
    @Override
    public void copyToHost(long src, MemorySegment dst) {
        checkRange(src, dst.byteSize());
        staged(dst, src, false);
    }

    /** A synchronous copy between {@code host} and device memory at {@code device}, staged when host is on the heap. */
    private void staged(MemorySegment host, long device, boolean toDevice) {
        CudaDriver ctx = context.current();
        if (host.isNative()) {
            if (toDevice) {
                ctx.memcpyHtoD(device, host, host.byteSize());
            } else {
                ctx.memcpyDtoH(host, device, host.byteSize());
            }
            return;
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment staging = arena.allocate(Math.min(host.byteSize(), STAGING_BYTES), 16);
            for (long done = 0; done < host.byteSize(); done += staging.byteSize()) {
                long n = Math.min(staging.byteSize(), host.byteSize() - done);
                if (toDevice) {
                    MemorySegment.copy(host, done, staging, 0, n);
                    ctx.memcpyHtoD(device + done, staging, n);
                } else {
                    ctx.memcpyDtoH(staging, device + done, n);
                    MemorySegment.copy(staging, 0, host, done, n);
                }
            }
        }
    }

    /** {@inheritDoc} Here {@code cuMemsetD8_v2}. */
    @Override
    public void fill(long dst, long size, byte value) {
        checkRange(dst, size);
        context.current().memsetD8(dst, value, size);
    }

    /**
     * Copies device memory to device memory ({@code cuMemcpyDtoD_v2}), synchronously.
     *
     * @param src start of the source range, inside a live segment or mapped range
     * @param dst start of the destination range, likewise
     * @param size bytes, not negative
     * @throws IllegalArgumentException if a range is not inside device memory of this device
     */
    @Override
    public void copyDeviceToDevice(long src, long dst, long size) {
        checkRange(src, size);
        checkRange(dst, size);
        context.current().memcpyDtoD(dst, src, size);
    }

    /**
     * Queues a copy from host memory on a stream ({@code cuMemcpyHtoDAsync_v2}), with {@code non_blocking}
     * semantics: from page-locked memory it overlaps other work; {@code src} must stay valid and unchanged
     * until the stream has passed the copy (record an event and query it, or synchronize).
     *
     * @param src host memory
     * @param dst start of the destination range
     * @param stream a stream of this device
     * @throws IllegalArgumentException if the range is not inside device memory or the stream is another device's
     */
    public void copyFromHostAsync(MemorySegment src, long dst, Stream stream) {
        checkRange(dst, src.byteSize());
        context.current().memcpyHtoDAsync(dst, src, src.byteSize(), handleOf(stream));
    }

    /**
     * Queues a copy to host memory on a stream ({@code cuMemcpyDtoHAsync_v2}); {@code dst} holds the bytes once
     * the stream has passed the copy.
     *
     * @param src start of the source range
     * @param dst host memory
     * @param stream a stream of this device
     * @throws IllegalArgumentException if the range is not inside device memory or the stream is another device's
     */
    public void copyToHostAsync(long src, MemorySegment dst, Stream stream) {
        checkRange(src, dst.byteSize());
        context.current().memcpyDtoHAsync(dst, src, dst.byteSize(), handleOf(stream));
    }

    /**
     * Queues a device-to-device copy on a stream ({@code cuMemcpyDtoDAsync_v2}).
     *
     * @param src start of the source range
     * @param dst start of the destination range
     * @param size bytes
     * @param stream a stream of this device
     * @throws IllegalArgumentException if a range is not inside device memory or the stream is another device's
     */
    public void copyDeviceToDeviceAsync(long src, long dst, long size, Stream stream) {
        checkRange(src, size);
        checkRange(dst, size);
        context.current().memcpyDtoDAsync(dst, src, size, handleOf(stream));
    }

    /**
     * Queues a fill on a stream ({@code cuMemsetD8Async}).
     *
     * @param dst start of the range
     * @param size bytes
     * @param value the byte written
     * @param stream a stream of this device
     * @throws IllegalArgumentException if the range is not inside device memory or the stream is another device's
     */
    public void fillAsync(long dst, long size, byte value, Stream stream) {
        checkRange(dst, size);
        context.current().memsetD8Async(dst, value, size, handleOf(stream));
    }

    /**
     * @return a timer of GPU time on this device's streams (two events created with timing)
     * @throws IllegalStateException if the device is closed
     */
    public GpuTimer newTimer() {
        checkOpen();
        CudaDriver d = context.current();
        long start = d.eventCreate(0);
        try {
            return new GpuTimer(this, start, d.eventCreate(0));
        } catch (RuntimeException e) {
            d.eventDestroy(start);
            throw e;
        }
    }

    void recordTimingEvent(long event, Stream stream) {
        context.current().eventRecord(event, handleOf(stream));
    }

    float elapsedMs(long start, long end) {
        CudaDriver d = context.current();
        d.eventSynchronize(end);
        return d.eventElapsedMs(start, end);
    }

    void destroyTimingEvents(long start, long end) {
        CudaDriver d = context.current();
        try {
            d.eventDestroy(start);
        } finally {
            d.eventDestroy(end);
        }
    }

    /**
     * Page-locked host memory of this device's context ({@code cuMemHostAlloc} with default flags, as PyTorch's
     * {@code cudaHostAlloc}; {@code cuMemFreeHost}), for a {@link io.vram4j.alloc.CachingHostAllocator}: copies
     * from it with {@link #copyFromHostAsync} overlap other work.
     *
     * @return the source; usable until the device is closed
     */
    public io.vram4j.alloc.HostMemorySource pinnedMemory() {
        return new io.vram4j.alloc.HostMemorySource() {
            @Override
            public MemorySegment allocate(long size) {
                checkOpen();
                return context.current().memHostAlloc(size, CudaDriver.CU_MEMHOSTALLOC_DEFAULT);
            }

            @Override
            public void free(MemorySegment memory) {
                context.current().memFreeHost(memory);
            }

            @Override
            public String name() {
                return "cuMemHostAlloc";
            }
        };
    }

    /**
     * This device's caching allocator of page-locked host memory, over {@link #pinnedMemory()}: what
     * {@code DataLoader(pin_memory=True)} and {@code tensor.pin_memory()} take their blocks from in PyTorch
     * (its {@code getCachingHostAllocator()}, one per process there, one per open device here). Made on first
     * call; {@link #close()} closes it (waiting for the copies still reading its blocks) before the context goes.
     *
     * @return the allocator, the same on every call
     * @throws IllegalStateException after {@link #close()}
     */
    public io.vram4j.alloc.CachingHostAllocator hostAllocator() {
        synchronized (hostAllocatorLock) {
            if (closed.get()) {
                throw new IllegalStateException(description() + " is closed");
            }
            if (hostAllocator == null) {
                hostAllocator = io.vram4j.alloc.CachingHostAllocator.create(pinnedMemory());
            }
            return hostAllocator;
        }
    }

    // ---- streams -----------------------------------------------------------------------------------------

    @Override
    protected Stream createStream() {
        checkOpen();
        long handle = context.current().streamCreate(CudaDriver.CU_STREAM_NON_BLOCKING);
        synchronized (createdStreams) {
            createdStreams.add(handle);
        }
        return new Stream(index(), handle, new CudaStreamQueue(context, handle, eventPool));
    }

    /**
     * @param handle 0 for the legacy default stream; other handles are only known once {@link #newStream()}
     *     made them
     * @throws IllegalArgumentException for any other handle
     */
    @Override
    protected Stream adoptStream(long handle) {
        if (handle != 0) {
            throw new IllegalArgumentException(description() + " has no stream with handle 0x"
                    + Long.toHexString(handle) + " (streams of a cuda device come from newStream())");
        }
        return new Stream(index(), 0, new CudaStreamQueue(context, 0, eventPool));
    }

    // ---- AbstractDevice hooks ----------------------------------------------------------------------------

    /**
     * {@code cuMemAlloc_v2}; with {@link CudaSegments#LOWEST_ADDRESS_FIRST} a segment whose size is a multiple of
     * 2 MiB (every segment of the caching allocator) takes the arena's lowest free range instead, or the range at
     * {@code addressHint} when that lies in the arena, 2 MiB aligned and free, as {@code sim} honours hints, and is
     * backed by physical memory of its own; {@code cuMemAlloc_v2} again only when the arena is full.
     */
    @Override
    protected long allocateSegment(long size, long addressHint) {
        if (arenaBase != 0 && size % GRANULARITY == 0) {
            long base;
            synchronized (arenaFree) {
                base = addressHint % GRANULARITY == 0 && inArena(addressHint, size) && arenaFree.isFree(addressHint, size)
                        ? addressHint : arenaFree.firstFit(size, GRANULARITY);
                if (base > 0) {
                    arenaFree.take(base, size);
                }
            }
            if (base > 0) {
                boolean committed = false;
                try {
                    committed = commit(base, size);
                } finally {
                    if (!committed) {
                        synchronized (arenaFree) {
                            arenaFree.give(base, size);
                        }
                    }
                }
                return committed ? base : 0;
            }
        }
        return context.current().memAlloc(size);
    }

    @Override
    protected void releaseSegment(long base, long size) {
        if (inArena(base, size)) {
            decommit(base, size);
            synchronized (arenaFree) {
                arenaFree.give(base, size);
            }
            return;
        }
        context.current().memFree(base);
    }

    private boolean inArena(long address, long size) {
        return arenaBase != 0 && address >= arenaBase && size <= arenaSize && address - arenaBase <= arenaSize - size;
    }

    /**
     * @throws UnsupportedOperationException if the GPU lacks virtual memory management or its granularity does
     *     not divide 2 MiB
     */
    @Override
    protected long allocateReservation(long size, long addressHint) {
        if (!vmmSupported) {
            throw new UnsupportedOperationException(description() + " does not support virtual memory management "
                    + "(CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED is 0): expandable_segments cannot be used");
        }
        if (GRANULARITY % vmmGranularity != 0) {
            throw new UnsupportedOperationException(description() + ": the allocation granularity "
                    + vmmGranularity + " does not divide 2 MiB; expandable_segments cannot be used");
        }
        return context.current().memAddressReserve(size, GRANULARITY, addressHint);
    }

    /** Unmaps and releases what is still mapped in the range (only on {@link #close()}), then frees it. */
    @Override
    protected void releaseReservation(long base, long size) {
        CudaDriver driver = context.current();
        synchronized (mappings) {
            Map<Long, long[]> inside = mappings.subMap(base, base + size);
            for (Map.Entry<Long, long[]> m : inside.entrySet()) {
                driver.memUnmap(m.getKey(), m.getValue()[0]);
                driver.memRelease(m.getValue()[1]);
            }
            inside.clear();
        }
        driver.memAddressFree(base, size);
    }

    @Override
    protected boolean commit(long address, long size) {
        CudaDriver driver = context.current();
        OptionalLong handle = driver.memCreate(size, context.device());
        if (handle.isEmpty()) {
            return false;
        }
        boolean mapped = false;
        try {
            driver.memMap(address, size, handle.getAsLong());
            mapped = true;
            driver.memSetAccess(address, size, context.device());
        } catch (RuntimeException e) {
            if (mapped) {
                driver.memUnmap(address, size);
            }
            driver.memRelease(handle.getAsLong());
            throw e;
        }
        synchronized (mappings) {
            mappings.put(address, new long[] {size, handle.getAsLong()});
        }
        return true;
    }

    /**
     * @throws IllegalArgumentException if the range would split a mapping made by one {@link #map} call (the
     *     driver unmaps whole mappings only); nothing is unmapped then
     */
    @Override
    protected void decommit(long address, long size) {
        CudaDriver driver = context.current();
        synchronized (mappings) {
            long end = address + size;
            Map.Entry<Long, long[]> before = mappings.lowerEntry(address);
            if (before != null && before.getKey() + before.getValue()[0] > address) {
                throw splitError(address, size, before);
            }
            Map.Entry<Long, long[]> last = mappings.lowerEntry(end);
            if (last != null && last.getKey() >= address && last.getKey() + last.getValue()[0] > end) {
                throw splitError(address, size, last);
            }
            Map<Long, long[]> inside = mappings.subMap(address, end);
            for (Map.Entry<Long, long[]> m : inside.entrySet()) {
                driver.memUnmap(m.getKey(), m.getValue()[0]);
                driver.memRelease(m.getValue()[1]);
            }
            inside.clear();
        }
    }

    /** Frees what the device holds, then destroys its streams and pooled events and releases the context. */
    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        RuntimeException failure = null;
        synchronized (hostAllocatorLock) {
            try {
                if (hostAllocator != null) {
                    hostAllocator.close();
                }
            } catch (RuntimeException e) {
                failure = e;
            }
        }
        try {
            super.close();
        } catch (RuntimeException e) {
            failure = e;
        }
        try {
            CudaDriver driver = context.current();
            driver.ctxSynchronize();
            synchronized (createdStreams) {
                for (long s : createdStreams) {
                    driver.streamDestroy(s);
                }
                createdStreams.clear();
            }
            for (Long e = eventPool.pollFirst(); e != null; e = eventPool.pollFirst()) {
                driver.eventDestroy(e);
            }
            if (arenaBase != 0) {
                driver.memAddressFree(arenaBase, arenaSize);
            }
            context.release();
        } catch (RuntimeException e) {
            if (failure == null) {
                failure = e;
            } else {
                failure.addSuppressed(e);
            }
        }
        if (failure != null) {
            throw failure;
        }
    }

    // ---- internals ---------------------------------------------------------------------------------------

    private void checkRange(long address, long size) {
        resolve(address, size, (base, inReservation) -> null);
    }

    /** @return the GPU's compute capability as {major, minor}, e.g. {9, 0} for an H100 ({@code cuDeviceGetAttribute}) */
    public int[] computeCapability() {
        checkOpen();
        CudaDriver d = context.current();
        return new int[] {d.attribute(CudaDriver.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, context.device()),
                d.attribute(CudaDriver.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, context.device())};
    }

    /**
     * Loads a module of kernels into this device's primary context ({@code cuModuleLoadData}).
     *
     * @param image PTX text (the driver JIT-compiles it for this GPU) or a cubin
     * @return the module; close it to unload it
     * @throws io.vram4j.device.DeviceUnavailableException in one line naming the driver version when the driver is
     *     too old for the PTX ({@code CUDA_ERROR_UNSUPPORTED_PTX_VERSION})
     * @throws CudaException for other driver errors
     */
    public CudaModule loadModule(byte[] image) {
        checkOpen();
        return CudaModule.load(this, context, image);
    }

    /** {@code cuLaunchKernel} on a stream of this device. */
    void launch(long function, int gridX, int gridY, int blockX, int sharedBytes, Stream stream, KernelArgs args) {
        checkOpen();
        long s = handleOf(stream);
        context.current().launchKernel(function, gridX, gridY, blockX, sharedBytes, s, LaunchParams.of(args));
    }

    private long handleOf(Stream stream) {
        if (stream.deviceIndex() != index() || stream(stream.handle()) != stream) {
            throw new IllegalArgumentException(stream + " is not a stream of " + description());
        }
        return stream.handle();
    }

    private IllegalArgumentException splitError(long address, long size, Map.Entry<Long, long[]> mapping) {
        return new IllegalArgumentException("unmap(" + hex(address) + ", " + size + ") would split the mapping at "
                + hex(mapping.getKey()) + " (" + mapping.getValue()[0] + " bytes); the driver unmaps whole mappings");
    }
}
