package io.vram4j.tensor;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.util.function.DoubleUnaryOperator;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Forward results of every op against hand-computed values or float64 references. */
class OpsForwardTest {
    Device dev;
    MemoryScope scope;
    Generator gen = new Generator(2024);

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

    static void close(float[] expected, float[] actual, double tol) {
        assertEquals(expected.length, actual.length, "length");
        for (int i = 0; i < expected.length; i++) {
            double e = expected[i];
            assertTrue(Math.abs(e - actual[i]) <= tol * Math.max(1, Math.abs(e)) || (Double.isInfinite(e) && e == actual[i]),
                    "element " + i + ": expected " + e + " but was " + actual[i]);
        }
    }

    static float[] map(float[] x, DoubleUnaryOperator f) {
        float[] r = new float[x.length];
        for (int i = 0; i < x.length; i++) {
            r[i] = (float) f.applyAsDouble(x[i]);
        }
        return r;
    }

    Tensor rnd(int... shape) {
        return dev.randn(gen, shape);
    }

    @Test
    void broadcastingBinaryOps() {
        Tensor a = dev.tensor(new float[] {1, 2, 3, 4, 5, 6}, 2, 3);
        Tensor col = dev.tensor(new float[] {10, 20}, 2, 1);
        Tensor row = dev.tensor(new float[] {1, 2, 4}, 3);
        assertArrayEquals(new float[] {11, 12, 13, 24, 25, 26}, a.add(col).toFloatArray());
        assertArrayEquals(new float[] {0, 0, -1, 3, 3, 2}, a.sub(row).toFloatArray());
        assertArrayEquals(new float[] {10, 20, 30, 80, 100, 120}, a.mul(col).toFloatArray());
        assertArrayEquals(new float[] {1, 1, 0.75f, 4, 2.5f, 1.5f}, a.div(row).toFloatArray());
        Tensor outer = col.mul(row);
        assertArrayEquals(new int[] {2, 3}, outer.shape());
        assertArrayEquals(new float[] {10, 20, 40, 20, 40, 80}, outer.toFloatArray());
        assertArrayEquals(new float[] {5, 7, 9}, a.narrow(0, 0, 1).add(a.narrow(0, 1, 1)).toFloatArray());
        Tensor t = a.t();
        assertArrayEquals(new float[] {11, 24, 12, 25, 13, 26}, t.add(col.t()).toFloatArray());
        assertArrayEquals(new float[] {2, 8, 4, 10, 6, 12}, t.add(t).toFloatArray());
        assertArrayEquals(new float[] {7}, dev.scalar(3).add(dev.tensor(new float[] {4}, 1)).toFloatArray());
        assertThrows(IllegalArgumentException.class, () -> a.add(dev.zeros(2)));
        assertThrows(IllegalArgumentException.class, () -> a.add(dev.tensor(new int[] {1, 2, 3})));
    }

    @Test
    void unaryOpsAgainstDoubleReference() {
        Tensor x = rnd(5, 7);
        float[] v = x.toFloatArray();
        close(map(v, Math::exp), x.exp().toFloatArray(), 1e-6);
        close(map(v, Math::tanh), x.tanh().toFloatArray(), 1e-6);
        close(map(v, d -> Math.max(d, 0)), x.relu().toFloatArray(), 0);
        close(map(v, d -> -d), x.neg().toFloatArray(), 0);
        close(map(v, d -> d * 3 + 1), x.mul(3f).add(1f).toFloatArray(), 1e-6);
        close(map(v, d -> 0.5 * d * (1 + Math.tanh(Math.sqrt(2 / Math.PI) * (d + 0.044715 * d * d * d)))),
                x.gelu().toFloatArray(), 1e-6);
        Tensor p = x.exp();
        close(v, p.log().toFloatArray(), 1e-5);
    }

