package io.vram4j.compute;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorSpecies;

/**
 * Packed, blocked and multi-threaded sgemm on the Vector API (the structure of Goto's algorithm and BLIS).
 *
 * <pre>
 *   for jc in [0, n) step NB                            column blocks of C; usually one (NB = n)
 *     KB = ceil(k / ceil(k / KC))                       equal slices of depth at most KC
 *     phase 1 (parallel over panels):
 *       pack op(B)[:, jc:jc+NB] -> bp                   for each KB slice: NR-column panels, zero-padded
 *     phase 2 (parallel, dynamic): for each chunk = rows [i0, i1) x panels [p0, p1) of the C block
 *       for pc in [0, k) step KB
 *         pack op(A)[i0:i1, pc:pc+KB] -> ap             MR-row panels, zero-padded (thread-local, L2)
 *         for jr in [p0, p1)                            one B panel (KB x NR, <= 32 KiB): stays in L1 over ir
 *           for ir in [i0, i1) step MR
 *             micro-kernel: C[ir:ir+MR, jr:jr+NR] (+)= alpha * ap_panel * bp_panel
 * </pre>
 *
 * <p><b>Micro-kernel.</b> An {@code MR x NR} = 12 x (2 vectors) tile of C lives in 24 vector registers
 * (12 x 32 floats with AVX-512). For each {@code p} it loads two vectors of the B panel, broadcasts twelve
 * values of the A panel and issues 24 FMAs. Packing absorbs the transposes, so the kernel sees one layout;
 * it also zero-pads the edges, so the kernel always computes a full tile and only the store is partial.
 * The kernel leaves the tile in a small array and {@code update} adds it to C (masked on the edges): with the
 * C update inside, the method was too large for C1, whose bailout kept it out of C2 (see {@link #kernel}).
 * Packed buffers are heap {@code float[]}s, which C2 reads faster than segments in the inner loop.
 *
 * <p><b>Blocking.</b> {@code KC = 256}: a B panel is 32 KiB (L1), an A block of {@code MC = 192} rows is
 * 192 KiB (L2), and a chunk's C block stays in L2 across the {@code pc} loop. op(B) is packed once per call
 * into one buffer shared by all threads (for very large {@code k * n} it is done per column block), so no
 * thread packs it again; each chunk packs only its own rows of op(A). {@code k} is cut into
 * {@code ceil(k / KC)} slices of equal depth (784 gives 4 x 196), so no thin last slice pays a full tile update
 * for a few multiply-adds. Packing a row of the stored A (or of the stored B when it is transposed) loads a
 * vector along {@code p} and scatters it into the panel.
 *
 * <p><b>Threads.</b> Phase 1 splits the B panels, phase 2 hands chunks out from an atomic counter, so a
 * thread that starts late or is descheduled simply takes fewer chunks. Chunks are about four per thread
 * (rows first, columns when there are too few row panels). Small problems run on the calling thread.
 *
 * <p><b>Exactness.</b> {@code beta} is applied with the first slice (later slices accumulate);
 * with {@code beta == 0} the old C is never read. Every element of C goes through the same operations
 * whatever chunk computes it, so results are bitwise identical for every thread count.
 */
final class VectorGemm {

    static final VectorSpecies<Float> SP = FloatVector.SPECIES_PREFERRED;
    static final int L = SP.length();
    /** Rows of the register tile. */
    static final int MR = 12;
    /** Columns of the register tile: two vectors. */
    static final int NR = 2 * L;
    /** Depth of a packed slice (a B panel of KC x NR floats is 32 KiB with AVX-512). */
    static int KC = Integer.getInteger("kc", 256);
    /** Most rows of a chunk (an A block of MC x KC floats is 192 KiB). */
    static int MC = Integer.getInteger("mcTiles", 16) * MR;
    /** Most floats of packed B held at once (16 MiB); wider problems are split into column blocks. */
    static final int B_CAP = 1 << 22;
    /** Below this many floats of op(B) the calling thread packs it alone. */
    static final long PARALLEL_PACK_MIN = 1L << 18;
    /** Below this many multiply-adds (m * n * k) a call runs on the calling thread alone. */
    static final long PARALLEL_MIN_MACS = 1L << 21;

