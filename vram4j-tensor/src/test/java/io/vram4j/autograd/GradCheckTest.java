package io.vram4j.autograd;

import io.vram4j.tensor.DType;
import io.vram4j.tensor.Device;
import io.vram4j.tensor.Functional;
import io.vram4j.tensor.Generator;
import io.vram4j.tensor.MemoryScope;
import io.vram4j.tensor.SDPBackend;
import io.vram4j.tensor.SdpaKernel;
import io.vram4j.tensor.Tensor;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Finite-difference checks of every differentiable primitive (one or more cases per entry of the rule table). */
class GradCheckTest {
    static Device dev;

    /** A function and how to build its inputs. */
    record Case(String name, Function<Tensor[], Tensor> fn, Function<Generator, Tensor[]> inputs, double eps, double rtol) {
        Case(String name, Function<Tensor[], Tensor> fn, Function<Generator, Tensor[]> inputs) {
            this(name, fn, inputs, GradCheck.EPS, GradCheck.RTOL);
        }
    }

    static final Map<Prim, List<Case>> CASES = new EnumMap<>(Prim.class);

    static void add(Prim p, Case c) {
        CASES.computeIfAbsent(p, k -> new ArrayList<>()).add(c);
    }

    /** Uniform values in [lo, hi), requiring grad. */
    static Tensor u(Generator g, double lo, double hi, int... shape) {
        return dev.empty(DType.FLOAT32, shape).fillUniform(lo, hi, g).requiresGrad(true);
    }

    /** Values away from 0 with random sign: |x| in [0.2, 1]. */
    static Tensor signed(Generator g, int... shape) {
        Tensor t = dev.empty(DType.FLOAT32, shape).fillUniform(0.2, 1, g);
        float[] v = t.toFloatArray();
        for (int i = 0; i < v.length; i++) {
            v[i] = g.nextDouble() < 0.5 ? -v[i] : v[i];
        }
        t.close();
        return dev.tensor(v, shape).requiresGrad(true);
    }

