package io.vram4j.device.sim;

import io.vram4j.device.FreeRanges;

/**
 * The virtual address space of a simulated device: hands out address ranges as a GPU's driver does, lowest
 * free range first, and places a range at a wanted address when it is free there.
 *
 * <p>Addresses run from {@link #MIN_ADDRESS} to {@link #LIMIT}. Searches start at {@link #BASE}: the space
 * below it is used only when a hint asks for it (or if everything above were taken), so that recorded
 * addresses from anywhere can be replayed while fresh ranges look like CUDA device pointers. The two parts
 * are kept as separate {@link FreeRanges}, and a range across {@link #BASE} is handled as its two pieces.
 * Every operation is expected O(log n) in the number of free ranges. Thread-safe (synchronized).
 */
final class SimAddressSpace {
    /** The lowest address handed out: 2 MiB, so that small integers are never valid addresses. */
    static final long MIN_ADDRESS = 2L << 20;
    /**
     * Where searches start: {@code 0x7f0000000000}, the region of the 47-bit x86-64 user address space where
     * CUDA's device pointers usually lie in PyTorch snapshots (e.g. {@code 0x7f45a030c000}).
     */
    static final long BASE = 0x7f00_0000_0000L;
    /** The end of the address space, exclusive: the largest multiple of 2 MiB below 2<sup>63</sup>. */
    static final long LIMIT = Long.MAX_VALUE & -(2L << 20);

    private final FreeRanges low;
    private final FreeRanges high;
    private final long smallAlignment;

    /**
     * @param smallAlignment the alignment of every range boundary, a power of two
     * @param largeAlignment the larger alignment {@link #allocate} may ask for, a power of two
     */
    SimAddressSpace(long smallAlignment, long largeAlignment) {
        this.smallAlignment = smallAlignment;
        this.low = new FreeRanges(smallAlignment, largeAlignment);
        this.high = new FreeRanges(smallAlignment, largeAlignment);
        low.give(MIN_ADDRESS, BASE - MIN_ADDRESS);
        high.give(BASE, LIMIT - BASE);
    }

    /**
     * Takes a range: at {@code hint} if that is a multiple of {@code hintAlignment} and the range is free
     * there, else at the lowest free address from {@link #BASE} up aligned to {@code alignment}.
     *
     * @param length bytes, a positive multiple of the small alignment
     * @param alignment the small or the large alignment
     * @param hint the wanted start, or 0
     * @param hintAlignment the alignment a hint must have to be honoured
     * @return the start of the range, or 0 if no range is free
     */
    synchronized long allocate(long length, long alignment, long hint, long hintAlignment) {
        if (length <= 0 || length % smallAlignment != 0) {
            throw new IllegalArgumentException("length must be a positive multiple of " + smallAlignment);
        }
        if (length > LIMIT - MIN_ADDRESS) {
            return 0;
        }
        if (hint >= MIN_ADDRESS && hint % hintAlignment == 0 && hint <= LIMIT - length && isFree(hint, length)) {
            take(hint, length);
            return hint;
        }
        long at = high.firstFit(length, alignment);
        if (at < 0) {
            at = low.firstFit(length, alignment);
        }
        if (at < 0) {
            return 0;
        }
        take(at, length);
        return at;
    }

    /** Frees {@code [start, start + length)}, which {@link #allocate} returned. */
    synchronized void release(long start, long length) {
        if (start < BASE && start + length > BASE) {
            low.give(start, BASE - start);
            high.give(BASE, start + length - BASE);
        } else {
            part(start).give(start, length);
        }
    }

    /** @return true if every byte of {@code [start, start + length)} is free */
    synchronized boolean isFree(long start, long length) {
        if (start < BASE && start + length > BASE) {
            return low.isFree(start, BASE - start) && high.isFree(BASE, start + length - BASE);
        }
        return part(start).isFree(start, length);
    }

    private void take(long start, long length) {
        if (start < BASE && start + length > BASE) {
            low.take(start, BASE - start);
            high.take(BASE, start + length - BASE);
        } else {
            part(start).take(start, length);
        }
    }

    private FreeRanges part(long start) {
        return start < BASE ? low : high;
    }
}
