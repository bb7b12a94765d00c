package io.vram4j.compute;

import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorSpecies;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Arrays;

/**
 * Fused attention on the Vector API ({@link Kernels#attentionForward}, {@link Kernels#attentionBackward}),
 * FlashAttention's tiling on a CPU: the problems of a batch are handed out to the compute pool one at a time;
 * within one, a tile of {@value #BR} query rows meets tiles of {@value #BC} key/value rows copied into small
 * arrays (at head dimension 64: 8 KiB of queries and 32 KiB of keys and values, an L1/L2-sized working set), with
 * the online softmax kept per query row (running maximum and sum, the output accumulator rescaled when the
 * maximum grows). Dot products and row updates are vectorised over the head dimension, the exponentials over a
 * tile's keys with {@link VectorExp}, so repeated calls give the same bits. The backward pass (FlashAttention-2's
 * order: key tiles outside, query rows inside) recomputes each tile's probabilities from the saved log-sum-exps;
 * its per-problem arrays are {@code t x d}, never {@code t x t}. Arguments are trusted. Stateless.
 */
final class VectorAttention {
    /** Query rows per tile. */
    static final int BR = 32;
    /** Key and value rows per tile. */
    static final int BC = 64;

    private static final ValueLayout.OfFloat F = ValueLayout.JAVA_FLOAT_UNALIGNED;
    private static final VectorSpecies<Float> SP = VectorGemm.SP;
    private static final int L = SP.length();

    private VectorAttention() {
    }

    private static int helpers(int threads, MemorySegment... segments) {
        for (MemorySegment s : segments) {
            if (!VectorKernels.shareable(s)) {
                return 0;
            }
        }
        return threads - 1;
    }

    private static void load(MemorySegment seg, long off, float[] dst, int n) {
        MemorySegment.copy(seg, F, off * Float.BYTES, dst, 0, n);
    }

    private static void store(float[] src, int n, MemorySegment seg, long off) {
        MemorySegment.copy(src, 0, seg, F, off * Float.BYTES, n);
    }

    /** @return {@code a[ao..ao+d) . b[bo..bo+d)} */
    private static float dot(float[] a, int ao, float[] b, int bo, int d) {
        FloatVector acc = FloatVector.zero(SP);
        int c = 0;
        for (int bound = SP.loopBound(d); c < bound; c += L) {
            acc = FloatVector.fromArray(SP, a, ao + c).fma(FloatVector.fromArray(SP, b, bo + c), acc);
        }
        float s = Lanes.sum(acc);
        for (; c < d; c++) {
            s = Math.fma(a[ao + c], b[bo + c], s);
        }
        return s;
    }

    /** {@code tT[x * BC + c] = rows[(r0 + c) * d + x]}: {@code cols} rows of {@code d} floats, transposed into a tile. */
    private static void transpose(float[] rows, int r0, int cols, int d, float[] tT) {
        for (int c = 0; c < cols; c++) {
            int row = (r0 + c) * d;
            for (int x = 0; x < d; x++) {
                tT[x * BC + c] = rows[row + x];
            }
        }
    }

    /**
     * {@code s[c] = scale * (a[ao..ao+d) . tile row c)} for {@code c < n}, the tile transposed ({@link #transpose}):
     * vectorised across the tile's rows, so no horizontal sums.
     */
    private static void scores(float[] a, int ao, float[] tT, int n, int d, float scale, float[] s) {
        for (int c0 = 0; c0 < n; c0 += L) {
            FloatVector acc = FloatVector.zero(SP);
            for (int x = 0; x < d; x++) {
                acc = FloatVector.fromArray(SP, tT, x * BC + c0).fma(FloatVector.broadcast(SP, a[ao + x]), acc);
            }
            acc.mul(scale).intoArray(s, c0, SP.indexInRange(c0, n));
        }
    }

