package io.vram4j.tensor;

import io.vram4j.autograd.Prim;

import java.util.Arrays;

/**
 * The fused attention primitive ({@link Prim#SCALED_DOT_PRODUCT_FLASH_ATTENTION}, PyTorch's
 * {@code aten::_scaled_dot_product_flash_attention}): one kernel call computes the output and the per-row
 * log-sum-exp ({@code [..., T]}, float32) of {@code softmax(scale q k^T [+ causal mask]) v}; the node saves
 * {@code q}, {@code k}, {@code v}, the output and the log-sum-exps, never the {@code [..., T, T]} probabilities.
 * Inputs of float16/bfloat16 are read as float32 (the kernels compute and accumulate in float32, as PyTorch's
 * flash kernel accumulates), the output has their dtype, each value rounded once. The kernels read float32, float16
 * and bfloat16 inputs in place, strided as the Transformer's head split leaves them, and write the output in
 * PyTorch's layout ({@link #output}).
 */
final class FusedAttention {
    private FusedAttention() {
    }

    /**
     * @return null when the fused op takes {@code q, k, v}, else why not (one phrase): it needs one shape
     *     {@code [..., T, d]} and one floating-point dtype for all three (self-attention-shaped problems)
     */
    static String unsupported(Tensor q, Tensor k, Tensor v) {
        if (q.shape.length < 2) {
            return "q has fewer than 2 dimensions";
        }
        if (!Arrays.equals(q.shape, k.shape) || !Arrays.equals(q.shape, v.shape)) {
            return "q, k and v have different shapes (" + Shapes.str(q.shape) + ", " + Shapes.str(k.shape) + ", "
                    + Shapes.str(v.shape) + ")";
        }
        if (q.dtype != k.dtype || q.dtype != v.dtype || !q.dtype.isFloatingPoint()) {
            return "q, k and v are not of one floating-point dtype (" + q.dtype + ", " + k.dtype + ", " + v.dtype + ")";
        }
        return null;
    }

    /**
     * Records the fused op and runs its kernel on the device's storage (nothing on {@code sim}).
     *
     * @param q queries {@code [..., T, d]}; {@code k} and {@code v} as {@code q}, as {@link #unsupported} accepted
     *     (its caller, {@link Functional#scaledDotProductAttention}, checked them)
     * @param scale factor of the scores, {@code 1 / sqrt(d)}
     * @return the output, shape and dtype of {@code q}
     */
    static Tensor forward(Tensor q, Tensor k, Tensor v, boolean causal, float scale) {
        Ops.open(q, k, v);
        Dims n = Dims.of(q);
        Tensor out = output(q);
        Tensor lse = null;
        try {
            lse = Tensor.allocate(q.device, DType.FLOAT32, Arrays.copyOf(q.shape, q.shape.length - 1));
            if (q.device.hasStorage()) {
                // q, k, v are read in place, strided too (the heads split off one projection), and the output
                // written in its own layout; other layouts are gathered contiguous below
                int type = kernelType(q.dtype);
                Rows rows = type >= 0 ? Rows.shared(q, k, v) : null;
                Rows orows = rows != null ? Rows.of(out) : null;
                if (orows != null && orows.heads() == rows.heads()) {
                    q.device.kernels().attentionForwardStrided(type, n.problems(), rows.heads(), rows.batchStride(),
                            rows.headStride(), rows.rowStride(), orows.batchStride(), orows.headStride(),
                            orows.rowStride(), n.t(), n.d(), scale, causal, q.storage.kernelSegment(), q.offset,
                            k.storage.kernelSegment(), k.offset, v.storage.kernelSegment(), v.offset,
                            out.storage.kernelSegment(), out.offset, lse.storage.kernelSegment(), lse.offset);
                } else try (Scratch sc = new Scratch()) {
                    Host.F32View qv = Host.readContiguous(q, sc);
                    Host.F32View kv = Host.readContiguous(k, sc);
                    Host.F32View vv = Host.readContiguous(v, sc);
                    Host.F32View w = Host.write(out, sc);
                    q.device.kernels().attentionForward(n.problems(), n.t(), n.d(), scale, causal, qv.seg(), qv.off(),
                            kv.seg(), kv.off(), vv.seg(), vv.off(), w.seg(), w.off(), lse.storage.kernelSegment(),
                            lse.offset);
                    Host.commit(out, w);
                }
            }
            Recorder.record(Prim.SCALED_DOT_PRODUCT_FLASH_ATTENTION, out, new Tensor[] {q, k, v},
                    new Tensor[] {q, k, v, out, lse}, new int[] {causal ? 1 : 0}, scale);
        } catch (RuntimeException | Error e) {
            out.close();
            throw e;
        } finally {
            if (lse != null) {
                lse.close();
            }
        }
        return out;
    }

