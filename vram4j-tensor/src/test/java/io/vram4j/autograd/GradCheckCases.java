package io.vram4j.autograd;

import io.vram4j.tensor.DType;
import io.vram4j.tensor.Device;
import io.vram4j.tensor.Functional;
import io.vram4j.tensor.Generator;
import io.vram4j.tensor.Tensor;

import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;

/**
 * The finite-difference cases of {@link GradCheckSuite}: one or more per differentiable primitive (entry of the rule
 * table), each a function and how to build its inputs on a given device, so that the same table runs on
 * {@code host}, on opaque device memory and on {@code cuda}.
 */
final class GradCheckCases {
    private GradCheckCases() {
    }

    /** Builds a case's inputs on one device from one generator (the same values on every device). */
    record Inputs(Device dev, Generator g) {
        /** Uniform values in [lo, hi), requiring grad. */
        Tensor u(double lo, double hi, int... shape) {
            return dev.empty(DType.FLOAT32, shape).fillUniform(lo, hi, g).requiresGrad(true);
        }

        /** Values away from 0 with random sign: |x| in [0.2, 1]. */
        Tensor signed(int... shape) {
            Tensor t = dev.empty(DType.FLOAT32, shape).fillUniform(0.2, 1, g);
            float[] v = t.toFloatArray();
            for (int i = 0; i < v.length; i++) {
                v[i] = g.nextDouble() < 0.5 ? -v[i] : v[i];
            }
            t.close();
            return dev.tensor(v, shape).requiresGrad(true);
        }

        /** Well-separated values (so a small step never changes the argmax). */
        Tensor distinct(int... shape) {
            int n = 1;
            for (int d : shape) {
                n *= d;
            }
            float[] v = new float[n];
            for (int i = 0; i < n; i++) {
                v[i] = (i * 7 % n) * 0.25f - n * 0.1f;
            }
            for (int i = n - 1; i > 0; i--) {
                int j = (int) (g.nextDouble() * (i + 1));
                float t = v[i];
                v[i] = v[j];
                v[j] = t;
            }
            return dev.tensor(v, shape).requiresGrad(true);
        }
    }

    /** A function and how to build its inputs, with the step and relative tolerance it is checked at. */
    record Case(String name, Function<Tensor[], Tensor> fn, Function<Inputs, Tensor[]> inputs, double eps, double rtol) {
        Case(String name, Function<Tensor[], Tensor> fn, Function<Inputs, Tensor[]> inputs) {
            this(name, fn, inputs, GradCheck.EPS, GradCheck.RTOL);
        }
    }

    /** The cases of each primitive. */
    static final Map<Prim, List<Case>> CASES = new EnumMap<>(Prim.class);

    private static void add(Prim p, Case c) {
        CASES.computeIfAbsent(p, k -> new ArrayList<>()).add(c);
    }