    @Test
    void reductions() {
        Tensor x = dev.tensor(new float[] {1, 5, 3, 4, 2, 6, 9, 8, 7, 0, -1, -2}, 2, 3, 2);
        assertEquals(42f, x.sum().item());
        assertEquals(3.5f, x.mean().item());
        assertArrayEquals(new float[] {10, 13, 10, 4, 1, 4}, x.sum(0, false).reshape(-1).toFloatArray());
        assertArrayEquals(new int[] {2, 1, 2}, x.sum(1, true).shape());
        assertArrayEquals(new float[] {6, 15, 15, 6}, x.sum(1, false).toFloatArray());
        assertArrayEquals(new float[] {2, 5, 5, 2}, x.mean(-2, false).toFloatArray());
        assertArrayEquals(new float[] {3, 6, 9, 8}, x.max(1, false).toFloatArray());
        assertArrayEquals(new float[] {5, 4, 6, 9, 7, -1}, x.max(2, false).toFloatArray());
        assertArrayEquals(new long[] {1, 1, 1, 0, 0, 0}, x.argmax(2, false).toLongArray());
        assertArrayEquals(new long[] {1, 2, 0, 0}, x.argmax(1, false).toLongArray());
        assertArrayEquals(new int[] {2, 1, 2}, x.argmax(1, true).shape());
        assertArrayEquals(new float[] {21, 21}, x.sumToSize(2, 1, 1).toFloatArray());
        assertArrayEquals(new float[] {10, 13, 10, 4, 1, 4}, x.sumToSize(3, 2).toFloatArray());
        assertArrayEquals(new float[] {1, 2, 3}, dev.tensor(new float[] {1, 2, 3}).sumToSize(3).toFloatArray());
        Tensor big = rnd(300, 70);
        float[] b = big.toFloatArray();
        double s = 0;
        for (float f : b) {
            s += f;
        }
        assertEquals(s, big.sum().item(), 1e-3);
        float[] colSums = big.sum(0, false).toFloatArray();
        double c5 = 0;
        for (int i = 0; i < 300; i++) {
            c5 += b[i * 70 + 5];
        }
        assertEquals(c5, colSums[5], 1e-3);
    }

    @Test
    void matmulAgainstDoubleReference() {
        for (int[] dims : new int[][] {{1, 1, 1}, {3, 5, 4}, {17, 9, 33}, {64, 70, 40}}) {
            int m = dims[0];
            int n = dims[1];
            int k = dims[2];
            Tensor a = rnd(2, m, k);
            Tensor b = rnd(2, k, n);
            float[] expected = refMatmul(a.toFloatArray(), b.toFloatArray(), 2, m, n, k);
            close(expected, a.matmul(b).toFloatArray(), 1e-4);
            // transposed operands are used as views
            Tensor at = a.transpose(1, 2).contiguous().transpose(1, 2);
            Tensor bt = b.transpose(1, 2).contiguous().transpose(1, 2);
            close(expected, at.matmul(bt).toFloatArray(), 1e-4);
            // a 2-D right operand broadcast over the batch
            Tensor b0 = b.narrow(0, 0, 1).reshape(k, n);
            float[] e0 = refMatmul(a.toFloatArray(), b0.toFloatArray(), 2, m, n, k, true);
            close(e0, a.matmul(b0).toFloatArray(), 1e-4);
            close(e0, a.matmul(b0.t().contiguous().t()).toFloatArray(), 1e-4);
        }
        // batch broadcast [2,1,m,k] @ [3,k,n] and a strided 4-D operand
        Tensor a = rnd(2, 1, 3, 4);
        Tensor b = rnd(3, 4, 5);
        Tensor c = a.matmul(b);
        assertArrayEquals(new int[] {2, 3, 3, 5}, c.shape());
        float[] ab = a.narrow(0, 1, 1).reshape(3, 4).matmul(b.narrow(0, 2, 1).reshape(4, 5)).toFloatArray();
        close(ab, c.narrow(0, 1, 1).narrow(1, 2, 1).reshape(-1).toFloatArray(), 1e-6);
        assertThrows(IllegalArgumentException.class, () -> rnd(3, 4).matmul(rnd(5, 2)));
        assertThrows(IllegalArgumentException.class, () -> rnd(3).matmul(rnd(3, 2)));
    }

    static float[] refMatmul(float[] a, float[] b, int batch, int m, int n, int k) {
        return refMatmul(a, b, batch, m, n, k, false);
    }

    static float[] refMatmul(float[] a, float[] b, int batch, int m, int n, int k, boolean shared) {
        float[] c = new float[batch * m * n];
        for (int z = 0; z < batch; z++) {
            for (int i = 0; i < m; i++) {
                for (int j = 0; j < n; j++) {
                    double s = 0;
                    for (int p = 0; p < k; p++) {
                        s += (double) a[z * m * k + i * k + p] * b[(shared ? 0 : z * k * n) + p * n + j];
                    }
                    c[z * m * n + i * n + j] = (float) s;
                }
            }
        }
        return c;
    }

    @Test
    void softmaxAndLogSoftmax() {
        Tensor x = dev.tensor(new float[] {1, 2, 3, 1000, 1000, 1000}, 2, 3);
        double z = Math.exp(1) + Math.exp(2) + Math.exp(3);
        float[] p = {(float) (Math.exp(1) / z), (float) (Math.exp(2) / z), (float) (Math.exp(3) / z), 1f / 3, 1f / 3, 1f / 3};
        close(p, x.softmax().toFloatArray(), 1e-6);
        close(map(p, Math::log), x.logSoftmax().toFloatArray(), 1e-6);
        Tensor t = dev.tensor(new float[] {1, 1000, 2, 1000, 3, 1000}, 3, 2).t();
        close(p, t.softmax().toFloatArray(), 1e-6);
    }

