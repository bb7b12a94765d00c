package io.vram4j.tensor;

import io.vram4j.tensor.internal.AutocastHook;

/**
 * Differentiable ops beyond the {@link Tensor} methods (as {@code torch.nn.functional}). Every method returns a
 * new tensor the caller owns; intermediates of composite ops are closed before returning (the autograd graph
 * keeps what backward needs), so memory behaves as in PyTorch, where they would be dropped at once.
 * Under {@link io.vram4j.amp.Autocast}, {@code linear}, {@code layerNorm}, {@code scaledDotProductAttention},
 * {@code nllLoss} and {@code crossEntropy} run in the dtype of their {@link io.vram4j.amp.CastPolicy} (through
 * {@link AutocastHook}); the ops inside a composite op then run in that dtype.
 */
public final class Functional {
    /** PyTorch's default {@code ignore_index} for losses. */
    public static final int IGNORE_INDEX = -100;

    private Functional() {
    }

    /**
     * {@code x @ weight^T + bias}, with {@code weight} stored {@code [out, in]} as PyTorch's {@code Linear}. When
     * {@code x} has at least 2 dimensions and the three operands one dtype, it is one product that starts from the
     * bias (PyTorch's {@code addmm}; node {@code AddmmBackward}), so a float16/bfloat16 result is rounded once and
     * no bias-less product is allocated; otherwise a product and a broadcast add.
     *
     * @param x {@code [..., in]}
     * @param weight {@code [out, in]}
     * @param bias {@code [out]}, or null
     * @return {@code [..., out]}
     */
    public static Tensor linear(Tensor x, Tensor weight, Tensor bias) {
        return AutocastHook.run("linear", new Tensor[] {x, weight, bias}, a -> linearOp(a[0], a[1], a[2]));
    }

    private static Tensor linearOp(Tensor x, Tensor weight, Tensor bias) {
        try (Tensor wt = weight.t()) {
            if (bias == null) {
                return x.matmul(wt);
            }
            boolean oneProduct = bias.dim() == 1 && bias.size(0) == wt.size(-1) && bias.dtype() == x.dtype()
                    && x.dtype() == wt.dtype() && x.dim() >= 2;
            if (oneProduct) {
                return Ops.addmm(bias, x, wt);
            }
            try (Tensor y = x.matmul(wt)) {
                return y.add(bias);
            }
        }
    }

    /**
     * Layer normalisation over the last dimension with the biased variance.
     *
     * @param x {@code [..., C]}
     * @param weight {@code [C]} or null (1)
     * @param bias {@code [C]} or null (0)
     * @param eps added to the variance, e.g. 1e-5
     * @return the normalised tensor, shape and dtype of {@code x}; the op saves {@code x} and float32 row
     *     statistics (mean and reciprocal standard deviation) for backward, as PyTorch does
     */
    public static Tensor layerNorm(Tensor x, Tensor weight, Tensor bias, float eps) {
        return AutocastHook.run("layer_norm", new Tensor[] {x, weight, bias}, a -> Ops.layerNorm(a[0], a[1], a[2], eps));
    }

    /**
     * @param weight the table {@code [rows, D]}
     * @param indices int32 or int64 indices of any shape, each in {@code [0, rows)}
     * @return {@code indices.shape + [D]}
     * @throws IndexOutOfBoundsException for an index outside the table (host only; sim does not read indices)
     */
    public static Tensor embedding(Tensor weight, Tensor indices) {
        return Ops.embedding(weight, indices);
    }

    /**
     * Inverted dropout: zeroes each element with probability {@code p} and scales the rest by {@code 1/(1-p)}.
     * The mask is drawn from one seed taken from {@code gen}, so restoring the generator's
     * {@linkplain Generator#state() state} replays the same mask (for activation checkpointing). The mask is
     * saved for backward as a bool tensor (1 byte per element), as in PyTorch.
     *
     * @param p the drop probability in [0, 1]
     * @param training when false (or {@code p == 0}) returns a view of {@code x} and draws nothing
     */
    public static Tensor dropout(Tensor x, float p, boolean training, Generator gen) {
        if (!training || p == 0f) {
            return x.view(x.shapeUnchecked());
        }
        return Ops.dropout(x, p, gen.nextLong());
    }

    /** Dropout with an explicit mask seed (the same seed gives the same mask for the same shape). */
    public static Tensor dropout(Tensor x, float p, long seed) {
        return Ops.dropout(x, p, seed);
    }

    /** @return {@code x} with every position whose column exceeds its row (last two dims) set to -inf */
    public static Tensor causalMask(Tensor x) {
        return Ops.causalMask(x);
    }

