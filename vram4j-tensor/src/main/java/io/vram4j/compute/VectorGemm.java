package io.vram4j.compute;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorSpecies;

/**
 * Single-threaded packed and blocked sgemm on the Vector API, in the structure of Goto's algorithm (and BLIS):
 *
 * <pre>
 *   for jc in [n0, n1) step NC                         columns of C and op(B)
 *     for pc in [0, k) step KC                         the shared dimension
 *       pack op(B)[pc:pc+KC, jc:jc+NC]  -> bp          KC x NR column panels, zero-padded
 *       for ic in [m0, m1) step MC                     rows of C and op(A)
 *         pack op(A)[ic:ic+MC, pc:pc+KC] -> ap         MR x KC row panels, zero-padded
 *         for jr in [0, NC) step NR                    one B panel: stays in L1 over the ir loop
 *           for ir in [0, MC) step MR
 *             micro-kernel: C[ir:ir+MR, jr:jr+NR] (+)= alpha * ap_panel * bp_panel
 * </pre>
 *
 * The micro-kernel keeps an {@code MR x NR} tile of C in {@code MR * NR / L} vector registers
 * ({@code L} = floats per vector of the preferred species: 16 with AVX-512). For each {@code p} it loads
 * {@code NR / L} vectors of the B panel and broadcasts {@code MR} values of the A panel, and does one FMA per
 * accumulator. Packing absorbs the transposes, so the kernel only ever sees one layout; it also zero-pads
 * the edges, so the kernel always computes a full tile and only the store is partial.
 *
 * <p>{@code beta} is applied on the first {@code KC} block only (later blocks accumulate with beta 1); with
 * {@code beta == 0} the old C is never read. Every element of C is computed with the same sequence of
 * operations whatever rows or columns range a call covers, so splitting C between threads gives bitwise
 * the same result as one thread.
 *
 * <p>Instances hold the packing buffers and are not thread-safe: use one per thread.
 */
final class VectorGemm {

    static final VectorSpecies<Float> SP = FloatVector.SPECIES_PREFERRED;
    static final int L = SP.length();
    /** Rows of the register tile. */
    static final int MR = 12;
    /** Columns of the register tile: two vectors. */
    static final int NR = 2 * L;
    /** Depth of a packed block (B panel of KC x NR floats = 32 KiB with AVX-512: L1-resident). */
    static final int KC = 256;
    /** Rows of a packed A block (MC x KC floats = 192 KiB: L2-resident). */
    static final int MC = 16 * MR;
    /** Columns of a packed B block. */
    static final int NC = 64 * NR;

    private static final ValueLayout.OfFloat F = ValueLayout.JAVA_FLOAT_UNALIGNED;
    private static final ByteOrder BO = ByteOrder.nativeOrder();

    private final float[] ap = new float[MC * KC];
    private final float[] bp = new float[NC * KC];
    private final float[] tile = new float[MR * NR];

    /**
     * Computes {@code C[m0:m1, n0:n1] = alpha * op(A)[m0:m1, :] * op(B)[:, n0:n1] + beta * C[m0:m1, n0:n1]}.
     * Arguments are as in {@link Kernels#sgemm}, already validated; {@code k > 0} and {@code alpha != 0}.
     */
    void gemm(boolean ta, boolean tb, int m0, int m1, int n0, int n1, int k, float alpha,
              MemorySegment a, long aOff, int lda, MemorySegment b, long bOff, int ldb,
              float beta, MemorySegment c, long cOff, int ldc) {
        for (int jc = n0; jc < n1; jc += NC) {
            int nc = Math.min(NC, n1 - jc);
            for (int pc = 0; pc < k; pc += KC) {
                int kc = Math.min(KC, k - pc);
                packB(tb, b, bOff, ldb, pc, kc, jc, nc);
                float bt = pc == 0 ? beta : 1f;
                for (int ic = m0; ic < m1; ic += MC) {
                    int mc = Math.min(MC, m1 - ic);
                    packA(ta, a, aOff, lda, ic, mc, pc, kc);
                    for (int jr = 0; jr < nc; jr += NR) {
                        int nr = Math.min(NR, nc - jr);
                        for (int ir = 0; ir < mc; ir += MR) {
                            int mr = Math.min(MR, mc - ir);
                            long cAt = cOff + (long) (ic + ir) * ldc + jc + jr;
                            kernel(ir * kc, jr * kc, kc, c, cAt, ldc, alpha, bt, mr, nr);
                        }
                    }
                }
            }
        }
    }

    // ------------------------------------------------------------------------------------------------ packing

