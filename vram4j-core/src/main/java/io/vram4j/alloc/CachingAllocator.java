package io.vram4j.alloc;

import io.vram4j.alloc.config.AllocatorConfig;
import io.vram4j.device.DeviceBackend;
import io.vram4j.device.MemInfo;
import io.vram4j.device.Stream;
import io.vram4j.memory.snapshot.SegmentInfo;
import io.vram4j.memory.stats.FormatSize;
import io.vram4j.memory.stats.MemoryStats;
import io.vram4j.memory.stats.MemorySummary;

import java.lang.foreign.MemorySegment;
import java.util.List;

/**
 * A caching allocator for one device that behaves as PyTorch's CUDA caching allocator: the same rounding,
 * pools, segment sizes, best-fit search, splitting and merging, {@code max_split_size_mb},
 * {@code roundup_power2_divisions}, {@code garbage_collection_threshold}, expandable segments, memory
 * fraction, out-of-memory retry sequence and statistics (see {@code shared/spec/pytorch-allocator-spec.md}).
 *
 * <pre>{@code
 * try (DeviceBackend device = Devices.open("host:4GiB");
 *      CachingAllocator alloc = CachingAllocator.create(device)) {
 *     long ptr = alloc.malloc(1 << 20);                 // 1 MiB from the small pool
 *     MemorySegment bytes = alloc.segment(ptr);          // real off-heap memory on "host"
 *     alloc.free(ptr);                                    // cached, not returned to the device
 *     System.out.print(alloc.memorySummary());
 * }
 * }</pre>
 *
 * <p>Addresses are {@code long}s ("pointers") on the device; sizes are bytes. All methods are thread-safe
 * (one lock per device). Refused calls throw and leave the allocator's state unchanged. After
 * {@link #close()} every method throws {@link IllegalStateException} ("the caching allocator of ... is
 * closed"); {@code close} may race with other threads' calls: the closed state is decided under the device
 * lock, so no call that starts after it gets a segment or puts a block back into the cache.
 */
public final class CachingAllocator implements AutoCloseable {
    private final DeviceCachingAllocator engine;
    private volatile boolean closed;

    private CachingAllocator(DeviceCachingAllocator engine) {
        this.engine = engine;
    }

    /**
     * Creates an allocator configured from {@code VRAM4J_ALLOC_CONF}, or {@code PYTORCH_CUDA_ALLOC_CONF} when
     * ours is unset.
     *
     * @param device the device to allocate on; the allocator does not close it
     * @return a new allocator
     * @throws io.vram4j.alloc.config.AllocatorConfigException when the variable holds an invalid string
     */
    public static CachingAllocator create(DeviceBackend device) {
        return create(device, AllocatorConfig.fromEnvironment(System.getenv()));
    }

    /**
     * @param device the device to allocate on; the allocator does not close it
     * @param config the settings; {@code max_split_size} is also captured for the {@code max_split_size} stat
     * @return a new allocator
     */
    public static CachingAllocator create(DeviceBackend device, AllocatorConfig config) {
        CachingAllocator a = new CachingAllocator(new DeviceCachingAllocator(device, config));
        if (!Double.isNaN(config.perProcessMemoryFraction())) {
            a.setPerProcessMemoryFraction(config.perProcessMemoryFraction()); // the config key applies it at init
        }
        return a;
    }

    /** @return the device this allocator serves */
    public DeviceBackend device() {
        return engine.device();
    }

    /**
     * Allocates on the device's default stream.
     *
     * @param size bytes; 0 returns the null address 0 and changes nothing
     * @return the block's address
     * @throws IllegalArgumentException for a negative size
     * @throws DeviceOutOfMemoryException when the device has no room, or for sizes of 2^60 bytes and more
     */
    public long malloc(long size) {
        return malloc(size, engine.device().defaultStream());
    }

