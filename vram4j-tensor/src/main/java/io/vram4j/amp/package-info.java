/**
 * Mixed precision training, as {@code torch.amp}.
 *
 * <ul>
 *   <li>{@link io.vram4j.amp.Autocast}: a per-thread, nestable region ({@code torch.autocast}) in which ops
 *       run in the dtype of their {@link io.vram4j.amp.CastPolicy}: matrix products, linear layers and
 *       attention in float16 or bfloat16; softmax, log-softmax, layer norm, losses, sums, means, exp and log
 *       in float32; everything else on its inputs (element-wise ops promote to the widest input type).
 *       {@code Autocast.disable()} opens a float32 region inside. Parameters stay float32; low-precision
 *       copies of weights are cached until the outermost region closes; gradients reach the parameters in
 *       float32.</li>
 *   <li>{@link io.vram4j.amp.CastPolicy}: the policies ({@code lower_precision_fp}, {@code fp32},
 *       {@code fp32_set_opt_dtype}, {@code promote}) and the op table, after PyTorch's CUDA autocast lists.</li>
 *   <li>{@link io.vram4j.amp.GradScaler}: dynamic loss scaling ({@code torch.amp.GradScaler}): scale 65536,
 *       growth ×2 after 2000 clean steps, backoff ×0.5 on inf/NaN, skipped steps reported; state dict.</li>
 * </ul>
 *
 * <pre>{@code
 * GradScaler scaler = new GradScaler();
 * for (Tensor[] batch : loader) {
 *     try (MemoryScope s = MemoryScope.open()) {
 *         Tensor loss;
 *         try (Autocast ac = Autocast.enable(DType.FLOAT16)) {       // or BFLOAT16 (then no scaler needed)
 *             loss = Functional.crossEntropy(model.forward(batch[0]), batch[1]);
 *         }
 *         scaler.scale(loss).backward();
 *         scaler.step(opt);                                          // skipped if a gradient is inf/NaN
 *         scaler.update();
 *         opt.zeroGrad();
 *     }
 * }
 * }</pre>
 *
 * <p>Memory: bfloat16/float16 activations saved by matrix products take half the bytes of float32 ones, at the
 * price of the weight copies (cached per region) and of float32 outputs where the policy asks for them.
 */
package io.vram4j.amp;