    /** Packs op(A)[ic:ic+mc, pc:pc+kc] as MR-row panels: element (i, p) at (i / MR) * MR * kc + p * MR + i % MR. */
    private void packA(boolean ta, MemorySegment a, long aOff, int lda, int ic, int mc, int pc, int kc) {
        float[] ap = this.ap;
        for (int ir = 0; ir < mc; ir += MR) {
            int mr = Math.min(MR, mc - ir);
            int base = ir * kc;
            if (!ta) {
                for (int r = 0; r < mr; r++) {
                    long row = (aOff + (long) (ic + ir + r) * lda + pc) * Float.BYTES;
                    for (int p = 0, o = base + r; p < kc; p++, o += MR) {
                        ap[o] = a.get(F, row + (long) p * Float.BYTES);
                    }
                }
            } else {
                for (int p = 0; p < kc; p++) {
                    long row = (aOff + (long) (pc + p) * lda + ic + ir) * Float.BYTES;
                    int o = base + p * MR;
                    for (int r = 0; r < mr; r++) {
                        ap[o + r] = a.get(F, row + (long) r * Float.BYTES);
                    }
                }
            }
            if (mr < MR) {
                for (int p = 0; p < kc; p++) {
                    for (int r = mr; r < MR; r++) {
                        ap[base + p * MR + r] = 0f;
                    }
                }
            }
        }
    }

    /** Packs op(B)[pc:pc+kc, jc:jc+nc] as NR-column panels: element (p, j) at (j / NR) * NR * kc + p * NR + j % NR. */
    private void packB(boolean tb, MemorySegment b, long bOff, int ldb, int pc, int kc, int jc, int nc) {
        float[] bp = this.bp;
        for (int jr = 0; jr < nc; jr += NR) {
            int nr = Math.min(NR, nc - jr);
            int base = jr * kc;
            if (!tb) {
                if (nr == NR) {
                    for (int p = 0; p < kc; p++) {
                        long row = (bOff + (long) (pc + p) * ldb + jc + jr) * Float.BYTES;
                        int o = base + p * NR;
                        for (int v = 0; v < NR; v += L) {
                            FloatVector.fromMemorySegment(SP, b, row + (long) v * Float.BYTES, BO).intoArray(bp, o + v);
                        }
                    }
                } else {
                    for (int p = 0; p < kc; p++) {
                        long row = (bOff + (long) (pc + p) * ldb + jc + jr) * Float.BYTES;
                        int o = base + p * NR;
                        for (int j = 0; j < nr; j++) {
                            bp[o + j] = b.get(F, row + (long) j * Float.BYTES);
                        }
                        for (int j = nr; j < NR; j++) {
                            bp[o + j] = 0f;
                        }
                    }
                }
            } else {
                for (int j = 0; j < nr; j++) {
                    long col = (bOff + (long) (jc + jr + j) * ldb + pc) * Float.BYTES;
                    for (int p = 0, o = base + j; p < kc; p++, o += NR) {
                        bp[o] = b.get(F, col + (long) p * Float.BYTES);
                    }
                }
                if (nr < NR) {
                    for (int p = 0; p < kc; p++) {
                        for (int j = nr; j < NR; j++) {
                            bp[base + p * NR + j] = 0f;
                        }
                    }
                }
            }
        }
    }

    // ------------------------------------------------------------------------------------------------ micro-kernel