    /**
     * Allocates a block for use on {@code stream} (as {@code caching_allocator_alloc}). Blocks freed on one
     * stream are only reused by that stream.
     *
     * @param size bytes; 0 returns the null address 0 and changes nothing
     * @param stream the allocation stream, of this allocator's device
     * @return the block's address, aligned to 512 bytes
     * @throws IllegalArgumentException for a negative size or a stream of another device
     * @throws DeviceOutOfMemoryException when the device has no room, or for sizes of 2^60 bytes and more
     */
    public long malloc(long size, Stream stream) {
        HistoryRecorder h = engine.history();
        return mallocBlock(size, stream, h != null && h.captureAtAlloc() ? StackCapture.capture() : null);
    }

    long mallocBlock(long size, Stream stream, Object context) {
        ensureOpen();
        if (size < 0) {
            throw new IllegalArgumentException("malloc: size must be >= 0 bytes, got " + size);
        }
        if (stream.deviceIndex() != engine.device().index()) {
            throw new IllegalArgumentException("malloc: " + stream + " belongs to device " + stream.deviceIndex()
                    + ", not to device " + engine.device().index());
        }
        if (size == 0) {
            return 0;
        }
        if (size >= SizeRules.ONE_EXBIBYTE) {
            throw new DeviceOutOfMemoryException(DeviceOutOfMemoryException.headline(engine.device().type())
                    + " Tried to allocate more than 1EB memory.", engine.device().index(), size, size);
        }
        return engine.malloc(size, stream, context).ptr;
    }

    /**
     * Frees a block (as {@code caching_allocator_delete}). The memory stays cached for reuse; it goes back to
     * the device only through {@link #emptyCache()}, the out-of-memory path or garbage collection. A block
     * used on other streams ({@link #recordStream}) is reused only after those streams pass this point.
     *
     * @param ptr an address returned by {@link #malloc}; 0 is ignored
     * @throws IllegalArgumentException when {@code ptr} is not a live allocation (unknown or already freed)
     */
    public void free(long ptr) {
        ensureOpen();
        if (ptr == 0) {
            return;
        }
        HistoryRecorder h = engine.history();
        if (engine.free(ptr, h != null && h.captureAtFree() ? StackCapture.capture() : null) == null) {
            throw new IllegalArgumentException("invalid device pointer: 0x" + Long.toHexString(ptr)
                    + " (not allocated by this allocator, or already freed)");
        }
    }

    /**
     * Declares that the block at {@code ptr} is used on {@code stream} too (as {@code record_stream}): when it
     * is freed, it is not reused until {@code stream} reaches the point of the free. Same-stream calls are
     * no-ops and the null address 0 is ignored, as in PyTorch.
     *
     * <p>{@code ptr} must be the base address {@link #malloc} returned. For a view at an offset inside a block,
     * pass the block's base address: PyTorch records the storage's base pointer, so the whole block is
     * protected. PyTorch skips pointers owned by other allocators (which it tells apart by their deleter) and
     * asserts "No allocated block can be found" for its own pointers that match no block; vram4j addresses are
     * plain {@code long}s, so every non-zero address that is not a live block is refused.
     *
     * @param ptr a live allocation's base address, or 0
     * @param stream another stream of the same device
     * @throws IllegalArgumentException when no live allocation starts at {@code ptr} (unknown, freed, or an
     *     address inside a block); nothing changes then
     */
    public void recordStream(long ptr, Stream stream) {
        ensureOpen();
        if (ptr != 0) {
            engine.recordStream(ptr, stream);
        }
    }

    /**
     * A view of an allocation's bytes ({@code host} device only).
     *
     * @param ptr a live allocation's address
     * @return a segment of the requested size
     * @throws IllegalArgumentException when {@code ptr} is not a live allocation
     * @throws UnsupportedOperationException on a device without storage ({@code sim})
     */
    public MemorySegment segment(long ptr) {
        ensureOpen();
        Block b = engine.allocatedBlock(ptr);
        if (b == null) {
            throw new IllegalArgumentException("invalid device pointer: 0x" + Long.toHexString(ptr));
        }
        return engine.device().segment(ptr, b.requestedSize);
    }

