package io.vram4j.autograd;

import io.vram4j.tensor.BackwardOps;
import io.vram4j.tensor.Tensor;

import java.util.EnumMap;
import java.util.Map;

/**
 * The one table of backward rules: for each {@link Prim}, how the gradient of the output ({@code g}) turns
 * into gradients of the inputs, using the node's saved tensors ({@code n.saved(i)}), input shapes
 * ({@code n.shapes[i]}) and arguments ({@code n.ints}, {@code n.scalar}). Broadcast inputs get their gradient
 * summed back to their shape ({@link Tensor#sumToSize}). Rules run without recording and return new handles
 * (never {@code g} itself); entries for inputs that need no gradient may be null or are dropped by the engine.
 */
final class GradientRules {
    @FunctionalInterface
    interface Rule {
        Tensor[] apply(Node n, Tensor g);
    }

    static final Map<Prim, Rule> RULES = new EnumMap<>(Prim.class);

    static {
        RULES.put(Prim.ADD, (n, g) -> new Tensor[] {g.sumToSize(n.shapes[0]), g.sumToSize(n.shapes[1])});
        RULES.put(Prim.SUB, (n, g) -> new Tensor[] {g.sumToSize(n.shapes[0]),
                n.needsGrad(1) ? g.sumToSize(n.shapes[1]).neg() : null});
        RULES.put(Prim.MUL, (n, g) -> new Tensor[] {
                n.needsGrad(0) ? g.mul(n.saved(1)).sumToSize(n.shapes[0]) : null,
                n.needsGrad(1) ? g.mul(n.saved(0)).sumToSize(n.shapes[1]) : null});
        RULES.put(Prim.DIV, (n, g) -> {
            Tensor gOverB = g.div(n.saved(1));
            return new Tensor[] {
                    n.needsGrad(0) ? gOverB.sumToSize(n.shapes[0]) : null,
                    n.needsGrad(1) ? gOverB.mul(n.saved(0)).div(n.saved(1)).neg().sumToSize(n.shapes[1]) : null};
        });
        RULES.put(Prim.NEG, (n, g) -> new Tensor[] {g.neg()});
        RULES.put(Prim.MUL_SCALAR, (n, g) -> new Tensor[] {g.mul(n.scalar)});
        RULES.put(Prim.ADD_SCALAR, (n, g) -> new Tensor[] {g.detach()});
        RULES.put(Prim.EXP, (n, g) -> new Tensor[] {g.mul(n.saved(0))});
        RULES.put(Prim.LOG, (n, g) -> new Tensor[] {g.div(n.saved(0))});
        RULES.put(Prim.SQRT, (n, g) -> new Tensor[] {g.div(n.saved(0).mul(2f))});
        RULES.put(Prim.TANH, (n, g) -> {
            Tensor y = n.saved(0);
            return new Tensor[] {g.mul(y.mul(y).neg().add(1f))};
        });
        RULES.put(Prim.RELU, (n, g) -> new Tensor[] {BackwardOps.reluBackward(g, n.saved(0))});
        RULES.put(Prim.GELU, (n, g) -> new Tensor[] {BackwardOps.geluBackward(g, n.saved(0))});
        // ints = the output shape with reduced dimensions kept as 1; scalar = the factor (1 for sum, 1/n for mean)
        RULES.put(Prim.SUM, (n, g) -> {
            Tensor e = g.reshape(n.ints).expand(n.shapes[0]);
            return new Tensor[] {n.scalar == 1f ? e : e.mul(n.scalar)};
        });
        // ints = {dim, keepDim}; saved = int64 indices of the maxima
        RULES.put(Prim.MAX, (n, g) -> new Tensor[] {
                BackwardOps.maxBackward(g, n.saved(0), n.shapes[0], n.ints[0], n.ints[1] != 0)});
        // saved = {A if B needs grad, B if A needs grad}; ints = {A column-major, B column-major}
        RULES.put(Prim.MATMUL, (n, g) -> new Tensor[] {
                n.needsGrad(0) ? matmulGradA(g, n.saved(1), n.shapes[0], n.ints[0] != 0) : null,
                n.needsGrad(1) ? matmulGradB(g, n.saved(0), n.shapes[1], n.ints[1] != 0) : null});
        // inputs = {A, B, bias [n]}; saved and ints as MATMUL's; the bias gets g summed over every row
        RULES.put(Prim.ADDMM, (n, g) -> new Tensor[] {
                n.needsGrad(0) ? matmulGradA(g, n.saved(1), n.shapes[0], n.ints[0] != 0) : null,
                n.needsGrad(1) ? matmulGradB(g, n.saved(0), n.shapes[1], n.ints[1] != 0) : null,
                n.needsGrad(2) ? g.sumToSize(n.shapes[2]) : null});
        RULES.put(Prim.VIEW, (n, g) -> new Tensor[] {g.reshape(n.shapes[0])});
        RULES.put(Prim.TRANSPOSE, (n, g) -> new Tensor[] {g.transpose(n.ints[0], n.ints[1])});
        RULES.put(Prim.NARROW, (n, g) -> new Tensor[] {BackwardOps.narrowBackward(g, n.shapes[0], n.ints[0], n.ints[1])});
        RULES.put(Prim.EXPAND, (n, g) -> new Tensor[] {g.sumToSize(n.shapes[0])});
        RULES.put(Prim.COPY, (n, g) -> new Tensor[] {g.detach()});
        RULES.put(Prim.CAST, (n, g) -> new Tensor[] {g.to(n.dtypes[0])});
        RULES.put(Prim.SOFTMAX, (n, g) -> new Tensor[] {BackwardOps.softmaxBackward(g, n.saved(0))});
        RULES.put(Prim.LOG_SOFTMAX, (n, g) -> new Tensor[] {BackwardOps.logSoftmaxBackward(g, n.saved(0))});
        // saved = {x, weight or null, mean, rstd}; scalar = eps (unused: rstd is saved)
        RULES.put(Prim.LAYER_NORM, (n, g) -> BackwardOps.layerNormBackward(g, n.saved(0), n.saved(1), n.saved(2),
                n.saved(3), n.needsGrad(0), n.needsGrad(1), n.needsGrad(2)));
        // inputs = {weight, indices}; saved = {indices}
        RULES.put(Prim.EMBEDDING, (n, g) -> new Tensor[] {
                BackwardOps.embeddingBackward(g, n.saved(0), n.shapes[0][0]), null});
        // saved = {bool mask}; scalar = 1 / (1 - p)
        RULES.put(Prim.DROPOUT, (n, g) -> new Tensor[] {BackwardOps.dropoutBackward(g, n.saved(0), n.scalar)});
        RULES.put(Prim.CAUSAL_MASK, (n, g) -> new Tensor[] {BackwardOps.causalMaskBackward(g)});
        // inputs = {log-probabilities [N, C], targets [N]}; saved = {targets}; ints = {ignoreIndex, count}
        RULES.put(Prim.NLL_LOSS, (n, g) -> new Tensor[] {
                BackwardOps.nllLossBackward(g, n.saved(0), n.shapes[0], n.ints[0]), null});
        // inputs = {q, k, v}; saved = {q, k, v, out, lse}; ints = {causal}; scalar = the scores' scale
        RULES.put(Prim.SCALED_DOT_PRODUCT_FLASH_ATTENTION, (n, g) -> BackwardOps.attentionBackward(g, n.saved(0),
                n.saved(1), n.saved(2), n.saved(3), n.saved(4), n.ints[0] != 0, n.scalar));
        for (Prim p : Prim.values()) {
            if (!RULES.containsKey(p)) {
                throw new ExceptionInInitializerError("no gradient rule for " + p);
            }
        }
    }