    private void kernel(int ao, int bo, int kc, MemorySegment c, long cAt, int ldc, float alpha, float beta,
                        int mr, int nr) {
        float[] ap = this.ap;
        float[] bp = this.bp;
        FloatVector z = FloatVector.zero(SP);
        FloatVector c00 = z, c01 = z, c10 = z, c11 = z, c20 = z, c21 = z, c30 = z, c31 = z;
        FloatVector c40 = z, c41 = z, c50 = z, c51 = z, c60 = z, c61 = z, c70 = z, c71 = z;
        FloatVector c80 = z, c81 = z, c90 = z, c91 = z, ca0 = z, ca1 = z, cb0 = z, cb1 = z;
        for (int p = 0; p < kc; p++, ao += MR, bo += NR) {
            FloatVector b0 = FloatVector.fromArray(SP, bp, bo);
            FloatVector b1 = FloatVector.fromArray(SP, bp, bo + L);
            FloatVector av = FloatVector.broadcast(SP, ap[ao]);
            c00 = av.fma(b0, c00);
            c01 = av.fma(b1, c01);
            av = FloatVector.broadcast(SP, ap[ao + 1]);
            c10 = av.fma(b0, c10);
            c11 = av.fma(b1, c11);
            av = FloatVector.broadcast(SP, ap[ao + 2]);
            c20 = av.fma(b0, c20);
            c21 = av.fma(b1, c21);
            av = FloatVector.broadcast(SP, ap[ao + 3]);
            c30 = av.fma(b0, c30);
            c31 = av.fma(b1, c31);
            av = FloatVector.broadcast(SP, ap[ao + 4]);
            c40 = av.fma(b0, c40);
            c41 = av.fma(b1, c41);
            av = FloatVector.broadcast(SP, ap[ao + 5]);
            c50 = av.fma(b0, c50);
            c51 = av.fma(b1, c51);
            av = FloatVector.broadcast(SP, ap[ao + 6]);
            c60 = av.fma(b0, c60);
            c61 = av.fma(b1, c61);
            av = FloatVector.broadcast(SP, ap[ao + 7]);
            c70 = av.fma(b0, c70);
            c71 = av.fma(b1, c71);
            av = FloatVector.broadcast(SP, ap[ao + 8]);
            c80 = av.fma(b0, c80);
            c81 = av.fma(b1, c81);
            av = FloatVector.broadcast(SP, ap[ao + 9]);
            c90 = av.fma(b0, c90);
            c91 = av.fma(b1, c91);
            av = FloatVector.broadcast(SP, ap[ao + 10]);
            ca0 = av.fma(b0, ca0);
            ca1 = av.fma(b1, ca1);
            av = FloatVector.broadcast(SP, ap[ao + 11]);
            cb0 = av.fma(b0, cb0);
            cb1 = av.fma(b1, cb1);
        }
        float[] t = tile;
        c00.intoArray(t, 0);
        c01.intoArray(t, 0 + L);
        c10.intoArray(t, NR);
        c11.intoArray(t, NR + L);
        c20.intoArray(t, 2 * NR);
        c21.intoArray(t, 2 * NR + L);
        c30.intoArray(t, 3 * NR);
        c31.intoArray(t, 3 * NR + L);
        c40.intoArray(t, 4 * NR);
        c41.intoArray(t, 4 * NR + L);
        c50.intoArray(t, 5 * NR);
        c51.intoArray(t, 5 * NR + L);
        c60.intoArray(t, 6 * NR);
        c61.intoArray(t, 6 * NR + L);
        c70.intoArray(t, 7 * NR);
        c71.intoArray(t, 7 * NR + L);
        c80.intoArray(t, 8 * NR);
        c81.intoArray(t, 8 * NR + L);
        c90.intoArray(t, 9 * NR);
        c91.intoArray(t, 9 * NR + L);
        ca0.intoArray(t, 10 * NR);
        ca1.intoArray(t, 10 * NR + L);
        cb0.intoArray(t, 11 * NR);
        cb1.intoArray(t, 11 * NR + L);
        if (mr == MR && nr == NR) {
            storeFull(t, c, cAt, ldc, alpha, beta);
        } else {
            storePartial(t, c, cAt, ldc, alpha, beta, mr, nr);
        }
    }

    /**
     * C tile (+)= the accumulator tile {@code t}: {@code C = alpha * t} when beta is 0 (old C not read),
     * else {@code C = alpha * t + beta * C} with one rounding for the final multiply-add.
     */
    private static void storeFull(float[] t, MemorySegment c, long cAt, int ldc, float alpha, float beta) {
        FloatVector av = FloatVector.broadcast(SP, alpha);
        long ld = (long) ldc * Float.BYTES;
        long row = cAt * Float.BYTES;
        for (int r = 0; r < MR; r++, row += ld) {
            for (int v = 0; v < NR; v += L) {
                FloatVector acc = FloatVector.fromArray(SP, t, r * NR + v);
                long at = row + (long) v * Float.BYTES;
                FloatVector out;
                if (beta == 0f) {
                    out = acc.mul(av);
                } else {
                    FloatVector old = FloatVector.fromMemorySegment(SP, c, at, BO);
                    if (beta != 1f) {
                        old = old.mul(beta);
                    }
                    out = acc.fma(av, old);
                }
                out.intoMemorySegment(c, at, BO);
            }
        }
    }

    private static void storePartial(float[] t, MemorySegment c, long cAt, int ldc, float alpha, float beta,
                                     int mr, int nr) {
        for (int r = 0; r < mr; r++) {
            long row = (cAt + (long) r * ldc) * Float.BYTES;
            for (int j = 0; j < nr; j++) {
                long at = row + (long) j * Float.BYTES;
                float v = t[r * NR + j];
                float out = beta == 0f ? alpha * v : Math.fma(v, alpha, beta == 1f ? c.get(F, at) : beta * c.get(F, at));
                c.set(F, at, out);
            }
        }
    }
}
