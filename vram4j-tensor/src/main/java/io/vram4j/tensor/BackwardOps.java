package io.vram4j.tensor;

import io.vram4j.compute.Kernels;

import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import java.util.List;

/**
 * The backward primitives the autograd rule table calls for ops whose gradient is not itself a composition
 * of forward ops. Each allocates its result from the caching allocator (as on {@code sim}, where nothing is
 * computed) and records nothing: higher-order gradients are not supported. Arguments are the forward op's
 * saved values; {@code g} is the gradient of the forward output. Results have the dtype of {@code g}.
 *
 * <p>An engine class, not API: it is public only because {@code io.vram4j.autograd}'s rule table calls it, and it
 * stays in this exported package because it works on the package's internals (storages, host access, shapes).
 */
public final class BackwardOps {
    private BackwardOps() {
    }

    private static Tensor like(Tensor g, int[] shape) {
        return Tensor.allocate(g.device, g.dtype, shape.clone());
    }

    private static Tensor run(Tensor out, Runnable body) {
        if (out.device.hasStorage()) {
            try {
                body.run();
            } catch (RuntimeException | Error e) {
                out.close();
                throw e;
            }
        }
        return out;
    }

    private interface PointwiseKernel {
        void apply(Kernels k, long n, MemorySegment dy, long dyOff, MemorySegment x, long xOff, MemorySegment dx, long dxOff);
    }

    /**
     * @param op16 the {@link Kernels#pointwiseBackward16} op of {@code kernel}, for 16-bit tensors in device memory
     */
    private static Tensor pointwise(Tensor g, Tensor x, PointwiseKernel kernel, int op16) {
        Ops.open(g, x);
        Tensor out = like(g, g.shape);
        return run(out, () -> {
            int half = Host.halfKernelType(g, x, out);
            if (half >= 0) {
                out.device.kernels().pointwiseBackward16(op16, half, out.numel(), g.storage.kernelSegment(), g.offset,
                        x.storage.kernelSegment(), x.offset, out.storage.kernelSegment(), out.offset);
                return;
            }
            try (Scratch sc = new Scratch()) {
                Host.F32View dy = Host.readContiguous(g, sc);
                Host.F32View xv = Host.readContiguous(x, sc);
                Host.F32View w = Host.write(out, sc);
                kernel.apply(out.device.kernels(), out.numel(), dy.seg(), dy.off(), xv.seg(), xv.off(), w.seg(), w.off());
                Host.commit(out, w);
            }
        });
    }

    /** @return {@code g} where the ReLU output {@code y > 0}, else 0 */
    public static Tensor reluBackward(Tensor g, Tensor y) {
        return pointwise(g, y, Kernels::reluBackward, Kernels.BACKWARD_RELU);
    }

    /** @return {@code g * gelu'(x)} (tanh approximation) */
    public static Tensor geluBackward(Tensor g, Tensor x) {
        return pointwise(g, x, Kernels::geluBackward, Kernels.BACKWARD_GELU);
    }

    private static Tensor rows(Tensor g, Tensor y, boolean log) {
        Ops.open(g, y);
        int cols = Ops.lastDim(y, "softmaxBackward");
        Tensor out = like(g, g.shape);
        return run(out, () -> {
            try (Scratch sc = new Scratch()) {
                Host.F32View dy = Host.readContiguous(g, sc);
                Host.F32View yv = Host.readContiguous(y, sc);
                Host.F32View w = Host.write(out, sc);
                int rows = Ops.rows(y, cols);
                if (log) {
                    out.device.kernels().logSoftmaxBackwardRows(rows, cols, yv.seg(), yv.off(), dy.seg(), dy.off(), w.seg(), w.off());
                } else {
                    out.device.kernels().softmaxBackwardRows(rows, cols, yv.seg(), yv.off(), dy.seg(), dy.off(), w.seg(), w.off());
                }
                Host.commit(out, w);
            }
        });
    }

