package io.vram4j.tensor;

import io.vram4j.compute.Kernels;

import java.lang.foreign.MemorySegment;
import java.util.Arrays;

/**
 * Batched matrix products on the kernels' sgemm. Each operand's last two dimensions are passed as stored
 * when they are row-major (unit last stride) or column-major (a transposed view: unit second-to-last stride);
 * anything else, and float16/bfloat16 data, is first gathered into float32 scratch. Batch dimensions are
 * walked with {@link StridedLoop}, the innermost one by {@code sgemmBatched}; a 2-D right operand shared by
 * a contiguous batch becomes one tall sgemm. With a bias ({@code addmm}), the destination first holds the bias
 * broadcast over its rows and the product is added to it ({@code beta = 1}), so a float16/bfloat16 result is
 * rounded once, as PyTorch's {@code addmm} rounds it.
 */
final class Gemm {
    private Gemm() {
    }

    /** One operand as sgemm sees it. */
    private record Mat(MemorySegment seg, long off, long[] batchStrides, boolean trans, int ld) {
    }

    private static Mat operand(Tensor t, int rows, int cols, Scratch sc) {
        Host.F32View v = Host.read(t, sc);
        int r = t.shape.length;
        Mat stored = asStored(v.seg(), v.off(), v.strides(), rows, cols);
        if (stored != null) {
            return stored;
        }
        Host.F32View c = Host.readContiguous(t, sc);
        if (c == v) {
            throw new IllegalStateException("unexpected layout");
        }
        return gathered(c, r, cols);
    }

    private static Mat gathered(Host.F32View c, int rank, int cols) {
        return new Mat(c.seg(), c.off(), Arrays.copyOf(c.strides(), rank - 2), false, Math.max(1, cols));
    }

    private static boolean fitsInt(long v) {
        return v >= 0 && v <= Integer.MAX_VALUE;
    }

    /**
     * {@code out = a @ b}, or {@code out = bias + a @ b} when {@code bias} ({@code [n]}, out's dtype) is given.
     */
    static void run(Tensor a, Tensor b, Tensor bias, Tensor out, int[] batch, int m, int n, int k) {
        Kernels kern = out.device.kernels();
        if (m > 0 && n > 0 && Shapes.numel(batch) > 0 && out.storage.deviceMemory()
                && gemm16(a, b, bias, out, batch, m, n, k)) {
            return;
        }
        try (Scratch sc = new Scratch()) {
            Host.F32View w = Host.write(out, sc);
            if (m == 0 || n == 0 || Shapes.numel(batch) == 0) {
                return;
            }
            // a float32 product written into out itself takes its bias in the kernel (on a GPU in the product's
            // epilogue) when it is one product; anything else starts from the bias written into what it writes
            Tensor fused = bias != null && out.dtype == DType.FLOAT32 && out.isContiguous() ? bias : null;
            float beta = 0f;
            if (bias != null && fused == null) {
                startWithBias(bias, out, w.seg(), DType.FLOAT32, w.off(), w.strides(), w.device());
                beta = 1f;
            }
            if (b.shape.length == 2 && a.shape.length > 2 && tall(a, m, k, sc, w, b, n, beta, fused, kern)) {
                Host.commit(out, w);
                return;
            }
            Mat ma = operand(a, m, k, sc);
            Mat mb = operand(b, k, n, sc);
            if (fused != null) {
                if (batch.length == 0) {
                    kern.sgemmBias(ma.trans(), mb.trans(), m, n, k, 1f, ma.seg(), ma.off(), ma.ld(), mb.seg(),
                            mb.off(), mb.ld(), fused.storage.kernelSegment(), fused.offset, fused.strides[0], w.seg(),
                            w.off(), n);
                    return;   // written into out itself
                }
                startWithBias(bias, out, w.seg(), DType.FLOAT32, w.off(), w.strides(), w.device());
                beta = 1f;
            }
            long[] sa = broadcastBatch(a.shape, ma.batchStrides(), batch);
            long[] sb = broadcastBatch(b.shape, mb.batchStrides(), batch);
            long[] sw = Arrays.copyOf(w.strides(), batch.length);
            if (w.device() && batchLoops(batch, sw, sa, sb)) {
                // on a device, views whose batch dimensions do not fold (the heads of attention) are gathered
                // first (one launch each), so that the whole batch is one sgemmBatched instead of a launch per row
                ma = gathered(Host.readContiguous(a, sc), a.shape.length, k);
                mb = gathered(Host.readContiguous(b, sc), b.shape.length, n);
                sa = broadcastBatch(a.shape, ma.batchStrides(), batch);
                sb = broadcastBatch(b.shape, mb.batchStrides(), batch);
            }
            Mat fa = ma;
            Mat fb = mb;
            float b0 = beta;
            StridedLoop.run(batch, new long[][] {sw, sa, sb}, new long[] {w.off(), ma.off(), mb.off()}, (o, len, st) ->
                    kern.sgemmBatched(Math.toIntExact(len), fa.trans(), fb.trans(), m, n, k, 1f,
                            fa.seg(), o[1], fa.ld(), st[1], fb.seg(), o[2], fb.ld(), st[2],
                            b0, w.seg(), o[0], n, st[0] == 0 ? (long) m * n : st[0]));
            Host.commit(out, w);
        }
    }

