package io.vram4j.alloc;

import io.vram4j.device.Event;
import io.vram4j.device.Stream;

import java.lang.foreign.MemorySegment;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.Map;
import java.util.SortedMap;
import java.util.TreeMap;
import java.util.concurrent.locks.ReentrantLock;

/**
 * A caching allocator of host memory for copies to and from a device, as PyTorch's {@code CachingHostAllocator}
 * (what {@code tensor.pin_memory()} and {@code torch.empty(..., pin_memory=True)} use), over a
 * {@link HostMemorySource} (page-locked memory from {@code cuMemHostAlloc} on a GPU, plain memory elsewhere):
 * <ul>
 *   <li>a request is rounded up to a power of two ({@code PowerOf2Ceil}) and served from the free list of that
 *       size (the most recently freed block first), else by a new block from the source; blocks are never split;</li>
 *   <li>{@link #recordEvent} notes a stream that uses the block (a copy queued on it); {@link #free} then records
 *       an event on each such stream, and the block is reused only once all of them have completed (checked,
 *       oldest first, at each {@link #allocate} and {@link #emptyCache});</li>
 *   <li>{@link #emptyCache} gives every free block back to the source;</li>
 *   <li>{@link #hostMemoryStats()} has the keys of {@code torch.cuda.host_memory_stats()}:
 *       {@code allocations}, {@code allocated_bytes} (blocks held, free or not), {@code active_requests},
 *       {@code active_bytes} (blocks handed out and not yet reusable), each {@code .current/.peak/.allocated/.freed};
 *       {@code num_host_alloc}, {@code num_host_free}; {@code host_alloc_time} and {@code host_free_time}
 *       {@code .total/.max/.min/.count/.avg} in microseconds.</li>
 * </ul>
 * One difference from PyTorch 2.9's code, which is PyTorch's own: it decreases {@code active_*} only when a block
 * with events becomes reusable (and, there, {@code active_bytes} by −1 instead of the block's size), so blocks freed
 * without events stay "active" for ever; here a block stops being active when it becomes reusable, with or
 * without events, by its size, as PyTorch documents the statistic.
 *
 * <p>Thread-safe: one lock guards the lists and statistics; the source is called outside it.
 */
public final class CachingHostAllocator implements AutoCloseable {
    private final HostMemorySource source;
    private final ReentrantLock lock = new ReentrantLock();
    /** Free blocks by log2 of their size; each list used as a stack. Guarded by lock. */
    private final Map<Integer, Deque<HostBlock>> freeLists = new TreeMap<>();
    private final java.util.Set<HostBlock> blocks = new java.util.HashSet<>(); // identity; guarded by lock
    /** Events of freed blocks, newest first (as PyTorch's deque with emplace_front). Guarded by lock. */
    private final Deque<PendingEvent> events = new ArrayDeque<>();

    private final DeviceStats.Stat allocations = new DeviceStats.Stat();
    private final DeviceStats.Stat allocatedBytes = new DeviceStats.Stat();
    private final DeviceStats.Stat activeRequests = new DeviceStats.Stat();
    private final DeviceStats.Stat activeBytes = new DeviceStats.Stat();
    private final DeviceStats.Stat[] allStats = {allocations, allocatedBytes, activeRequests, activeBytes};
    private final Duration allocTime = new Duration();
    private final Duration freeTime = new Duration();
    private boolean closed;

    private record PendingEvent(Event event, HostBlock block) {
    }

    private CachingHostAllocator(HostMemorySource source) {
        this.source = source;
    }

    /**
     * @param source where blocks come from
     * @return a new, empty allocator
     */
    public static CachingHostAllocator create(HostMemorySource source) {
        return new CachingHostAllocator(java.util.Objects.requireNonNull(source, "source"));
    }

    /** @return the source of the blocks */
    public HostMemorySource source() {
        return source;
    }