    /** {@code y[yo..yo+d) = y * beta + alpha * x[xo..xo+d)}. */
    private static void update(float beta, float alpha, float[] x, int xo, float[] y, int yo, int d) {
        int c = 0;
        for (int bound = SP.loopBound(d); c < bound; c += L) {
            FloatVector yv = FloatVector.fromArray(SP, y, yo + c);
            FloatVector.fromArray(SP, x, xo + c).fma(FloatVector.broadcast(SP, alpha), beta == 1f ? yv : yv.mul(beta))
                    .intoArray(y, yo + c);
        }
        for (; c < d; c++) {
            y[yo + c] = Math.fma(x[xo + c], alpha, beta == 1f ? y[yo + c] : y[yo + c] * beta);
        }
    }

    /** {@code s[c] = exp(s[c] - shift)} for {@code c < n}; @return their sum */
    private static float expShifted(float[] s, int n, float shift) {
        FloatVector sum = FloatVector.zero(SP);
        for (int c = 0; c < n; c += L) {
            VectorMask<Float> m = SP.indexInRange(c, n);
            FloatVector e = VectorExp.exp(FloatVector.fromArray(SP, s, c, m).sub(shift));
            sum = sum.add(e, m);
            e.intoArray(s, c, m);
        }
        return Lanes.sum(sum);
    }

    private static float exp(float x) {
        return VectorExp.exp(FloatVector.broadcast(SP, x)).lane(0);
    }

    // ------------------------------------------------------------------------------------------------ forward

    static void forward(int threads, int batchHeads, int t, int d, float scale, boolean causal,
                        MemorySegment q, long qOff, MemorySegment k, long kOff, MemorySegment v, long vOff,
                        MemorySegment out, long outOff, MemorySegment lse, long lseOff) {
        ComputePool.forEach(helpers(threads, q, k, v, out, lse), batchHeads, b -> {
            long base = (long) b * t * d;
            forwardOne(t, d, scale, causal, q, qOff + base, k, kOff + base, v, vOff + base, out, outOff + base,
                    lse, lseOff + (long) b * t);
        });
    }

    private static void forwardOne(int t, int d, float scale, boolean causal, MemorySegment q, long qOff,
                                   MemorySegment k, long kOff, MemorySegment v, long vOff,
                                   MemorySegment out, long outOff, MemorySegment lse, long lseOff) {
        float[] qt = new float[BR * d];
        float[] kt = new float[BC * d];
        float[] kT = new float[BC * d + L];
        float[] vt = new float[BC * d];
        float[] acc = new float[BR * d];
        float[] s = new float[BC];
        float[] m = new float[BR];
        float[] l = new float[BR];
        float[] rowLse = new float[BR];
        for (int i0 = 0; i0 < t; i0 += BR) {
            int rows = Math.min(BR, t - i0);
            load(q, qOff + (long) i0 * d, qt, rows * d);
            Arrays.fill(acc, 0f);
            Arrays.fill(m, Float.NEGATIVE_INFINITY);
            Arrays.fill(l, 0f);
            int keys = causal ? i0 + rows : t;
            for (int j0 = 0; j0 < keys; j0 += BC) {
                int cols = Math.min(BC, keys - j0);
                load(k, kOff + (long) j0 * d, kt, cols * d);
                transpose(kt, 0, cols, d, kT);
                load(v, vOff + (long) j0 * d, vt, cols * d);
                for (int r = 0; r < rows; r++) {
                    int n = causal ? Math.min(cols, i0 + r - j0 + 1) : cols;
                    if (n <= 0) {
                        continue;
                    }
                    scores(qt, r * d, kT, n, d, scale, s);
                    float max = Float.NEGATIVE_INFINITY;
                    for (int c = 0; c < n; c++) {
                        max = Math.max(max, s[c]);
                    }
                    float mNew = Math.max(m[r], max);
                    float alpha = exp(m[r] - mNew);
                    l[r] = l[r] * alpha + expShifted(s, n, mNew);
                    for (int c = 0; c < n; c++) {
                        update(c == 0 ? alpha : 1f, s[c], vt, c * d, acc, r * d, d);
                    }
                    m[r] = mNew;
                }
            }
            for (int r = 0; r < rows; r++) {
                float inv = 1f / l[r];
                for (int c = 0; c < d; c++) {
                    acc[r * d + c] *= inv;
                }
                rowLse[r] = m[r] + (float) Math.log(l[r]);
            }
            store(acc, rows * d, out, outOff + (long) i0 * d);
            store(rowLse, rows, lse, lseOff + i0);
        }
    }

