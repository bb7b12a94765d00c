package io.vram4j.tensor;

import io.vram4j.autograd.Prim;

import java.util.Arrays;

/**
 * The fused attention primitive ({@link Prim#SCALED_DOT_PRODUCT_FLASH_ATTENTION}, PyTorch's
 * {@code aten::_scaled_dot_product_flash_attention}): one kernel call computes the output and the per-row
 * log-sum-exp ({@code [..., T]}, float32) of {@code softmax(scale q k^T [+ causal mask]) v}; the node saves
 * {@code q}, {@code k}, {@code v}, the output and the log-sum-exps, never the {@code [..., T, T]} probabilities.
 * Inputs of float16/bfloat16 are read as float32 (the kernels compute and accumulate in float32, as PyTorch's
 * flash kernel accumulates), the output has their dtype.
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
        Tensor out = Tensor.allocate(q.device, q.dtype, q.shape.clone());
        Tensor lse = null;
        try {
            lse = Tensor.allocate(q.device, DType.FLOAT32, Arrays.copyOf(q.shape, q.shape.length - 1));
            if (q.device.hasStorage()) {
                // contiguous 16-bit inputs are read as they are, the float32 output narrowed once; strided ones
                // (heads split off a projection) are widened into contiguous float32 copies below: a 16-bit copy
                // of them instead lowered the peak allocated but raised the peak reserved (BENCHMARKS.md)
                int half = Host.halfKernelType(q, k, v);
                if (half >= 0) {
                    try (Scratch sc = new Scratch()) {
                        Host.F32View w = Host.write(out, sc);
                        q.device.kernels().attentionForward16(half, n.problems(), n.t(), n.d(), scale, causal,
                                q.storage.kernelSegment(), q.offset, k.storage.kernelSegment(), k.offset,
                                v.storage.kernelSegment(), v.offset, w.seg(), w.off(), lse.storage.kernelSegment(),
                                lse.offset);
                        Host.commit(out, w);
                    }
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

    /** The kernels' sizes of {@code q [..., T, d]}: {@code problems} is the product of the leading dimensions. */
    record Dims(int problems, int t, int d) {
        static Dims of(Tensor q) {
            int r = q.shape.length;
            return new Dims(Math.toIntExact(Shapes.numel(Arrays.copyOf(q.shape, r - 2))), q.shape[r - 2],
                    q.shape[r - 1]);
        }
    }
}