    private static final ValueLayout.OfFloat F = ValueLayout.JAVA_FLOAT_UNALIGNED;
    /** Scatter offsets {@code 0, MR, 2 MR, ...}: one vector of a row of A into an MR-row panel. */
    private static final int[] STRIDE_MR = strides(MR);
    /** Scatter offsets {@code 0, NR, 2 NR, ...}: one vector of a column of op(B) into an NR-column panel. */
    private static final int[] STRIDE_NR = strides(NR);
    private static final ByteOrder BO = ByteOrder.nativeOrder();

    /** Per-thread buffers: an A block, a tile for partial stores, and (for callers) the shared packed B. */
    private static final class Workspace {
        final float[] ap = new float[64 * MR * 1024];
        final float[] tile = new float[MR * NR];
        float[] bp = new float[0];

        float[] bBuffer(int size) {
            if (bp.length < size) {
                bp = new float[size];
            }
            return bp;
        }
    }

    private static final ThreadLocal<Workspace> WORKSPACE = ThreadLocal.withInitial(Workspace::new);

    private VectorGemm() {
    }

    /**
     * {@code C = alpha * op(A) * op(B) + beta * C} on validated arguments with {@code m, n, k > 0} and
     * {@code alpha != 0}, split over up to {@code threads} threads of {@link ComputePool}.
     */
    static void gemm(int threads, boolean ta, boolean tb, int m, int n, int k, float alpha,
                     MemorySegment a, long aOff, int lda, MemorySegment b, long bOff, int ldb,
                     float beta, MemorySegment c, long cOff, int ldc) {
        long macs = (long) m * n * k;
        int parts = macs < PARALLEL_MIN_MACS ? 1 : (int) Math.min(threads, macs / (PARALLEL_MIN_MACS / 2));
        int kBlocks = (k + KC - 1) / KC;
        // equal slices (k = 784 gives 4 x 196, not 3 x 256 + 16: a thin last slice wastes its tile updates)
        int kb = (k + kBlocks - 1) / kBlocks;
        // column block width: all of n unless packed B would exceed B_CAP
        int nb = (int) Math.min(roundUp(n, NR), Math.max(NR, (long) B_CAP / k / NR * NR));
        Workspace caller = WORKSPACE.get();
        for (int jc = 0; jc < n; jc += nb) {
            int nc = Math.min(nb, n - jc);
            int ncPad = roundUp(nc, NR);
            int panels = ncPad / NR;
            float[] bp = caller.bBuffer(k * ncPad);
            int col0 = jc;

            // phase 1: pack op(B)[:, jc:jc+nc]; slice pc starts at pc * ncPad, panel jr at + jr * kc
            int packUnits = kBlocks * panels;
            boolean packInParallel = parts > 1 && (long) k * ncPad >= PARALLEL_PACK_MIN;
            ComputePool.forEach(packInParallel ? parts - 1 : 0, packUnits, u -> {
                int pc = (u / panels) * kb;
                int kc = Math.min(kb, k - pc);
                int jr = (u % panels) * NR;
                packB(tb, b, bOff, ldb, pc, kc, col0 + jr, Math.min(NR, nc - jr), bp, pc * ncPad + jr * kc);
            });

            // phase 2: chunks of rows x panels, handed out dynamically
            int mTiles = (m + MR - 1) / MR;
            int want = parts == 1 ? 1 : 4 * parts;
            int rowTiles = Math.max(1, Math.min(MC / MR, (mTiles + want - 1) / want));
            int rowChunks = (mTiles + rowTiles - 1) / rowTiles;
            int colChunks = rowChunks >= 2 * parts ? 1 : Math.min(panels, (want + rowChunks - 1) / rowChunks);
            int panelsPerChunk = (panels + colChunks - 1) / colChunks;
            int chunkCols = (panels + panelsPerChunk - 1) / panelsPerChunk;
            ComputePool.forEach(parts - 1, rowChunks * chunkCols, u -> {
                int i0 = (u / chunkCols) * rowTiles * MR;
                int i1 = Math.min(m, i0 + rowTiles * MR);
                int p0 = (u % chunkCols) * panelsPerChunk;
                int p1 = Math.min(panels, p0 + panelsPerChunk);
                chunk(WORKSPACE.get(), ta, i0, i1, p0, p1, col0, nc, ncPad, k, kb, alpha, a, aOff, lda, bp, beta,
                        c, cOff, ldc);
            });
        }
    }