    /**
     * Size of a live allocation.
     *
     * @param ptr a live allocation's address
     * @return the block size in bytes (rounded; may include an unsplit remainder)
     * @throws IllegalArgumentException when {@code ptr} is not a live allocation
     */
    public long blockSize(long ptr) {
        ensureOpen();
        Block b = engine.allocatedBlock(ptr);
        if (b == null) {
            throw new IllegalArgumentException("invalid device pointer: 0x" + Long.toHexString(ptr));
        }
        return b.size;
    }

    /**
     * Returns every cached, fully free segment to the device (as {@code torch.cuda.empty_cache}), after
     * synchronizing outstanding cross-stream events. Segments that still hold a live block stay reserved.
     */
    public void emptyCache() {
        ensureOpen();
        HistoryRecorder h = engine.history();
        engine.emptyCache(h != null && h.captureAtFree() ? StackCapture.capture() : null);
    }

    /**
     * Starts or stops recording memory history (as {@code torch.cuda.memory._record_memory_history}): a ring
     * buffer of trace entries ({@code alloc}, {@code free_requested}, {@code free_completed},
     * {@code segment_alloc}, {@code segment_free}, {@code segment_map}, {@code segment_unmap}, {@code oom},
     * {@code snapshot}) with Java stack frames, read by {@link #snapshot()}.
     *
     * @param enabled {@code null} (stop and clear), {@code "state"} (ring of 1) or {@code "all"}
     * @param context {@code null}, {@code "state"}, {@code "alloc"} or {@code "all"} (see {@link HistoryContext})
     * @param stacks {@code "java"} (or PyTorch's {@code "python"}/{@code "all"}) to capture Java frames, {@code "none"} for none
     * @param maxEntries ring-buffer capacity when {@code enabled} is {@code "all"}; at least 1
     * @throws IllegalArgumentException with PyTorch's messages for invalid values; nothing changes then
     */
    public void recordMemoryHistory(String enabled, String context, String stacks, int maxEntries) {
        ensureOpen();
        if (enabled != null && !enabled.equals("state") && !enabled.equals("all")) {
            throw new IllegalArgumentException("expected state to be 'state', 'all', or None (got '" + enabled + "')");
        }
        HistoryContext level = HistoryContext.parse(context);
        boolean java = switch (stacks == null ? "java" : stacks) {
            case "java", "python", "all" -> true;
            case "none" -> false;
            default -> throw new IllegalArgumentException("expected stacks to be 'java', 'python', 'all' or 'none' (got '" + stacks + "')");
        };
        if (maxEntries < 1) {
            throw new IllegalArgumentException("maxEntries must be at least 1, got " + maxEntries);
        }
        if (enabled == null) {
            engine.setHistory(null);
        } else {
            engine.setHistory(new HistoryRecorder(level, java, enabled.equals("all") ? maxEntries : 1));
        }
    }

    /**
     * Starts recording with every entry's allocation and free stacks ({@code enabled="all", context="all"}).
     *
     * @param maxEntries ring-buffer capacity, at least 1
     */
    public void recordMemoryHistory(int maxEntries) {
        recordMemoryHistory("all", "all", "java", maxEntries);
    }

    /** Stops recording memory history and clears the buffer. */
    public void stopMemoryHistory() {
        recordMemoryHistory(null, null, "java", 1);
    }

    /** @return a copy of the 122 {@code memory_stats} counters */
    public MemoryStats memoryStats() {
        ensureOpen();
        return engine.memoryStats();
    }

    /** @return bytes in allocated blocks ({@code allocated_bytes.all.current}, as {@code memory_allocated}) */
    public long memoryAllocated() {
        ensureOpen();
        return engine.allocatedBytes();
    }

