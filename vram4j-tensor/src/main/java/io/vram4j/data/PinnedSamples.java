package io.vram4j.data;

import io.vram4j.alloc.CachingHostAllocator;
import io.vram4j.alloc.PinnedBuffer;
import io.vram4j.device.Stream;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A batch's samples in host memory blocks of a {@link CachingHostAllocator} (page-locked on {@code cuda}), as
 * PyTorch's {@code DataLoader(pin_memory=True)} hands them out: the features as float32 {@code [size, features]}
 * and the labels as int64 {@code [size]} (the dtype {@code default_collate} gives integer labels), both row-major
 * in native byte order, ready for an asynchronous copy to the device.
 *
 * <p>Whoever consumes the batch gives the blocks back with {@link #release(Stream)} (after queueing the copies
 * that read them on that stream: the blocks are reused only once the stream has passed them) or
 * {@link #release()}; {@link DeviceLoader} does. Releasing is idempotent and thread-safe; the segments must not
 * be used after it.
 */
public final class PinnedSamples {
    private final CachingHostAllocator allocator;
    private final PinnedBuffer features;
    private final PinnedBuffer labels;
    private final AtomicBoolean released = new AtomicBoolean();

    private PinnedSamples(CachingHostAllocator allocator, PinnedBuffer features, PinnedBuffer labels) {
        this.allocator = allocator;
        this.features = features;
        this.labels = labels;
    }

    /**
     * Copies a batch's arrays into two new blocks of {@code allocator} (as {@code pin_memory()} copies the
     * collated tensors).
     *
     * @throws OutOfMemoryError when the allocator's source has no memory; nothing is held then
     */
    static PinnedSamples copyOf(CachingHostAllocator allocator, float[] x, int[] y) {
        PinnedBuffer f = allocator.allocate(Math.max(1, (long) x.length * Float.BYTES));
        PinnedBuffer l;
        try {
            l = allocator.allocate(Math.max(1, (long) y.length * Long.BYTES));
        } catch (RuntimeException | Error e) {
            allocator.free(f);
            throw e;
        }
        MemorySegment.copy(x, 0, f.segment(), ValueLayout.JAVA_FLOAT, 0, x.length);
        MemorySegment ls = l.segment();
        for (int i = 0; i < y.length; i++) {
            ls.setAtIndex(ValueLayout.JAVA_LONG, i, y[i]);
        }
        return new PinnedSamples(allocator, f, l);
    }

    /** @return the allocator the blocks belong to */
    public CachingHostAllocator allocator() {
        return allocator;
    }

    /** @return the features, float32 {@code [size, features]}, {@code 4 * size * features} bytes */
    public MemorySegment features() {
        return features.segment();
    }

    /** @return the labels, int64 {@code [size]}, {@code 8 * size} bytes */
    public MemorySegment labels() {
        return labels.segment();
    }

    /**
     * Gives the blocks back once {@code usedBy} has passed the work queued on it so far (the copies that read
     * them): {@link CachingHostAllocator#recordEvent} then {@link CachingHostAllocator#free}, as PyTorch's
     * {@code copy_(non_blocking=True)} from pinned memory records its event.
     *
     * @param usedBy the stream the copies were queued on
     * @return false when already released (nothing done)
     */
    public boolean release(Stream usedBy) {
        if (!released.compareAndSet(false, true)) {
            return false;
        }
        allocator.recordEvent(features, usedBy);
        allocator.recordEvent(labels, usedBy);
        allocator.free(features);
        allocator.free(labels);
        return true;
    }

    /**
     * Gives the blocks back for reuse at once (no copy reads them).
     *
     * @return false when already released (nothing done)
     */
    public boolean release() {
        if (!released.compareAndSet(false, true)) {
            return false;
        }
        allocator.free(features);
        allocator.free(labels);
        return true;
    }
}