    /** @return the softmax input gradient given the softmax output {@code y} */
    public static Tensor softmaxBackward(Tensor g, Tensor y) {
        return rows(g, y, false);
    }

    /** @return the log-softmax input gradient given the log-softmax output {@code y} */
    public static Tensor logSoftmaxBackward(Tensor g, Tensor y) {
        return rows(g, y, true);
    }

    /**
     * Layer-norm gradients.
     *
     * @param weight the forward weight, or null
     * @param mean the saved row means (float32, one per row)
     * @param rstd the saved reciprocal standard deviations
     * @return {@code {dx, dweight, dbias}}, each null unless requested
     */
    public static Tensor[] layerNormBackward(Tensor g, Tensor x, Tensor weight, Tensor mean, Tensor rstd,
                                             boolean needX, boolean needWeight, boolean needBias) {
        Ops.open(g, x, weight, mean, rstd);
        int cols = Ops.lastDim(x, "layerNormBackward");
        int rows = Ops.rows(x, cols);
        Tensor dx = null;
        Tensor dw = null;
        Tensor db = null;
        try {
            dx = needX ? Tensor.allocate(g.device, x.dtype, x.shape.clone()) : null;
            dw = needWeight ? Tensor.allocate(g.device, weight.dtype, new int[] {cols}) : null;
            db = needBias ? Tensor.allocate(g.device, weight == null ? g.dtype : weight.dtype, new int[] {cols}) : null;
            if (g.device.hasStorage()) {
                try (Scratch sc = new Scratch()) {
                    Host.F32View dy = Host.readContiguous(g, sc);
                    Host.F32View xv = Host.readContiguous(x, sc);
                    Host.F32View gm = weight == null ? null : Host.readContiguous(weight, sc);
                    Host.F32View wx = dx == null ? null : Host.write(dx, sc);
                    Host.F32View ww = dw == null ? null : Host.write(dw, sc);
                    Host.F32View wb = db == null ? null : Host.write(db, sc);
                    g.device.kernels().layerNormBackwardRows(rows, cols, dy.seg(), dy.off(), xv.seg(), xv.off(),
                            mean.storage.kernelSegment(), mean.offset, rstd.storage.kernelSegment(), rstd.offset,
                            gm == null ? null : gm.seg(), gm == null ? 0 : gm.off(),
                            wx == null ? null : wx.seg(), wx == null ? 0 : wx.off(),
                            ww == null ? null : ww.seg(), ww == null ? 0 : ww.off(),
                            wb == null ? null : wb.seg(), wb == null ? 0 : wb.off());
                    if (dx != null) {
                        Host.commit(dx, wx);
                    }
                    if (dw != null) {
                        Host.commit(dw, ww);
                    }
                    if (db != null) {
                        Host.commit(db, wb);
                    }
                }
            }
            return new Tensor[] {dx, dw, db};
        } catch (RuntimeException | Error e) {
            for (Tensor t : new Tensor[] {dx, dw, db}) {
                if (t != null) {
                    t.close();
                }
            }
            throw e;
        }
    }

    /** @return the dense gradient {@code [rows, D]} of an embedding table: rows of {@code g} added at {@code indices} */
    public static Tensor embeddingBackward(Tensor g, Tensor indices, int rows) {
        Ops.open(g, indices);
        int cols = Ops.lastDim(g, "embeddingBackward");
        Tensor out = like(g, new int[] {rows, cols});
        return run(out, () -> {
            Kernels k = out.device.kernels();
            Host.indexed(g, indices, out, (dy, idx, idxOff, w) -> k.embeddingBackward(indices.numel(), rows, cols,
                    dy.seg(), dy.off(), idx, idxOff, w.seg(), w.off()));
        });
    }