    /** @return bytes reserved from the device ({@code reserved_bytes.all.current}, as {@code memory_reserved}) */
    public long memoryReserved() {
        ensureOpen();
        return engine.reservedBytes();
    }

    /** @return {@code allocated_bytes.all.peak} (as {@code max_memory_allocated}) */
    public long maxMemoryAllocated() {
        return memoryStats().maxAllocatedBytes();
    }

    /** @return {@code reserved_bytes.all.peak} (as {@code max_memory_reserved}) */
    public long maxMemoryReserved() {
        return memoryStats().maxReservedBytes();
    }

    /**
     * Starts measuring the peak of allocated and reserved bytes over a region of code, without resetting
     * PyTorch's peak statistics. Regions nest. Used by {@link io.vram4j.memory.MemoryTracker}.
     *
     * @return the open region; close it to read its peaks
     */
    public PeakRegion openPeakRegion() {
        ensureOpen();
        return new PeakRegion(engine, engine.openRegion());
    }

    /** Sets every peak to its current value (as {@code reset_peak_memory_stats}). */
    public void resetPeakMemoryStats() {
        ensureOpen();
        engine.resetPeakStats();
    }

    /** Zeroes allocated/freed totals and the scalar counters (as {@code reset_accumulated_memory_stats}). */
    public void resetAccumulatedMemoryStats() {
        ensureOpen();
        engine.resetAccumulatedStats();
    }

    /** @return the device's free and total bytes (as {@code mem_get_info}) */
    public MemInfo memGetInfo() {
        ensureOpen();
        return engine.device().memGetInfo();
    }

    /**
     * Caps reserved memory at floor(fraction × device capacity) (as {@code set_per_process_memory_fraction});
     * also the switch that enables {@code garbage_collection_threshold}.
     *
     * @param fraction in [0, 1]
     * @throws IllegalArgumentException outside [0, 1] or NaN ("Invalid fraction value: ... Allowed range: 0~1")
     */
    public void setPerProcessMemoryFraction(double fraction) {
        ensureOpen();
        if (!(fraction >= 0.0 && fraction <= 1.0)) {
            throw new IllegalArgumentException("Invalid fraction value: " + fraction + ". Allowed range: 0~1");
        }
        engine.setMemoryFraction(fraction);
    }

    /**
     * The most bytes the allocator may hold in segments under a per-process memory fraction, as PyTorch's
     * {@code allowed_memory_maximum} ({@code CUDACachingAllocator.cpp}, {@code setMemoryFraction}):
     * {@code floor(fraction x total)}. A {@code sim} device of that capacity runs into the same limit.
     *
     * @param fraction the fraction, in [0, 1]
     * @param totalBytes the device's total memory in bytes ({@code cudaMemGetInfo}'s total)
     * @return the limit in bytes
     */
    public static long allowedMemoryMaximum(double fraction, long totalBytes) {
        return (long) Math.floor(fraction * (double) totalBytes);
    }

    /** @return the fraction set by {@link #setPerProcessMemoryFraction}, 1.0 when never set */
    public double getPerProcessMemoryFraction() {
        ensureOpen();
        return engine.memoryFraction();
    }

    /** @return the current settings */
    public AllocatorConfig config() {
        ensureOpen();
        return engine.config();
    }

    /**
     * Re-parses settings at run time (as {@code torch.cuda.memory._set_allocator_settings}): the string is
     * applied on top of the current settings. A {@code per_process_memory_fraction} given in {@code conf} is
     * applied as {@link #setPerProcessMemoryFraction} would; a string without it leaves the fraction as it is.
     *
     * @param conf a {@code PYTORCH_CUDA_ALLOC_CONF}-format string
     * @throws io.vram4j.alloc.config.AllocatorConfigException when invalid; the settings stay as they were
     */
    public void setSettings(String conf) {
        ensureOpen();
        AllocatorConfig current = engine.config();
        // Parsed on top of "no fraction" to tell whether this string gives one.
        AllocatorConfig next = current.toBuilder().perProcessMemoryFraction(Double.NaN).build().parse(conf);
        double given = next.perProcessMemoryFraction();
        if (Double.isNaN(given)) {
            next = next.toBuilder().perProcessMemoryFraction(current.perProcessMemoryFraction()).build();
        }
        engine.setConfig(next);
        if (!Double.isNaN(given)) {
            engine.setMemoryFraction(given);
        }
    }