    /**
     * A float16/bfloat16 product on device memory as one {@code Kernels.gemmBatched16} call (cuBLAS on 16-bit data,
     * float32 accumulation), or {@code gemmBatched16Bias} with a bias, when both operands are that dtype, each is
     * row- or column-major in its last two dimensions and the batch folds into one stride per operand.
     *
     * @return false when it does not apply (the caller computes through float32 copies)
     */
    private static boolean gemm16(Tensor a, Tensor b, Tensor bias, Tensor out, int[] batch, int m, int n, int k) {
        DType dt = out.dtype;
        if (dt != DType.FLOAT16 && dt != DType.BFLOAT16 || a.dtype != dt || b.dtype != dt) {
            return false;
        }
        Mat ma = view16(a, m, k);
        Mat mb = view16(b, k, n);
        if (ma == null || mb == null) {
            return false;
        }
        long[] sa = broadcastBatch(a.shape, ma.batchStrides(), batch);
        long[] sb = broadcastBatch(b.shape, mb.batchStrides(), batch);
        long[] sw = Arrays.copyOf(out.strides, batch.length);
        Layout4 l = Layout4.of(batch, sw, sa, sb);
        if (l == null || l.rank() > 1) {
            return false;
        }
        long mn = (long) m * n;
        long strideC = l.s(0, 3) == 0 ? mn : l.s(0, 3);
        int count = Math.toIntExact(Shapes.numel(batch));
        if (bias != null) {
            out.device.kernels().gemmBatched16Bias(dt == DType.BFLOAT16, count, ma.trans(), mb.trans(), m, n, k, 1f,
                    ma.seg(), ma.off(), ma.ld(), l.s(1, 3), mb.seg(), mb.off(), mb.ld(), l.s(2, 3),
                    bias.storage.kernelSegment(), bias.offset, bias.strides[0], out.storage.kernelSegment(),
                    out.offset, n, strideC);
            return true;
        }
        out.device.kernels().gemmBatched16(dt == DType.BFLOAT16, count, ma.trans(), mb.trans(), m, n, k, 1f,
                ma.seg(), ma.off(), ma.ld(), l.s(1, 3), mb.seg(), mb.off(), mb.ld(), l.s(2, 3), 0f,
                out.storage.kernelSegment(), out.offset, n, strideC);
        return true;
    }

