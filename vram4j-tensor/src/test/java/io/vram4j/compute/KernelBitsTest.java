package io.vram4j.compute;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Every vector kernel gives the same bits whether it runs interpreted or compiled by C2.
 *
 * <p>Activation checkpointing recomputes a forward pass and expects the bits of the first pass; between the two
 * passes the JIT may compile a kernel. Two Vector API operations are not bit-stable across tiers: the
 * transcendental lanewise operators (SVML in C2, {@code Math} lane by lane in the interpreter) and
 * {@code reduceLanes(ADD)} on floating-point lanes (C2 may add the lanes in another order than the Java
 * fallback). This test fingerprints each kernel here, after C2 had time to compile it, and in a child JVM
 * that only interprets ({@code -Xint}), and compares the fingerprints kernel by kernel.
 */
class KernelBitsTest {

    @BeforeAll
    static void needsVector() {
        assumeTrue(Kernels.vectorAvailable(), "needs --add-modules jdk.incubator.vector");
    }

    /** Prints one line per kernel, {@code name checksum}, for the child JVM. */
    public static void main(String[] args) {
        all().forEach((name, sum) -> System.out.println(name + " " + sum));
    }

    @Test
    void interpreterGivesTheSameBitsAsCompiledCode() throws Exception {
        Map<String, Long> compiled = null;
        for (int r = 0; r < 5000; r++) {
            // repeated so C2 compiles the kernels here (a few hundred calls are not enough); the child never compiles
            compiled = all();
        }
        Path java = Path.of(System.getProperty("java.home"), "bin", "java");
        List<String> cmd = List.of(java.toString(), "-Xint", "--add-modules", "jdk.incubator.vector",
                "--enable-native-access=ALL-UNNAMED", "-cp", System.getProperty("java.class.path"),
                KernelBitsTest.class.getName());
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String text = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(300, TimeUnit.SECONDS), "child JVM did not finish");
        assertEquals(0, p.exitValue(), text);
        List<String> differ = new ArrayList<>();
        for (Map.Entry<String, Long> e : compiled.entrySet()) {
            if (!text.contains(e.getKey() + " " + e.getValue() + "\n")) {
                differ.add(e.getKey());
            }
        }
        assertTrue(differ.isEmpty(), "kernels whose interpreted bits differ from their compiled bits: " + differ
                + "\ninterpreted:\n" + text + "compiled: " + compiled);
    }

    /** Fingerprints of the vector kernels on one thread and on two, and of the scalar kernels. */
    static Map<String, Long> all() {
        Map<String, Long> out = new LinkedHashMap<>();
        fingerprints(Kernels.vector().withThreads(1)).forEach((name, sum) -> out.put("vector." + name, sum));
        fingerprints(Kernels.vector().withThreads(2)).forEach((name, sum) -> out.put("vector2." + name, sum));
        fingerprints(Kernels.scalar()).forEach((name, sum) -> out.put("scalar." + name, sum));
        return out;
    }

    /** Checksums of every kernel's output on fixed inputs (rows of 8 x 100, ranges of 1000 with a tail). */
    static Map<String, Long> fingerprints(Kernels k) {
        int rows = 8;
        int cols = 100;
        int n = rows * cols;
        Map<String, Long> out = new LinkedHashMap<>();
        try (Arena arena = Arena.ofConfined()) {
            Random rnd = new Random(11);
            MemorySegment x = TestData.random(arena, rnd, n, -3f, 3f);
            MemorySegment y = TestData.random(arena, rnd, n, -3f, 3f);
            MemorySegment pos = TestData.random(arena, rnd, n, 0.01f, 5f);
            MemorySegment gamma = TestData.random(arena, rnd, cols, 0.5f, 1.5f);
            MemorySegment beta = TestData.random(arena, rnd, cols, -0.5f, 0.5f);
            MemorySegment o = arena.allocate((long) n * Float.BYTES, 64);
            MemorySegment o2 = arena.allocate((long) n * Float.BYTES, 64);
            MemorySegment mean = arena.allocate((long) rows * Float.BYTES, 64);
            MemorySegment rstd = arena.allocate((long) rows * Float.BYTES, 64);
            MemorySegment dg = arena.allocate((long) cols * Float.BYTES, 64);
            MemorySegment db = arena.allocate((long) cols * Float.BYTES, 64);

            k.exp(n, x, 0, o, 0);
            out.put("exp", sum(o, n));
            k.log(n, pos, 0, o, 0);
            out.put("log", sum(o, n));
            k.sqrt(n, pos, 0, o, 0);
            out.put("sqrt", sum(o, n));
            k.tanh(n, x, 0, o, 0);
            out.put("tanh", sum(o, n));
            k.sigmoid(n, x, 0, o, 0);
            out.put("sigmoid", sum(o, n));
            k.gelu(n, x, 0, o, 0);
            out.put("gelu", sum(o, n));
            k.geluBackward(n, y, 0, x, 0, o, 0);
            out.put("geluBackward", sum(o, n));
            k.div(n, x, 0, pos, 0, o, 0);
            out.put("div", sum(o, n));
            out.put("sum", (long) Float.floatToRawIntBits(k.sum(n - 3, x, 3)));
            out.put("max", (long) Float.floatToRawIntBits(k.max(n - 3, x, 3)));
            out.put("sumOfSquares", (long) Float.floatToRawIntBits(k.sumOfSquares(n - 3, x, 3)));
            out.put("dot", (long) Float.floatToRawIntBits(k.dot(n - 3, x, 3, y, 3)));
            k.softmaxRows(rows, cols, x, 0, o, 0);
            out.put("softmaxRows", sum(o, n));
            k.softmaxBackwardRows(rows, cols, o, 0, y, 0, o2, 0);
            out.put("softmaxBackwardRows", sum(o2, n));
            k.logSoftmaxRows(rows, cols, x, 0, o, 0);
            out.put("logSoftmaxRows", sum(o, n));
            k.logSoftmaxBackwardRows(rows, cols, o, 0, y, 0, o2, 0);
            out.put("logSoftmaxBackwardRows", sum(o2, n));
            k.layerNormRows(rows, cols, x, 0, gamma, 0, beta, 0, 1e-5f, o, 0, mean, 0, rstd, 0);
            out.put("layerNormRows", sum(o, n) * 31 + sum(mean, rows) * 17 + sum(rstd, rows));
            k.layerNormBackwardRows(rows, cols, y, 0, x, 0, mean, 0, rstd, 0, gamma, 0, o2, 0, dg, 0, db, 0);
            out.put("layerNormBackwardRows", sum(o2, n) * 31 + sum(dg, cols) * 17 + sum(db, cols));
            k.sgemm(false, false, rows, rows, cols, 1f, x, 0, cols, y, 0, rows, 0f, o, 0, rows);
            out.put("sgemm", sum(o, rows * rows));
            k.sgemm(true, true, 20, 30, 25, 0.5f, x, 0, 20, y, 0, 25, 0f, o, 0, 30);
            out.put("sgemmTT", sum(o, 600));
        }
        return out;
    }

    private static long sum(MemorySegment s, long n) {
        long h = 1125899906842597L;
        for (long i = 0; i < n; i++) {
            h = 31 * h + Float.floatToRawIntBits(TestData.get(s, i));
        }
        return h;
    }
}
