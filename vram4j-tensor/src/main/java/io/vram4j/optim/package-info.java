/**
 * Optimizers (as {@code torch.optim}): {@link io.vram4j.optim.SGD} (momentum, weight decay, Nesterov) and
 * {@link io.vram4j.optim.AdamW} (decoupled weight decay, bias correction), with state tensors allocated from
 * the parameters' device allocator at the first step, and {@code zeroGrad(setToNone)} (true frees gradient
 * memory). Updates are fused per parameter and allocate nothing but state; on {@code sim} only state is
 * allocated.
 *
 * <pre>{@code
 * AdamW opt = new AdamW(model.parameters(), 3e-4f, 0.9f, 0.95f, 1e-8f, 0.1f);
 * loss.backward();
 * opt.step();
 * opt.zeroGrad(true);
 * }</pre>
 */
package io.vram4j.optim;