    /** @return zeros of {@code inputShape} with {@code g} placed at the maxima's {@code indices} along {@code dim} */
    public static Tensor maxBackward(Tensor g, Tensor indices, int[] inputShape, int dim, boolean keepDim) {
        Ops.open(g, indices);
        Tensor out = like(g, inputShape);
        return run(out, () -> {
            long[] idx = indices.toLongArray();   // host work: scattering by indices the host holds
            float[] dy = g.toFloatArray();
            float[] dx = new float[Math.toIntExact(out.numel())];
            int n = inputShape[dim];
            long outer = Shapes.numel(Arrays.copyOf(inputShape, dim));
            long inner = Shapes.numel(Arrays.copyOfRange(inputShape, dim + 1, inputShape.length));
            for (long o = 0; o < outer; o++) {
                for (long i = 0; i < inner; i++) {
                    int oi = Math.toIntExact(o * inner + i);
                    dx[Math.toIntExact(o * n * inner + idx[oi] * inner + i)] = dy[oi];
                }
            }
            Elements.write(out, dx);
        });
    }

    /** @return zeros of {@code inputShape} with {@code g} copied into the slice {@code [start, start + g.size(dim))} of {@code dim} */
    public static Tensor narrowBackward(Tensor g, int[] inputShape, int dim, int start) {
        Ops.open(g);
        Tensor out = like(g, inputShape);
        Host.fill(out, 0f);
        if (out.device.hasStorage()) {
            long off = out.offset + start * out.strides[dim];
            Host.copyTo(g, out, off);
        }
        return out;
    }

    /**
     * The gradient of an input from the gradients of slices of it that tile it along {@code dim} (PyTorch's
     * {@code split_backward}: one {@code cat}): each copied into its place of one new tensor, nothing zero-filled
     * and nothing added, where {@link #narrowBackward} for each and their sum would fill and add the whole input
     * once per slice. Where the gradients already lie side by side in one storage as that tensor would hold them
     * (the fused attention's, {@link #attentionBackward}), it is a view over them and nothing is copied.
     *
     * @param grads the slices' gradients in order along {@code dim}, of one dtype, their sizes along {@code dim}
     *     adding up to {@code inputShape[dim]} and their other sizes those of {@code inputShape}
     * @return a new tensor of {@code inputShape} and the gradients' dtype, contiguous (a view sharing the gradients'
     *     storage where they lie in place)
     * @throws IllegalArgumentException when the gradients do not tile {@code inputShape} along {@code dim}
     */
    public static Tensor splitBackward(List<Tensor> grads, int[] inputShape, int dim) {
        Ops.open(grads.toArray(new Tensor[0]));
        int at = 0;
        for (Tensor g : grads) {
            int[] s = g.shape.clone();
            s[dim] = inputShape[dim];
            if (!Arrays.equals(s, inputShape) || g.dtype != grads.get(0).dtype) {
                throw new IllegalArgumentException("splitBackward: a gradient of " + Shapes.str(g.shape) + " "
                        + g.dtype + " is not a slice of " + Shapes.str(inputShape) + " along dimension " + dim);
            }
            at += g.shape[dim];
        }
        if (at != inputShape[dim]) {
            throw new IllegalArgumentException("splitBackward: slices of " + at + " along dimension " + dim
                    + " do not tile " + Shapes.str(inputShape));
        }
        Tensor first = grads.get(0);
        long[] whole = Shapes.contiguousStrides(inputShape);
        if (inPlace(grads, whole, dim)) {
            return first.alias(inputShape.clone(), whole, first.offset);
        }
        Tensor out = like(first, inputShape);
        return run(out, () -> {
            long off = out.offset;
            for (Tensor g : grads) {
                Host.copyTo(g, out, off);
                off += g.shape[dim] * out.strides[dim];
            }
        });
    }

    /**
     * @return whether the slices' gradients already lie in one storage, each where its slice lies in a contiguous
     *     tensor of strides {@code whole} that starts at the first one (the fused attention's gradients of heads split
     *     off one projection: {@link FusedAttention#gradients})
     */
    private static boolean inPlace(List<Tensor> grads, long[] whole, int dim) {
        Tensor first = grads.get(0);
        long off = first.offset;
        for (Tensor g : grads) {
            if (g.storage != first.storage || g.offset != off) {
                return false;
            }
            for (int i = 0; i < whole.length; i++) {
                if (g.shape[i] > 1 && g.strides[i] != whole[i]) {
                    return false;
                }
            }
            off += g.shape[dim] * whole[dim];
        }
        return true;
    }

