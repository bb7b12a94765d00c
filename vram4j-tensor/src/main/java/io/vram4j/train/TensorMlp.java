package io.vram4j.train;

import io.vram4j.alloc.CachingAllocator;
import io.vram4j.autograd.NoGrad;
import io.vram4j.data.Batch;
import io.vram4j.nn.Linear;
import io.vram4j.nn.Module;
import io.vram4j.nn.ReLU;
import io.vram4j.nn.Sequential;
import io.vram4j.optim.AdamW;
import io.vram4j.optim.Optimizer;
import io.vram4j.optim.SGD;
import io.vram4j.tensor.Device;
import io.vram4j.tensor.Functional;
import io.vram4j.tensor.Generator;
import io.vram4j.tensor.MemoryScope;
import io.vram4j.tensor.Tensor;

import java.util.ArrayList;
import java.util.List;

/**
 * The MLP on the tensor runtime: {@code Sequential(Linear, ReLU, ..., Linear)} (PyTorch's initialization,
 * seeded), cross-entropy loss, {@link SGD} with momentum or {@link AdamW}. Each step runs in a
 * {@link MemoryScope}, so every tensor it creates (batch, activations, loss, predictions) is closed when it
 * ends; gradients are dropped by {@code zeroGrad(true)} after the optimizer step, as
 * {@code optimizer.zero_grad(set_to_none=True)}. Parameters and optimizer state live until {@link #close()}.
 *
 * <p>The loop is the one PyTorch users write:
 * <pre>{@code
 * try (MemoryScope step = MemoryScope.open()) {
 *     Tensor x = dev.tensor(batch.x(), b, 784);
 *     Tensor y = dev.tensor(labels, b);               // int64
 *     Tensor loss = Functional.crossEntropy(model.forward(x), y);
 *     loss.backward();
 *     optimizer.step();
 *     optimizer.zeroGrad(true);
 * }
 * }</pre>
 */
final class TensorMlp implements Network {
    private final Device dev;
    private final TrainOptions options;
    private final int[] widths;
    private final Sequential model;
    private final Optimizer optimizer;
    private boolean closed;

    TensorMlp(CachingAllocator alloc, TrainOptions options, int features, int classes) {
        this.dev = Device.of(alloc);
        this.options = options;
        this.widths = options.widths(features, classes);
        Generator gen = new Generator(options.seed());
        List<Module> layers = new ArrayList<>();
        Sequential m = null;
        try {
            for (int l = 0; l + 1 < widths.length; l++) {
                if (l > 0) {
                    layers.add(new ReLU());
                }
                layers.add(new Linear(dev, widths[l], widths[l + 1], gen));
            }
            m = new Sequential(layers.toArray(Module[]::new));
            float lr = (float) options.lr();
            float wd = (float) options.weightDecay();
            this.optimizer = options.optimizer().equals("adamw")
                    ? new AdamW(m.parameters(), lr, 0.9f, 0.999f, 1e-8f, wd)
                    : new SGD(m.parameters(), lr, (float) options.momentum(), wd);
        } catch (RuntimeException | Error e) {
            if (m != null) {
                m.close();
            } else {
                layers.forEach(Module::close);
            }
            throw e;
        }
        this.model = m;
    }

    @Override
    public String description() {
        return options.describe(widths[0], widths[widths.length - 1]);
    }

    @Override
    public long parameters() {
        return model.parameterCount();
    }

    @Override
    public void setLearningRate(double lr) {
        optimizer.setLr((float) lr);
    }

    @Override
    public StepStats trainStep(Batch batch) {
        ensureOpen();
        model.train();
        try (MemoryScope step = MemoryScope.open()) {
            Tensor x = dev.tensor(batch.x(), batch.size(), batch.features());
            Tensor y = dev.tensor(labels(batch), batch.size());
            Tensor logits = model.forward(x);
            Tensor loss = Functional.crossEntropy(logits, y);
            loss.backward();
            optimizer.step();
            optimizer.zeroGrad(true);
            return stats(batch, logits, loss);
        }
    }

    @Override
    public StepStats evaluate(Batch batch) {
        ensureOpen();
        model.eval();
        try (NoGrad noGrad = NoGrad.enter(); MemoryScope scope = MemoryScope.open()) {
            Tensor x = dev.tensor(batch.x(), batch.size(), batch.features());
            Tensor y = dev.tensor(labels(batch), batch.size());
            Tensor logits = model.forward(x);
            Tensor loss = Functional.crossEntropy(logits, y);
            return stats(batch, logits, loss);
        }
    }

    /** Labels as int64, the dtype PyTorch's cross-entropy takes. */
    private static long[] labels(Batch batch) {
        long[] y = new long[batch.size()];
        for (int i = 0; i < y.length; i++) {
            y[i] = batch.y()[i];
        }
        return y;
    }

    private StepStats stats(Batch batch, Tensor logits, Tensor loss) {
        if (!dev.hasStorage()) {
            return new StepStats(Double.NaN, 0, batch.size());
        }
        long[] predicted;
        try (NoGrad noGrad = NoGrad.enter(); Tensor argmax = logits.argmax(1, false)) {
            predicted = argmax.toLongArray();
        }
        int correct = 0;
        for (int i = 0; i < predicted.length; i++) {
            if (predicted[i] == batch.y()[i]) {
                correct++;
            }
        }
        return new StepStats((double) loss.item() * batch.size(), correct, batch.size());
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
        try {
            optimizer.close();
        } finally {
            try {
                model.close();
            } finally {
                dev.close();
            }
        }
    }
}
