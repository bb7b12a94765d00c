package io.vram4j.bench.gpu;

import java.util.ArrayList;
import java.util.List;

/**
 * The operation sequences of the differential test against PyTorch, generated identically here and by
 * {@code gpu/differential.py} from a seed: a SplitMix64 stream (Steele, Lea and Flood's constants) drives every
 * choice, so both sides run the same operations without exchanging them.
 *
 * <p>Each step draws {@code u = next() >>> 11} (53 bits) and picks, with {@code r = u mod 1000}:
 * {@code r < 5}: {@code empty_cache}; {@code r < 470} (or nothing live): malloc; otherwise free of live index
 * {@code next() >>> 1 mod live}. A malloc size is, by {@code next() >>> 1 mod 100} = {@code k}:
 * {@code k < 55}: {@code 1 + (next() >>> 1 mod 1 MiB)} (small pool and the smallest large sizes);
 * {@code k < 95}: {@code 1 MiB + (next() >>> 1 mod 63 MiB)}; else {@code 64 MiB + (next() >>> 1 mod 448 MiB)}.
 * Live bytes are capped at {@code cap}: a malloc that would pass it frees the oldest live block instead.
 *
 * <p>Cross-stream use: a malloc then draws {@code next() >>> 1 mod 100}; below {@value #RECORDED_PERCENT} it is a
 * {@link Kind#MALLOC_TENSOR} (the same allocator call on the default stream; PyTorch's side makes it a
 * {@code uint8} tensor, since {@code record_stream} takes tensors), and every later free of that block is a
 * {@link Kind#FREE_RECORDED}: the block is marked used on a side stream ({@code record_stream}), freed, and the
 * device synchronized. The free leaves it {@code active_pending_free} (its event recorded on the side stream); the
 * synchronization makes that event complete, so the next malloc's {@code process_events} (or an
 * {@code empty_cache}) returns the block to its pool on a GPU as deterministically as on {@code sim}.
 */
public final class OpSequence {
    /**
     * Operation kinds; {@link #text()} is how {@code differential.py ops} prints them.
     */
    public enum Kind {
        /** {@code caching_allocator_alloc(size)} on the default stream. */
        MALLOC("malloc"),
        /** The same allocation, of a block later freed by {@link #FREE_RECORDED} (a tensor on PyTorch's side). */
        MALLOC_TENSOR("malloc_tensor"),
        /** {@code caching_allocator_delete} of a live block. */
        FREE("free"),
        /** {@code record_stream} of a {@link #MALLOC_TENSOR} block on the side stream, its free, a device sync. */
        FREE_RECORDED("free_recorded"),
        /** {@code empty_cache()}. */
        EMPTY_CACHE("empty_cache");

        private final String text;

        Kind(String text) {
            this.text = text;
        }

        /** @return the operation's name as the Python side prints it */
        public String text() {
            return text;
        }
    }

    /** Percentage of mallocs that are {@link Kind#MALLOC_TENSOR}, each later freed with record_stream. */
    public static final int RECORDED_PERCENT = 4;

    /**
     * One operation.
     *
     * @param kind what to do
     * @param size bytes to allocate (MALLOC, MALLOC_TENSOR)
     * @param index the live-list index to free (FREE, FREE_RECORDED)
     */
    public record Op(Kind kind, long size, int index) {
        /** @return the line {@code differential.py ops} prints for this operation */
        @Override
        public String toString() {
            return switch (kind) {
                case MALLOC, MALLOC_TENSOR -> kind.text() + " " + size;
                case FREE, FREE_RECORDED -> kind.text() + " " + index;
                case EMPTY_CACHE -> kind.text();
            };
        }
    }

    private static final long MiB = 1L << 20;
    private long state;

    private OpSequence(long seed) {
        this.state = seed;
    }

    /**
     * @param seed the seed shared with the Python side
     * @param count operations
     * @param cap most live bytes
     * @return the operations; free indices refer to the list of live blocks in allocation order, removing the
     *     freed one
     */
    public static List<Op> generate(long seed, int count, long cap) {
        OpSequence g = new OpSequence(seed);
        List<Op> ops = new ArrayList<>(count);
        List<Long> live = new ArrayList<>();
        List<Boolean> tensor = new ArrayList<>();
        long liveBytes = 0;
        for (int i = 0; i < count; i++) {
            long r = (g.next() >>> 11) % 1000;
            if (r < 5) {
                ops.add(new Op(Kind.EMPTY_CACHE, 0, -1));
            } else if (r < 470 || live.isEmpty()) {
                long size = g.size();
                if (liveBytes + size > cap && !live.isEmpty()) {
                    liveBytes -= live.remove(0);
                    ops.add(new Op(tensor.remove(0) ? Kind.FREE_RECORDED : Kind.FREE, 0, 0));
                } else {
                    boolean t = (g.next() >>> 1) % 100 < RECORDED_PERCENT;
                    live.add(size);
                    tensor.add(t);
                    liveBytes += size;
                    ops.add(new Op(t ? Kind.MALLOC_TENSOR : Kind.MALLOC, size, -1));
                }
            } else {
                int idx = (int) ((g.next() >>> 1) % live.size());
                liveBytes -= live.remove(idx);
                ops.add(new Op(tensor.remove(idx) ? Kind.FREE_RECORDED : Kind.FREE, 0, idx));
            }
        }
        return ops;
    }

    private long size() {
        long k = (next() >>> 1) % 100;
        if (k < 55) {
            return 1 + (next() >>> 1) % MiB;
        }
        if (k < 95) {
            return MiB + (next() >>> 1) % (63 * MiB);
        }
        return 64 * MiB + (next() >>> 1) % (448 * MiB);
    }

    private long next() {
        state += 0x9E3779B97F4A7C15L;
        long z = state;
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }
}
