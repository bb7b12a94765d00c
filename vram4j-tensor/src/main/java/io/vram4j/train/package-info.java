/**
 * Training, as {@code vram4j train} runs it: a {@link io.vram4j.train.Trainer} drives an MLP classifier or a
 * character-level Transformer language model ({@code TrainOptions.model()} {@link io.vram4j.train.ModelKind#TRANSFORMER}: {@link io.vram4j.nn.GPT}
 * over a {@link io.vram4j.data.CharVocabulary}, {@link io.vram4j.train.Trainer#sample} generates text) on the tensor
 * runtime (one {@link io.vram4j.tensor.MemoryScope} per step, so every tensor is closed deterministically)
 * over batches from a {@link io.vram4j.data.DataLoader}, evaluates after each epoch, reports progress to a
 * {@link io.vram4j.train.TrainListener}, records the allocator's memory history for the first steps and
 * returns a {@link io.vram4j.train.TrainResult} with {@code memory_stats}, {@code memory_summary} and the
 * snapshot. {@link io.vram4j.train.Trainer#dryRun} measures one step, also on simulated devices.
 *
 * <p>{@link io.vram4j.train.TrainJob} is the whole {@code vram4j train} job as a library call (data, optional
 * batch-size search through {@link io.vram4j.train.BatchSizeSearch}, training or dry run, the JSON summary and the
 * {@link io.vram4j.train.RunFolder}); {@link io.vram4j.train.TrainOptions} is built by
 * {@link io.vram4j.train.TrainOptions#builder()}, with {@link io.vram4j.train.ModelKind},
 * {@link io.vram4j.train.OptimizerKind} and {@link io.vram4j.train.Precision} for the model, optimizer and precision.
 *
 * <p>With {@link io.vram4j.train.TrainOptions#defaults()} (784-512-512-10 ReLU, SGD lr 0.05 momentum 0.9 with a
 * cosine schedule, batch 128, 3 epochs) the test accuracy on the full Fashion-MNIST is about 88.3–88.6%, and
 * about 86% on the bundled subset.
 *
 * <h2>Memory-saving techniques</h2>
 * <ul>
 *   <li>{@link io.vram4j.train.Checkpoint}: activation checkpointing of a function, a module, or a sequence of
 *       modules in N segments ({@code torch.utils.checkpoint}, non-reentrant): the forward keeps no
 *       activations inside the region, backward recomputes them with the same generator states and autocast
 *       state; gradients are bitwise those of the plain run. {@link io.vram4j.train.CheckpointError} reports a
 *       recomputation that does not match.</li>
 *   <li>{@link io.vram4j.train.GradientAccumulation}: {@code loss / N} per micro-batch, an optimizer step (and
 *       {@code zeroGrad}) every {@code N} calls, optionally through an {@link io.vram4j.amp.GradScaler}.</li>
 *   <li>{@link io.vram4j.train.MicroBatcher}: cuts one batch into micro-batches ({@code torch.split}) and
 *       accumulates their gradients with share-weighted losses, so the result is the big batch's gradient.</li>
 *   <li>Mixed precision lives in {@link io.vram4j.amp}.</li>
 *   <li>The trainer applies them from {@link io.vram4j.train.TrainOptions}: {@code checkpoint} segments,
 *       {@code amp} ({@code BF16}, or {@code FP16} with a scaler whose skipped steps
 *       {@link io.vram4j.train.Trainer#skippedSteps()} reports), {@code accumulate}, {@code microBatch}.</li>
 *   <li>{@link io.vram4j.train.BatchSizeFinder}: the largest batch that fits (doubling, then binary search,
 *       the cache emptied between tries), as a dry run on {@code sim} or for real on {@code host}.</li>
 *   <li>{@link io.vram4j.train.TechniqueBenchmark}: peak allocated/reserved, peak activations and step time of
 *       a setting, and loss curves, for {@code vram4j bench}.</li>
 * </ul>
 *
 * <pre>{@code
 * // blocks: a Sequential of transformer blocks; embed, head: modules around it
 * GradScaler scaler = new GradScaler();                                  // float16 needs loss scaling
 * GradientAccumulation acc = new GradientAccumulation(opt, 4, scaler);
 * for (Tensor[] mb : MicroBatcher.split(batchSize / 4, x, y)) {
 *     try (MemoryScope s = MemoryScope.open()) {
 *         Tensor loss;
 *         try (Autocast ac = Autocast.enable(DType.FLOAT16)) {
 *             Tensor h = Checkpoint.checkpointSequential(blocks, 4, embed.forward(mb[0]));
 *             loss = Functional.crossEntropy(head.forward(h), mb[1]);
 *         }
 *         acc.backward(loss);                                            // steps every 4th micro-batch
 *     } finally {
 *         mb[0].close();
 *         mb[1].close();
 *     }
 * }
 * }</pre>
 */
package io.vram4j.train;
