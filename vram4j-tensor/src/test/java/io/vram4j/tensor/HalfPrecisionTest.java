package io.vram4j.tensor;

import io.vram4j.compute.Half;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

class HalfPrecisionTest {
    Device dev;
    MemoryScope scope;

    @BeforeEach
    void open() {
        dev = Device.open("host:256MiB");
        scope = MemoryScope.open();
    }

    @AfterEach
    void close() {
        scope.close();
        assertEquals(0, dev.memoryAllocated());
        dev.close();
    }

    @Test
    void conversionRoundTrips() {
        float[] exact = {0, 1, -2, 0.5f, 1024, -0.125f, 65504};
        for (DType dt : new DType[] {DType.FLOAT16, DType.BFLOAT16}) {
            Tensor h = dev.tensor(exact).to(dt);
            assertEquals(dt, h.dtype());
            assertEquals(exact.length * 2L, h.storage().byteSize());
            float[] back = h.to(DType.FLOAT32).toFloatArray();
            for (int i = 0; i < exact.length - 1; i++) {
                assertEquals(exact[i], back[i], "exactly representable in " + dt);
            }
        }
        float[] v = {1.1f, -3.3f, 1e-3f, 70000f, 3.14159f};
        float[] h16 = dev.tensor(v).to(DType.FLOAT16).toFloatArray();
        float[] b16 = dev.tensor(v).to(DType.BFLOAT16).toFloatArray();
        for (int i = 0; i < v.length; i++) {
            assertEquals(Half.fp16ToFloat(Half.floatToFp16(v[i])), h16[i]);
            assertEquals(Half.bf16ToFloat(Half.floatToBf16(v[i])), b16[i]);
        }
        assertEquals(Float.POSITIVE_INFINITY, h16[3]);
        // integer conversions
        assertArrayEquals(new long[] {1, -3, 0, 70000, 3}, dev.tensor(v).to(DType.INT64).toLongArray());
        assertArrayEquals(new float[] {7, -8}, dev.tensor(new long[] {7, -8}).to(DType.FLOAT32).toFloatArray());
        Tensor same = dev.tensor(v).to(DType.FLOAT32);
        assertEquals(DType.FLOAT32, same.dtype());
    }

    @Test
    void opsComputeInFloat32AndStoreHalf() {
        Generator g = new Generator(1);
        Tensor a = dev.randn(g, 8, 16);
        Tensor b = dev.randn(g, 16, 4);
        for (DType dt : new DType[] {DType.FLOAT16, DType.BFLOAT16}) {
            Tensor ah = a.to(dt);
            Tensor bh = b.to(dt);
            // reference: float32 math on the half-rounded inputs, then one rounding of the result
            float[] ref = ah.to(DType.FLOAT32).matmul(bh.to(DType.FLOAT32)).to(dt).to(DType.FLOAT32).toFloatArray();
            Tensor c = ah.matmul(bh);
            assertEquals(dt, c.dtype());
            assertEquals(8 * 4 * 2L, c.nbytes());
            assertArrayEquals(ref, c.to(DType.FLOAT32).toFloatArray());
            float[] sm = ah.to(DType.FLOAT32).softmax().to(dt).toFloatArray();
            assertArrayEquals(sm, ah.softmax().toFloatArray());
            float[] s = ah.to(DType.FLOAT32).add(ah.to(DType.FLOAT32).t().contiguous().t()).to(dt).toFloatArray();
            assertArrayEquals(s, ah.add(ah).toFloatArray());
            // mixed float types promote to float32
            assertEquals(DType.FLOAT32, ah.add(a).dtype());
            Tensor ln = Functional.layerNorm(ah, null, null, 1e-5f);
            assertEquals(dt, ln.dtype());
            assertArrayEquals(Functional.layerNorm(ah.to(DType.FLOAT32), null, null, 1e-5f).to(dt).toFloatArray(),
                    ln.toFloatArray());
        }
    }

    @Test
    void halfParametersGetHalfGradients() {
        Tensor w = dev.tensor(new float[] {1, 2, 3}).to(DType.BFLOAT16).requiresGrad(true);
        Tensor x = dev.tensor(new float[] {0.5f, 0.25f, 2});
        w.mul(x).sum().backward();
        assertEquals(DType.BFLOAT16, w.grad().dtype());
        assertArrayEquals(new float[] {0.5f, 0.25f, 2}, w.grad().toFloatArray());
        Tensor w32 = dev.tensor(new float[] {1, 2}).requiresGrad(true);
        w32.to(DType.FLOAT16).mul(2f).sum().backward();
        assertEquals(DType.FLOAT32, w32.grad().dtype());
        assertArrayEquals(new float[] {2, 2}, w32.grad().toFloatArray());
        w.close();
        w32.close();
        assertTrue(w.isClosed());
    }
}
