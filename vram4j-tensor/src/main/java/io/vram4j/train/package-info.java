/**
 * Training, as {@code vram4j train} runs it: a {@link io.vram4j.train.Trainer} drives an MLP on the tensor
 * runtime (one {@link io.vram4j.tensor.MemoryScope} per step, so every tensor is closed deterministically)
 * over batches from a {@link io.vram4j.data.DataLoader}, evaluates after each epoch, reports progress to a
 * {@link io.vram4j.train.TrainListener}, records the allocator's memory history for the first steps and
 * returns a {@link io.vram4j.train.TrainResult} with {@code memory_stats}, {@code memory_summary} and the
 * snapshot. {@link io.vram4j.train.Trainer#dryRun} measures one step, also on simulated devices.
 *
 * <p>With {@link io.vram4j.train.TrainOptions#defaults()} (784-512-512-10 ReLU, SGD lr 0.05 momentum 0.9 with a
 * cosine schedule, batch 128, 3 epochs) the test accuracy on the full Fashion-MNIST is about 88.3–88.6%, and
 * about 86% on the bundled subset.
 */
package io.vram4j.train;