    private GradientRules() {
    }

    static Tensor[] apply(Node n, Tensor g) {
        return RULES.get(n.prim).apply(n, g);
    }

    /** dA = g @ B^T, summed over broadcast batch dimensions; laid out like A (as PyTorch's mm_mat1_backward). */
    private static Tensor matmulGradA(Tensor g, Tensor b, int[] aShape, boolean aColumnMajor) {
        if (aColumnMajor) {
            return b.matmul(g.transpose(-1, -2)).transpose(-1, -2).sumToSize(aShape);
        }
        return g.matmul(b.transpose(-1, -2)).sumToSize(aShape);
    }

    /** dB = A^T @ g, summed over broadcast batch dimensions; a 2-D B shared by a batch uses one product. */
    private static Tensor matmulGradB(Tensor g, Tensor a, int[] bShape, boolean bColumnMajor) {
        if (bShape.length == 2 && a.dim() > 2) {
            Tensor a2 = a.reshape(-1, a.size(-1));
            Tensor g2 = g.reshape(-1, g.size(-1));
            return bColumnMajor ? g2.transpose(0, 1).matmul(a2).transpose(0, 1) : a2.transpose(0, 1).matmul(g2);
        }
        if (bColumnMajor) {
            return g.transpose(-1, -2).matmul(a).transpose(-1, -2).sumToSize(bShape);
        }
        return a.transpose(-1, -2).matmul(g).sumToSize(bShape);
    }
}
