package io.vram4j.compute;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The shared-loop alternative of {@code ElementwiseBenchmark} computes exactly what the product's vector kernels
 * compute, so the benchmark compares two loop shapes and nothing else: the same bits for every element-wise
 * kernel it overrides, at every tail length, with offsets, special values, and nothing written outside the
 * output range; and its arguments are checked like the product's.
 */
class SharedLoopVectorKernelsTest {

    private static final ValueLayout.OfFloat F = ValueLayout.JAVA_FLOAT;
    /** Elements before and after each range, which no kernel may write. */
    private static final int GUARD = 5;
    private static final float[] SPECIAL = {Float.NaN, Float.POSITIVE_INFINITY, Float.NEGATIVE_INFINITY, 0f, -0f,
            Float.MIN_VALUE, -Float.MIN_VALUE, Float.MAX_VALUE, 1e-30f, -88f, 89f, 3f};

    /** One element-wise kernel: reads {@code a} and {@code b} from offset {@link #GUARD}, writes {@code out}. */
    @FunctionalInterface
    private interface Call {
        void run(Kernels k, int n, MemorySegment a, MemorySegment b, MemorySegment out);
    }

    private static final Map<String, Call> KERNELS = Map.ofEntries(
            Map.entry("add", (k, n, a, b, o) -> k.add(n, a, GUARD, b, GUARD, o, GUARD)),
            Map.entry("sub", (k, n, a, b, o) -> k.sub(n, a, GUARD, b, GUARD, o, GUARD)),
            Map.entry("mul", (k, n, a, b, o) -> k.mul(n, a, GUARD, b, GUARD, o, GUARD)),
            Map.entry("div", (k, n, a, b, o) -> k.div(n, a, GUARD, b, GUARD, o, GUARD)),
            Map.entry("axpy", (k, n, a, b, o) -> {
                k.copy(n, b, GUARD, o, GUARD);
                k.axpy(n, -0.375f, a, GUARD, o, GUARD);
            }),
            Map.entry("scale", (k, n, a, b, o) -> k.scale(n, 1.5f, a, GUARD, o, GUARD)),
            Map.entry("addScalar", (k, n, a, b, o) -> k.addScalar(n, -2.25f, a, GUARD, o, GUARD)),
            Map.entry("neg", (k, n, a, b, o) -> k.neg(n, a, GUARD, o, GUARD)),
            Map.entry("exp", (k, n, a, b, o) -> k.exp(n, a, GUARD, o, GUARD)),
            Map.entry("sqrt", (k, n, a, b, o) -> k.sqrt(n, a, GUARD, o, GUARD)),
            Map.entry("sigmoid", (k, n, a, b, o) -> k.sigmoid(n, a, GUARD, o, GUARD)),
            Map.entry("relu", (k, n, a, b, o) -> k.relu(n, a, GUARD, o, GUARD)),
            Map.entry("reluBackward", (k, n, a, b, o) -> k.reluBackward(n, b, GUARD, a, GUARD, o, GUARD)),
            Map.entry("gelu", (k, n, a, b, o) -> k.gelu(n, a, GUARD, o, GUARD)),
            Map.entry("geluBackward", (k, n, a, b, o) -> k.geluBackward(n, b, GUARD, a, GUARD, o, GUARD)));

    private Arena arena;

    @BeforeEach
    void open() {
        assertTrue(Kernels.vectorAvailable(), "the tests run with --add-modules jdk.incubator.vector (pom.xml)");
        arena = Arena.ofConfined();
    }

    @AfterEach
    void close() {
        arena.close();
    }

    @Test
    void everyElementWiseKernelGivesTheBitsOfTheProductsVectorKernels() {
        Kernels product = Kernels.vector();
        Kernels shared = SharedLoopVectorKernels.create();
        SplittableRandom rnd = new SplittableRandom(13);
        List<String> differ = new ArrayList<>();
        List<Integer> sizes = new ArrayList<>();
        for (int n = 0; n <= 70; n++) {
            sizes.add(n);
        }
        sizes.add(1000);
        sizes.add(4099);
        for (int n : sizes) {
            MemorySegment a = values(rnd, n);
            MemorySegment b = values(rnd, n);
            for (Map.Entry<String, Call> e : KERNELS.entrySet()) {
                MemorySegment want = guarded(n);
                MemorySegment got = guarded(n);
                e.getValue().run(product, n, a, b, want);
                e.getValue().run(shared, n, a, b, got);
                for (int i = 0; i < n + 2 * GUARD; i++) {
                    float w = want.getAtIndex(F, i);
                    float g = got.getAtIndex(F, i);
                    // a NaN's sign may follow the JIT's operand order (BENCHMARKS.md, issue 13): any NaN matches any
                    boolean same = Float.isNaN(w) ? Float.isNaN(g) : Float.floatToRawIntBits(w) == Float.floatToRawIntBits(g);
                    if (!same) {
                        differ.add(e.getKey() + " n=" + n + " at " + (i - GUARD) + ": " + w + " vs " + g);
                        break;
                    }
                }
            }
        }
        assertEquals(List.of(), differ);
    }

    @Test
    void argumentsAreCheckedBeforeAnythingIsWritten() {
        Kernels shared = SharedLoopVectorKernels.create();
        MemorySegment a = values(new SplittableRandom(1), 8);
        MemorySegment out = guarded(8);
        // a holds 18 floats: 14 from offset GUARD run one past its end (out, from 0, has room)
        IndexOutOfBoundsException e = assertThrows(IndexOutOfBoundsException.class,
                () -> shared.add(14, a, GUARD, a, GUARD, out, 0));
        assertTrue(e.getMessage().contains("a"), e.getMessage());
        for (int i = 0; i < 8 + 2 * GUARD; i++) {
            assertEquals(Float.floatToRawIntBits(-7.5f), Float.floatToRawIntBits(out.getAtIndex(F, i)), "element " + i);
        }
        assertThrows(IllegalArgumentException.class, () -> shared.relu(-1, a, 0, out, 0));
    }

    /** {@code n} values between guards: random in [-6, 6), every tenth one special. */
    private MemorySegment values(SplittableRandom rnd, int n) {
        MemorySegment s = arena.allocate((long) (n + 2 * GUARD) * Float.BYTES, 4);
        for (int i = 0; i < n + 2 * GUARD; i++) {
            float v = i % 10 == 3 ? SPECIAL[rnd.nextInt(SPECIAL.length)] : (float) (rnd.nextDouble() * 12 - 6);
            s.setAtIndex(F, i, v);
        }
        return s;
    }

    /** An output of {@code n} elements plus guards, all -7.5. */
    private MemorySegment guarded(int n) {
        MemorySegment s = arena.allocate((long) (n + 2 * GUARD) * Float.BYTES, 4);
        for (int i = 0; i < n + 2 * GUARD; i++) {
            s.setAtIndex(F, i, -7.5f);
        }
        return s;
    }
}