    /**
     * @return a new output for {@code q}: its shape and dtype; for {@code [B, H, T, d]} stored as {@code [B, T, H, d]}
     *     (strides {@code (T H d, d, H d, 1)}), as PyTorch's flash attention allocates its output, so that merging
     *     the heads back ({@code out.transpose(1, 2).reshape(B, T, H d)}) is a view, not a copy the next
     *     projection would save beside this output; contiguous for other ranks
     */
    static Tensor output(Tensor q) {
        int[] s = q.shape;
        if (s.length != 4) {
            return Tensor.allocate(q.device, q.dtype, s.clone());
        }
        long bytes = Math.multiplyExact(Shapes.numel(s), q.dtype.byteSize());
        Storage storage = Storage.allocate(q.device, q.device.stream(), bytes, s.clone(), q.dtype);
        return new Tensor(storage, q.dtype, s.clone(), outputStrides(s), 0);
    }

    /**
     * New gradients for {@code q}, {@code k} and {@code v}, shape and dtype of {@code q}. Where the three are the
     * heads split off one projection ({@link #splitHeads}), they are views of one new tensor laid out as that
     * projection, each where its input lies in it, so that the split's backward gives the projection's gradient
     * without a copy ({@link BackwardOps#splitBackward}); PyTorch copies the three into one tensor there (a
     * {@code cat}). Else each is a new tensor in {@link #output}'s layout.
     *
     * @return {@code {dq, dk, dv}}; on failure nothing is left allocated
     */
    static Tensor[] gradients(Tensor q, Tensor k, Tensor v) {
        Tensor[] g = new Tensor[3];
        try {
            if (splitHeads(q, k, v)) {
                long bytes = Math.multiplyExact(3 * Shapes.numel(q.shape), q.dtype.byteSize());
                int[] whole = {q.shape[0], q.shape[2], 3 * q.shape[1] * q.shape[3]};
                Storage storage = Storage.allocate(q.device, q.device.stream(), bytes, whole, q.dtype);
                g[0] = new Tensor(storage, q.dtype, q.shape.clone(), q.strides.clone(), 0);
                g[1] = g[0].alias(q.shape.clone(), q.strides.clone(), k.offset - q.offset);
                g[2] = g[0].alias(q.shape.clone(), q.strides.clone(), v.offset - q.offset);
            } else {
                for (int i = 0; i < 3; i++) {
                    g[i] = output(q);
                }
            }
            return g;
        } catch (RuntimeException | Error e) {
            for (Tensor x : g) {
                if (x != null) {
                    x.close();
                }
            }
            throw e;
        }
    }