    static {
        add(Prim.ADD, new Case("a[3,4] + b[4]", x -> x[0].add(x[1]), g -> new Tensor[] {u(g, -1, 1, 3, 4), u(g, -1, 1, 4)}));
        add(Prim.SUB, new Case("a[2,3,1] - b[3,4]", x -> x[0].sub(x[1]), g -> new Tensor[] {u(g, -1, 1, 2, 3, 1), u(g, -1, 1, 3, 4)}));
        add(Prim.MUL, new Case("a[3,4] * b[3,1]", x -> x[0].mul(x[1]), g -> new Tensor[] {u(g, -1, 1, 3, 4), u(g, -1, 1, 3, 1)}));
        add(Prim.MUL, new Case("a * a", x -> x[0].mul(x[0]), g -> new Tensor[] {u(g, -1, 1, 5)}));
        add(Prim.DIV, new Case("a[3,4] / b[4]", x -> x[0].div(x[1]), g -> new Tensor[] {u(g, -1, 1, 3, 4), u(g, 1, 2, 4)}));
        add(Prim.NEG, new Case("-x", x -> x[0].neg(), g -> new Tensor[] {u(g, -1, 1, 2, 3)}));
        add(Prim.MUL_SCALAR, new Case("x * 2.5", x -> x[0].mul(2.5f), g -> new Tensor[] {u(g, -1, 1, 2, 3)}));
        add(Prim.ADD_SCALAR, new Case("(x + 1.5)^2", x -> {
            try (Tensor y = x[0].add(1.5f)) {
                return y.mul(y);
            }
        }, g -> new Tensor[] {u(g, -1, 1, 2, 3)}));
        add(Prim.EXP, new Case("exp", x -> x[0].exp(), g -> new Tensor[] {u(g, -1, 1, 2, 3)}));
        add(Prim.LOG, new Case("log", x -> x[0].log(), g -> new Tensor[] {u(g, 0.5, 2, 2, 3)}));
        add(Prim.SQRT, new Case("sqrt", x -> x[0].sqrt(), g -> new Tensor[] {u(g, 0.5, 2, 2, 3)}));
        add(Prim.TANH, new Case("tanh", x -> x[0].tanh(), g -> new Tensor[] {u(g, -2, 2, 2, 3)}));
        add(Prim.RELU, new Case("relu", x -> x[0].relu(), g -> new Tensor[] {signed(g, 3, 4)}));
        add(Prim.GELU, new Case("gelu", x -> x[0].gelu(), g -> new Tensor[] {u(g, -3, 3, 3, 4)}));
        add(Prim.SUM, new Case("sum()", x -> x[0].sum(), g -> new Tensor[] {u(g, -1, 1, 3, 4)}));
        add(Prim.SUM, new Case("sum(1)", x -> x[0].sum(1, false), g -> new Tensor[] {u(g, -1, 1, 2, 3, 4)}));
        add(Prim.SUM, new Case("mean(0, keep)", x -> x[0].mean(0, true), g -> new Tensor[] {u(g, -1, 1, 3, 4)}));
        add(Prim.SUM, new Case("mean()", x -> x[0].mean(), g -> new Tensor[] {u(g, -1, 1, 3, 4)}));
        add(Prim.SUM, new Case("sumToSize", x -> x[0].sumToSize(1, 4), g -> new Tensor[] {u(g, -1, 1, 2, 3, 4)}));
        add(Prim.MAX, new Case("max(1)", x -> x[0].max(1, false), g -> new Tensor[] {distinct(g, 3, 5)}));
        add(Prim.MAX, new Case("max(0, keep)", x -> x[0].max(0, true), g -> new Tensor[] {distinct(g, 4, 3)}));
        add(Prim.MATMUL, new Case("[3,4]@[4,5]", x -> x[0].matmul(x[1]), g -> new Tensor[] {u(g, -1, 1, 3, 4), u(g, -1, 1, 4, 5)}));
        add(Prim.MATMUL, new Case("[2,3,4]@[2,4,5]", x -> x[0].matmul(x[1]), g -> new Tensor[] {u(g, -1, 1, 2, 3, 4), u(g, -1, 1, 2, 4, 5)}));
        add(Prim.MATMUL, new Case("[2,3,4]@[4,5]", x -> x[0].matmul(x[1]), g -> new Tensor[] {u(g, -1, 1, 2, 3, 4), u(g, -1, 1, 4, 5)}));
        add(Prim.MATMUL, new Case("[3,4]@[5,4]^T", x -> {
            try (Tensor t = x[1].t()) {
                return x[0].matmul(t);
            }
        }, g -> new Tensor[] {u(g, -1, 1, 3, 4), u(g, -1, 1, 5, 4)}));
        add(Prim.MATMUL, new Case("[2,4,3]^T@[2,4,5]", x -> {
            try (Tensor t = x[0].transpose(1, 2)) {
                return t.matmul(x[1]);
            }
        }, g -> new Tensor[] {u(g, -1, 1, 2, 4, 3), u(g, -1, 1, 2, 4, 5)}));
        add(Prim.VIEW, new Case("reshape", x -> x[0].reshape(4, 3), g -> new Tensor[] {u(g, -1, 1, 2, 6)}));
        add(Prim.VIEW, new Case("unsqueeze", x -> x[0].unsqueeze(1), g -> new Tensor[] {u(g, -1, 1, 2, 6)}));
        add(Prim.TRANSPOSE, new Case("transpose", x -> x[0].transpose(0, 2), g -> new Tensor[] {u(g, -1, 1, 2, 3, 4)}));
        add(Prim.NARROW, new Case("narrow", x -> x[0].narrow(1, 1, 2), g -> new Tensor[] {u(g, -1, 1, 3, 4)}));
        add(Prim.EXPAND, new Case("expand", x -> x[0].expand(2, 3, 4), g -> new Tensor[] {u(g, -1, 1, 3, 1)}));
        add(Prim.COPY, new Case("t().contiguous()", x -> {
            try (Tensor t = x[0].t()) {
                return t.contiguous();
            }
        }, g -> new Tensor[] {u(g, -1, 1, 3, 4)}));
        add(Prim.CAST, new Case("to(float16)", x -> x[0].to(DType.FLOAT16), g -> new Tensor[] {u(g, -1, 1, 3, 4)}, 0.1, 0.05));
        add(Prim.CAST, new Case("to(bfloat16)", x -> x[0].to(DType.BFLOAT16), g -> new Tensor[] {u(g, -1, 1, 3, 4)}, 0.2, 0.1));
        add(Prim.SOFTMAX, new Case("softmax", x -> x[0].softmax(), g -> new Tensor[] {u(g, -2, 2, 3, 5)}));
        add(Prim.LOG_SOFTMAX, new Case("logSoftmax", x -> x[0].logSoftmax(), g -> new Tensor[] {u(g, -2, 2, 3, 5)}));
        add(Prim.LAYER_NORM, new Case("layerNorm(x, w, b)", x -> Functional.layerNorm(x[0], x[1], x[2], 1e-5f),
                g -> new Tensor[] {u(g, -2, 2, 4, 6), u(g, 0.5, 1.5, 6), u(g, -1, 1, 6)}));
        add(Prim.LAYER_NORM, new Case("layerNorm(x)", x -> Functional.layerNorm(x[0], null, null, 1e-5f),
                g -> new Tensor[] {u(g, -2, 2, 2, 3, 5)}));
        add(Prim.EMBEDDING, new Case("embedding", x -> Functional.embedding(x[0], x[1]),
                g -> new Tensor[] {u(g, -1, 1, 5, 3), dev.tensor(new long[] {0, 4, 2, 4, 1, 0}, 2, 3)}));
        add(Prim.DROPOUT, new Case("dropout(0.3)", x -> Functional.dropout(x[0], 0.3f, 99L), g -> new Tensor[] {u(g, -1, 1, 4, 5)}));
        add(Prim.CAUSAL_MASK, new Case("softmax(causalMask)", x -> {
            try (Tensor m = Functional.causalMask(x[0])) {
                return m.softmax();
            }
        }, g -> new Tensor[] {u(g, -2, 2, 2, 4, 4)}));
        add(Prim.NLL_LOSS, new Case("nllLoss", x -> Functional.nllLoss(x[0], x[1], -100),
                g -> new Tensor[] {u(g, -2, 0, 4, 5), dev.tensor(new int[] {1, 0, 4, 2}, 4)}));
        add(Prim.NLL_LOSS, new Case("crossEntropy with ignoreIndex", x -> Functional.crossEntropy(x[0], x[1], 3),
                g -> new Tensor[] {u(g, -2, 2, 2, 3, 5), dev.tensor(new long[] {1, 3, 4, 0, 3, 2}, 2, 3)}));
        add(Prim.SCALED_DOT_PRODUCT_FLASH_ATTENTION, new Case("fused causal attention [2,5,3]",
                x -> Functional.scaledDotProductAttention(x[0], x[1], x[2], true),
                g -> new Tensor[] {u(g, -1, 1, 2, 5, 3), u(g, -1, 1, 2, 5, 3), u(g, -1, 1, 2, 5, 3)}));
        add(Prim.SCALED_DOT_PRODUCT_FLASH_ATTENTION, new Case("fused attention, not causal, [1,2,4,5]",
                x -> Functional.scaledDotProductAttention(x[0], x[1], x[2], false),
                g -> new Tensor[] {u(g, -2, 2, 1, 2, 4, 5), u(g, -2, 2, 1, 2, 4, 5), u(g, -1, 1, 1, 2, 4, 5)}));
        add(Prim.SCALED_DOT_PRODUCT_FLASH_ATTENTION, new Case("fused causal attention of transposed views",
                x -> {
                    try (Tensor q = x[0].transpose(1, 2); Tensor k = x[1].transpose(1, 2); Tensor v = x[2].transpose(1, 2)) {
                        return Functional.scaledDotProductAttention(q, k, v, true);
                    }
                }, g -> new Tensor[] {u(g, -1, 1, 1, 6, 2, 3), u(g, -1, 1, 1, 6, 2, 3), u(g, -1, 1, 1, 6, 2, 3)}));
    }

