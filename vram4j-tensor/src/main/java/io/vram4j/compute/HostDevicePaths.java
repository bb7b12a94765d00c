package io.vram4j.compute;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * The CPU kernels of the "device paths" block of {@link Kernels} (strided gathers and copies, float32 and 16-bit;
 * broadcasting binary ops, float32 and 16-bit; dimension reductions, dropout, NLL loss, embedding, causal mask), shared
 * by {@link ScalarKernels} and {@link VectorKernels}:
 * plain loops that reproduce, bit for bit, the loops the tensor ops run on host memory, so that a tensor op computes
 * the same values whether it goes through these kernels or through its host loop. The reductions go through the
 * implementation's own {@link #sum} and {@link #axpy}. No checks here: {@link CheckedKernels} checks.
 */
interface HostDevicePaths extends Kernels {
    ValueLayout.OfFloat F = ValueLayout.JAVA_FLOAT_UNALIGNED;
    ValueLayout.OfLong I64 = ValueLayout.JAVA_LONG_UNALIGNED;
    ValueLayout.OfShort H = ValueLayout.JAVA_SHORT_UNALIGNED;

    /** SplitMix64's finalizer (Steele, Lea and Flood, "Fast splittable pseudorandom number generators", 2014). */
    private static long mix(long z) {
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }

    /**
     * The counter-based uniform in [0, 1) of element {@code i} of the dropout mask drawn with {@code seed}
     * ({@link Kernels#dropout}).
     */
    static float dropoutUniform(long seed, long i) {
        return (mix(seed + i * 0x9E3779B97F4A7C15L) >>> 40) * 0x1.0p-24f;
    }

    /** One row of a 4-dimensional walk ({@link #rows4}): the offsets of its first element in each operand. */
    @FunctionalInterface
    interface Row4 {
        void at(long a, long b, long out);
    }

    /**
     * Walks the {@code d0 * d1 * d2} rows of extents {@code d0..d3}, outermost first, calling {@code row} with the
     * offset of each row's first element in two strided operands and in a contiguous output ({@code d3} apart); the
     * caller's loop runs along the row, where the work is.
     */
    private static void rows4(int d0, int d1, int d2, int d3, long aOff, long as0, long as1, long as2, long bOff,
                              long bs0, long bs1, long bs2, long outOff, Row4 row) {
        long o = outOff;
        for (int i0 = 0; i0 < d0; i0++) {
            for (int i1 = 0; i1 < d1; i1++) {
                for (int i2 = 0; i2 < d2; i2++, o += d3) {
                    row.at(aOff + i0 * as0 + i1 * as1 + i2 * as2, bOff + i0 * bs0 + i1 * bs1 + i2 * bs2, o);
                }
            }
        }
    }

    /** The element rule of {@link #binary4}, {@link #binary16} and {@link #binaryMixed}: 0 add, 1 sub, 2 mul, else div. */
    private static float binop(int op, float x, float y) {
        return switch (op) {
            case 0 -> x + y;
            case 1 -> x - y;
            case 2 -> x * y;
            default -> x / y;
        };
    }

    @Override
    default void copy4(int d0, int d1, int d2, int d3, MemorySegment src, long srcOff, long s0, long s1, long s2,
                       long s3, MemorySegment dst, long dstOff, long t0, long t1, long t2, long t3) {
        rows4(d0, d1, d2, d3, srcOff, s0, s1, s2, dstOff, t0, t1, t2, 0, (si, di, unused) -> {
            for (int i3 = 0; i3 < d3; i3++) {
                dst.setAtIndex(F, di + i3 * t3, src.getAtIndex(F, si + i3 * s3));
            }
        });
    }

    @Override
    default void copy16(int d0, int d1, int d2, int d3, MemorySegment src, long srcOff, long s0, long s1, long s2,
                        long s3, MemorySegment dst, long dstOff, long t0, long t1, long t2, long t3) {
        rows4(d0, d1, d2, d3, srcOff, s0, s1, s2, dstOff, t0, t1, t2, 0, (si, di, unused) -> {
            for (int i3 = 0; i3 < d3; i3++) {
                dst.setAtIndex(H, di + i3 * t3, src.getAtIndex(H, si + i3 * s3));
            }
        });
    }

