package io.vram4j.train;

import io.vram4j.alloc.CachingAllocator;
import io.vram4j.compute.Kernels;
import io.vram4j.data.Batch;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

/**
 * A ReLU MLP with SGD (momentum) or AdamW written directly on the caching allocator and the compute kernels:
 * every buffer is a block from {@link CachingAllocator#malloc}, allocated and freed in the order PyTorch's
 * autograd would (activations saved for backward, gradients created in backward and dropped by
 * {@code zero_grad(set_to_none=True)}, optimizer state created lazily at the first step).
 *
 * <p>Linear layers follow {@code torch.nn.Linear}: weight {@code [out, in]}, {@code y = x W^T + b},
 * initialized uniformly in {@code ±1/sqrt(in)} (PyTorch's default). The loss is the mean cross-entropy of
 * the logits. On a device without storage nothing is computed, only allocated.
 */
final class KernelMlp implements Network {
    private static final ValueLayout.OfFloat F = ValueLayout.JAVA_FLOAT;

    private final CachingAllocator alloc;
    private final Kernels k;
    private final boolean compute;
    private final TrainOptions options;
    private final int[] widths;
    private final long[] weights;
    private final long[] biases;
    private final long[] state1; // momentum buffers, or AdamW exp_avg; [2*l] weight, [2*l+1] bias
    private final long[] state2; // AdamW exp_avg_sq
    private int step;
    private double lr;
    private boolean closed;

    KernelMlp(CachingAllocator alloc, Kernels kernels, TrainOptions options, int features, int classes) {
        this.alloc = alloc;
        this.k = kernels;
        this.compute = alloc.device().hasStorage();
        this.options = options;
        this.widths = options.widths(features, classes);
        this.lr = options.lr();
        int layers = widths.length - 1;
        weights = new long[layers];
        biases = new long[layers];
        state1 = new long[2 * layers];
        state2 = new long[2 * layers];
        Random rnd = new Random(options.seed());
        try {
            for (int l = 0; l < layers; l++) {
                int in = widths[l];
                int out = widths[l + 1];
                float bound = (float) (1 / Math.sqrt(in));
                weights[l] = malloc((long) out * in);
                biases[l] = malloc(out);
                if (compute) {
                    fillUniform(seg(weights[l]), (long) out * in, bound, rnd);
                    fillUniform(seg(biases[l]), out, bound, rnd);
                }
            }
        } catch (RuntimeException e) {
            close();
            throw e;
        }
    }

    @Override
    public String description() {
        return options.describe(widths[0], widths[widths.length - 1]);
    }

    @Override
    public void setLearningRate(double lr) {
        this.lr = lr;
    }

    @Override
    public long parameters() {
        long n = 0;
        for (int l = 0; l + 1 < widths.length; l++) {
            n += (long) widths[l] * widths[l + 1] + widths[l + 1];
        }
        return n;
    }

    private long malloc(long floats) {
        return alloc.malloc(floats * Float.BYTES);
    }

    private MemorySegment seg(long ptr) {
        return alloc.segment(ptr);
    }

    private static void fillUniform(MemorySegment s, long n, float bound, Random rnd) {
        for (long i = 0; i < n; i++) {
            s.setAtIndex(F, i, (rnd.nextFloat() * 2 - 1) * bound);
        }
    }

    /** Buffers live during one call; freed in {@link #freeAll} (and on failure). */
    private final List<Long> live = new ArrayList<>();

    private long temp(long floats) {
        long p = malloc(floats);
        live.add(p);
        return p;
    }

    private void free(long p) {
        if (live.remove(p)) {
            alloc.free(p);
        }
    }

    private void freeAll() {
        for (int i = live.size() - 1; i >= 0; i--) {
            alloc.free(live.get(i));
        }
        live.clear();
    }

