package io.vram4j.compute;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * The float16/bfloat16 conversions of the CPU kernels, shared by {@link ScalarKernels} and {@link VectorKernels}:
 * {@link Half}'s loops over host memory, and the 16-bit element-wise kernels, which widen {@value #CHUNK} values at a
 * time into float buffers of their own, run the implementation's float32 kernel over them and narrow the result
 * (no checks here; {@link CheckedKernels} checks).
 */
interface HostConversions extends Kernels {
    /**
     * Values widened at a time by the 16-bit element-wise kernels: a multiple of every vector length, so each value
     * takes the same lane of the float32 kernel as when the whole tensor is widened first (the same bits).
     */
    int CHUNK = 16_384;

    @Override
    default void floatToFp16(long n, MemorySegment src, long srcOff, MemorySegment dst, long dstOff) {
        Half.floatToFp16(n, src, srcOff, dst, dstOff);
    }

    @Override
    default void floatToBf16(long n, MemorySegment src, long srcOff, MemorySegment dst, long dstOff) {
        Half.floatToBf16(n, src, srcOff, dst, dstOff);
    }

    @Override
    default void fp16ToFloat(long n, MemorySegment src, long srcOff, MemorySegment dst, long dstOff) {
        Half.fp16ToFloat(n, src, srcOff, dst, dstOff);
    }

    @Override
    default void bf16ToFloat(long n, MemorySegment src, long srcOff, MemorySegment dst, long dstOff) {
        Half.bf16ToFloat(n, src, srcOff, dst, dstOff);
    }

    private void widen(int type, long n, MemorySegment src, long srcOff, MemorySegment dst) {
        if (type == FLOAT32) {
            MemorySegment.copy(src, srcOff * Float.BYTES, dst, 0, n * Float.BYTES);
        } else if (type == FLOAT16) {
            Half.fp16ToFloat(n, src, srcOff, dst, 0);
        } else {
            Half.bf16ToFloat(n, src, srcOff, dst, 0);
        }
    }

    private void narrow(int type, long n, MemorySegment src, MemorySegment dst, long dstOff) {
        if (type == FLOAT32) {
            MemorySegment.copy(src, 0, dst, dstOff * Float.BYTES, n * Float.BYTES);
        } else if (type == FLOAT16) {
            Half.floatToFp16(n, src, 0, dst, dstOff);
        } else {
            Half.floatToBf16(n, src, 0, dst, dstOff);
        }
    }

    @Override
    default void unary16(int op, int type, long n, MemorySegment x, long xOff, MemorySegment out, long outOff) {
        try (Arena arena = Arena.ofConfined()) {
            long c = Math.max(1, Math.min(n, CHUNK));
            MemorySegment wx = arena.allocate(c * Float.BYTES, Float.BYTES);
            MemorySegment wo = arena.allocate(c * Float.BYTES, Float.BYTES);
            for (long i = 0; i < n; i += CHUNK) {
                long m = Math.min(CHUNK, n - i);
                widen(type, m, x, xOff + i, wx);
                switch (op) {
                    case UNARY_NEG -> neg(m, wx, 0, wo, 0);
                    case UNARY_EXP -> exp(m, wx, 0, wo, 0);
                    case UNARY_LOG -> log(m, wx, 0, wo, 0);
                    case UNARY_SQRT -> sqrt(m, wx, 0, wo, 0);
                    case UNARY_TANH -> tanh(m, wx, 0, wo, 0);
                    case UNARY_RELU -> relu(m, wx, 0, wo, 0);
                    case UNARY_GELU -> gelu(m, wx, 0, wo, 0);
                    default -> throw new IllegalArgumentException("unary16: unknown op " + op);
                }
                narrow(type, m, wo, out, outOff + i);
            }
        }
    }