    @Test
    void layerNormAgainstDoubleReference() {
        int rows = 4;
        int cols = 10;
        Tensor x = rnd(rows, cols);
        Tensor w = rnd(cols);
        Tensor b = rnd(cols);
        float[] xv = x.toFloatArray();
        float[] wv = w.toFloatArray();
        float[] bv = b.toFloatArray();
        float[] e = new float[rows * cols];
        for (int r = 0; r < rows; r++) {
            double mean = 0;
            for (int j = 0; j < cols; j++) {
                mean += xv[r * cols + j];
            }
            mean /= cols;
            double var = 0;
            for (int j = 0; j < cols; j++) {
                var += Math.pow(xv[r * cols + j] - mean, 2);
            }
            var /= cols;
            for (int j = 0; j < cols; j++) {
                e[r * cols + j] = (float) ((xv[r * cols + j] - mean) / Math.sqrt(var + 1e-5) * wv[j] + bv[j]);
            }
        }
        close(e, Functional.layerNorm(x, w, b, 1e-5f).toFloatArray(), 1e-5);
    }

    @Test
    void embeddingGathersRows() {
        Tensor w = dev.tensor(new float[] {0, 1, 10, 11, 20, 21}, 3, 2);
        Tensor y = Functional.embedding(w, dev.tensor(new int[] {2, 0, 2, 1}, 2, 2));
        assertArrayEquals(new int[] {2, 2, 2}, y.shape());
        assertArrayEquals(new float[] {20, 21, 0, 1, 20, 21, 10, 11}, y.toFloatArray());
        IndexOutOfBoundsException ex = assertThrows(IndexOutOfBoundsException.class,
                () -> Functional.embedding(w, dev.tensor(new long[] {3})));
        assertTrue(ex.getMessage().contains("3"));
    }

    @Test
    void embeddingBackwardAddsRowsByInt32AndStridedIndices() {
        Tensor g = dev.tensor(new float[] {1, 2, 3, 4, 5, 6, 7, 8}, 4, 2);
        try (Tensor idx = dev.tensor(new int[] {2, 0, 2, 1}, 4);
             Tensor dw = BackwardOps.embeddingBackward(g, idx, 3)) {
            assertArrayEquals(new float[] {3, 4, 7, 8, 1 + 5, 2 + 6}, dw.toFloatArray());
        }
        try (Tensor pairs = dev.tensor(new long[] {2, 9, 0, 9, 2, 9, 1, 9}, 4, 2);
             Tensor cols = pairs.t();
             Tensor firsts = cols.narrow(0, 0, 1);   // int64 [1, 4] with stride 2: copied before the kernel reads it
             Tensor dw = BackwardOps.embeddingBackward(g, firsts, 3)) {
            assertTrue(!firsts.isContiguous());
            assertArrayEquals(new float[] {3, 4, 7, 8, 1 + 5, 2 + 6}, dw.toFloatArray());
        }
        try (Tensor bad = dev.tensor(new int[] {0, -1, 1, 2}, 4)) {
            IndexOutOfBoundsException ex = assertThrows(IndexOutOfBoundsException.class,
                    () -> BackwardOps.embeddingBackward(g, bad, 3));
            assertTrue(ex.getMessage().contains("-1"), ex.getMessage());
        }
    }

    @Test
    void dropoutIsInvertedAndReplayable() {
        Tensor x = dev.ones(100, 100);
        Generator g = new Generator(9);
        long state = g.state();
        float[] y = Functional.dropout(x, 0.25f, true, g).toFloatArray();
        int kept = 0;
        for (float v : y) {
            assertTrue(v == 0f || Math.abs(v - 1f / 0.75f) < 1e-6, "value " + v);
            kept += v == 0 ? 0 : 1;
        }
        assertEquals(7500, kept, 200);
        g.setState(state);
        assertArrayEquals(y, Functional.dropout(x, 0.25f, true, g).toFloatArray());
        assertArrayEquals(x.toFloatArray(), Functional.dropout(x, 0.25f, false, g).toFloatArray());
        assertThrows(IllegalArgumentException.class, () -> Functional.dropout(x, 1.5f, 1L));
    }