    private static int[] strides(int step) {
        int[] out = new int[L];
        for (int i = 0; i < L; i++) {
            out[i] = i * step;
        }
        return out;
    }

    private static int roundUp(int v, int unit) {
        return (v + unit - 1) / unit * unit;
    }

    /** Computes rows [i0, i1) x panels [p0, p1) of the current column block (starting at column col0). */
    private static void chunk(Workspace ws, boolean ta, int i0, int i1, int p0, int p1, int col0, int nc, int ncPad,
                              int k, int kb, float alpha, MemorySegment a, long aOff, int lda, float[] bp,
                              float beta, MemorySegment c, long cOff, int ldc) {
        float[] ap = ws.ap;
        float[] tile = ws.tile;
        int mc = i1 - i0;
        if (beta != 0f && beta != 1f) {
            // C = beta * C first; the kernels then add alpha * A * B (same rounding as fma(acc, alpha, beta * c))
            scaleC(c, cOff, ldc, i0, i1, col0 + p0 * NR, col0 + Math.min(nc, p1 * NR), beta);
        }
        for (int pc = 0; pc < k; pc += kb) {
            int kc = Math.min(kb, k - pc);
            packA(ta, a, aOff, lda, i0, mc, pc, kc, ap);
            boolean overwrite = pc == 0 && beta == 0f;
            int sliceAt = pc * ncPad;
            for (int p = p0; p < p1; p++) {
                int jr = p * NR;
                int nr = Math.min(NR, nc - jr);
                int bo = sliceAt + jr * kc;
                for (int ir = 0; ir < mc; ir += MR) {
                    long cAt = cOff + (long) (i0 + ir) * ldc + col0 + jr;
                    kernel(ap, ir * kc, bp, bo, kc, tile);
                    update(tile, c, cAt, ldc, alpha, overwrite, Math.min(MR, mc - ir), nr);
                }
            }
        }
    }

    // ------------------------------------------------------------------------------------------------ packing