    /**
     * Replaces the settings as a whole (the programmatic counterpart of {@link #setSettings}): rounding,
     * {@code max_split_size}, {@code max_non_split_rounding}, {@code garbage_collection_threshold},
     * {@code expandable_segments} and {@code release_lock_on_cudamalloc} apply to the next calls; blocks already
     * cached or allocated keep their sizes. Unlike {@link #setSettings}, the config's
     * {@code per_process_memory_fraction} is not applied (call {@link #setPerProcessMemoryFraction}), and the
     * {@code max_split_size} statistic keeps the value captured at creation, as PyTorch's does.
     *
     * @param config new settings to use from now on, not null
     * @throws NullPointerException when {@code config} is null; nothing changes then
     */
    public void setConfig(AllocatorConfig config) {
        java.util.Objects.requireNonNull(config, "config");
        ensureOpen();
        engine.setConfig(config);
    }

    /**
     * Adds an observer called before each {@link DeviceOutOfMemoryException} (not for the 1 EiB check).
     *
     * @param observer called on the thread whose {@code malloc} failed, after the allocator's lock is released
     *     and before that {@code malloc} throws; observers run in the order attached. An exception thrown by an
     *     observer propagates out of that {@code malloc} instead of the out-of-memory exception and the later
     *     observers are not called; the allocator is not affected (the failure was already counted in
     *     {@code num_ooms} and traced, and nothing was allocated).
     */
    public void attachOutOfMemoryObserver(OutOfMemoryObserver observer) {
        ensureOpen();
        engine.attachOutOfMemoryObserver(observer);
    }

    /**
     * @param placement where new segments should go (replays); null for none
     */
    public void setSegmentPlacement(SegmentPlacement placement) {
        ensureOpen();
        engine.setPlacement(placement);
    }

    /**
     * Recreates a segment with live blocks at recorded places (replays of traces that start mid-run, and
     * checkpoint restores). The gaps between live blocks become free cached blocks; statistics change as if
     * the segment had been obtained and the blocks allocated.
     *
     * @param address where the segment must be placed (the device must have that range free)
     * @param size the segment size in bytes
     * @param stream its allocation stream
     * @param small true for a small-pool segment
     * @param live {address, size, requestedSize} of each live block, sorted by address
     * @throws IllegalArgumentException when the layout is inconsistent or the address is taken; nothing changes
     */
    public void restoreSegment(long address, long size, Stream stream, boolean small, List<long[]> live) {
        ensureOpen();
        new StateRestorer(engine).restoreSegment(address, size, stream, small, live);
    }

    /**
     * Recreates an expandable segment with mapped page ranges and live blocks at recorded places (replays of
     * traces that start mid-run with {@code expandable_segments:True}): reserves the segment's address range at
     * {@code base} ({@link SizeRules#expandableReservationSize} of the device's capacity), maps the ranges, and
     * places the blocks; the rest of each mapped range becomes free cached blocks, the rest of the reservation
     * stays unmapped. Statistics change as if the pages had been mapped and the blocks allocated.
     *
     * @param base the reservation's base address (the device must have the range free; 2 MiB aligned on sim)
     * @param stream its allocation stream
     * @param small true for a small-pool segment (2 MiB pages), false for large (20 MiB pages)
     * @param mapped {start, length} in bytes of each mapped range, ascending, disjoint, whole pages from {@code base}
     * @param live {address, size, requestedSize} of each live block, sorted by address, each inside one mapped range
     * @throws IllegalArgumentException when the layout is inconsistent, the range at {@code base} cannot be
     *     reserved or the pages cannot be mapped; nothing changes then
     */
    public void restoreExpandableSegment(long base, Stream stream, boolean small, List<long[]> mapped, List<long[]> live) {
        ensureOpen();
        new StateRestorer(engine).restoreExpandableSegment(base, stream, small, mapped, live);
    }