    /**
     * @return whether {@code q}, {@code k} and {@code v} ({@code [B, H, T, d]}) are the heads split off one projection
     *     {@code [B, T, 3 H d]} as the Transformer splits them (narrow, view, transpose): views of one storage with
     *     strides {@code (3 T H d, d, 3 H d, 1)}, {@code k} starting {@code H d} elements after {@code q} and {@code v}
     *     {@code H d} after {@code k}, so that together they are every element of that projection once
     */
    static boolean splitHeads(Tensor q, Tensor k, Tensor v) {
        if (q.shape.length != 4 || q.storage != k.storage || q.storage != v.storage
                || !Arrays.equals(q.strides, k.strides) || !Arrays.equals(q.strides, v.strides)) {
            return false;
        }
        long hd = (long) q.shape[1] * q.shape[3];
        long row = 3 * hd;
        long[] packed = {row * q.shape[2], q.shape[3], row, 1};
        return Arrays.equals(q.strides, packed) && k.offset - q.offset == hd && v.offset - k.offset == hd;
    }

    /** @return the strides of {@link #output} for queries of {@code shape} */
    private static long[] outputStrides(int[] s) {
        return s.length != 4 ? Shapes.contiguousStrides(s)
                : new long[] {(long) s[2] * s[1] * s[3], s[3], (long) s[1] * s[3], 1};
    }

    /**
     * @return the strided attention kernels' type code of {@code d} ({@code Kernels.FLOAT32}, {@code FLOAT16},
     *     {@code BFLOAT16}), or -1 for a dtype they do not take
     */
    static int kernelType(DType d) {
        return d == DType.FLOAT32 ? io.vram4j.compute.Kernels.FLOAT32 : Host.halfType(d);
    }

    /**
     * The layout the strided attention kernels read an operand in ({@code Kernels.attentionForwardStrided}): problem
     * {@code p} is {@code (p / heads, p % heads)}, its rows {@code rowStride} apart from
     * {@code (p / heads) * batchStride + (p % heads) * headStride}, its {@code d} elements adjacent; in elements.
     */
    record Rows(int heads, long batchStride, long headStride, long rowStride) {
        /**
         * @return the layout of a {@code [t, d]}, {@code [batch, t, d]} or {@code [batch, heads, t, d]} tensor whose
         *     elements along {@code d} are adjacent; null for any other (more dimensions, a strided last dimension, a
         *     negative stride, no heads). A shape and strides only: the same on every device, so that {@code sim}
         *     lays gradients out as {@code cuda} does
         */
        static Rows of(Tensor t) {
            return of(t.shape, t.strides);
        }

        private static Rows of(int[] shape, long[] strides) {
            int r = shape.length;
            if (shape[r - 1] > 1 && strides[r - 1] != 1) {
                return null;
            }
            Rows rows = switch (r) {
                case 2 -> new Rows(1, 0, 0, strides[0]);
                case 3 -> new Rows(1, strides[0], 0, strides[1]);
                case 4 -> shape[1] == 0 ? null : new Rows(shape[1], strides[0], strides[1], strides[2]);
                default -> null;
            };
            return rows == null || rows.batchStride < 0 || rows.headStride < 0 || rows.rowStride < 0 ? null : rows;
        }

        /** @return the layout of {@link #output}'s tensor for queries of {@code shape}; null as {@link #of} */
        static Rows of(int[] shape) {
            return of(shape, outputStrides(shape));
        }

        /**
         * @return the layout {@code q}, {@code k} and {@code v} share, all of {@code q}'s dtype; null when they do
         *     not
         */
        static Rows shared(Tensor q, Tensor k, Tensor v) {
            Rows rows = of(q);
            return rows == null || k.dtype != q.dtype || v.dtype != q.dtype || !rows.equals(of(k))
                    || !rows.equals(of(v)) ? null : rows;
        }
    }

    /** The kernels' sizes of {@code q [..., T, d]}: {@code problems} is the product of the leading dimensions. */
    record Dims(int problems, int t, int d) {
        static Dims of(Tensor q) {
            int r = q.shape.length;
            return new Dims(Math.toIntExact(Shapes.numel(Arrays.copyOf(q.shape, r - 2))), q.shape[r - 2],
                    q.shape[r - 1]);
        }
    }
}