    /** Packs op(A)[ic:ic+mc, pc:pc+kc] as MR-row panels: element (i, p) at (i / MR) * MR * kc + p * MR + i % MR. */
    private static void packA(boolean ta, MemorySegment a, long aOff, int lda, int ic, int mc, int pc, int kc,
                              float[] ap) {
        for (int ir = 0; ir < mc; ir += MR) {
            int mr = Math.min(MR, mc - ir);
            int base = ir * kc;
            if (!ta) {
                // rows of A are contiguous in p: load L of them, scatter them MR apart
                int pv = SP.loopBound(kc);
                for (int r = 0; r < mr; r++) {
                    long row = (aOff + (long) (ic + ir + r) * lda + pc) * Float.BYTES;
                    int p = 0;
                    for (; p < pv; p += L) {
                        FloatVector.fromMemorySegment(SP, a, row + (long) p * Float.BYTES, BO)
                                .intoArray(ap, base + p * MR + r, STRIDE_MR, 0);
                    }
                    for (int o = base + p * MR + r; p < kc; p++, o += MR) {
                        ap[o] = a.get(F, row + (long) p * Float.BYTES);
                    }
                }
            } else if (L >= MR) {
                // the mr values of a row of the stored A are contiguous: one vector load, the lanes past mr
                // zeroed (they pad the panel), one masked store of MR lanes. Rows whose vector would run past
                // the end of the segment (only ever the last few) are copied lane by lane in a loop of their
                // own: the Vector API's out-of-bounds fallback is slow, and a rarely taken branch inside the
                // hot loop made C2 deoptimize it again and again.
                VectorMask<Float> keep = SP.indexInRange(0, mr);
                VectorMask<Float> store = SP.indexInRange(0, MR);
                FloatVector zero = FloatVector.zero(SP);
                long row0 = (aOff + (long) pc * lda + ic + ir) * Float.BYTES;
                long step = (long) lda * Float.BYTES;
                long limit = a.byteSize() - (long) L * Float.BYTES;
                int safe = row0 > limit ? 0 : (int) Math.min(kc, (limit - row0) / step + 1);
                for (int p = 0; p < safe; p++) {
                    zero.blend(FloatVector.fromMemorySegment(SP, a, row0 + p * step, BO), keep)
                            .intoArray(ap, base + p * MR, store);
                }
                for (int p = safe; p < kc; p++) {
                    long row = row0 + p * step;
                    int o = base + p * MR;
                    for (int r = 0; r < mr; r++) {
                        ap[o + r] = a.get(F, row + (long) r * Float.BYTES);
                    }
                    for (int r = mr; r < MR; r++) {
                        ap[o + r] = 0f;
                    }
                }
                continue;
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

    /** Packs one panel op(B)[pc:pc+kc, j0:j0+nr] (nr <= NR) at bp[base..]: element (p, j) at base + p * NR + j. */
    private static void packB(boolean tb, MemorySegment b, long bOff, int ldb, int pc, int kc, int j0, int nr,
                              float[] bp, int base) {
        if (!tb) {
            if (nr == NR) {
                for (int p = 0; p < kc; p++) {
                    long row = (bOff + (long) (pc + p) * ldb + j0) * Float.BYTES;
                    int o = base + p * NR;
                    for (int v = 0; v < NR; v += L) {
                        FloatVector.fromMemorySegment(SP, b, row + (long) v * Float.BYTES, BO).intoArray(bp, o + v);
                    }
                }
            } else {
                for (int p = 0; p < kc; p++) {
                    long row = (bOff + (long) (pc + p) * ldb + j0) * Float.BYTES;
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
            // rows of the stored B (columns of op(B)) are contiguous in p: load L of them, scatter them NR apart
            int pv = SP.loopBound(kc);
            for (int j = 0; j < nr; j++) {
                long col = (bOff + (long) (j0 + j) * ldb + pc) * Float.BYTES;
                int p = 0;
                for (; p < pv; p += L) {
                    FloatVector.fromMemorySegment(SP, b, col + (long) p * Float.BYTES, BO)
                            .intoArray(bp, base + p * NR + j, STRIDE_NR, 0);
                }
                for (int o = base + p * NR + j; p < kc; p++, o += NR) {
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

    // ------------------------------------------------------------------------------------------------ micro-kernel

    /**
     * The micro-kernel: accumulates the {@code MR x NR} product of one packed A panel ({@code ap[ao..]},
     * {@code kc x MR}) and one packed B panel ({@code bp[bo..]}, {@code kc x NR}) in 24 vector registers and
     * writes it to {@code tile} (row-major, {@code MR x NR}).
     *
     * <p>Kept this small on purpose: C1 (tier 3) compiles it only when the inlined Vector API fallback code fits
     * its virtual-register limit. When tier 3 bails out ("out of virtual registers in LIR generator") the
     * method can stay in tier-2 code, boxing every vector, and never reach C2. So the update of C lives in
     * {@link #update}, which reads the tile back from L1: 24 stores and loads against {@code 24 * kc} FMAs.
     */
    static void kernel(float[] ap, int ao, float[] bp, int bo, int kc, float[] tile) {
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
        c00.intoArray(tile, 0 * NR);
        c01.intoArray(tile, 0 * NR + L);
        c10.intoArray(tile, 1 * NR);
        c11.intoArray(tile, 1 * NR + L);
        c20.intoArray(tile, 2 * NR);
        c21.intoArray(tile, 2 * NR + L);
        c30.intoArray(tile, 3 * NR);
        c31.intoArray(tile, 3 * NR + L);
        c40.intoArray(tile, 4 * NR);
        c41.intoArray(tile, 4 * NR + L);
        c50.intoArray(tile, 5 * NR);
        c51.intoArray(tile, 5 * NR + L);
        c60.intoArray(tile, 6 * NR);
        c61.intoArray(tile, 6 * NR + L);
        c70.intoArray(tile, 7 * NR);
        c71.intoArray(tile, 7 * NR + L);
        c80.intoArray(tile, 8 * NR);
        c81.intoArray(tile, 8 * NR + L);
        c90.intoArray(tile, 9 * NR);
        c91.intoArray(tile, 9 * NR + L);
        ca0.intoArray(tile, 10 * NR);
        ca1.intoArray(tile, 10 * NR + L);
        cb0.intoArray(tile, 11 * NR);
        cb1.intoArray(tile, 11 * NR + L);
    }

    /**
     * Writes the valid {@code mr x nr} part of a finished tile into C: {@code C = alpha * t} when
     * {@code overwrite}, else {@code C = fma(t, alpha, C)}. Full rows of vectors are stored whole, the last
     * partial vector of a row through a mask, so edge tiles round exactly like full ones.
     */
    static void update(float[] t, MemorySegment c, long cAt, int ldc, float alpha, boolean overwrite, int mr, int nr) {
        FloatVector va = FloatVector.broadcast(SP, alpha);
        int full = nr - nr % L;
        for (int r = 0; r < mr; r++) {
            long row = (cAt + (long) r * ldc) * Float.BYTES;
            int to = r * NR;
            for (int j = 0; j < full; j += L) {
                long at = row + (long) j * Float.BYTES;
                FloatVector v = FloatVector.fromArray(SP, t, to + j);
                (overwrite ? v.mul(va) : v.fma(va, FloatVector.fromMemorySegment(SP, c, at, BO)))
                        .intoMemorySegment(c, at, BO);
            }
        }
        if (full < nr) {
            // the partial vector at the end of each row: masked, except in rows where a whole vector would pass
            // the end of the segment (the last rows of a C that ends there), done lane by lane in a loop of
            // their own (see packA for why not a branch in the loop)
            VectorMask<Float> tail = SP.indexInRange(full, nr);
            long first = (cAt + full) * Float.BYTES;
            long step = (long) ldc * Float.BYTES;
            long limit = c.byteSize() - (long) L * Float.BYTES;
            int safe = first > limit ? 0 : (int) Math.min(mr, (limit - first) / step + 1);
            for (int r = 0; r < safe; r++) {
                long at = first + r * step;
                FloatVector v = FloatVector.fromArray(SP, t, r * NR + full);
                (overwrite ? v.mul(va) : v.fma(va, FloatVector.fromMemorySegment(SP, c, at, BO, tail)))
                        .intoMemorySegment(c, at, BO, tail);
            }
            for (int r = safe; r < mr; r++) {
                long at = first + r * step;
                for (int j = full; j < nr; j++, at += Float.BYTES) {
                    float v = t[r * NR + j];
                    c.set(F, at, overwrite ? v * alpha : Math.fma(v, alpha, c.get(F, at)));
                }
            }
        }
    }

    /** C[i0:i1, j0:j1] *= beta (beta is neither 0 nor 1). */
    private static void scaleC(MemorySegment c, long cOff, int ldc, int i0, int i1, int j0, int j1, float beta) {
        int w = j1 - j0;
        for (int i = i0; i < i1; i++) {
            long row = (cOff + (long) i * ldc + j0) * Float.BYTES;
            int j = 0;
            for (int bound = SP.loopBound(w); j < bound; j += L) {
                long at = row + (long) j * Float.BYTES;
                FloatVector.fromMemorySegment(SP, c, at, BO).mul(beta).intoMemorySegment(c, at, BO);
            }
            for (; j < w; j++) {
                long at = row + (long) j * Float.BYTES;
                c.set(F, at, beta * c.get(F, at));
            }
        }
    }
}