    /** {@link #sumDim16} into a float32 array, then each sum rounded to {@code type}. */
    @Override
    default void sumDimTo16(int type, int outer, int n, int inner, MemorySegment x, long xOff, MemorySegment out,
                            long outOff) {
        long m = (long) outer * inner;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment sums = arena.allocate(Math.max(1, m) * Float.BYTES, Float.BYTES);
            sumDim16(type, outer, n, inner, x, xOff, sums, 0);
            narrow(type, m, sums, out, outOff);
        }
    }

    /**
     * Widens each slice the float32 {@link #sumDim} reads at once (a row of {@code inner} values; with {@code inner}
     * 1 a whole problem's {@code n}, summed by {@link #sum}) and runs it on the slice, so the sums have its bits.
     */
    @Override
    default void sumDim16(int type, int outer, int n, int inner, MemorySegment x, long xOff, MemorySegment out,
                          long outOff) {
        try (Arena arena = Arena.ofConfined()) {
            if (inner == 1) {
                MemorySegment w = arena.allocate(Math.max(1, n) * (long) Float.BYTES, Float.BYTES);
                for (long o = 0; o < outer; o++) {
                    widen(type, n, x, xOff + o * n, w);
                    sumDim(1, n, 1, w, 0, out, outOff + o);
                }
                return;
            }
            MemorySegment w = arena.allocate(Math.max(1, inner) * (long) Float.BYTES, Float.BYTES);
            for (long o = 0; o < outer; o++) {
                long oo = outOff + o * inner;
                fill(inner, 0f, out, oo);
                for (long j = 0; j < n; j++) {
                    widen(type, inner, x, xOff + (o * n + j) * inner, w);
                    axpy(inner, 1f, w, 0, out, oo);
                }
            }
        }
    }

    /**
     * @return whether rows in the layout {@code (heads, sb, sh, st)} of {@link #attentionForwardStrided} lie as one
     *     contiguous {@code [batchHeads, t, d]} array
     */
    private static boolean dense(int batchHeads, int heads, long sb, long sh, long st, int t, int d) {
        return (t <= 1 || st == d) && (heads <= 1 || sh == (long) t * d)
                && (batchHeads / heads <= 1 || sb == (long) heads * t * d);
    }

    /**
     * The rows of an attention input in the layout of {@link #attentionForwardStrided} as a contiguous
     * {@code [batchHeads, t, d]} float array: float32 rows that already are one, in place; else widened (float32:
     * gathered) into memory of {@code arena}.
     */
    private MemorySegment widenedRows(Arena arena, int type, int batchHeads, int heads, long sb, long sh, long st,
                                      int t, int d, MemorySegment src, long off) {
        long n = (long) batchHeads * t * d;
        if (type == FLOAT32 && dense(batchHeads, heads, sb, sh, st, t, d)) {
            return src.asSlice(off * Float.BYTES, n * Float.BYTES);
        }
        MemorySegment f = arena.allocate(Math.max(1, n) * Float.BYTES, Float.BYTES);
        for (int p = 0; p < batchHeads; p++) {
            long base = off + (long) (p / heads) * sb + (long) (p % heads) * sh;
            for (int r = 0; r < t; r++) {
                MemorySegment row = f.asSlice(((long) p * t + r) * d * Float.BYTES, (long) d * Float.BYTES);
                widen(type, d, src, base + r * st, row);
            }
        }
        return f;
    }

    /**
     * @return where a kernel writes a result in the output layout {@code (heads, sb, sh, st)}: float32 rows that are
     *     one contiguous {@code [batchHeads, t, d]} array, in place; else new memory of {@code arena}, which
     *     {@link #narrowRows} then stores
     */
    private MemorySegment resultRows(Arena arena, int type, int batchHeads, int heads, long sb, long sh, long st,
                                     int t, int d, MemorySegment dst, long off) {
        long n = (long) batchHeads * t * d;
        return type == FLOAT32 && dense(batchHeads, heads, sb, sh, st, t, d)
                ? dst.asSlice(off * Float.BYTES, n * Float.BYTES)
                : arena.allocate(Math.max(1, n) * Float.BYTES, Float.BYTES);
    }

    /**
     * Narrows (float32: copies) a contiguous {@code [batchHeads, t, d]} float array into rows of {@code type} in the
     * layout of {@link #attentionForwardStrided}'s output; nothing when {@code src} is those rows already
     * ({@link #resultRows}).
     */
    private void narrowRows(int type, int batchHeads, int heads, long sb, long sh, long st, int t, int d,
                            MemorySegment src, MemorySegment dst, long off) {
        if (type == FLOAT32 && dense(batchHeads, heads, sb, sh, st, t, d)) {
            return;
        }
        for (int p = 0; p < batchHeads; p++) {
            long base = off + (long) (p / heads) * sb + (long) (p % heads) * sh;
            for (int r = 0; r < t; r++) {
                narrow(type, d, src.asSlice(((long) p * t + r) * d * Float.BYTES, (long) d * Float.BYTES), dst,
                        base + r * st);
            }
        }
    }

    @Override
    default void attentionForwardStrided(int type, int batchHeads, int heads, long batchStride, long headStride,
                                         long rowStride, long outBatchStride, long outHeadStride, long outRowStride,
                                         int t, int d, float scale, boolean causal, MemorySegment q, long qOff,
                                         MemorySegment k, long kOff, MemorySegment v, long vOff, MemorySegment out,
                                         long outOff, MemorySegment lse, long lseOff) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment o = resultRows(a, type, batchHeads, heads, outBatchStride, outHeadStride, outRowStride, t, d,
                    out, outOff);
            attentionForward(batchHeads, t, d, scale, causal,
                    widenedRows(a, type, batchHeads, heads, batchStride, headStride, rowStride, t, d, q, qOff), 0,
                    widenedRows(a, type, batchHeads, heads, batchStride, headStride, rowStride, t, d, k, kOff), 0,
                    widenedRows(a, type, batchHeads, heads, batchStride, headStride, rowStride, t, d, v, vOff), 0,
                    o, 0, lse, lseOff);
            narrowRows(type, batchHeads, heads, outBatchStride, outHeadStride, outRowStride, t, d, o, out, outOff);
        }
    }

    @Override
    default void attentionBackwardStrided(int type, int batchHeads, int heads, long batchStride, long headStride,
                                          long rowStride, long outBatchStride, long outHeadStride, long outRowStride,
                                          long doutBatchStride, long doutHeadStride, long doutRowStride,
                                          long gradBatchStride, long gradHeadStride, long gradRowStride, int t, int d,
                                          float scale, boolean causal, MemorySegment q, long qOff, MemorySegment k,
                                          long kOff, MemorySegment v, long vOff, MemorySegment out, long outOff,
                                          MemorySegment lse, long lseOff, MemorySegment dout, long doutOff,
                                          MemorySegment dq, long dqOff, MemorySegment dk, long dkOff, MemorySegment dv,
                                          long dvOff) {
        MemorySegment[] dst = {dq, dk, dv};
        long[] off = {dqOff, dkOff, dvOff};
        try (Arena a = Arena.ofConfined()) {
            MemorySegment[] g = new MemorySegment[3];
            for (int i = 0; i < 3; i++) {
                g[i] = resultRows(a, type, batchHeads, heads, gradBatchStride, gradHeadStride, gradRowStride, t, d,
                        dst[i], off[i]);
            }
            attentionBackward(batchHeads, t, d, scale, causal,
                    widenedRows(a, type, batchHeads, heads, batchStride, headStride, rowStride, t, d, q, qOff), 0,
                    widenedRows(a, type, batchHeads, heads, batchStride, headStride, rowStride, t, d, k, kOff), 0,
                    widenedRows(a, type, batchHeads, heads, batchStride, headStride, rowStride, t, d, v, vOff), 0,
                    widenedRows(a, type, batchHeads, heads, outBatchStride, outHeadStride, outRowStride, t, d, out,
                            outOff), 0, lse, lseOff,
                    widenedRows(a, type, batchHeads, heads, doutBatchStride, doutHeadStride, doutRowStride, t, d,
                            dout, doutOff), 0,
                    g[0], 0, g[1], 0, g[2], 0);
            for (int i = 0; i < 3; i++) {
                narrowRows(type, batchHeads, heads, gradBatchStride, gradHeadStride, gradRowStride, t, d, g[i], dst[i],
                        off[i]);
            }
        }
    }

    @Override
    default void pointwiseBackward16(int op, int type, long n, MemorySegment dy, long dyOff, MemorySegment x,
                                     long xOff, MemorySegment dx, long dxOff) {
        try (Arena arena = Arena.ofConfined()) {
            long c = Math.max(1, Math.min(n, CHUNK));
            MemorySegment wg = arena.allocate(c * Float.BYTES, Float.BYTES);
            MemorySegment wx = arena.allocate(c * Float.BYTES, Float.BYTES);
            MemorySegment wd = arena.allocate(c * Float.BYTES, Float.BYTES);
            for (long i = 0; i < n; i += CHUNK) {
                long m = Math.min(CHUNK, n - i);
                widen(type, m, dy, dyOff + i, wg);
                widen(type, m, x, xOff + i, wx);
                switch (op) {
                    case BACKWARD_RELU -> reluBackward(m, wg, 0, wx, 0, wd, 0);
                    case BACKWARD_GELU -> geluBackward(m, wg, 0, wx, 0, wd, 0);
                    default -> throw new IllegalArgumentException("pointwiseBackward16: unknown op " + op);
                }
                narrow(type, m, wd, dx, dxOff + i);
            }
        }
    }
}
