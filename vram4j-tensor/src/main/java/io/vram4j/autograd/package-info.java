/**
 * Reverse-mode automatic differentiation over a small set of primitives.
 *
 * <ul>
 *   <li>{@link io.vram4j.autograd.Prim}: the differentiable primitives; {@code GradientRules} holds exactly one
 *       backward rule per primitive (one table), and composite ops (mean, linear, cross-entropy, attention)
 *       are differentiated through their primitives.</li>
 *   <li>{@link io.vram4j.autograd.Node}: a recorded op ({@code grad_fn}); reference-counted, it releases the
 *       tensors it saved when backward has used them or when its output is closed.</li>
 *   <li>{@code Engine}: topological (Kahn) order from the root, gradient accumulation per node, broadcast
 *       reduction, leaf accumulation into {@link io.vram4j.tensor.Tensor#grad()} across calls.</li>
 *   <li>{@link io.vram4j.autograd.NoGrad}: try-with-resources block without recording;
 *       {@link io.vram4j.autograd.EnableGrad} switches it back on inside one ({@code torch.enable_grad()}).</li>
 *   <li>{@link io.vram4j.autograd.SavedTensorsHooks}: pack/unpack hooks for the tensors ops save for backward
 *       ({@code torch.autograd.graph.saved_tensors_hooks}), with a release callback; activation checkpointing
 *       ({@link io.vram4j.train.Checkpoint}) is built on them. Backward runs with autocast suspended.</li>
 *   <li>{@link io.vram4j.autograd.GradCheck}: finite-difference check of analytic gradients (central
 *       differences accumulated in float64, on {@code host}).</li>
 * </ul>
 *
 * <pre>{@code
 * Tensor w = dev.randn(gen, 3, 3).requiresGrad(true);
 * try (Tensor loss = x.matmul(w).tanh().sum()) {
 *     loss.backward();          // w.grad() += d loss / d w; saved activations freed
 * }
 * try (NoGrad ng = NoGrad.enter()) { ... }   // inference: nothing recorded or saved
 * }</pre>
 *
 * <p>Limitations: no higher-order gradients (backward rules run without recording); in-place updates of
 * tensors that require grad must run under {@link io.vram4j.autograd.NoGrad}, and in-place modification of a
 * tensor saved by a node is not detected (no version counters).
 */
package io.vram4j.autograd;
