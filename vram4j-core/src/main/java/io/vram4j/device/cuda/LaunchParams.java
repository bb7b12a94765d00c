package io.vram4j.device.cuda;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

import static java.lang.foreign.ValueLayout.ADDRESS;

/**
 * The calling thread's {@code void* kernelParams[]} for {@code cuLaunchKernel}: native memory allocated once per
 * thread (and again only when a launch has more values than it holds), in place of an arena opened and closed per
 * launch. It holds {@code capacity} pointers followed by {@code capacity} 8-byte slots; pointer {@code i} points to
 * slot {@code i} from the start, so a launch writes only the values ({@link KernelArgs#writeSlots}).
 *
 * <p>Reuse is safe because the driver reads the values during the call: each {@code kernelParams} entry points to
 * memory "from which the actual kernel parameter will be copied" (CUDA Driver API, {@code cuLaunchKernel}), so a
 * launch queued on a stream keeps no pointer into this buffer (the arena per launch that this replaces was closed
 * as soon as the call returned, on the same ground), and nothing else runs on the thread between writing the
 * values and the call.
 *
 * <p>Thread-safe by confinement: each thread has its own ({@link ThreadLocal}); the memory is reclaimed by the
 * garbage collector ({@link Arena#ofAuto()}) once its thread has ended. Never hand the segment to another thread.
 */
final class LaunchParams {
    /** Values a buffer holds at first: more than any kernel of vram4j's PTX takes (at most 17). */
    private static final int INITIAL_CAPACITY = 32;
    private static final ThreadLocal<LaunchParams> PER_THREAD =
            ThreadLocal.withInitial(() -> new LaunchParams(INITIAL_CAPACITY));

    private final int capacity;
    private final MemorySegment pointers;
    private final MemorySegment slots;

    private LaunchParams(int capacity) {
        this.capacity = capacity;
        MemorySegment memory = Arena.ofAuto().allocate(16L * capacity, 8);
        this.pointers = memory.asSlice(0, 8L * capacity);
        this.slots = memory.asSlice(8L * capacity, 8L * capacity);
        for (int i = 0; i < capacity; i++) {
            pointers.setAtIndex(ADDRESS, i, slots.asSlice(8L * i, 8));
        }
    }

    /**
     * @return {@code kernelParams} holding {@code args}, valid on the calling thread until its next call here
     */
    static MemorySegment of(KernelArgs args) {
        LaunchParams p = PER_THREAD.get();
        if (args.count() > p.capacity) {
            p = new LaunchParams(Math.max(args.count(), 2 * p.capacity));
            PER_THREAD.set(p);
        }
        args.writeSlots(p.slots);
        return p.pointers;
    }
}
