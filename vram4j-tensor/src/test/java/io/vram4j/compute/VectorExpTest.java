package io.vram4j.compute;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import jdk.incubator.vector.FloatVector;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** The vector exp used by the softmax, GELU and sigmoid kernels: accuracy, special values, and same bits in every JIT tier. */
class VectorExpTest {

    @BeforeAll
    static void needsVector() {
        assumeTrue(Kernels.vectorAvailable(), "needs --add-modules jdk.incubator.vector");
    }

    /** Inputs: a grid over the whole finite range, random values, and the edges. */
    static float[] inputs() {
        int grid = 200_000;
        float[] v = new float[grid + 100_000 + 16];
        for (int i = 0; i < grid; i++) {
            v[i] = -110f + 200f * i / grid;
        }
        SplittableRandom rnd = new SplittableRandom(5);
        for (int i = grid; i < grid + 100_000; i++) {
            v[i] = (float) (rnd.nextDouble(-2, 2) * (rnd.nextBoolean() ? 1 : 40));
        }
        float[] edges = {0f, -0f, 88.72f, 88.7229f, 88.73f, -87.33f, -103.9f, -104.5f, Float.MIN_VALUE, -Float.MIN_VALUE,
            1e-8f, -1e-8f, 0.34657f, -0.34657f, 10f, -10f};
        System.arraycopy(edges, 0, v, grid + 100_000, edges.length);
        return v;
    }

    static float[] apply(float[] in) {
        int l = VectorGemm.L;
        float[] out = new float[in.length];
        int i = 0;
        for (; i + l <= in.length; i += l) {
            VectorExp.exp(FloatVector.fromArray(VectorGemm.SP, in, i)).intoArray(out, i);
        }
        float[] tail = new float[l];
        System.arraycopy(in, i, tail, 0, in.length - i);
        float[] t = new float[l];
        VectorExp.exp(FloatVector.fromArray(VectorGemm.SP, tail, 0)).intoArray(t, 0);
        System.arraycopy(t, 0, out, i, in.length - i);
        return out;
    }

    @Test
    void withinTwoUlpsOfMathExp() {
        float[] in = inputs();
        float[] out = apply(in);
        for (int i = 0; i < in.length; i++) {
            double exact = Math.exp(in[i]);
            float want = (float) exact;
            if (want == Float.POSITIVE_INFINITY || want == 0f) {
                assertEquals(want, out[i], "exp(" + in[i] + ")");
            } else if (want < Float.MIN_NORMAL) {
                // subnormal results: absolute error within a few units of the smallest subnormal
                assertTrue(Math.abs(out[i] - exact) <= 2 * Float.MIN_VALUE, "exp(" + in[i] + ") = " + out[i] + ", expected " + exact);
            } else if (!(Math.abs(out[i] - exact) <= 2 * Math.ulp(want))) {
                fail("exp(" + in[i] + ") = " + out[i] + ", Math.exp gives " + exact + " (" + (Math.abs(out[i] - exact) / Math.ulp(want)) + " ulp)");
            }
        }
    }

    @Test
    void specialValues() {
        float[] in = new float[VectorGemm.L];
        float[] specials = {Float.NaN, Float.POSITIVE_INFINITY, Float.NEGATIVE_INFINITY, 0f, 1000f, -1000f, 1f};
        System.arraycopy(specials, 0, in, 0, Math.min(specials.length, in.length));
        float[] out = apply(in);
        assertTrue(Float.isNaN(out[0]), "exp(NaN)");
        assertEquals(Float.POSITIVE_INFINITY, out[1], "exp(+Inf)");
        assertEquals(0f, out[2], "exp(-Inf)");
        if (in.length > 3) {
            assertEquals(1f, out[3], "exp(0)");
        }
        if (in.length > 6) {
            assertEquals(Float.POSITIVE_INFINITY, out[4]);
            assertEquals(0f, out[5]);
            assertEquals((float) Math.E, out[6], Math.ulp((float) Math.E), "exp(1)");
        }
    }

    /** Prints a checksum of the bits of exp over {@link #inputs()}, for a child JVM. */
    public static void main(String[] args) {
        System.out.println("checksum " + checksum(apply(inputs())));
    }

    static long checksum(float[] v) {
        long h = 1125899906842597L;
        for (float f : v) {
            h = 31 * h + Float.floatToRawIntBits(f);
        }
        return h;
    }

    @Test
    void interpreterGivesTheSameBitsAsCompiledCode() throws Exception {
        float[] in = inputs();
        float[] out = null;
        for (int r = 0; r < 30; r++) {
            // repeated so C2 compiles the loop here; the child JVM never compiles (-Xint)
            out = apply(in);
        }
        Path java = Path.of(System.getProperty("java.home"), "bin", "java");
        List<String> cmd = List.of(java.toString(), "-Xint", "--add-modules", "jdk.incubator.vector",
                "-cp", System.getProperty("java.class.path"), VectorExpTest.class.getName());
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String text = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(120, TimeUnit.SECONDS), "child JVM did not finish");
        assertEquals(0, p.exitValue(), text);
        assertTrue(text.contains("checksum " + checksum(out)), "interpreted exp gave other bits: " + text);
    }
}
