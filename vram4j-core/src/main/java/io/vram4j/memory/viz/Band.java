package io.vram4j.memory.viz;

import java.util.Arrays;

/**
 * One allocation drawn as its own band of the active memory timeline: a strip {@code size} bytes high that
 * lives from step {@code start} (inclusive) to step {@code end} (exclusive) and sits on the allocations made
 * before it that are still alive, so it steps down whenever one of those is freed (the layout of PyTorch's
 * {@code memory_viz} "Active Memory Timeline"). Immutable (the arrays are copies) and thread-safe.
 *
 * @param address   the block address
 * @param size      the requested bytes (the band's height, PyTorch's trace {@code size})
 * @param blockSize the bytes of the block the allocator handed out (rounded, with any unsplit remainder)
 * @param stack     index into {@link MemoryTimeline#stacks()}, -1 when no frames were recorded
 * @param start     first step at which the allocation is alive (0 for allocations made before the trace)
 * @param end       step at which it is freed; {@link MemoryTimeline#steps()} + 1 when alive at the end
 * @param steps     the steps at which the band's bottom offset changes, ascending, {@code steps[0] == start}
 * @param offsets   the bottom offset in bytes from each of those steps on
 */
public record Band(long address, long size, long blockSize, int stack, int start, int end, int[] steps, long[] offsets) {
    /** @throws IllegalArgumentException if the vertex arrays are empty or of different lengths */
    public Band {
        if (steps.length == 0 || steps.length != offsets.length) {
            throw new IllegalArgumentException("a band needs as many offsets as steps, and at least one");
        }
        steps = steps.clone();
        offsets = offsets.clone();
    }

    /**
     * @param step a step in {@code [start, end)}
     * @return the band's bottom offset in bytes at that step
     * @throws IllegalArgumentException if the band is not alive at {@code step}
     */
    public long offsetAt(int step) {
        if (step < start || step >= end) {
            throw new IllegalArgumentException("step " + step + " outside the band's life [" + start + ", " + end + ")");
        }
        int i = Arrays.binarySearch(steps, step);
        if (i < 0) {
            i = -i - 2;
        } else {
            while (i + 1 < steps.length && steps[i + 1] == step) {
                i++;
            }
        }
        return offsets[i];
    }

    /** @return the steps array (a copy) */
    @Override
    public int[] steps() {
        return steps.clone();
    }

    /** @return the offsets array (a copy) */
    @Override
    public long[] offsets() {
        return offsets.clone();
    }

    int vertexCount() {
        return steps.length;
    }

    int stepAt(int i) {
        return steps[i];
    }

    long offsetOf(int i) {
        return offsets[i];
    }
}