    @Override
    default void binary4(int op, int d0, int d1, int d2, int d3, MemorySegment a, long aOff, long as0, long as1,
                         long as2, long as3, MemorySegment b, long bOff, long bs0, long bs1, long bs2, long bs3,
                         MemorySegment out, long outOff) {
        rows4(d0, d1, d2, d3, aOff, as0, as1, as2, bOff, bs0, bs1, bs2, outOff, (ia, ib, o) -> {
            for (int i3 = 0; i3 < d3; i3++) {
                out.setAtIndex(F, o + i3, binop(op, a.getAtIndex(F, ia + i3 * as3), b.getAtIndex(F, ib + i3 * bs3)));
            }
        });
    }

    @Override
    default void binary16(int op, int type, int d0, int d1, int d2, int d3, MemorySegment a, long aOff, long as0,
                          long as1, long as2, long as3, MemorySegment b, long bOff, long bs0, long bs1, long bs2,
                          long bs3, MemorySegment out, long outOff) {
        boolean fp16 = type == FLOAT16;
        rows4(d0, d1, d2, d3, aOff, as0, as1, as2, bOff, bs0, bs1, bs2, outOff, (ia, ib, o) -> {
            for (int i3 = 0; i3 < d3; i3++) {
                short ha = a.getAtIndex(H, ia + i3 * as3);
                short hb = b.getAtIndex(H, ib + i3 * bs3);
                float r = binop(op, widen(fp16, ha), widen(fp16, hb));
                out.setAtIndex(H, o + i3, fp16 ? Half.floatToFp16(r) : Half.floatToBf16(r));
            }
        });
    }

    @Override
    default void binaryMixed(int op, int type, int half16, int d0, int d1, int d2, int d3, MemorySegment a, long aOff,
                             long as0, long as1, long as2, long as3, MemorySegment b, long bOff, long bs0, long bs1,
                             long bs2, long bs3, MemorySegment out, long outOff) {
        boolean fp16 = type == FLOAT16;
        rows4(d0, d1, d2, d3, aOff, as0, as1, as2, bOff, bs0, bs1, bs2, outOff, (ia, ib, o) -> {
            for (int i3 = 0; i3 < d3; i3++) {
                float x = half16 == 0 ? widen(fp16, a.getAtIndex(H, ia + i3 * as3)) : a.getAtIndex(F, ia + i3 * as3);
                float y = half16 == 1 ? widen(fp16, b.getAtIndex(H, ib + i3 * bs3)) : b.getAtIndex(F, ib + i3 * bs3);
                out.setAtIndex(F, o + i3, binop(op, x, y));
            }
        });
    }

    private static float widen(boolean fp16, short h) {
        return fp16 ? Half.fp16ToFloat(h) : Half.bf16ToFloat(h);
    }

    @Override
    default void sumDim(int outer, int n, int inner, MemorySegment x, long xOff, MemorySegment out, long outOff) {
        for (long o = 0; o < outer; o++) {
            long xo = xOff + o * n * inner;
            long oo = outOff + o * inner;
            if (inner == 1) {
                out.setAtIndex(F, oo, 0f + sum(n, x, xo));
                continue;
            }
            fill(inner, 0f, out, oo);
            for (long j = 0; j < n; j++) {
                axpy(inner, 1f, x, xo + j * inner, out, oo);
            }
        }
    }

    @Override
    default void maxDim(int outer, int n, int inner, MemorySegment x, long xOff, MemorySegment values, long valuesOff,
                        MemorySegment indices, long indicesOff) {
        for (long o = 0; o < outer; o++) {
            for (long i = 0; i < inner; i++) {
                long base = xOff + o * n * inner + i;
                float best = x.getAtIndex(F, base);
                long arg = 0;
                for (long j = 1; j < n && !Float.isNaN(best); j++) {
                    float v = x.getAtIndex(F, base + j * inner);
                    if (v > best || Float.isNaN(v)) {
                        best = v;
                        arg = j;
                    }
                }
                long oi = o * inner + i;
                indices.setAtIndex(I64, indicesOff + oi, arg);
                if (values != null) {
                    values.setAtIndex(F, valuesOff + oi, best);
                }
            }
        }
    }

    @Override
    default void dropout(long n, float p, float scale, long seed, MemorySegment x, long xOff, MemorySegment out,
                         long outOff, MemorySegment mask, long maskOff) {
        for (long i = 0; i < n; i++) {
            boolean keep = dropoutUniform(seed, i) >= p;
            mask.set(ValueLayout.JAVA_BYTE, maskOff + i, (byte) (keep ? 1 : 0));
            out.setAtIndex(F, outOff + i, keep ? x.getAtIndex(F, xOff + i) * scale : 0f);
        }
    }