    static {
        add(Prim.ADD, new Case("a[3,4] + b[4]", x -> x[0].add(x[1]), in -> new Tensor[] {in.u(-1, 1, 3, 4), in.u(-1, 1, 4)}));
        add(Prim.SUB, new Case("a[2,3,1] - b[3,4]", x -> x[0].sub(x[1]), in -> new Tensor[] {in.u(-1, 1, 2, 3, 1), in.u(-1, 1, 3, 4)}));
        add(Prim.MUL, new Case("a[3,4] * b[3,1]", x -> x[0].mul(x[1]), in -> new Tensor[] {in.u(-1, 1, 3, 4), in.u(-1, 1, 3, 1)}));
        add(Prim.MUL, new Case("a * a", x -> x[0].mul(x[0]), in -> new Tensor[] {in.u(-1, 1, 5)}));
        add(Prim.DIV, new Case("a[3,4] / b[4]", x -> x[0].div(x[1]), in -> new Tensor[] {in.u(-1, 1, 3, 4), in.u(1, 2, 4)}));
        add(Prim.NEG, new Case("-x", x -> x[0].neg(), in -> new Tensor[] {in.u(-1, 1, 2, 3)}));
        add(Prim.MUL_SCALAR, new Case("x * 2.5", x -> x[0].mul(2.5f), in -> new Tensor[] {in.u(-1, 1, 2, 3)}));
        add(Prim.ADD_SCALAR, new Case("(x + 1.5)^2", x -> {
            try (Tensor y = x[0].add(1.5f)) {
                return y.mul(y);
            }
        }, in -> new Tensor[] {in.u(-1, 1, 2, 3)}));
        add(Prim.EXP, new Case("exp", x -> x[0].exp(), in -> new Tensor[] {in.u(-1, 1, 2, 3)}));
        add(Prim.LOG, new Case("log", x -> x[0].log(), in -> new Tensor[] {in.u(0.5, 2, 2, 3)}));
        add(Prim.SQRT, new Case("sqrt", x -> x[0].sqrt(), in -> new Tensor[] {in.u(0.5, 2, 2, 3)}));
        add(Prim.TANH, new Case("tanh", x -> x[0].tanh(), in -> new Tensor[] {in.u(-2, 2, 2, 3)}));
        add(Prim.RELU, new Case("relu", x -> x[0].relu(), in -> new Tensor[] {in.signed(3, 4)}));
        add(Prim.GELU, new Case("gelu", x -> x[0].gelu(), in -> new Tensor[] {in.u(-3, 3, 3, 4)}));
        add(Prim.SUM, new Case("sum()", x -> x[0].sum(), in -> new Tensor[] {in.u(-1, 1, 3, 4)}));
        add(Prim.SUM, new Case("sum(1)", x -> x[0].sum(1, false), in -> new Tensor[] {in.u(-1, 1, 2, 3, 4)}));
        add(Prim.SUM, new Case("mean(0, keep)", x -> x[0].mean(0, true), in -> new Tensor[] {in.u(-1, 1, 3, 4)}));
        add(Prim.SUM, new Case("mean()", x -> x[0].mean(), in -> new Tensor[] {in.u(-1, 1, 3, 4)}));
        add(Prim.SUM, new Case("sumToSize", x -> x[0].sumToSize(1, 4), in -> new Tensor[] {in.u(-1, 1, 2, 3, 4)}));
        add(Prim.MAX, new Case("max(1)", x -> x[0].max(1, false), in -> new Tensor[] {in.distinct(3, 5)}));
        add(Prim.MAX, new Case("max(0, keep)", x -> x[0].max(0, true), in -> new Tensor[] {in.distinct(4, 3)}));
        add(Prim.MATMUL, new Case("[3,4]@[4,5]", x -> x[0].matmul(x[1]), in -> new Tensor[] {in.u(-1, 1, 3, 4), in.u(-1, 1, 4, 5)}));
        add(Prim.MATMUL, new Case("[2,3,4]@[2,4,5]", x -> x[0].matmul(x[1]), in -> new Tensor[] {in.u(-1, 1, 2, 3, 4), in.u(-1, 1, 2, 4, 5)}));
        add(Prim.MATMUL, new Case("[2,3,4]@[4,5]", x -> x[0].matmul(x[1]), in -> new Tensor[] {in.u(-1, 1, 2, 3, 4), in.u(-1, 1, 4, 5)}));
        add(Prim.MATMUL, new Case("[3,4]@[5,4]^T", x -> {
            try (Tensor t = x[1].t()) {
                return x[0].matmul(t);
            }
        }, in -> new Tensor[] {in.u(-1, 1, 3, 4), in.u(-1, 1, 5, 4)}));
        add(Prim.MATMUL, new Case("[2,4,3]^T@[2,4,5]", x -> {
            try (Tensor t = x[0].transpose(1, 2)) {
                return t.matmul(x[1]);
            }
        }, in -> new Tensor[] {in.u(-1, 1, 2, 4, 3), in.u(-1, 1, 2, 4, 5)}));
        add(Prim.ADDMM, new Case("linear [3,4] -> [3,5]", x -> Functional.linear(x[0], x[1], x[2]),
                in -> new Tensor[] {in.u(-1, 1, 3, 4), in.u(-1, 1, 5, 4), in.u(-1, 1, 5)}));
        add(Prim.ADDMM, new Case("linear [2,3,4] -> [2,3,5]", x -> Functional.linear(x[0], x[1], x[2]),
                in -> new Tensor[] {in.u(-1, 1, 2, 3, 4), in.u(-1, 1, 5, 4), in.u(-1, 1, 5)}));
        add(Prim.ADDMM, new Case("linear of a transposed view [2,4,3]^T", x -> {
            try (Tensor t = x[0].transpose(1, 2)) {
                return Functional.linear(t, x[1], x[2]);
            }
        }, in -> new Tensor[] {in.u(-1, 1, 2, 4, 3), in.u(-1, 1, 5, 4), in.u(-1, 1, 5)}));
        add(Prim.VIEW, new Case("reshape", x -> x[0].reshape(4, 3), in -> new Tensor[] {in.u(-1, 1, 2, 6)}));
        add(Prim.VIEW, new Case("unsqueeze", x -> x[0].unsqueeze(1), in -> new Tensor[] {in.u(-1, 1, 2, 6)}));
        add(Prim.TRANSPOSE, new Case("transpose", x -> x[0].transpose(0, 2), in -> new Tensor[] {in.u(-1, 1, 2, 3, 4)}));
        add(Prim.NARROW, new Case("narrow", x -> x[0].narrow(1, 1, 2), in -> new Tensor[] {in.u(-1, 1, 3, 4)}));
        add(Prim.EXPAND, new Case("expand", x -> x[0].expand(2, 3, 4), in -> new Tensor[] {in.u(-1, 1, 3, 1)}));
        add(Prim.COPY, new Case("t().contiguous()", x -> {
            try (Tensor t = x[0].t()) {
                return t.contiguous();
            }
        }, in -> new Tensor[] {in.u(-1, 1, 3, 4)}));
        add(Prim.CAST, new Case("to(float16)", x -> x[0].to(DType.FLOAT16), in -> new Tensor[] {in.u(-1, 1, 3, 4)}, 0.1, 0.05));
        add(Prim.CAST, new Case("to(bfloat16)", x -> x[0].to(DType.BFLOAT16), in -> new Tensor[] {in.u(-1, 1, 3, 4)}, 0.2, 0.1));
        add(Prim.SOFTMAX, new Case("softmax", x -> x[0].softmax(), in -> new Tensor[] {in.u(-2, 2, 3, 5)}));
        add(Prim.LOG_SOFTMAX, new Case("logSoftmax", x -> x[0].logSoftmax(), in -> new Tensor[] {in.u(-2, 2, 3, 5)}));
        add(Prim.LAYER_NORM, new Case("layerNorm(x, w, b)", x -> Functional.layerNorm(x[0], x[1], x[2], 1e-5f),
                in -> new Tensor[] {in.u(-2, 2, 4, 6), in.u(0.5, 1.5, 6), in.u(-1, 1, 6)}));
        add(Prim.LAYER_NORM, new Case("layerNorm(x)", x -> Functional.layerNorm(x[0], null, null, 1e-5f),
                in -> new Tensor[] {in.u(-2, 2, 2, 3, 5)}));
        add(Prim.EMBEDDING, new Case("embedding", x -> Functional.embedding(x[0], x[1]),
                in -> new Tensor[] {in.u(-1, 1, 5, 3), in.dev().tensor(new long[] {0, 4, 2, 4, 1, 0}, 2, 3)}));
        add(Prim.DROPOUT, new Case("dropout(0.3)", x -> Functional.dropout(x[0], 0.3f, 99L), in -> new Tensor[] {in.u(-1, 1, 4, 5)}));
        add(Prim.CAUSAL_MASK, new Case("softmax(causalMask)", x -> {
            try (Tensor m = Functional.causalMask(x[0])) {
                return m.softmax();
            }
        }, in -> new Tensor[] {in.u(-2, 2, 2, 4, 4)}));
        add(Prim.NLL_LOSS, new Case("nllLoss", x -> Functional.nllLoss(x[0], x[1], -100),
                in -> new Tensor[] {in.u(-2, 0, 4, 5), in.dev().tensor(new int[] {1, 0, 4, 2}, 4)}));
        add(Prim.NLL_LOSS, new Case("crossEntropy with ignoreIndex", x -> Functional.crossEntropy(x[0], x[1], 3),
                in -> new Tensor[] {in.u(-2, 2, 2, 3, 5), in.dev().tensor(new long[] {1, 3, 4, 0, 3, 2}, 2, 3)}));
        add(Prim.SCALED_DOT_PRODUCT_FLASH_ATTENTION, new Case("fused causal attention [2,5,3]",
                x -> Functional.scaledDotProductAttention(x[0], x[1], x[2], true),
                in -> new Tensor[] {in.u(-1, 1, 2, 5, 3), in.u(-1, 1, 2, 5, 3), in.u(-1, 1, 2, 5, 3)}));
        add(Prim.SCALED_DOT_PRODUCT_FLASH_ATTENTION, new Case("fused attention, not causal, [1,2,4,5]",
                x -> Functional.scaledDotProductAttention(x[0], x[1], x[2], false),
                in -> new Tensor[] {in.u(-2, 2, 1, 2, 4, 5), in.u(-2, 2, 1, 2, 4, 5), in.u(-1, 1, 1, 2, 4, 5)}));
        add(Prim.SCALED_DOT_PRODUCT_FLASH_ATTENTION, new Case("fused causal attention of transposed views",
                x -> {
                    try (Tensor q = x[0].transpose(1, 2); Tensor k = x[1].transpose(1, 2); Tensor v = x[2].transpose(1, 2)) {
                        return Functional.scaledDotProductAttention(q, k, v, true);
                    }
                }, in -> new Tensor[] {in.u(-1, 1, 1, 6, 2, 3), in.u(-1, 1, 1, 6, 2, 3), in.u(-1, 1, 1, 6, 2, 3)}));
    }
}
