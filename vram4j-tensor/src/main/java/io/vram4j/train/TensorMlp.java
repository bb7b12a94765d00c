package io.vram4j.train;

import io.vram4j.data.Batch;
import io.vram4j.nn.Linear;
import io.vram4j.nn.Module;
import io.vram4j.nn.ReLU;
import io.vram4j.nn.Sequential;
import io.vram4j.optim.AdamW;
import io.vram4j.optim.SGD;
import io.vram4j.tensor.DType;
import io.vram4j.tensor.Device;
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
 * The memory-saving techniques are applied by {@link ModelNetwork}; checkpointing splits the layers into
 * {@link TrainOptions#checkpoint()} segments.
 */
final class TensorMlp extends ModelNetwork {
    private final int[] widths;

    /** @param dev the device (owned: closed with the network, which does not close its allocator) */
    TensorMlp(Device dev, TrainOptions options, int features, int classes) {
        this(dev, options, options.widths(features, classes));
    }

    private TensorMlp(Device dev, TrainOptions options, int[] widths) {
        super(dev, options, build(dev, widths, new Generator(options.seed())));
        this.widths = widths;
    }

    private static Sequential build(Device dev, int[] widths, Generator gen) {
        List<Module> layers = new ArrayList<>();
        try {
            for (int l = 0; l + 1 < widths.length; l++) {
                if (l > 0) {
                    layers.add(new ReLU());
                }
                layers.add(new Linear(dev, widths[l], widths[l + 1], gen));
            }
            return new Sequential(layers.toArray(Module[]::new));
        } catch (RuntimeException | Error e) {
            layers.forEach(Module::close);
            throw e;
        }
    }

    @Override
    public String description() {
        return options.describe(widths[0], widths[widths.length - 1]);
    }

    @Override
    Tensor[] tensors(Batch batch, int from, int count) {
        int f = batch.features();
        float[] x = new float[count * f];
        System.arraycopy(batch.x(), from * f, x, 0, x.length);
        long[] y = new long[count];
        for (int i = 0; i < count; i++) {
            y[i] = batch.y()[from + i]; // int64, the dtype PyTorch's cross-entropy takes
        }
        return new Tensor[] {dev.tensor(x, count, f), dev.tensor(y, count)};
    }

    @Override
    Tensor[] placeholders(int count) {
        return new Tensor[] {dev.empty(DType.FLOAT32, count, widths[0]), dev.empty(DType.INT64, count)};
    }

    @Override
    Tensor logits(Tensor input, boolean training) {
        if (training && options.checkpoint() > 0) {
            Sequential seq = (Sequential) model;
            return Checkpoint.checkpointSequential(seq, Math.min(options.checkpoint(), seq.layers().size()), input);
        }
        return model.forward(input);
    }

    @Override
    int predictionsPerSample() {
        return 1;
    }
}