    /**
     * Scaled dot-product attention {@code softmax(q k^T / sqrt(d) [+ causal mask]) v} over the last two
     * dimensions, batched over the leading ones, as {@code torch.nn.functional.scaled_dot_product_attention}
     * (with {@code is_causal}; no {@code attn_mask} or dropout). The backend is chosen as PyTorch chooses among
     * those enabled on this thread ({@link SdpaKernel}, default: all): {@link SDPBackend#FLASH_ATTENTION}, one fused
     * op that saves q, k, v, the output and float32 log-sum-exps ({@code [..., T]}) but never the
     * {@code [..., T, S]} probabilities, when q, k and v have one shape and dtype; else {@link SDPBackend#MATH},
     * the separate ops that save the probabilities. Non-causal calls are fused too. Under
     * {@link io.vram4j.amp.Autocast} the inputs arrive in the lower precision ({@code scaled_dot_product_attention}
     * is on PyTorch's lower-precision list); the fused kernels read them as float32, compute in float32 and write
     * the output in the inputs' dtype, the log-sum-exps in float32 (PyTorch's flash kernel keeps its
     * log-sum-exp in float32 too).
     *
     * @param q {@code [..., T, d]}
     * @param k {@code [..., S, d]}
     * @param v {@code [..., S, dv]}
     * @param causal whether position {@code i} may only attend to positions {@code j <= i}
     * @return {@code [..., T, dv]}
     * @throws IllegalArgumentException when only {@link SDPBackend#FLASH_ATTENTION} is enabled and it does not take
     *     the inputs (PyTorch's "No available kernel"), naming why
     */
    public static Tensor scaledDotProductAttention(Tensor q, Tensor k, Tensor v, boolean causal) {
        return AutocastHook.run("scaled_dot_product_attention", new Tensor[] {q, k, v},
                a -> attention(a[0], a[1], a[2], causal));
    }

    private static Tensor attention(Tensor q, Tensor k, Tensor v, boolean causal) {
        float scale = (float) (1.0 / Math.sqrt(q.size(-1)));
        java.util.Set<SDPBackend> enabled = SdpaKernel.enabled();
        if (enabled.contains(SDPBackend.FLASH_ATTENTION)) {
            String why = FusedAttention.unsupported(q, k, v);
            if (why == null) {
                return FusedAttention.forward(q, k, v, causal, scale);
            }
            if (!enabled.contains(SDPBackend.MATH)) {
                throw new IllegalArgumentException("scaled_dot_product_attention: no available kernel: "
                        + "FLASH_ATTENTION is the only backend enabled and " + why);
            }
        }
        return mathAttention(q, k, v, causal, scale);
    }

    /** The unfused formulation ({@link SDPBackend#MATH}). */
    private static Tensor mathAttention(Tensor q, Tensor k, Tensor v, boolean causal, float scale) {
        Tensor probs;
        try (Tensor kt = k.transpose(-2, -1); Tensor scores = q.matmul(kt); Tensor scaled = scores.mul(scale)) {
            if (causal) {
                try (Tensor masked = causalMask(scaled)) {
                    probs = masked.softmax();
                }
            } else {
                probs = scaled.softmax();
            }
        }
        try (probs) {
            return probs.matmul(v);
        }
    }

    /**
     * Mean negative log-likelihood: {@code -mean_i logp[i, targets[i]]} over targets not equal to
     * {@code ignoreIndex} (NaN when all are ignored).
     *
     * @param logp {@code [N, C]} log-probabilities
     * @param targets {@code [N]} int32 or int64 class indices
     * @return a scalar
     */
    public static Tensor nllLoss(Tensor logp, Tensor targets, int ignoreIndex) {
        return AutocastHook.run("nll_loss", new Tensor[] {logp, targets}, a -> Ops.nllLoss(a[0], a[1], ignoreIndex));
    }

    /**
     * Cross-entropy from logits with mean reduction: {@code nllLoss(logSoftmax(logits), targets)}.
     *
     * @param logits {@code [N, C]} or {@code [..., C]} (flattened to {@code [N, C]})
     * @param targets int32/int64 class indices with the leading shape of {@code logits}
     * @return a scalar
     */
    public static Tensor crossEntropy(Tensor logits, Tensor targets) {
        return crossEntropy(logits, targets, IGNORE_INDEX);
    }

    /** Cross-entropy with an {@code ignoreIndex} (targets equal to it do not count). */
    public static Tensor crossEntropy(Tensor logits, Tensor targets, int ignoreIndex) {
        return AutocastHook.run("cross_entropy_loss", new Tensor[] {logits, targets},
                a -> crossEntropyOp(a[0], a[1], ignoreIndex));
    }

    private static Tensor crossEntropyOp(Tensor logits, Tensor targets, int ignoreIndex) {
        int c = logits.size(-1);
        try (Tensor l2 = logits.reshape(-1, c); Tensor t1 = targets.reshape(-1); Tensor logp = l2.logSoftmax()) {
            return nllLoss(logp, t1, ignoreIndex);
        }
    }
}
