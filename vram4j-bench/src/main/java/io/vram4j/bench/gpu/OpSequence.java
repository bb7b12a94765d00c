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
 */
public final class OpSequence {
    /** Operation kinds. */
    public enum Kind { MALLOC, FREE, EMPTY_CACHE }

    /**
     * One operation.
     *
     * @param kind what to do
     * @param size bytes to allocate (MALLOC)
     * @param index the live-list index to free (FREE)
     */
    public record Op(Kind kind, long size, int index) {
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
     * @return the operations; FREE indices refer to the list of live blocks in allocation order, removing the
     *     freed one
     */
    public static List<Op> generate(long seed, int count, long cap) {
        OpSequence g = new OpSequence(seed);
        List<Op> ops = new ArrayList<>(count);
        List<Long> live = new ArrayList<>();
        long liveBytes = 0;
        for (int i = 0; i < count; i++) {
            long r = (g.next() >>> 11) % 1000;
            if (r < 5) {
                ops.add(new Op(Kind.EMPTY_CACHE, 0, -1));
            } else if (r < 470 || live.isEmpty()) {
                long size = g.size();
                if (liveBytes + size > cap && !live.isEmpty()) {
                    liveBytes -= live.remove(0);
                    ops.add(new Op(Kind.FREE, 0, 0));
                } else {
                    live.add(size);
                    liveBytes += size;
                    ops.add(new Op(Kind.MALLOC, size, -1));
                }
            } else {
                int idx = (int) ((g.next() >>> 1) % live.size());
                liveBytes -= live.remove(idx);
                ops.add(new Op(Kind.FREE, 0, idx));
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