    /**
     * Hands out host memory.
     *
     * @param size bytes, at least 1 and at most 2^62
     * @return memory of {@code size} bytes in a block of the next power of two
     * @throws IllegalArgumentException if {@code size} is out of range
     * @throws OutOfMemoryError (as PyTorch's {@code cudaHostAlloc} failure) when the source has no memory; the
     *     allocator is unchanged
     * @throws IllegalStateException after {@link #close()}
     */
    public PinnedBuffer allocate(long size) {
        if (size < 1 || size > 1L << 62) {
            throw new IllegalArgumentException("host allocation size must be in [1, 2^62] bytes, got " + size);
        }
        long rounded = Long.highestOneBit(size) == size ? size : Long.highestOneBit(size) << 1;
        lock.lock();
        try {
            checkOpen();
            processEvents();
            Deque<HostBlock> list = freeLists.get(index(rounded));
            if (list != null && !list.isEmpty()) {
                HostBlock b = list.pop();
                activeRequests.increase(1);
                activeBytes.increase(rounded);
                return b.handedOut = new PinnedBuffer(b, size);
            }
        } finally {
            lock.unlock();
        }
        long start = System.nanoTime();
        MemorySegment memory = source.allocate(rounded);
        long micros = (System.nanoTime() - start) / 1000;
        if (memory.equals(MemorySegment.NULL)) {
            throw new OutOfMemoryError("host memory (" + source.name() + ") exhausted: tried to allocate "
                    + rounded + " bytes for a request of " + size);
        }
        HostBlock b = new HostBlock(rounded, memory);
        PinnedBuffer buffer = b.handedOut = new PinnedBuffer(b, size);
        lock.lock();
        try {
            allocTime.add(micros);
            blocks.add(b);
            allocations.increase(1);
            allocatedBytes.increase(rounded);
            activeRequests.increase(1);
            activeBytes.increase(rounded);
        } finally {
            lock.unlock();
        }
        return buffer;
    }

    /**
     * Notes that {@code stream} uses the buffer (e.g. an asynchronous copy was queued on it): when the buffer is
     * freed, its block is reused only after the stream has passed that point.
     *
     * @param buffer a buffer of this allocator, not freed
     * @param stream the stream
     * @return true (as PyTorch's {@code record_event} for a known block)
     * @throws IllegalArgumentException if the buffer is not handed out by this allocator
     */
    public boolean recordEvent(PinnedBuffer buffer, Stream stream) {
        lock.lock();
        try {
            requireHandedOut(buffer, "recordEvent");
            buffer.block.streams.add(stream);
            return true;
        } finally {
            lock.unlock();
        }
    }

    /**
     * Gives a buffer back. Without recorded streams its block is reusable at once; otherwise an event is recorded
     * on each stream and the block waits for them.
     *
     * @param buffer a buffer of this allocator, not freed yet
     * @throws IllegalArgumentException if the buffer was already freed or is another allocator's; nothing changes
     */
    public void free(PinnedBuffer buffer) {
        lock.lock();
        try {
            requireHandedOut(buffer, "free");
            HostBlock b = buffer.block;
            b.handedOut = null;
            if (b.streams.isEmpty()) {
                makeReusable(b);
                return;
            }
            for (Stream s : b.streams) {
                events.addFirst(new PendingEvent(s.recordEvent(), b));
                b.eventCount++;
            }
            b.streams.clear();
        } finally {
            lock.unlock();
        }
    }

    /** Gives every free block back to the source (after moving blocks whose events completed to the free lists). */
    public void emptyCache() {
        List<HostBlock> released = new ArrayList<>();
        lock.lock();
        try {
            checkOpen();
            processEvents();
            for (Deque<HostBlock> list : freeLists.values()) {
                released.addAll(list);
                list.clear();
            }
            for (HostBlock b : released) {
                blocks.remove(b);
                allocations.decrease(1);
                allocatedBytes.decrease(b.size);
            }
        } finally {
            lock.unlock();
        }
        releaseToSource(released);
    }

    /** @return the statistics under the keys of {@code torch.cuda.host_memory_stats()}, sorted */
    public SortedMap<String, Long> hostMemoryStats() {
        lock.lock();
        try {
            SortedMap<String, Long> m = new TreeMap<>();
            put(m, "allocations", allocations);
            put(m, "allocated_bytes", allocatedBytes);
            put(m, "active_requests", activeRequests);
            put(m, "active_bytes", activeBytes);
            m.put("num_host_alloc", allocations.allocated);
            m.put("num_host_free", allocations.freed);
            allocTime.put(m, "host_alloc_time");
            freeTime.put(m, "host_free_time");
            return m;
        } finally {
            lock.unlock();
        }
    }