    // ------------------------------------------------------------------------------------------------ backward

    static void backward(int threads, int batchHeads, int t, int d, float scale, boolean causal,
                         MemorySegment q, long qOff, MemorySegment k, long kOff, MemorySegment v, long vOff,
                         MemorySegment out, long outOff, MemorySegment lse, long lseOff,
                         MemorySegment dout, long doutOff,
                         MemorySegment dq, long dqOff, MemorySegment dk, long dkOff, MemorySegment dv, long dvOff) {
        ComputePool.forEach(helpers(threads, q, k, v, out, lse, dout, dq, dk, dv), batchHeads, b -> {
            long base = (long) b * t * d;
            backwardOne(t, d, scale, causal, q, qOff + base, k, kOff + base, v, vOff + base, out, outOff + base,
                    lse, lseOff + (long) b * t, dout, doutOff + base, dq, dqOff + base, dk, dkOff + base,
                    dv, dvOff + base);
        });
    }

    private static void backwardOne(int t, int d, float scale, boolean causal, MemorySegment q, long qOff,
                                    MemorySegment k, long kOff, MemorySegment v, long vOff,
                                    MemorySegment out, long outOff, MemorySegment lse, long lseOff,
                                    MemorySegment dout, long doutOff, MemorySegment dq, long dqOff,
                                    MemorySegment dk, long dkOff, MemorySegment dv, long dvOff) {
        int n = t * d;
        float[] qa = new float[n];
        float[] ka = new float[n];
        float[] va = new float[n];
        float[] ga = new float[n];
        load(q, qOff, qa, n);
        load(k, kOff, ka, n);
        load(v, vOff, va, n);
        load(dout, doutOff, ga, n);
        float[] lsea = new float[t];
        load(lse, lseOff, lsea, t);
        float[] di = new float[t];   // D_i = rowsum(dout_i * out_i), out read a tile at a time
        float[] tile = new float[BR * d];
        for (int i0 = 0; i0 < t; i0 += BR) {
            int rows = Math.min(BR, t - i0);
            load(out, outOff + (long) i0 * d, tile, rows * d);
            for (int r = 0; r < rows; r++) {
                di[i0 + r] = dot(ga, (i0 + r) * d, tile, r * d, d);
            }
        }
        float[] gq = new float[n];
        float[] gk = new float[n];
        float[] gv = new float[n];
        float[] p = new float[BC];
        float[] ds = new float[BC];
        float[] kT = new float[BC * d + L];
        float[] vT = new float[BC * d + L];
        for (int j0 = 0; j0 < t; j0 += BC) {
            int cols = Math.min(BC, t - j0);
            transpose(ka, j0, cols, d, kT);
            transpose(va, j0, cols, d, vT);
            for (int i = causal ? j0 : 0; i < t; i++) {
                int cnt = causal ? Math.min(cols, i - j0 + 1) : cols;
                scores(qa, i * d, kT, cnt, d, scale, p);
                expShifted(p, cnt, lsea[i]);
                scores(ga, i * d, vT, cnt, d, 1f, ds);
                for (int c = 0; c < cnt; c++) {
                    ds[c] = p[c] * (ds[c] - di[i]) * scale;
                }
                for (int c = 0; c < cnt; c++) {
                    int row = (j0 + c) * d;
                    update(1f, p[c], ga, i * d, gv, row, d);
                    update(1f, ds[c], qa, i * d, gk, row, d);
                    update(1f, ds[c], ka, row, gq, i * d, d);
                }
            }
        }
        store(gq, n, dq, dqOff);
        store(gk, n, dk, dkOff);
        store(gv, n, dv, dvOff);
    }
}