    /** Well-separated values (so a small step never changes the argmax). */
    static Tensor distinct(Generator g, int... shape) {
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

    @BeforeAll
    static void open() {
        dev = Device.open("host:256MiB");
    }

    @AfterAll
    static void close() {
        dev.close();
    }

    @ParameterizedTest
    @EnumSource(Prim.class)
    void everyPrimitiveHasACheckedGradient(Prim prim) {
        List<Case> cases = CASES.get(prim);
        assertTrue(cases != null && !cases.isEmpty(), "no gradcheck case for " + prim);
        long before = dev.memoryAllocated();
        for (Case c : cases) {
            try (MemoryScope s = MemoryScope.open()) {
                Tensor[] in = c.inputs().apply(new Generator(prim.ordinal() * 31L + c.name().length()));
                try {
                    GradCheck.check(c.fn(), c.eps(), GradCheck.ATOL, c.rtol(), in);
                } catch (AssertionError e) {
                    throw new AssertionError(prim + " / " + c.name() + ": " + e.getMessage(), e);
                }
                for (Tensor t : in) {
                    t.close();
                }
            }
        }
        assertEquals(before, dev.memoryAllocated(), "gradcheck of " + prim + " leaked memory");
    }

    @Test
    void compositeOpsAreDifferentiatedThroughTheirPrimitives() {
        try (MemoryScope s = MemoryScope.open()) {
            Generator g = new Generator(7);
            try (SdpaKernel math = SdpaKernel.enable(SDPBackend.MATH)) {   // the unfused attention: its primitives
                GradCheck.check(x -> Functional.scaledDotProductAttention(x[0], x[1], x[2], true),
                        u(g, -1, 1, 2, 4, 3), u(g, -1, 1, 2, 4, 3), u(g, -1, 1, 2, 4, 3));
            }
            GradCheck.check(x -> Functional.linear(x[0], x[1], x[2]), u(g, -1, 1, 2, 3, 4), u(g, -1, 1, 5, 4), u(g, -1, 1, 5));
            GradCheck.check(x -> {
                try (Tensor h = x[0].matmul(x[1]); Tensor r = h.tanh()) {
                    return r.mul(r).sum();
                }
            }, u(g, -1, 1, 3, 4), u(g, -1, 1, 4, 2));
            // a diamond: one node's output feeds three consumers, whose gradients are summed
            GradCheck.check(x -> {
                try (Tensor y = x[0].tanh(); Tensor a = y.mul(y); Tensor b = y.exp(); Tensor c = a.add(b);
                     Tensor d = y.narrow(1, 0, 2); Tensor e = d.sum(1, true)) {
                    return c.add(e);
                }
            }, u(g, -1, 1, 3, 4));
        }
    }

    @Test
    void gradCheckDetectsAWrongGradient() {
        try (MemoryScope s = MemoryScope.open()) {
            Tensor x = u(new Generator(3), 0.5, 1, 4);
            // relu on positive inputs has gradient 1, but f = relu(x) * x has gradient 2x: feeding a detached copy breaks it
            GradCheck.Result r = GradCheck.run(in -> {
                try (Tensor d = in[0].detach()) {
                    return in[0].mul(d);
                }
            }, 1e-2, 1e-3, 1e-2, x);
            assertFalse(r.ok());
            // a subtle error: f = x^2 + 0.005 x detach(x) has gradient 2.01 x, but backward gives 2.005 x (0.25% off),
            // which the former defaults (eps 1e-2, atol 2e-3, rtol 2e-2) accepted and the tightened ones catch
            Function<Tensor[], Tensor> subtle = in -> {
                try (Tensor d = in[0].detach(); Tensor sq = in[0].mul(in[0]); Tensor xd = in[0].mul(d); Tensor small = xd.mul(0.005f)) {
                    return sq.add(small);
                }
            };
            assertTrue(GradCheck.run(subtle, 1e-2, 2e-3, 2e-2, x).ok(), "the former tolerances miss it");
            GradCheck.Result tight = GradCheck.run(subtle, GradCheck.EPS, GradCheck.ATOL, GradCheck.RTOL, x);
            assertFalse(tight.ok());
            assertEquals(4, tight.mismatches().size(), "every element is flagged");
            assertThrows(IllegalArgumentException.class, () -> GradCheck.check(in -> in[0].exp(), dev.zeros(2)));
        }
    }
}
