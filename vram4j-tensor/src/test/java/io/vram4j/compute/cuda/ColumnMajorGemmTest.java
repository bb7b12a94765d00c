package io.vram4j.compute.cuda;

import io.vram4j.compute.Kernels;
import org.junit.jupiter.api.Test;

import java.lang.foreign.MemorySegment;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * The row-major to column-major mapping, checked without a GPU: a plain column-major GEMM with BLAS semantics
 * (what cuBLAS computes), run on the mapped arguments over the same buffers, must give the scalar kernels'
 * row-major product for every transpose combination and padded leading dimensions.
 */
class ColumnMajorGemmTest {
    /** Column-major {@code C = op(X) op(Y)} over float arrays, as the cuBLAS documentation defines gemm. */
    private static void columnMajor(int transx, int transy, int m, int n, int k, float[] x, int ldx, float[] y, int ldy,
                                    float[] c, int ldc) {
        for (int j = 0; j < n; j++) {
            for (int i = 0; i < m; i++) {
                double s = 0;
                for (int p = 0; p < k; p++) {
                    float xv = transx == ColumnMajorGemm.CUBLAS_OP_N ? x[i + p * ldx] : x[p + i * ldx];
                    float yv = transy == ColumnMajorGemm.CUBLAS_OP_N ? y[p + j * ldy] : y[j + p * ldy];
                    s += (double) xv * yv;
                }
                c[i + j * ldc] = (float) s;
            }
        }
    }

    @Test
    void everyTransposeCombinationMatchesTheRowMajorProduct() {
        Random r = new Random(7);
        int m = 5;
        int n = 3;
        int k = 4;
        for (boolean ta : new boolean[] {false, true}) {
            for (boolean tb : new boolean[] {false, true}) {
                int lda = (ta ? m : k) + 2;
                int ldb = (tb ? k : n) + 1;
                int ldc = n + 3;
                float[] a = new float[(ta ? k : m) * lda];
                float[] b = new float[(tb ? n : k) * ldb];
                for (int i = 0; i < a.length; i++) {
                    a[i] = r.nextInt(7) - 3;
                }
                for (int i = 0; i < b.length; i++) {
                    b[i] = r.nextInt(7) - 3;
                }
                float[] expected = new float[m * ldc];
                Kernels.scalar().sgemm(ta, tb, m, n, k, 1f, MemorySegment.ofArray(a), 0, lda, MemorySegment.ofArray(b), 0,
                        ldb, 0f, MemorySegment.ofArray(expected), 0, ldc);
                ColumnMajorGemm g = ColumnMajorGemm.ofRowMajor(ta, tb, m, n, k, lda, ldb, ldc);
                assertEquals(n, g.m());
                assertEquals(m, g.n());
                float[] c = new float[m * ldc];
                columnMajor(g.transa(), g.transb(), g.m(), g.n(), g.k(), b, g.lda(), a, g.ldb(), c, g.ldc());
                assertArrayEquals(expected, c, "transA=" + ta + " transB=" + tb);
            }
        }
    }
}
