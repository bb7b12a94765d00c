package io.vram4j.bench;

import io.vram4j.data.Batch;
import io.vram4j.data.FashionMnist;
import io.vram4j.data.ImageDataset;

/**
 * Real Fashion-MNIST batches (the subset bundled with vram4j-tensor, normalized as {@code ./vram4j train} feeds
 * them), assembled once so that both engines train on the same samples and no step pays for data loading.
 * Not thread-safe.
 */
final class StepBatches {
    private final Batch[] batches;
    private int next;

    /**
     * @param batchSize samples per batch
     * @param count     distinct batches, used round-robin
     */
    StepBatches(int batchSize, int count) {
        ImageDataset data = FashionMnist.bundled().train();
        int features = data.features();
        batches = new Batch[count];
        int sample = 0;
        for (int b = 0; b < count; b++) {
            float[] x = new float[batchSize * features];
            int[] y = new int[batchSize];
            for (int i = 0; i < batchSize; i++, sample = (sample + 1) % data.size()) {
                data.copyFeatures(sample, x, i * features);
                y[i] = data.label(sample);
            }
            batches[b] = new Batch(b, batchSize, features, x, y);
        }
    }

    /** @return the next batch, round-robin */
    Batch next() {
        Batch b = batches[next];
        next = (next + 1) % batches.length;
        return b;
    }
}