    /**
     * @param logpShape {@code [N, C]}
     * @param ignoreIndex targets equal to it get no gradient
     * @return {@code [N, C]} zeros with {@code -g / count} at each target class, {@code count} the number of targets
     *     other than {@code ignoreIndex} (counted by the kernel, on the device)
     */
    public static Tensor nllLossBackward(Tensor g, Tensor targets, int[] logpShape, int ignoreIndex) {
        Ops.open(g, targets);
        Tensor out = like(g, logpShape);
        return run(out, () -> {
            try (Scratch sc = new Scratch(); Tensor t = Host.int64(targets)) {
                Tensor t64 = t == null ? targets : t;
                Host.F32View gv = Host.readContiguous(g, sc);
                Host.F32View w = Host.write(out, sc);
                out.device.kernels().nllLossBackward(logpShape[0], logpShape[1], ignoreIndex, gv.seg(), gv.off(),
                        t64.storage.kernelSegment(), t64.offset, w.seg(), w.off());
                Host.commit(out, w);
            }
        });
    }

    /** @return {@code g * mask * scale} */
    public static Tensor dropoutBackward(Tensor g, Tensor mask, float scale) {
        Ops.open(g, mask);
        Tensor out = like(g, g.shape);
        return run(out, () -> {
            try (Scratch sc = new Scratch()) {   // the mask is bytes on the same device, drawn by the dropout kernel
                Host.F32View dy = Host.readContiguous(g, sc);
                Host.F32View w = Host.write(out, sc);
                out.device.kernels().dropoutBackward(out.numel(), scale, dy.seg(), dy.off(),
                        mask.storage.kernelSegment(), mask.offset, w.seg(), w.off());
                Host.commit(out, w);
            }
        });
    }

    /** @return {@code g} with the causally masked positions (column > row) set to 0 */
    public static Tensor causalMaskBackward(Tensor g) {
        Ops.open(g);
        Tensor out = like(g, g.shape);
        return run(out, () -> {
            try (Scratch sc = new Scratch()) {
                Host.F32View dy = Host.readContiguous(g, sc);
                Host.F32View w = Host.write(out, sc);
                Ops.maskUpper(g.shape, dy, w, 0f, out.device.kernels());
                Host.commit(out, w);
            }
        });
    }