    @Override
    public StepStats trainStep(Batch batch) {
        ensureOpen();
        try {
            int b = batch.size();
            int layers = widths.length - 1;
            long[] acts = new long[layers];   // input of layer l (acts[0] = x)
            long[] pre = new long[layers];    // output of layer l before ReLU
            acts[0] = input(batch);
            long labels = labels(batch);
            for (int l = 0; l < layers; l++) {
                pre[l] = linear(acts[l], b, l);
                if (l + 1 < layers) {
                    acts[l + 1] = temp((long) b * widths[l + 1]);
                    if (compute) {
                        k.relu((long) b * widths[l + 1], seg(pre[l]), 0, seg(acts[l + 1]), 0);
                    }
                }
            }
            int classes = widths[layers];
            long logp = temp((long) b * classes);
            if (compute) {
                k.logSoftmaxRows(b, classes, seg(pre[layers - 1]), 0, seg(logp), 0);
            }
            StepStats stats = stats(batch, pre[layers - 1], logp);
            // backward: d loss / d logits = (softmax - onehot) / b
            long dz = temp((long) b * classes);
            if (compute) {
                MemorySegment d = seg(dz);
                k.exp((long) b * classes, seg(logp), 0, d, 0);
                for (int i = 0; i < b; i++) {
                    long at = (long) i * classes + batch.y()[i];
                    d.setAtIndex(F, at, d.getAtIndex(F, at) - 1);
                }
                k.scale((long) b * classes, 1f / b, d, 0, d, 0);
            }
            free(logp);
            long[] gradW = new long[layers];
            long[] gradB = new long[layers];
            for (int l = layers - 1; l >= 0; l--) {
                int in = widths[l];
                int out = widths[l + 1];
                gradW[l] = malloc((long) out * in);
                gradB[l] = malloc(out);
                live.add(gradW[l]);
                live.add(gradB[l]);
                if (compute) {
                    k.sgemm(true, false, out, in, b, 1f, seg(dz), 0, out, seg(acts[l]), 0, in, 0f, seg(gradW[l]), 0, in);
                    MemorySegment gb = seg(gradB[l]);
                    MemorySegment d = seg(dz);
                    k.fill(out, 0f, gb, 0);
                    for (int i = 0; i < b; i++) {
                        k.axpy(out, 1f, d, (long) i * out, gb, 0);
                    }
                }
                if (l > 0) {
                    long da = temp((long) b * in);
                    if (compute) {
                        k.sgemm(false, false, b, in, out, 1f, seg(dz), 0, out, seg(weights[l]), 0, in, 0f, seg(da), 0, in);
                        k.reluBackward((long) b * in, seg(da), 0, seg(pre[l - 1]), 0, seg(da), 0);
                    }
                    free(dz);
                    free(pre[l]);
                    if (l > 0) {
                        free(acts[l]);
                    }
                    dz = da;
                } else {
                    free(dz);
                    free(pre[0]);
                }
            }
            free(acts[0]);
            free(labels);
            optimizerStep(gradW, gradB);
            // zero_grad(set_to_none=True)
            freeAll();
            return stats;
        } catch (RuntimeException | Error e) {
            freeAll();
            throw e;
        }
    }

    @Override
    public StepStats evaluate(Batch batch) {
        ensureOpen();
        try {
            int b = batch.size();
            int layers = widths.length - 1;
            long a = input(batch);
            long labels = labels(batch);
            for (int l = 0; l < layers; l++) {
                long z = linear(a, b, l);
                free(a);
                if (l + 1 < layers && compute) {
                    k.relu((long) b * widths[l + 1], seg(z), 0, seg(z), 0);
                }
                a = z;
            }
            int classes = widths[layers];
            long logp = temp((long) b * classes);
            if (compute) {
                k.logSoftmaxRows(b, classes, seg(a), 0, seg(logp), 0);
            }
            StepStats stats = stats(batch, a, logp);
            free(labels);
            freeAll();
            return stats;
        } catch (RuntimeException | Error e) {
            freeAll();
            throw e;
        }
    }

    private long input(Batch batch) {
        long x = temp((long) batch.size() * batch.features());
        if (compute) {
            MemorySegment.copy(batch.x(), 0, seg(x), F, 0, batch.x().length);
        }
        return x;
    }

    /** The labels as int64 on the device, as PyTorch's cross-entropy takes them. */
    private long labels(Batch batch) {
        long p = alloc.malloc((long) batch.size() * Long.BYTES);
        live.add(p);
        if (compute) {
            MemorySegment s = seg(p);
            for (int i = 0; i < batch.size(); i++) {
                s.setAtIndex(ValueLayout.JAVA_LONG, i, batch.y()[i]);
            }
        }
        return p;
    }

    /** {@code x W_l^T + b_l} into a new buffer. */
    private long linear(long x, int b, int l) {
        int in = widths[l];
        int out = widths[l + 1];
        long z = temp((long) b * out);
        if (compute) {
            MemorySegment zs = seg(z);
            k.sgemm(false, true, b, out, in, 1f, seg(x), 0, in, seg(weights[l]), 0, in, 0f, zs, 0, out);
            MemorySegment bias = seg(biases[l]);
            for (int i = 0; i < b; i++) {
                k.add(out, zs, (long) i * out, bias, 0, zs, (long) i * out);
            }
        }
        return z;
    }

