package io.vram4j.tensor;

import io.vram4j.autograd.NoGrad;
import io.vram4j.autograd.Prim;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code Functional.linear} as PyTorch's {@code addmm}: one product that starts from the bias, so a 16-bit result is
 * rounded once, one autograd node ({@code AddmmBackward}), and no bias-less product allocated on the way.
 */
class LinearAddmmTest {

    private static float[] random(Random r, int n) {
        float[] v = new float[n];
        for (int i = 0; i < n; i++) {
            v[i] = (float) r.nextGaussian();
        }
        return v;
    }

    /** Round to the 16-bit type and back, elementwise. */
    private static float[] rounded(Device dev, DType dt, float[] values) {
        try (Tensor f = dev.tensor(values, values.length); Tensor h = f.to(dt)) {
            return h.toFloatArray();
        }
    }

    @ParameterizedTest(name = "{0}, input rank {1}")
    @CsvSource({"bfloat16,2", "bfloat16,3", "float16,2", "float16,3"})
    void aSixteenBitLinearIsTheFloat32ResultRoundedOnce(String dtype, int rank) {
        DType dt = dtype.equals("bfloat16") ? DType.BFLOAT16 : DType.FLOAT16;
        int in = 300;   // more than one 256-deep slice of the CPU product: the bias is added before the first
        int out = 24;
        int[] xShape = rank == 2 ? new int[] {10, in} : new int[] {2, 5, in};
        Random r = new Random(11);
        try (Device dev = Device.open("host:64MiB"); MemoryScope s = MemoryScope.open()) {
            // values exactly representable in the 16-bit type, so both computations start from the same numbers
            float[] xv = rounded(dev, dt, random(r, 10 * in));
            float[] wv = rounded(dev, dt, random(r, out * in));
            float[] bv = rounded(dev, dt, random(r, out));
            for (int i = 0; i < out; i++) {
                bv[i] *= 64;   // a bias well above the product's rounding step, where rounding twice shows
            }
            Tensor x16 = dev.tensor(dt, xv, xShape);
            Tensor w16 = dev.tensor(dt, wv, out, in);
            Tensor b16 = dev.tensor(dt, bv, out);
            float[] got = Functional.linear(x16, w16, b16).toFloatArray();

            float[] exact = Functional.linear(dev.tensor(xv, xShape), dev.tensor(wv, out, in), dev.tensor(bv, out))
                    .toFloatArray();
            assertArrayEquals(rounded(dev, dt, exact), got, "the float32 result rounded once");

            // what a product rounded to 16 bits and then a 16-bit bias add give: the data tells the two apart
            float[] twice;
            try (Tensor wt = w16.t(); Tensor y = x16.matmul(wt); Tensor z = y.add(b16)) {
                twice = z.toFloatArray();
            }
            int differ = 0;
            for (int i = 0; i < got.length; i++) {
                differ += got[i] != twice[i] ? 1 : 0;
            }
            assertTrue(differ > 0, "rounding twice would have given the same " + got.length + " values");
        }
    }

    @Test
    void linearRecordsOneAddmmNodeAndFallsBackToAProductAndAnAddForMixedDtypes() {
        try (Device dev = Device.open("host:64MiB"); MemoryScope s = MemoryScope.open()) {
            Generator g = new Generator(3);
            Tensor x = dev.randn(g, 4, 6).requiresGrad(true);
            Tensor w = dev.randn(g, 5, 6).requiresGrad(true);
            Tensor b = dev.randn(g, 5).requiresGrad(true);
            assertEquals(Prim.ADDMM, Functional.linear(x, w, b).gradFn().prim());
            assertEquals("AddmmBackward", Prim.ADDMM.backwardName());
            assertEquals(Prim.MATMUL, Functional.linear(x, w, null).gradFn().prim());
            Tensor b16 = b.to(DType.BFLOAT16);
            assertEquals(Prim.ADD, Functional.linear(x, w, b16).gradFn().prim(), "bias of another dtype");
            Tensor row = dev.randn(g, 1, 5).requiresGrad(true);
            assertEquals(Prim.ADD, Functional.linear(x, w, row).gradFn().prim(), "bias of another shape");
        }
    }

    @Test
    void theForwardAllocatesNothingButItsOutput() {
        try (Device dev = Device.open("host:64MiB"); MemoryScope s = MemoryScope.open()) {
            Generator g = new Generator(5);
            Tensor x = dev.randn(g, 64, 128);
            Tensor w = dev.randn(g, 256, 128);
            Tensor b = dev.randn(g, 256);
            long before = dev.memoryAllocated();
            dev.allocator().resetPeakMemoryStats();
            Tensor y;
            try (NoGrad ng = NoGrad.enter()) {
                y = Functional.linear(x, w, b);
            }
            long outBytes = 64L * 256 * Float.BYTES;
            assertEquals(before + outBytes, dev.memoryAllocated());
            assertEquals(before + outBytes, dev.memoryStats().get("allocated_bytes.all.peak"),
                    "the peak inside linear: its output alone (a product and then an add would hold two)");
            y.close();
        }
    }

    @Test
    void aBiasOfTheWrongShapeOrDtypeIsRefusedBeforeAnythingIsAllocated() {
        try (Device dev = Device.open("host:64MiB"); MemoryScope s = MemoryScope.open()) {
            Generator g = new Generator(9);
            Tensor a = dev.randn(g, 3, 4);
            Tensor b = dev.randn(g, 4, 5);
            long before = dev.memoryAllocated();
            IllegalArgumentException shape = assertThrows(IllegalArgumentException.class,
                    () -> Ops.addmm(dev.randn(g, 4), a, b));
            assertEquals("addmm bias must be [5] float32, got [4] float32", shape.getMessage());
            Tensor half = dev.randn(g, 5).to(DType.BFLOAT16);
            long withBiases = dev.memoryAllocated();
            IllegalArgumentException dtype = assertThrows(IllegalArgumentException.class, () -> Ops.addmm(half, a, b));
            assertEquals("addmm bias must be [5] float32, got [5] bfloat16", dtype.getMessage());
            assertEquals(withBiases, dev.memoryAllocated(), "nothing allocated by the refused calls");
            assertTrue(withBiases > before);
        }
    }
}