    @Test
    void causalMaskAndAttention() {
        Tensor s = dev.ones(1, 3, 3);
        assertArrayEquals(new float[] {1, Float.NEGATIVE_INFINITY, Float.NEGATIVE_INFINITY, 1, 1, Float.NEGATIVE_INFINITY, 1, 1, 1},
                Functional.causalMask(s).toFloatArray());
        int t = 5;
        int d = 4;
        Tensor q = rnd(2, t, d);
        Tensor k = rnd(2, t, d);
        Tensor v = rnd(2, t, d);
        float[] qv = q.toFloatArray();
        float[] kv = k.toFloatArray();
        float[] vv = v.toFloatArray();
        float[] e = new float[2 * t * d];
        for (int b = 0; b < 2; b++) {
            for (int i = 0; i < t; i++) {
                double[] w = new double[t];
                double mx = Double.NEGATIVE_INFINITY;
                for (int j = 0; j <= i; j++) {
                    double dot = 0;
                    for (int c = 0; c < d; c++) {
                        dot += qv[(b * t + i) * d + c] * kv[(b * t + j) * d + c];
                    }
                    w[j] = dot / Math.sqrt(d);
                    mx = Math.max(mx, w[j]);
                }
                double z = 0;
                for (int j = 0; j <= i; j++) {
                    w[j] = Math.exp(w[j] - mx);
                    z += w[j];
                }
                for (int c = 0; c < d; c++) {
                    double acc = 0;
                    for (int j = 0; j <= i; j++) {
                        acc += w[j] / z * vv[(b * t + j) * d + c];
                    }
                    e[(b * t + i) * d + c] = (float) acc;
                }
            }
        }
        close(e, Functional.scaledDotProductAttention(q, k, v, true).toFloatArray(), 1e-5);
    }

    @Test
    void crossEntropyAgainstDoubleReference() {
        Tensor logits = rnd(6, 4);
        long[] tg = {0, 3, 1, 1, 2, -100};
        float[] l = logits.toFloatArray();
        double total = 0;
        for (int i = 0; i < 5; i++) {
            double z = 0;
            for (int j = 0; j < 4; j++) {
                z += Math.exp(l[i * 4 + j]);
            }
            total += Math.log(z) - l[i * 4 + (int) tg[i]];
        }
        assertEquals(total / 5, Functional.crossEntropy(logits, dev.tensor(tg)).item(), 1e-5);
        assertEquals(total / 5, Functional.crossEntropy(logits.reshape(2, 3, 4), dev.tensor(tg, 2, 3)).item(), 1e-5);
        assertThrows(IndexOutOfBoundsException.class, () -> Functional.crossEntropy(logits, dev.tensor(new long[] {0, 1, 2, 3, 4, 0})));
    }

    @Test
    void viewsAndCopies() {
        Tensor x = dev.arange(24).reshape(2, 3, 4);
        assertArrayEquals(new long[] {12, 4, 1}, x.strides());
        Tensor t = x.transpose(0, 2);
        assertArrayEquals(new int[] {4, 3, 2}, t.shape());
        assertEquals(x.getFloat(1, 2, 3), t.getFloat(3, 2, 1));
        assertThrows(IllegalStateException.class, () -> t.view(24));
        Tensor r = t.reshape(24);
        assertTrue(r.isContiguous());
        assertEquals(x.getFloat(1, 0, 0), r.getFloat(1));
        Tensor n = x.narrow(2, 1, 2);
        assertArrayEquals(new float[] {1, 2, 5, 6, 9, 10, 13, 14, 17, 18, 21, 22}, n.toFloatArray());
        assertArrayEquals(new float[] {1, 2, 5, 6, 9, 10, 13, 14, 17, 18, 21, 22}, n.contiguous().toFloatArray());
        Tensor e = dev.tensor(new float[] {1, 2}, 2, 1).expand(2, 3);
        assertArrayEquals(new long[] {1, 0}, e.strides());
        assertArrayEquals(new float[] {1, 1, 1, 2, 2, 2}, e.toFloatArray());
        assertArrayEquals(new int[] {2, 1, 3, 4}, x.unsqueeze(1).shape());
        assertArrayEquals(new int[] {3, 4}, x.narrow(0, 1, 1).squeeze(0).shape());
        assertArrayEquals(new int[] {6, 4}, x.view(-1, 4).shape());
        Tensor c = x.copy();
        c.fill(7);
        assertEquals(0f, x.getFloat(0, 0, 0));
        assertThrows(IndexOutOfBoundsException.class, () -> x.narrow(1, 2, 2));
    }

    @Test
    void inPlaceOps() {
        Tensor x = dev.tensor(new float[] {1, 2, 3, 4}, 2, 2);
        x.addInPlace(dev.tensor(new float[] {10, 20}), 0.5f);
        assertArrayEquals(new float[] {6, 12, 8, 14}, x.toFloatArray());
        x.mulInPlace(0.5f);
        assertArrayEquals(new float[] {3, 6, 4, 7}, x.toFloatArray());
        x.t().copyFrom(dev.tensor(new float[] {1, 2, 3, 4}, 2, 2));
        assertArrayEquals(new float[] {1, 3, 2, 4}, x.toFloatArray());
        x.narrow(1, 0, 1).fill(0);
        assertArrayEquals(new float[] {0, 3, 0, 4}, x.toFloatArray());
    }
}
