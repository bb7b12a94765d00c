package io.vram4j.autograd;

/**
 * The differentiable primitives: every op that records a graph node is one of these, and
 * {@code GradientRules} holds one backward rule per primitive. Composite ops (mean, cross-entropy, attention,
 * linear layers, ...) are built from them and get their gradients for free.
 */
public enum Prim {
    /** {@code a + b}, broadcast. */
    ADD,
    /** {@code a - b}, broadcast. */
    SUB,
    /** {@code a * b}, broadcast. */
    MUL,
    /** {@code a / b}, broadcast. */
    DIV,
    /** {@code -x}. */
    NEG,
    /** {@code x * s} for a float {@code s}. */
    MUL_SCALAR,
    /** {@code x + s} for a float {@code s}. */
    ADD_SCALAR,
    /** {@code e^x}. */
    EXP,
    /** {@code ln x}. */
    LOG,
    /** {@code sqrt x}. */
    SQRT,
    /** {@code tanh x}. */
    TANH,
    /** {@code max(x, 0)}. */
    RELU,
    /** GELU, tanh approximation. */
    GELU,
    /** Scaled sum over some dimensions (sum, mean, sum-to-size). */
    SUM,
    /** Maximum over one dimension. */
    MAX,
    /** Batched matrix product. */
    MATMUL,
    /**
     * {@code bias + a @ b} as one product (PyTorch's {@code addmm}, what {@code linear} runs): the bias, broadcast
     * over the rows, is the product's starting value, so a 16-bit result is rounded once.
     */
    ADDMM,
    /** Same elements, other shape (view, reshape, squeeze, unsqueeze, alias). */
    VIEW,
    /** Two dimensions swapped. */
    TRANSPOSE,
    /** A slice of one dimension. */
    NARROW,
    /** Broadcast to a larger shape. */
    EXPAND,
    /** A contiguous copy. */
    COPY,
    /** Conversion to another floating-point dtype. */
    CAST,
    /** Softmax over the last dimension. */
    SOFTMAX,
    /** Log-softmax over the last dimension. */
    LOG_SOFTMAX,
    /** Layer normalisation over the last dimension, with optional weight and bias. */
    LAYER_NORM,
    /** Row gather from an embedding table. */
    EMBEDDING,
    /** Multiplication by a saved Bernoulli mask and 1/(1-p). */
    DROPOUT,
    /** Fill of the strictly upper triangle of the last two dimensions with -inf. */
    CAUSAL_MASK,
    /** Mean negative log-likelihood of target classes. */
    NLL_LOSS,
    /**
     * Fused scaled dot-product attention ({@code aten::_scaled_dot_product_flash_attention}): saves q, k, v, the
     * output and the per-row log-sum-exps, not the probabilities.
     */
    SCALED_DOT_PRODUCT_FLASH_ATTENTION;

    /** The names of {@link #backwardName()}, by ordinal: made once (the engine asks for one per node it runs). */
    private static final String[] BACKWARD_NAMES = java.util.Arrays.stream(values()).map(Prim::nameOfBackward)
            .toArray(String[]::new);

    /** @return the node name in PyTorch style, e.g. {@code MulBackward} */
    public String backwardName() {
        return BACKWARD_NAMES[ordinal()];
    }

    private static String nameOfBackward(Prim p) {
        StringBuilder sb = new StringBuilder();
        for (String part : p.name().split("_")) {
            sb.append(part.charAt(0)).append(part.substring(1).toLowerCase(java.util.Locale.ROOT));
        }
        return sb.append("Backward").toString();
    }
}
