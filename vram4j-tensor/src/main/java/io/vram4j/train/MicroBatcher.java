package io.vram4j.train;

import io.vram4j.amp.GradScaler;
import io.vram4j.tensor.MemoryScope;
import io.vram4j.tensor.Tensor;

import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;

/**
 * Micro-batching of one large batch: the batch is cut along dimension 0 into micro-batches
 * ({@code torch.split(batch, micro_batch_size)}), each runs forward and backward on its own, and their
 * gradients accumulate in the parameters' {@code grad}. Only one micro-batch's activations exist at a time,
 * so activation memory shrinks by about the number of micro-batches, for the same gradients.
 *
 * <p>For a loss that is a mean over the batch, {@link #accumulate} weights each micro-batch's loss by its
 * share of the batch ({@code n_i / N}), so the accumulated gradient is the gradient of the whole batch's mean
 * loss even when the last micro-batch is smaller; with equal micro-batches this is PyTorch's usual
 * {@code loss / accumulation_steps}. The gradients agree with the one-big-batch gradients up to float32
 * summation order.
 *
 * <pre>{@code
 * float loss = MicroBatcher.accumulate(8, mb -> Functional.crossEntropy(model.forward(mb[0]), mb[1]), x, y);
 * optimizer.step(); optimizer.zeroGrad();
 * }</pre>
 */
public final class MicroBatcher {
    private MicroBatcher() {
    }

    /**
     * @param batchSize the batch's extent along dimension 0
     * @param microBatchSize at least 1
     * @return how many micro-batches {@link #split} makes
     */
    public static int count(int batchSize, int microBatchSize) {
        checkSize(microBatchSize);
        return (batchSize + microBatchSize - 1) / microBatchSize;
    }

    private static void checkSize(int microBatchSize) {
        if (microBatchSize < 1) {
            throw new IllegalArgumentException("micro-batch size must be at least 1, got " + microBatchSize);
        }
    }

    /**
     * Cuts tensors that share their first extent into micro-batches of {@code microBatchSize} rows (the last
     * one may be smaller), as {@code torch.split}.
     *
     * @param microBatchSize rows per micro-batch, at least 1
     * @param batch tensors with the same extent along dimension 0 (inputs, targets, ...)
     * @return one array per micro-batch, in order, holding a view of each tensor; the caller closes them
     * @throws IllegalArgumentException when the first extents differ, a tensor has no dimension, or the size is
     *     not positive
     */
    public static List<Tensor[]> split(int microBatchSize, Tensor... batch) {
        checkSize(microBatchSize);
        if (batch.length == 0) {
            throw new IllegalArgumentException("split needs at least one tensor");
        }
        int n = rows(batch);
        List<Tensor[]> out = new ArrayList<>();
        try {
            for (int start = 0; start < n; start += microBatchSize) {
                int len = Math.min(microBatchSize, n - start);
                Tensor[] mb = new Tensor[batch.length];
                out.add(mb);
                for (int i = 0; i < batch.length; i++) {
                    mb[i] = MemoryScope.detachFromAny(batch[i].narrow(0, start, len));
                }
            }
        } catch (RuntimeException | Error e) {
            for (Tensor[] mb : out) {
                closeAll(mb);
            }
            throw e;
        }
        return out;
    }

    private static int rows(Tensor[] batch) {
        int n = -1;
        for (Tensor t : batch) {
            if (t.dim() == 0) {
                throw new IllegalArgumentException("micro-batching needs tensors with a batch dimension, got a scalar");
            }
            if (n >= 0 && t.size(0) != n) {
                throw new IllegalArgumentException("micro-batching needs tensors with the same batch size, got " + n
                        + " and " + t.size(0));
            }
            n = t.size(0);
        }
        return n;
    }

    /**
     * Runs {@code lossFn} and backward on each micro-batch, weighting each loss by its share of the batch.
     *
     * @param microBatchSize rows per micro-batch
     * @param lossFn the mean loss of a micro-batch (its tensors in the order of {@code batch}); a scalar the
     *     caller of {@code lossFn} owns
     * @param batch the whole batch
     * @return the batch's mean loss (the weighted sum of the micro-batch losses); NaN on a device without
     *     storage ({@code sim}), where only the allocations happen
     */
    public static float accumulate(int microBatchSize, Function<Tensor[], Tensor> lossFn, Tensor... batch) {
        return accumulate(microBatchSize, lossFn, null, batch);
    }

    /**
     * As {@link #accumulate(int, Function, Tensor...)}, scaling each weighted loss with {@code scaler} before
     * backward (mixed precision with float16).
     *
     * @param scaler a gradient scaler, or null
     */
    public static float accumulate(int microBatchSize, Function<Tensor[], Tensor> lossFn, GradScaler scaler,
            Tensor... batch) {
        checkSize(microBatchSize);
        int n = rows(batch);
        double total = 0;
        for (Tensor[] mb : split(microBatchSize, batch)) {
            try (MemoryScope s = MemoryScope.open()) {
                float weight = (float) mb[0].size(0) / n;
                Tensor loss = lossFn.apply(mb);
                if (loss.numel() != 1) {
                    throw new IllegalArgumentException("the micro-batch loss must be a scalar, got shape "
                            + java.util.Arrays.toString(loss.shape()));
                }
                Tensor weighted = weight == 1f ? loss : loss.mul(weight);
                (scaler == null ? weighted : scaler.scale(weighted)).backward();
                if (!loss.device().isSimulated()) {
                    total += loss.item() * (double) weight;
                } else {
                    total = Double.NaN;
                }
            } finally {
                closeAll(mb);
            }
        }
        return (float) total;
    }

    private static void closeAll(Tensor[] ts) {
        for (Tensor t : ts) {
            if (t != null) {
                t.close();
            }
        }
    }
}
