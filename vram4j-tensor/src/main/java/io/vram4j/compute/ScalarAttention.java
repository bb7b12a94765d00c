package io.vram4j.compute;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * The reference fused attention ({@link Kernels#attentionForward}, {@link Kernels#attentionBackward}): one query
 * row at a time, the online softmax of FlashAttention taken one key at a time (a running maximum {@code m}, a
 * running sum {@code l} rescaled by {@code exp(m_old - m_new)}, the output accumulated likewise), in double and
 * rounded once to float. Nothing of size {@code t x t} exists, not even one row of it. Arguments are trusted
 * ({@link CheckedKernels} checked them). Stateless.
 */
final class ScalarAttention {
    private static final ValueLayout.OfFloat F = ValueLayout.JAVA_FLOAT_UNALIGNED;

    private ScalarAttention() {
    }

    private static double dot(MemorySegment a, long aRow, MemorySegment b, long bRow, int d) {
        double s = 0;
        for (int c = 0; c < d; c++) {
            s += (double) a.getAtIndex(F, aRow + c) * b.getAtIndex(F, bRow + c);
        }
        return s;
    }

    static void forward(int batchHeads, int t, int d, float scale, boolean causal,
                        MemorySegment q, long qOff, MemorySegment k, long kOff, MemorySegment v, long vOff,
                        MemorySegment out, long outOff, MemorySegment lse, long lseOff) {
        double[] acc = new double[d];
        for (int b = 0; b < batchHeads; b++) {
            long base = (long) b * t * d;
            for (int i = 0; i < t; i++) {
                long qi = qOff + base + (long) i * d;
                double m = Double.NEGATIVE_INFINITY;
                double l = 0;
                java.util.Arrays.fill(acc, 0);
                int keys = causal ? i + 1 : t;
                for (int j = 0; j < keys; j++) {
                    double s = scale * dot(q, qi, k, kOff + base + (long) j * d, d);
                    double mNew = Math.max(m, s);
                    double alpha = m == Double.NEGATIVE_INFINITY ? 0 : Math.exp(m - mNew);
                    double p = Math.exp(s - mNew);
                    l = l * alpha + p;
                    long vj = vOff + base + (long) j * d;
                    for (int c = 0; c < d; c++) {
                        acc[c] = acc[c] * alpha + p * v.getAtIndex(F, vj + c);
                    }
                    m = mNew;
                }
                long oi = outOff + base + (long) i * d;
                for (int c = 0; c < d; c++) {
                    out.setAtIndex(F, oi + c, (float) (acc[c] / l));
                }
                lse.setAtIndex(F, lseOff + (long) b * t + i, (float) (m + Math.log(l)));
            }
        }
    }

    static void backward(int batchHeads, int t, int d, float scale, boolean causal,
                         MemorySegment q, long qOff, MemorySegment k, long kOff, MemorySegment v, long vOff,
                         MemorySegment out, long outOff, MemorySegment lse, long lseOff,
                         MemorySegment dout, long doutOff,
                         MemorySegment dq, long dqOff, MemorySegment dk, long dkOff, MemorySegment dv, long dvOff) {
        long n = (long) t * d;
        double[] gq = new double[t * d];
        double[] gk = new double[t * d];
        double[] gv = new double[t * d];
        for (int b = 0; b < batchHeads; b++) {
            long base = (long) b * n;
            java.util.Arrays.fill(gq, 0);
            java.util.Arrays.fill(gk, 0);
            java.util.Arrays.fill(gv, 0);
            for (int i = 0; i < t; i++) {
                long qi = qOff + base + (long) i * d;
                long gi = doutOff + base + (long) i * d;
                double di = dot(dout, gi, out, outOff + base + (long) i * d, d);
                double lsei = lse.getAtIndex(F, lseOff + (long) b * t + i);
                int keys = causal ? i + 1 : t;
                for (int j = 0; j < keys; j++) {
                    long kj = kOff + base + (long) j * d;
                    long vj = vOff + base + (long) j * d;
                    double p = Math.exp(scale * dot(q, qi, k, kj, d) - lsei);
                    double ds = p * (dot(dout, gi, v, vj, d) - di) * scale;
                    for (int c = 0; c < d; c++) {
                        gv[j * d + c] += p * dout.getAtIndex(F, gi + c);
                        gq[i * d + c] += ds * k.getAtIndex(F, kj + c);
                        gk[j * d + c] += ds * q.getAtIndex(F, qi + c);
                    }
                }
            }
            for (int e = 0; e < t * d; e++) {
                dq.setAtIndex(F, dqOff + base + e, (float) gq[e]);
                dk.setAtIndex(F, dkOff + base + e, (float) gk[e]);
                dv.setAtIndex(F, dvOff + base + e, (float) gv[e]);
            }
        }
    }
}