    @Override
    default void dropoutBackward(long n, float scale, MemorySegment dy, long dyOff, MemorySegment mask, long maskOff,
                                 MemorySegment dx, long dxOff) {
        for (long i = 0; i < n; i++) {
            boolean keep = mask.get(ValueLayout.JAVA_BYTE, maskOff + i) != 0;
            dx.setAtIndex(F, dxOff + i, keep ? dy.getAtIndex(F, dyOff + i) * scale : 0f);
        }
    }

    /** Checks every target before anything is written; @return the number of targets other than ignoreIndex */
    private static int keptTargets(int n, int c, long ignoreIndex, MemorySegment targets, long targetsOff) {
        int count = 0;
        for (long i = 0; i < n; i++) {
            long t = targets.getAtIndex(I64, targetsOff + i);
            if (t == ignoreIndex) {
                continue;
            }
            if (t < 0 || t >= c) {
                throw new IndexOutOfBoundsException("target " + t + " is out of bounds for " + c + " classes");
            }
            count++;
        }
        return count;
    }

    @Override
    default void nllLoss(int n, int c, long ignoreIndex, MemorySegment logp, long logpOff, MemorySegment targets,
                         long targetsOff, MemorySegment out, long outOff) {
        int count = keptTargets(n, c, ignoreIndex, targets, targetsOff);
        double sum = 0;
        for (long i = 0; i < n; i++) {
            long t = targets.getAtIndex(I64, targetsOff + i);
            if (t != ignoreIndex) {
                sum += logp.getAtIndex(F, logpOff + i * c + t);
            }
        }
        out.setAtIndex(F, outOff, (float) (-sum / count));
    }

    @Override
    default void nllLossBackward(int n, int c, long ignoreIndex, MemorySegment g, long gOff, MemorySegment targets,
                                 long targetsOff, MemorySegment dlogp, long dlogpOff) {
        int count = keptTargets(n, c, ignoreIndex, targets, targetsOff);
        float v = -g.getAtIndex(F, gOff) / count;
        fill((long) n * c, 0f, dlogp, dlogpOff);
        for (long i = 0; i < n; i++) {
            long t = targets.getAtIndex(I64, targetsOff + i);
            if (t != ignoreIndex) {
                dlogp.setAtIndex(F, dlogpOff + i * c + t, v);
            }
        }
    }

    private static void checkRows(long count, int rows, MemorySegment idx, long idxOff) {
        for (long i = 0; i < count; i++) {
            long row = idx.getAtIndex(I64, idxOff + i);
            if (row < 0 || row >= rows) {
                throw new IndexOutOfBoundsException("index " + row + " is out of range for an embedding of " + rows
                        + " rows");
            }
        }
    }

    @Override
    default void embedding(long count, int rows, int cols, MemorySegment weight, long weightOff, MemorySegment idx,
                           long idxOff, MemorySegment out, long outOff) {
        checkRows(count, rows, idx, idxOff);
        for (long i = 0; i < count; i++) {
            long row = idx.getAtIndex(I64, idxOff + i);
            MemorySegment.copy(weight, (weightOff + row * cols) * Float.BYTES, out, (outOff + i * cols) * Float.BYTES,
                    (long) cols * Float.BYTES);
        }
    }

    @Override
    default void embeddingBackward(long count, int rows, int cols, MemorySegment g, long gOff, MemorySegment idx,
                                   long idxOff, MemorySegment dweight, long dweightOff) {
        checkRows(count, rows, idx, idxOff);
        fill((long) rows * cols, 0f, dweight, dweightOff);
        for (long i = 0; i < count; i++) {
            axpy(cols, 1f, g, gOff + i * cols, dweight, dweightOff + idx.getAtIndex(I64, idxOff + i) * cols);
        }
    }

    /** Widens matrix {@code i} of a batch of 16-bit matrices, {@code op(X)} of {@code rows x cols}, into row-major floats. */
    private static void widen(boolean bf16, MemorySegment x, long off, int ld, boolean trans, int rows, int cols,
                              MemorySegment dst, long dstOff) {
        for (int r = 0; r < rows; r++) {
            for (int j = 0; j < cols; j++) {
                short h = x.getAtIndex(ValueLayout.JAVA_SHORT_UNALIGNED, off + (trans ? (long) j * ld + r
                        : (long) r * ld + j));
                dst.setAtIndex(F, dstOff + (long) r * cols + j, bf16 ? Half.bf16ToFloat(h) : Half.fp16ToFloat(h));
            }
        }
    }

