package io.vram4j.tensor;

import io.vram4j.compute.Kernels;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code Kernels.gemmBatched16} of the CPU kernels gives the bits the tensor ops have always computed for
 * float16/bfloat16 matmul on host memory (operands widened to float32, the float32 product, the result rounded to
 * the 16-bit type), for each layout and dtype, with the scalar and the vector kernels: the tensor ops on a device
 * call it where the host converts.
 */
class Gemm16Test {

    private static float[] random(Random r, int n) {
        float[] v = new float[n];
        for (int i = 0; i < n; i++) {
            v[i] = (float) r.nextGaussian();
        }
        return v;
    }

    @ParameterizedTest(name = "{0} {1} transA={2} transB={3}")
    @CsvSource({"bfloat16,scalar,false,false", "bfloat16,vector,true,false", "float16,vector,false,true",
            "float16,scalar,true,true", "bfloat16,vector,true,true"})
    void theKernelEqualsTheHostMatmulOf16BitTensors(String dtype, String impl, boolean transA, boolean transB) {
        DType dt = dtype.equals("bfloat16") ? DType.BFLOAT16 : DType.FLOAT16;
        Kernels k = impl.equals("scalar") ? Kernels.scalar() : Kernels.vector();
        int batch = 3;
        int m = 17;
        int n = 9;
        int kk = 70;
        Random r = new Random(3);
        try (Device owner = Device.open("host:64MiB"); MemoryScope s = MemoryScope.open()) {
            Device dev = owner.withKernels(k);
            // stored as [batch, k, m] when transposed, so that op(A) is the transposed view
            Tensor a = dev.tensor(dt, random(r, batch * m * kk), batch, transA ? kk : m, transA ? m : kk);
            Tensor b = dev.tensor(dt, random(r, batch * kk * n), batch, transB ? n : kk, transB ? kk : n);
            Tensor opA = transA ? a.transpose(1, 2) : a;
            Tensor opB = transB ? b.transpose(1, 2) : b;
            Tensor expected = opA.matmul(opB);
            Tensor out = dev.zeros(dt, batch, m, n);
            k.gemmBatched16(dt == DType.BFLOAT16, batch, transA, transB, m, n, kk, 1f, a.storage.kernelSegment(),
                    a.offset, transA ? m : kk, (long) m * kk, b.storage.kernelSegment(), b.offset, transB ? kk : n,
                    (long) kk * n, 0f, out.storage.kernelSegment(), out.offset, n, (long) m * n);
            assertArrayEquals(expected.toFloatArray(), out.toFloatArray());
        }
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource({"scalar", "vector"})
    void betaAddsTheWidenedOldValuesAndBadShapesAreRefused(String impl) {
        Kernels k = impl.equals("scalar") ? Kernels.scalar() : Kernels.vector();
        try (Device owner = Device.open("host:64MiB"); MemoryScope s = MemoryScope.open()) {
            Device dev = owner.withKernels(k);
            Tensor a = dev.tensor(DType.BFLOAT16, new float[] {1, 2, 3, 4}, 2, 2);
            Tensor eye = dev.tensor(DType.BFLOAT16, new float[] {1, 0, 0, 1}, 2, 2);
            Tensor c = dev.tensor(DType.BFLOAT16, new float[] {0.5f, 0.25f, -1, 256}, 2, 2);
            k.gemmBatched16(true, 1, false, false, 2, 2, 2, 2f, a.storage.kernelSegment(), a.offset, 2, 4,
                    eye.storage.kernelSegment(), eye.offset, 2, 4, 1f, c.storage.kernelSegment(), c.offset, 2, 4);
            // 2 * a + c, each rounded once to bfloat16 (8 bits of mantissa: 264 stays, 264.0 = 256 + 8)
            assertArrayEquals(new float[] {2.5f, 4.25f, 5, 264}, c.toFloatArray());
            IndexOutOfBoundsException e = assertThrows(IndexOutOfBoundsException.class, () -> k.gemmBatched16(true,
                    1, false, false, 3, 2, 2, 1f, a.storage.kernelSegment(), a.offset, 2, 4,
                    eye.storage.kernelSegment(), eye.offset, 2, 4, 0f, c.storage.kernelSegment(), c.offset, 2, 4));
            assertArrayEquals(new float[] {2.5f, 4.25f, 5, 264}, c.toFloatArray(), "nothing written: " + e.getMessage());
        }
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource({"scalar", "vector"})
    void aBiasStartsEveryRowAndOneThatDoesNotFitIsRefused(String impl) {
        Kernels k = impl.equals("scalar") ? Kernels.scalar() : Kernels.vector();
        try (Device owner = Device.open("host:64MiB"); MemoryScope s = MemoryScope.open()) {
            Device dev = owner.withKernels(k);
            Tensor a = dev.tensor(DType.BFLOAT16, new float[] {1, 2, 3, 4}, 2, 2);
            Tensor eye = dev.tensor(DType.BFLOAT16, new float[] {1, 0, 0, 1}, 2, 2);
            Tensor bias = dev.tensor(DType.BFLOAT16, new float[] {0.5f, 256, 99}, 3);
            Tensor c = dev.tensor(DType.BFLOAT16, new float[] {7, 7, 7, 7}, 2, 2);
            // bias values 0 and 2 (stride 2); the old C is not read
            k.gemmBatched16Bias(true, 1, false, false, 2, 2, 2, 1f, a.storage.kernelSegment(), a.offset, 2, 4,
                    eye.storage.kernelSegment(), eye.offset, 2, 4, bias.storage.kernelSegment(), bias.offset, 2,
                    c.storage.kernelSegment(), c.offset, 2, 4);
            assertArrayEquals(new float[] {1.5f, 101, 3.5f, 103}, c.toFloatArray());
            IndexOutOfBoundsException e = assertThrows(IndexOutOfBoundsException.class, () -> k.gemmBatched16Bias(true,
                    1, false, false, 2, 2, 2, 1f, a.storage.kernelSegment(), a.offset, 2, 4,
                    eye.storage.kernelSegment(), eye.offset, 2, 4, bias.storage.kernelSegment(), bias.offset, 3,
                    c.storage.kernelSegment(), c.offset, 2, 4));
            assertTrue(e.getMessage().contains("bias"), e.getMessage());
            assertArrayEquals(new float[] {1.5f, 101, 3.5f, 103}, c.toFloatArray(), "nothing written");
        }
    }
}
