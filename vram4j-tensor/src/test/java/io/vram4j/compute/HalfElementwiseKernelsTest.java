package io.vram4j.compute;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.SplittableRandom;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The 16-bit element-wise kernels of the CPU implementations ({@link Kernels#unary16},
 * {@link Kernels#pointwiseBackward16}, and {@link Kernels#binary16} against {@link Kernels#binary4}, with a
 * transposed and a broadcast operand; the attention on 16-bit inputs; {@link Kernels#copy16}), which work through
 * float buffers of {@link HostConversions#CHUNK} values:
 * bit for bit what widening the whole input, the implementation's float32 kernel over all of it and narrowing give,
 * over several chunks and a ragged end, at odd offsets, for both 16-bit types; nothing outside the output range is
 * written; bad op and type codes are refused by name before anything is written.
 */
class HalfElementwiseKernelsTest {
    private static final int N = 3 * HostConversions.CHUNK + 77;
    private static final ValueLayout.OfShort S = ValueLayout.JAVA_SHORT_UNALIGNED;
    private static final ValueLayout.OfFloat F = ValueLayout.JAVA_FLOAT_UNALIGNED;

    static Stream<Kernels> implementations() {
        return Stream.of(Kernels.scalar(), Kernels.vector(), Kernels.vector().withThreads(2));
    }

    private static MemorySegment halves(Arena a, int type, long n, double lo, double hi, long seed) {
        MemorySegment s = a.allocate(n * Short.BYTES);
        SplittableRandom r = new SplittableRandom(seed);
        for (long i = 0; i < n; i++) {
            float v = (float) (lo + (hi - lo) * r.nextDouble());
            s.setAtIndex(S, i, type == Kernels.FLOAT16 ? Half.floatToFp16(v) : Half.floatToBf16(v));
        }
        return s;
    }

    private static MemorySegment widen(Arena a, int type, MemorySegment h, long off, long n) {
        MemorySegment f = a.allocate(n * Float.BYTES);
        if (type == Kernels.FLOAT16) {
            Half.fp16ToFloat(n, h, off, f, 0);
        } else {
            Half.bf16ToFloat(n, h, off, f, 0);
        }
        return f;
    }

    private static void assertNarrowed(int type, MemorySegment expected32, MemorySegment out, long off, String what) {
        for (long i = 0; i < N; i++) {
            float e = expected32.getAtIndex(F, i);
            short bits = type == Kernels.FLOAT16 ? Half.floatToFp16(e) : Half.floatToBf16(e);
            if (bits != out.getAtIndex(S, off + i)) {
                assertEquals(Integer.toHexString(bits & 0xFFFF), Integer.toHexString(out.getAtIndex(S, off + i) & 0xFFFF),
                        what + "[" + i + "] of " + N);
            }
        }
        assertEquals((short) 0x7E7E, out.getAtIndex(S, off - 1), what + ": written before its range");
        assertEquals((short) 0x7E7E, out.getAtIndex(S, off + N), what + ": written after its range");
    }

    private interface Unary32 {
        void run(Kernels k, long n, MemorySegment x, long xOff, MemorySegment out, long outOff);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("implementations")
    void unary16IsTheFloat32KernelRoundedOnce(Kernels k) {
        Unary32[] f32 = {Kernels::neg, Kernels::exp, Kernels::log, Kernels::sqrt, Kernels::tanh, Kernels::relu,
                         Kernels::gelu};
        for (int type : new int[] {Kernels.FLOAT16, Kernels.BFLOAT16}) {
            for (int op = Kernels.UNARY_NEG; op <= Kernels.UNARY_GELU; op++) {
                boolean positive = op == Kernels.UNARY_LOG || op == Kernels.UNARY_SQRT;
                try (Arena a = Arena.ofConfined()) {
                    MemorySegment x = halves(a, type, N + 3, positive ? 0.01 : -8, 8, 31L * op + type);
                    MemorySegment out = a.allocate((N + 7L) * Short.BYTES).fill((byte) 0x7E);
                    k.unary16(op, type, N, x, 3, out, 5);
                    MemorySegment wide = widen(a, type, x, 3, N);
                    MemorySegment expected = a.allocate((long) N * Float.BYTES);
                    f32[op].run(k, N, wide, 0, expected, 0);
                    assertNarrowed(type, expected, out, 5, k.name() + " unary16 op " + op + " type " + type);
                }
            }
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("implementations")
    void pointwiseBackward16IsTheFloat32KernelRoundedOnce(Kernels k) {
        for (int type : new int[] {Kernels.FLOAT16, Kernels.BFLOAT16}) {
            for (int op : new int[] {Kernels.BACKWARD_RELU, Kernels.BACKWARD_GELU}) {
                try (Arena a = Arena.ofConfined()) {
                    MemorySegment dy = halves(a, type, N + 1, -3, 3, 17L * op + type);
                    MemorySegment x = halves(a, type, N + 2, -8, 8, 19L * op + type);
                    MemorySegment dx = a.allocate((N + 7L) * Short.BYTES).fill((byte) 0x7E);
                    k.pointwiseBackward16(op, type, N, dy, 1, x, 2, dx, 5);
                    MemorySegment expected = a.allocate((long) N * Float.BYTES);
                    if (op == Kernels.BACKWARD_RELU) {
                        k.reluBackward(N, widen(a, type, dy, 1, N), 0, widen(a, type, x, 2, N), 0, expected, 0);
                    } else {
                        k.geluBackward(N, widen(a, type, dy, 1, N), 0, widen(a, type, x, 2, N), 0, expected, 0);
                    }
                    assertNarrowed(type, expected, dx, 5, k.name() + " pointwiseBackward16 op " + op + " type " + type);
                }
            }
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("implementations")
    void binary16IsTheFloat32OpRoundedOnceWithBroadcasting(Kernels k) {
        int rows = 129;
        int cols = 385;
        for (int type : new int[] {Kernels.FLOAT16, Kernels.BFLOAT16}) {
            for (int op = 0; op <= 3; op++) {
                try (Arena a = Arena.ofConfined()) {
                    // a: [rows, cols] transposed storage (strides 1, rows), b: a row broadcast over the rows
                    MemorySegment x = halves(a, type, (long) rows * cols + 2, op == 3 ? 0.5 : -4, 4, 41L * op + type);
                    MemorySegment y = halves(a, type, cols + 1, op == 3 ? 0.5 : -4, 4, 43L * op + type);
                    long n = (long) rows * cols;
                    MemorySegment out = a.allocate((n + 7) * Short.BYTES).fill((byte) 0x7E);
                    k.binary16(op, type, 1, 1, rows, cols, x, 2, 0, 0, 1, rows, y, 1, 0, 0, 0, 1, out, 5);
                    MemorySegment xw = widen(a, type, x, 0, n + 2);
                    MemorySegment yw = widen(a, type, y, 0, cols + 1);
                    MemorySegment expected = a.allocate(n * Float.BYTES);
                    k.binary4(op, 1, 1, rows, cols, xw, 2, 0, 0, 1, rows, yw, 1, 0, 0, 0, 1, expected, 0);
                    for (long i = 0; i < n; i++) {
                        float e = expected.getAtIndex(F, i);
                        short bits = type == Kernels.FLOAT16 ? Half.floatToFp16(e) : Half.floatToBf16(e);
                        assertEquals(bits, out.getAtIndex(S, 5 + i), k.name() + " binary16 op " + op + " type " + type
                                + " [" + i + "]");
                    }
                    assertEquals((short) 0x7E7E, out.getAtIndex(S, 4), "written before its range");
                    assertEquals((short) 0x7E7E, out.getAtIndex(S, 5 + n), "written after its range");
                }
            }
        }
    }

    /** Rows of problem p, in a layout {heads, sb, sh, st}, widened into a contiguous [bh, t, d] float segment. */
    private static MemorySegment contiguousRows(Arena a, int type, MemorySegment h, long off, int bh, long[] rows, int t,
                                                int d) {
        MemorySegment f = a.allocate((long) bh * t * d * Float.BYTES);
        for (int p = 0; p < bh; p++) {
            long base = off + (p / rows[0]) * rows[1] + (p % rows[0]) * rows[2];
            for (int r = 0; r < t; r++) {
                for (int x = 0; x < d; x++) {
                    short bits = h.getAtIndex(S, base + r * rows[3] + x);
                    f.setAtIndex(F, ((long) p * t + r) * d + x,
                            type == Kernels.FLOAT16 ? Half.fp16ToFloat(bits) : Half.bf16ToFloat(bits));
                }
            }
        }
        return f;
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("implementations")
    void attentionOnSixteenBitInputsIsTheFloat32KernelOnTheirValues(Kernels k) {
        int batch = 2;
        int heads = 3;
        int bh = batch * heads;
        int t = 37;
        int d = 16;
        long n = (long) bh * t * d;
        float scale = 0.25f;
        // q, k, v as the heads split off one projection [batch, t, 3 * heads * d]; out, dout and the gradients as the
        // transpose of a contiguous [batch, t, heads, d] (PyTorch's flash attention layout)
        long[] qkvRows = {heads, (long) t * 3 * heads * d, d, 3L * heads * d};
        long[] outRows = {heads, (long) t * heads * d, d, (long) heads * d};
        for (int type : new int[] {Kernels.FLOAT16, Kernels.BFLOAT16}) {
            try (Arena a = Arena.ofConfined()) {
                MemorySegment qkv = halves(a, type, (long) batch * t * 3 * heads * d + 1, -2, 2, 53L + type);
                MemorySegment out = halves(a, type, n + 1, -1, 1, 59L + type);
                MemorySegment dout = halves(a, type, n + 1, -1, 1, 61L + type);
                long qOff = 1;
                long kOff = 1 + (long) heads * d;
                long vOff = 1 + 2L * heads * d;
                // 16-bit results at offset 2 of one more element (which stays as filled: no write past the layout)
                MemorySegment[] got = {halves(a, type, n + 2, 0, 1, 1), a.allocate(bh * t * 4L),
                                       halves(a, type, n + 2, 0, 1, 2), halves(a, type, n + 2, 0, 1, 3),
                                       halves(a, type, n + 2, 0, 1, 4)};
                MemorySegment[] untouched = new MemorySegment[got.length];
                for (int i = 0; i < got.length; i++) {
                    untouched[i] = a.allocate(got[i].byteSize()).copyFrom(got[i]);
                }
                MemorySegment[] want = {a.allocate(n * 4), a.allocate(bh * t * 4L), a.allocate(n * 4),
                                        a.allocate(n * 4), a.allocate(n * 4)};
                k.attentionForwardStrided(type, bh, heads, qkvRows[1], qkvRows[2], qkvRows[3], outRows[1], outRows[2],
                        outRows[3], t, d, scale, true, qkv, qOff, qkv, kOff, qkv, vOff, got[0], 2, got[1], 0);
                MemorySegment qw = contiguousRows(a, type, qkv, qOff, bh, qkvRows, t, d);
                MemorySegment kw = contiguousRows(a, type, qkv, kOff, bh, qkvRows, t, d);
                MemorySegment vw = contiguousRows(a, type, qkv, vOff, bh, qkvRows, t, d);
                k.attentionForward(bh, t, d, scale, true, qw, 0, kw, 0, vw, 0, want[0], 0, want[1], 0);
                k.attentionBackwardStrided(type, bh, heads, qkvRows[1], qkvRows[2], qkvRows[3], outRows[1], outRows[2],
                        outRows[3], outRows[1], outRows[2], outRows[3], outRows[1], outRows[2], outRows[3], t, d, scale,
                        true, qkv, qOff, qkv, kOff, qkv,
                        vOff, out, 1, want[1], 0, dout, 1, got[2], 2, got[3], 2, got[4], 2);
                k.attentionBackward(bh, t, d, scale, true, qw, 0, kw, 0, vw, 0,
                        contiguousRows(a, type, out, 1, bh, outRows, t, d), 0, want[1], 0,
                        contiguousRows(a, type, dout, 1, bh, outRows, t, d), 0, want[2], 0, want[3], 0, want[4], 0);
                String[] names = {"out", "lse", "dq", "dk", "dv"};
                for (int i = 0; i < names.length; i++) {
                    String what = k.name() + " attention " + names[i] + " type " + type;
                    if (i == 1) {
                        assertEquals(-1L, want[i].mismatch(got[i]), what);
                        continue;
                    }
                    // each value the float32 kernel's rounded once, at its place in the layout; nothing else written
                    MemorySegment expected = a.allocate(got[i].byteSize()).copyFrom(untouched[i]);
                    narrowRows(type, want[i], bh, outRows, t, d, expected, 2);
                    assertEquals(-1L, expected.mismatch(got[i]), what);
                }
            }
        }
    }

    /** Narrows a contiguous {@code [bh, t, d]} float array into 16-bit rows of {@code type} in the layout rows. */
    private static void narrowRows(int type, MemorySegment f, int bh, long[] rows, int t, int d, MemorySegment h,
                                   long off) {
        for (int p = 0; p < bh; p++) {
            long base = off + (p / rows[0]) * rows[1] + (p % rows[0]) * rows[2];
            for (int r = 0; r < t; r++) {
                for (int x = 0; x < d; x++) {
                    float v = f.getAtIndex(F, ((long) p * t + r) * d + x);
                    h.setAtIndex(S, base + r * rows[3] + x,
                            type == Kernels.FLOAT16 ? Half.floatToFp16(v) : Half.floatToBf16(v));
                }
            }
        }
    }

    /**
     * Sums over a dimension of 16-bit values have the bits of the float32 kernel over the widened values: columns
     * ({@code [outer, n, inner]} with inner 70, a bias gradient's shape) and rows (inner 1, each row longer than a
     * vector and than {@link HostConversions#CHUNK}, which the row sums must not split); {@code sumDimTo16} rounds each
     * of those sums once into 16-bit values.
     */
    @ParameterizedTest(name = "{0}")
    @MethodSource("implementations")
    void sumDim16IsTheFloat32SumOfTheWidenedValues(Kernels k) {
        int[][] shapes = {{2, 300, 70}, {3, HostConversions.CHUNK + 1001, 1}, {1, 0, 5}};
        try (Arena a = Arena.ofConfined()) {
            for (int type : new int[] {Kernels.FLOAT16, Kernels.BFLOAT16}) {
                for (int[] sh : shapes) {
                    long count = (long) sh[0] * sh[1] * sh[2];
                    MemorySegment x = halves(a, type, count + 3, -2, 2, 11 + sh[2]);
                    MemorySegment want = a.allocate((long) sh[0] * sh[2] * Float.BYTES + 4);
                    MemorySegment got = a.allocate((long) sh[0] * sh[2] * Float.BYTES + 4);
                    k.sumDim(sh[0], sh[1], sh[2], widen(a, type, x, 3, count), 0, want, 1);
                    k.sumDim16(type, sh[0], sh[1], sh[2], x, 3, got, 1);
                    assertEquals(-1L, want.mismatch(got), k.name() + " sumDim16 type " + type + " "
                            + java.util.Arrays.toString(sh));
                    // into 16-bit values: each of those sums rounded once, nothing written around them
                    int m = sh[0] * sh[2];
                    MemorySegment got16 = a.allocate(m * 2L + 4);
                    got16.setAtIndex(ValueLayout.JAVA_SHORT, 0, (short) 0x1234);
                    got16.setAtIndex(ValueLayout.JAVA_SHORT, m + 1, (short) 0x4321);
                    k.sumDimTo16(type, sh[0], sh[1], sh[2], x, 3, got16, 1);
                    String what = k.name() + " sumDimTo16 type " + type + " " + java.util.Arrays.toString(sh);
                    for (int i = 0; i < m; i++) {
                        float f = got.getAtIndex(ValueLayout.JAVA_FLOAT, i + 1);
                        short e = type == Kernels.FLOAT16 ? Half.floatToFp16(f) : Half.floatToBf16(f);
                        assertEquals(e, got16.getAtIndex(ValueLayout.JAVA_SHORT, i + 1), what + " [" + i + "]");
                    }
                    assertEquals((short) 0x1234, got16.getAtIndex(ValueLayout.JAVA_SHORT, 0), what + " before");
                    assertEquals((short) 0x4321, got16.getAtIndex(ValueLayout.JAVA_SHORT, m + 1), what + " after");
                }
            }
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("implementations")
    void copy16CopiesTheBitsOfAStridedViewIntoAStridedLayout(Kernels k) {
        int rows = 37;
        int cols = 53;
        try (Arena a = Arena.ofConfined()) {
            MemorySegment src = a.allocate((long) rows * cols * Short.BYTES + 2);
            for (long i = 0; i < (long) rows * cols + 1; i++) {
                src.setAtIndex(S, i, (short) (i * 7919 + 0x7C01));   // NaN payloads among them: kept as they are
            }
            // the transpose of a [rows, cols] matrix at offset 1, written into every other row of a [2 cols, rows] one
            MemorySegment dst = a.allocate(2L * rows * cols * Short.BYTES).fill((byte) 0x11);
            k.copy16(1, 1, cols, rows, src, 1, 0, 0, 1, cols, dst, 0, 0, 0, 2L * rows, 1);
            for (int c = 0; c < cols; c++) {
                for (int r = 0; r < rows; r++) {
                    assertEquals(src.getAtIndex(S, 1 + (long) r * cols + c), dst.getAtIndex(S, 2L * rows * c + r),
                            k.name() + " [" + c + ", " + r + "]");
                    assertEquals((short) 0x1111, dst.getAtIndex(S, 2L * rows * c + rows + r), "the rows between");
                }
            }
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("implementations")
    void unknownOpOrTypeIsRefusedByNameBeforeWriting(Kernels k) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment x = a.allocate(64).fill((byte) 1);
            MemorySegment out = a.allocate(64).fill((byte) 0x7E);
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> k.unary16(7, Kernels.BFLOAT16, 8, x, 0, out, 0));
            assertTrue(e.getMessage().contains("op 7"), e.getMessage());
            e = assertThrows(IllegalArgumentException.class, () -> k.unary16(0, 2, 8, x, 0, out, 0));
            assertTrue(e.getMessage().contains("type 2"), e.getMessage());
            e = assertThrows(IllegalArgumentException.class,
                    () -> k.pointwiseBackward16(2, Kernels.FLOAT16, 8, x, 0, x, 0, out, 0));
            assertTrue(e.getMessage().contains("op 2"), e.getMessage());
            e = assertThrows(IllegalArgumentException.class,
                    () -> k.binary16(4, Kernels.FLOAT16, 1, 1, 1, 8, x, 0, 0, 0, 0, 1, x, 0, 0, 0, 0, 1, out, 0));
            assertTrue(e.getMessage().contains("op 4"), e.getMessage());
            for (long i = 0; i < 32; i++) {
                assertEquals((short) 0x7E7E, out.getAtIndex(S, i), "nothing written");
            }
        }
    }
}