    @Override
    default void gemmBatched16(boolean bf16, int batch, boolean transA, boolean transB, int m, int n, int k,
                               float alpha, MemorySegment a, long aOff, int lda, long strideA, MemorySegment b,
                               long bOff, int ldb, long strideB, float beta, MemorySegment c, long cOff, int ldc,
                               long strideC) {
        if (batch == 0 || m == 0 || n == 0) {
            return;
        }
        try (Arena arena = Arena.ofConfined()) {
            long mk = (long) m * k;
            long kn = (long) k * n;
            long mn = (long) m * n;
            MemorySegment a32 = arena.allocate(Math.max(1, batch * mk) * Float.BYTES, 64);
            MemorySegment b32 = arena.allocate(Math.max(1, batch * kn) * Float.BYTES, 64);
            MemorySegment c32 = arena.allocate(batch * mn * Float.BYTES, 64);
            for (int i = 0; i < batch; i++) {
                widen(bf16, a, aOff + i * strideA, lda, transA, m, k, a32, i * mk);
                widen(bf16, b, bOff + i * strideB, ldb, transB, k, n, b32, i * kn);
                if (beta != 0) {
                    widen(bf16, c, cOff + i * strideC, ldc, false, m, n, c32, i * mn);
                }
            }
            sgemmBatched(batch, false, false, m, n, k, alpha, a32, 0, Math.max(1, k), mk, b32, 0, Math.max(1, n), kn,
                    beta, c32, 0, n, mn);
            for (int i = 0; i < batch; i++) {
                for (int r = 0; r < m; r++) {
                    for (int j = 0; j < n; j++) {
                        float v = c32.getAtIndex(F, i * mn + (long) r * n + j);
                        c.setAtIndex(ValueLayout.JAVA_SHORT_UNALIGNED, cOff + i * strideC + (long) r * ldc + j,
                                bf16 ? Half.floatToBf16(v) : Half.floatToFp16(v));
                    }
                }
            }
        }
    }

    @Override
    default void sgdMulti(int count, long[] sizes, MemorySegment[] params, MemorySegment[] grads, MemorySegment[] bufs,
                          float lr, float momentum, float weightDecay, boolean nesterov, boolean first) {
        for (int t = 0; t < count; t++) {   // the loop of optim.SGD on host memory
            MemorySegment p = params[t];
            MemorySegment g = grads[t];
            MemorySegment b = bufs == null ? null : bufs[t];
            for (long i = 0; i < sizes[t]; i++) {
                float pv = p.getAtIndex(F, i);
                float d = g.getAtIndex(F, i);
                if (weightDecay != 0) {
                    d += weightDecay * pv;
                }
                if (b != null) {
                    float bv = first ? d : momentum * b.getAtIndex(F, i) + d;
                    b.setAtIndex(F, i, bv);
                    d = nesterov ? d + momentum * bv : bv;
                }
                p.setAtIndex(F, i, pv - lr * d);
            }
        }
    }

    @Override
    default void adamwMulti(int count, long[] sizes, MemorySegment[] params, MemorySegment[] grads, MemorySegment[] ms,
                            MemorySegment[] vs, float beta1, float beta2, float eps, float decay, float stepSize,
                            float bc2Sqrt) {
        for (int t = 0; t < count; t++) {   // the loop of optim.AdamW on host memory
            MemorySegment p = params[t];
            MemorySegment g = grads[t];
            MemorySegment m = ms[t];
            MemorySegment v = vs[t];
            for (long i = 0; i < sizes[t]; i++) {
                float gv = g.getAtIndex(F, i);
                float mv = m.getAtIndex(F, i);
                mv += (gv - mv) * (1 - beta1);
                float vv = beta2 * v.getAtIndex(F, i) + (1 - beta2) * gv * gv;
                m.setAtIndex(F, i, mv);
                v.setAtIndex(F, i, vv);
                float denom = (float) Math.sqrt(vv) / bc2Sqrt + eps;
                p.setAtIndex(F, i, p.getAtIndex(F, i) * decay - stepSize * mv / denom);
            }
        }
    }

    @Override
    default void iota(long n, MemorySegment out, long outOff) {
        for (long i = 0; i < n; i++) {
            out.setAtIndex(I64, outOff + i, i);
        }
    }

    @Override
    default void maskUpper(long mats, int t, int s, float fill, MemorySegment x, long xOff, MemorySegment out,
                           long outOff) {
        for (long b = 0; b < mats; b++) {
            for (int i = 0; i < t; i++) {
                long row = b * t * s + (long) i * s;
                int kept = Math.min(i + 1, s);
                copy(kept, x, xOff + row, out, outOff + row);
                fill(s - kept, fill, out, outOff + row + kept);
            }
        }
    }
}