    /**
     * Writes {@code bias} ({@code [n]}), broadcast over every row, into the product's destination (out's shape at
     * {@code (seg, off, strides)} in {@code type}): the starting value of a {@code beta = 1} product. Device memory
     * is written by the device's kernels; host scratch is converted as it is copied, so that no temporary comes
     * from the allocator (a {@code sim} dry run, which computes nothing, must see the same allocations).
     */
    private static void startWithBias(Tensor bias, Tensor out, MemorySegment seg, DType type, long off,
                                      long[] strides, boolean device) {
        long[] rows = Shapes.broadcastStrides(bias.shape, bias.strides, out.shape);
        if (device) {
            Host.convert(out.device, out.shape, bias.storage.kernelSegment(), bias.dtype, bias.offset, rows, seg,
                    type, off, strides);
        } else {
            Host.copy(out.device.kernels(), out.shape, bias.storage.segment(), bias.dtype, bias.offset, rows, seg,
                    type, off, strides);
        }
    }

    /** A 16-bit operand as stored, when its last two dimensions are row- or column-major; else null. */
    private static Mat view16(Tensor t, int rows, int cols) {
        return asStored(t.storage.kernelSegment(), t.offset, t.strides, rows, cols);
    }

    /**
     * An operand passed as stored: row-major in its last two dimensions (unit last stride) or column-major (a
     * transposed view); null for any other layout.
     */
    private static Mat asStored(MemorySegment seg, long off, long[] strides, int rows, int cols) {
        int r = strides.length;
        long rs = strides[r - 2];
        long cs = strides[r - 1];
        long[] batch = Arrays.copyOf(strides, r - 2);
        if ((cs == 1 || cols <= 1) && (rows <= 1 || rs >= Math.max(1, cols)) && fitsInt(rs)) {
            return new Mat(seg, off, batch, false, rows <= 1 ? Math.max(1, cols) : (int) rs);
        }
        if ((rs == 1 || rows <= 1) && (cols <= 1 || cs >= Math.max(1, rows)) && fitsInt(cs)) {
            return new Mat(seg, off, batch, true, cols <= 1 ? Math.max(1, rows) : (int) cs);
        }
        return null;
    }

    /**
     * [..., m, k] @ [k, n] with the left operand's rows evenly spaced: one sgemm of (batch*m) rows, adding to what
     * {@code w} holds times {@code beta}, or from {@code bias} when given (float32, {@code w} being out itself).
     */
    private static boolean tall(Tensor a, int m, int k, Scratch sc, Host.F32View w, Tensor b, int n, float beta,
                                Tensor bias, Kernels kern) {
        long rows = Shapes.numel(a.shape) / Math.max(1, k);
        if (k == 0 || rows > Integer.MAX_VALUE) {
            return false;
        }
        Host.F32View v = Host.read(a, sc);
        long[] st = Shapes.viewStrides(a.shape, v.strides(), new int[] {(int) rows, k});
        if (st == null || (st[1] != 1 && k > 1) || st[0] < k || st[0] > Integer.MAX_VALUE) {
            return false;
        }
        Mat mb = operand(b, k, n, sc);
        int lda = (int) Math.max(st[0], 1);
        if (bias != null) {
            kern.sgemmBias(false, mb.trans(), (int) rows, n, k, 1f, v.seg(), v.off(), lda, mb.seg(), mb.off(), mb.ld(),
                    bias.storage.kernelSegment(), bias.offset, bias.strides[0], w.seg(), w.off(), n);
        } else {
            kern.sgemm(false, mb.trans(), (int) rows, n, k, 1f, v.seg(), v.off(), lda, mb.seg(), mb.off(), mb.ld(),
                    beta, w.seg(), w.off(), n);
        }
        return true;
    }

    /** @return true when walking the batch takes more than one sgemmBatched call */
    private static boolean batchLoops(int[] batch, long[] sw, long[] sa, long[] sb) {
        Layout4 l = Layout4.of(batch, sw, sa, sb);
        return l == null || l.rank() > 1;
    }

    private static long[] broadcastBatch(int[] shape, long[] batchStrides, int[] batch) {
        return Shapes.broadcastStrides(Arrays.copyOf(shape, shape.length - 2), batchStrides, batch);
    }
}