    private StepStats stats(Batch batch, long logits, long logp) {
        int b = batch.size();
        if (!compute) {
            return new StepStats(Double.NaN, 0, b);
        }
        int classes = widths[widths.length - 1];
        MemorySegment lg = seg(logits);
        MemorySegment lp = seg(logp);
        double loss = 0;
        int correct = 0;
        for (int i = 0; i < b; i++) {
            long row = (long) i * classes;
            loss -= lp.getAtIndex(F, row + batch.y()[i]);
            int best = 0;
            float bestV = lg.getAtIndex(F, row);
            for (int c = 1; c < classes; c++) {
                float v = lg.getAtIndex(F, row + c);
                if (v > bestV) {
                    bestV = v;
                    best = c;
                }
            }
            if (best == batch.y()[i]) {
                correct++;
            }
        }
        return new StepStats(loss, correct, b);
    }

    private void optimizerStep(long[] gradW, long[] gradB) {
        step++;
        for (int l = 0; l < weights.length; l++) {
            long n = (long) widths[l] * widths[l + 1];
            update(weights[l], gradW[l], 2 * l, n);
            update(biases[l], gradB[l], 2 * l + 1, widths[l + 1]);
        }
    }

    private void update(long param, long grad, int slot, long n) {
        float lr = (float) this.lr;
        float wd = (float) options.weightDecay();
        if (options.optimizer().equals("sgd")) {
            float m = (float) options.momentum();
            if (wd != 0 && compute) {
                k.axpy(n, wd, seg(param), 0, seg(grad), 0);
            }
            if (m == 0) {
                if (compute) {
                    k.axpy(n, -lr, seg(grad), 0, seg(param), 0);
                }
                return;
            }
            if (state1[slot] == 0) {
                state1[slot] = malloc(n); // torch.clone(grad)
                if (compute) {
                    k.copy(n, seg(grad), 0, seg(state1[slot]), 0);
                }
            } else if (compute) {
                MemorySegment buf = seg(state1[slot]);
                k.scale(n, m, buf, 0, buf, 0);
                k.axpy(n, 1f, seg(grad), 0, buf, 0);
            }
            if (compute) {
                k.axpy(n, -lr, seg(state1[slot]), 0, seg(param), 0);
            }
            return;
        }
        // AdamW (PyTorch defaults betas 0.9, 0.999, eps 1e-8)
        float b1 = 0.9f;
        float b2 = 0.999f;
        float eps = 1e-8f;
        if (state1[slot] == 0) {
            state1[slot] = malloc(n);
            state2[slot] = malloc(n);
            if (compute) {
                k.fill(n, 0f, seg(state1[slot]), 0);
                k.fill(n, 0f, seg(state2[slot]), 0);
            }
        }
        if (!compute) {
            return;
        }
        MemorySegment p = seg(param);
        MemorySegment g = seg(grad);
        MemorySegment m1 = seg(state1[slot]);
        MemorySegment m2 = seg(state2[slot]);
        double bc1 = 1 - Math.pow(b1, step);
        double bc2 = 1 - Math.pow(b2, step);
        float stepSize = (float) (lr / bc1);
        float sqrtBc2 = (float) Math.sqrt(bc2);
        float decay = 1 - lr * wd;
        for (long i = 0; i < n; i++) {
            float gi = g.getAtIndex(F, i);
            float mi = b1 * m1.getAtIndex(F, i) + (1 - b1) * gi;
            float vi = b2 * m2.getAtIndex(F, i) + (1 - b2) * gi * gi;
            m1.setAtIndex(F, i, mi);
            m2.setAtIndex(F, i, vi);
            float pi = p.getAtIndex(F, i) * decay;
            p.setAtIndex(F, i, pi - stepSize * mi / ((float) Math.sqrt(vi) / sqrtBc2 + eps));
        }
    }

    private void ensureOpen() {
        if (closed) {
            throw new IllegalStateException("network closed");
        }
    }

    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        freeAll();
        for (long[] ptrs : new long[][] {weights, biases, state1, state2}) {
            for (int i = 0; i < ptrs.length; i++) {
                if (ptrs[i] != 0) {
                    alloc.free(ptrs[i]);
                    ptrs[i] = 0;
                }
            }
        }
    }
}