    /**
     * The fused attention backward ({@link io.vram4j.compute.Kernels#attentionBackward}): gradients of
     * {@code q}, {@code k} and {@code v} from the saved inputs, output and float32 log-sum-exps, recomputing the
     * probabilities tile by tile (PyTorch's {@code aten::_scaled_dot_product_flash_attention_backward}). The
     * kernels compute in float32; results have the dtype of {@code q}.
     *
     * @param g the gradient of the output, {@code [..., T, d]}
     * @param q the saved queries {@code [..., T, d]}; {@code k}, {@code v} and {@code out} (the forward output) alike
     * @param lse the saved float32 log-sum-exps {@code [..., T]}
     * @param causal as the forward call
     * @param scale the forward's factor of the scores
     * @return {@code {dq, dk, dv}}, each of the shape of {@code q}, where the operands' layouts let the kernels read
     *     them in place: for heads split off one projection, views of one tensor laid out as the projection
     *     ({@link FusedAttention#gradients}), else in the layout of the output ({@code [B, H, T, d]} stored as
     *     {@code [B, T, H, d]}); in other cases contiguous
     */
    public static Tensor[] attentionBackward(Tensor g, Tensor q, Tensor k, Tensor v, Tensor out, Tensor lse,
                                             boolean causal, float scale) {
        Ops.open(g, q, k, v, out, lse);
        FusedAttention.Dims n = FusedAttention.Dims.of(q);
        Tensor[] grads = new Tensor[3];
        try {
            // the operands are read in place (q, k, v in one layout, the output and its gradient each in its own),
            // and the gradients written in the output's layout (FusedAttention.output: for [B, H, T, d], stored as
            // [B, T, H, d], so that the heads' gradients merge back into the projection's without a copy, as
            // PyTorch's flash attention backward gives them); the layouts are decided from shapes and strides alone,
            // so sim lays the gradients out as cuda does
            int type = FusedAttention.kernelType(out.dtype);
            FusedAttention.Rows rows = type >= 0 && q.dtype == out.dtype ? FusedAttention.Rows.shared(q, k, v)
                    : null;
            FusedAttention.Rows orows = rows != null ? FusedAttention.Rows.of(out) : null;
            FusedAttention.Rows grows = orows != null && g.dtype == out.dtype ? FusedAttention.Rows.of(g) : null;
            if (grows != null && grows.heads() == rows.heads() && orows.equals(FusedAttention.Rows.of(q.shape))) {
                // the heads split off one projection get their gradients in one tensor laid out as it
                // (FusedAttention.gradients), others in the output's layout
                Tensor[] made = FusedAttention.gradients(q, k, v);
                System.arraycopy(made, 0, grads, 0, 3);
                FusedAttention.Rows drows = FusedAttention.Rows.of(grads[0]);
                if (!g.device.hasStorage()) {
                    return grads;   // sim: the gradients' bytes and layout, nothing computed
                }
                g.device.kernels().attentionBackwardStrided(type, n.problems(), rows.heads(), rows.batchStride(),
                        rows.headStride(), rows.rowStride(), orows.batchStride(), orows.headStride(),
                        orows.rowStride(), grows.batchStride(), grows.headStride(), grows.rowStride(),
                        drows.batchStride(), drows.headStride(), drows.rowStride(), n.t(), n.d(),
                        scale, causal, q.storage.kernelSegment(), q.offset, k.storage.kernelSegment(), k.offset,
                        v.storage.kernelSegment(), v.offset, out.storage.kernelSegment(), out.offset,
                        lse.storage.kernelSegment(), lse.offset, g.storage.kernelSegment(), g.offset,
                        grads[0].storage.kernelSegment(), grads[0].offset, grads[1].storage.kernelSegment(),
                        grads[1].offset, grads[2].storage.kernelSegment(), grads[2].offset);
                return grads;
            }
            for (int i = 0; i < 3; i++) {
                grads[i] = like(q, q.shape);
            }
            if (g.device.hasStorage()) {
                try (Scratch sc = new Scratch()) {
                    Host.F32View qv = Host.readContiguous(q, sc);
                    Host.F32View kv = Host.readContiguous(k, sc);
                    Host.F32View vv = Host.readContiguous(v, sc);
                    Host.F32View ov = Host.readContiguous(out, sc);
                    Host.F32View gv = Host.readContiguous(g, sc);
                    Host.F32View[] w = new Host.F32View[3];
                    for (int i = 0; i < 3; i++) {
                        w[i] = Host.write(grads[i], sc);
                    }
                    g.device.kernels().attentionBackward(n.problems(), n.t(), n.d(), scale, causal, qv.seg(), qv.off(),
                            kv.seg(), kv.off(), vv.seg(), vv.off(), ov.seg(), ov.off(), lse.storage.kernelSegment(), lse.offset,
                            gv.seg(), gv.off(), w[0].seg(), w[0].off(), w[1].seg(), w[1].off(), w[2].seg(), w[2].off());
                    for (int i = 0; i < 3; i++) {
                        Host.commit(grads[i], w[i]);
                    }
                }
            }
            return grads;
        } catch (RuntimeException | Error e) {
            for (Tensor x : grads) {
                if (x != null) {
                    x.close();
                }
            }
            throw e;
        }
    }
}
