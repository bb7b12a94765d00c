/**
 * Neural-network layers on tensors (as {@code torch.nn}).
 *
 * <pre>{@code
 * Generator gen = new Generator(1234);
 * try (Sequential mlp = new Sequential(new Linear(dev, 784, 256, gen), new ReLU(), new Linear(dev, 256, 10, gen));
 *      SGD opt = new SGD(mlp.parameters(), 0.1f, 0.9f, 0f)) {
 *     try (MemoryScope step = MemoryScope.open()) {
 *         Tensor loss = Functional.crossEntropy(mlp.forward(x), y);
 *         loss.backward();
 *         opt.step();
 *         opt.zeroGrad(true);
 *     }
 *     mlp.save(Path.of("mlp.safetensors"));
 * }
 * }</pre>
 *
 * <ul>
 *   <li>{@link io.vram4j.nn.Module}: parameters()/namedParameters() (dotted names), children, train()/eval(),
 *       zeroGrad(setToNone), save/load (safetensors), close() (frees parameters and gradients).</li>
 *   <li>{@link io.vram4j.nn.Parameter}: a leaf tensor owned by a module, outside every memory scope.</li>
 *   <li>Layers: {@link io.vram4j.nn.Linear} (Kaiming-uniform, a=√5, as PyTorch), {@link io.vram4j.nn.ReLU},
 *       {@link io.vram4j.nn.GELU} (tanh), {@link io.vram4j.nn.Dropout}, {@link io.vram4j.nn.LayerNorm},
 *       {@link io.vram4j.nn.Embedding} (N(0,1)), {@link io.vram4j.nn.Sequential},
 *       {@link io.vram4j.nn.CausalSelfAttention} (fused qkv), {@link io.vram4j.nn.TransformerBlock} (pre-LN),
 *       {@link io.vram4j.nn.CrossEntropyLoss}, and a ready model, {@link io.vram4j.nn.GPT} (nanoGPT layout,
 *       GPT-2 initialisation, no weight tying).</li>
 *   <li>{@link io.vram4j.nn.Init}: uniform, normal, constant, Kaiming-uniform, all seeded.</li>
 *   <li>{@link io.vram4j.nn.Safetensors}: save/load of named tensors in the safetensors format.</li>
 * </ul>
 *
 * <p>{@code forward} returns a new tensor the caller owns and closes its own intermediates (the graph keeps
 * what backward needs), so activation memory matches PyTorch's. Modules are not thread-safe.
 */
package io.vram4j.nn;