    /**
     * @param listener receives trace events; null for none
     */
    public void setListener(AllocatorListener listener) {
        ensureOpen();
        engine.setListener(listener);
    }

    /** @return PyTorch's {@code memory_summary()} table for this device */
    public String memorySummary() {
        return memorySummary(false);
    }

    /**
     * @param abbreviated leave out the per-pool rows
     * @return PyTorch's {@code memory_summary()} table for this device
     */
    public String memorySummary(boolean abbreviated) {
        return MemorySummary.format(engine.device().index(), memoryStats(), abbreviated);
    }

    /** @return the number of live (allocated, not yet freed) blocks */
    public int liveAllocations() {
        ensureOpen();
        return engine.liveAllocations();
    }

    /**
     * The allocator's segments and blocks now, as PyTorch's segment dicts: the {@code segments} of
     * {@link #snapshot()} without touching the memory history (no {@code snapshot} trace entry is recorded). Sizes
     * in bytes; an expandable segment's contiguous mapped ranges are one segment each (spec section 10.2).
     * Read under the device lock, so the state is consistent while other threads use the allocator.
     *
     * @return the segments in address order, immutable
     * @throws IllegalStateException when the allocator is closed
     */
    public List<SegmentInfo> segments() {
        ensureOpen();
        return List.copyOf(SnapshotBuilder.segments(engine));
    }

    /**
     * The allocator's state and history as PyTorch's {@code torch.cuda.memory._snapshot()}: segments with their
     * blocks and states, the trace ring buffer ({@code device_traces}, with a {@code snapshot} entry appended
     * while recording) and {@code allocator_settings}. Write it with
     * {@link io.vram4j.memory.snapshot.SnapshotWriter} as a pickle that PyTorch's memory_viz page loads.
     *
     * @return an immutable snapshot
     */
    public io.vram4j.memory.snapshot.MemorySnapshot snapshot() {
        ensureOpen();
        return SnapshotBuilder.build(engine);
    }

    DeviceCachingAllocator engine() {
        return engine;
    }

    /** Fast path; the engine checks its own closed flag under the lock for calls racing with close. */
    private void ensureOpen() {
        if (closed) {
            throw engine.closedException();
        }
    }

    /**
     * Returns all memory to the device. If blocks were still allocated, they are released too and an
     * {@link IllegalStateException} reports them (as Arrow's allocators report leaks on close). Safe to call
     * while other threads use the allocator: their calls that take the lock after close throw the closed
     * exception, and a segment obtained by a racing {@code malloc} is returned to the device. A second
     * {@code close} does nothing.
     *
     * @throws IllegalStateException listing live allocations, after releasing everything
     */
    @Override
    public void close() {
        closed = true;
        List<Block> live = engine.releaseAll();
        if (live != null && !live.isEmpty()) {
            long bytes = live.stream().mapToLong(b -> b.size).sum();
            StringBuilder sb = new StringBuilder("caching allocator of " + engine.device().description()
                    + " closed with " + live.size() + " live allocation(s) holding " + FormatSize.formatSize(bytes) + ":");
            live.stream().limit(10).forEach(b -> sb.append("\n  0x").append(Long.toHexString(b.ptr)).append(" size ")
                    .append(b.size).append(" requested ").append(b.requestedSize));
            if (live.size() > 10) {
                sb.append("\n  ...");
            }
            throw new IllegalStateException(sb.toString());
        }
    }
}