    /** Zeroes the {@code allocated}/{@code freed} totals and the timings (as {@code reset_accumulated_host_memory_stats}). */
    public void resetAccumulatedHostMemoryStats() {
        lock.lock();
        try {
            for (DeviceStats.Stat s : allStats) {
                s.resetAccumulated();
            }
            allocTime.reset();
            freeTime.reset();
        } finally {
            lock.unlock();
        }
    }

    /** Sets every peak to its current value (as {@code reset_peak_host_memory_stats}). */
    public void resetPeakHostMemoryStats() {
        lock.lock();
        try {
            for (DeviceStats.Stat s : allStats) {
                s.resetPeak();
            }
        } finally {
            lock.unlock();
        }
    }

    /**
     * Waits for pending events, then gives every block back to the source, handed out or not. Buffers still
     * handed out must not be used afterwards. Idempotent.
     */
    @Override
    public void close() {
        List<HostBlock> all;
        lock.lock();
        try {
            if (closed) {
                return;
            }
            closed = true;
            for (PendingEvent pe : events) {
                pe.event().synchronize();
            }
            events.clear();
            all = new ArrayList<>(blocks);
            blocks.clear();
            freeLists.clear();
        } finally {
            lock.unlock();
        }
        releaseToSource(all);
    }

    // ---- internals (under the lock) ----------------------------------------------------------------------

    /** Moves blocks whose last event completed to the free lists, oldest event first, up to the first pending one. */
    private void processEvents() {
        while (!events.isEmpty()) {
            PendingEvent pe = events.peekLast();
            if (!pe.event().query()) {
                return;
            }
            events.pollLast();
            if (--pe.block().eventCount == 0) {
                makeReusable(pe.block());
            }
        }
    }

    private void makeReusable(HostBlock b) {
        freeLists.computeIfAbsent(index(b.size), k -> new ArrayDeque<>()).push(b);
        activeRequests.decrease(1);
        activeBytes.decrease(b.size);
    }

    private void releaseToSource(List<HostBlock> released) {
        for (HostBlock b : released) {
            long start = System.nanoTime();
            source.free(b.memory);
            long micros = (System.nanoTime() - start) / 1000;
            lock.lock();
            try {
                freeTime.add(micros);
            } finally {
                lock.unlock();
            }
        }
    }

    private void requireHandedOut(PinnedBuffer buffer, String call) {
        checkOpen();
        if (buffer.block.handedOut != buffer || !blocks.contains(buffer.block)) {
            throw new IllegalArgumentException(call + ": the buffer is not handed out by this allocator (freed "
                    + "already, even if its block has been handed out again since, or another allocator's)");
        }
    }

    private void checkOpen() {
        if (closed) {
            throw new IllegalStateException("the caching host allocator is closed");
        }
    }

    private static int index(long powerOfTwo) {
        return Long.numberOfTrailingZeros(powerOfTwo);
    }

    private static void put(Map<String, Long> m, String name, DeviceStats.Stat s) {
        m.put(name + ".current", s.current);
        m.put(name + ".peak", s.peak);
        m.put(name + ".allocated", s.allocated);
        m.put(name + ".freed", s.freed);
    }

    /** PyTorch's {@code DurationStat}: total, max, min, count and average of timed calls, in microseconds. */
    private static final class Duration {
        long total;
        long max;
        long min;
        long count;

        void add(long micros) {
            total += micros;
            max = count == 0 ? micros : Math.max(max, micros);
            min = count == 0 ? micros : Math.min(min, micros);
            count++;
        }

        void reset() {
            total = max = min = count = 0;
        }

        void put(Map<String, Long> m, String name) {
            m.put(name + ".total", total);
            m.put(name + ".max", max);
            m.put(name + ".min", min);
            m.put(name + ".count", count);
            m.put(name + ".avg", count == 0 ? 0 : total / count);
        }
    }
}
