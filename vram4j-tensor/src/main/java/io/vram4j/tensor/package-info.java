/**
 * Tensors whose every byte comes from a device's {@link io.vram4j.alloc.CachingAllocator}, with deterministic
 * lifetime.
 *
 * <h2>Quick start</h2>
 * <pre>{@code
 * try (Device dev = Device.open("host:1GiB")) {                   // or "sim:80GiB": memory only, no data
 *     Generator gen = new Generator(0);
 *     try (MemoryScope scope = MemoryScope.open()) {               // closes every tensor made inside
 *         Tensor x = dev.randn(gen, 8, 4);                          // float32 [8, 4]
 *         Tensor w = dev.randn(gen, 4, 2).requiresGrad(true);
 *         Tensor y = dev.tensor(new long[] {0, 1, 1, 0, 1, 0, 0, 1}, 8);   // int64 targets
 *         Tensor loss = Functional.crossEntropy(x.matmul(w), y);
 *         loss.backward();                                          // w.grad() now holds dLoss/dw
 *         System.out.println(loss.item() + " " + dev.memoryAllocated());
 *     }
 * }
 * }</pre>
 *
 * <h2>Main types</h2>
 * <ul>
 *   <li>{@link io.vram4j.tensor.Device}: a device, its allocator and stream; tensor factories
 *       ({@code zeros}, {@code ones}, {@code full}, {@code tensor(float[]/int[]/long[], shape)}, {@code randn},
 *       {@code rand}, {@code arange}, {@code empty}) and memory queries.</li>
 *   <li>{@link io.vram4j.tensor.Memory}: {@code torch.cuda.memory}'s functions on the current device
 *       ({@link io.vram4j.tensor.Device#current()}): {@code track(tag)} and {@code logMemory(tag)} without an
 *       allocator argument.</li>
 *   <li>{@link io.vram4j.tensor.Tensor}: shape/strides/dtype/device; element-wise ops with broadcasting
 *       ({@code add sub mul div neg exp log tanh relu gelu}), reductions ({@code sum mean max argmax
 *       sumToSize}), {@code matmul} (2-D and batched), {@code softmax}/{@code logSoftmax} (last dimension),
 *       views ({@code view reshape transpose t narrow expand unsqueeze squeeze}), {@code contiguous},
 *       {@code copy}, {@code to(DType)}, in-place updates ({@code fill zero copyFrom addInPlace mulInPlace}),
 *       reads ({@code item toFloatArray toLongArray getFloat data}), and autograd ({@code requiresGrad
 *       backward grad setGrad detach gradFn}).</li>
 *   <li>{@link io.vram4j.tensor.Functional}: {@code linear}, {@code layerNorm}, {@code embedding},
 *       {@code dropout}, {@code causalMask}, {@code scaledDotProductAttention}, {@code nllLoss},
 *       {@code crossEntropy}.</li>
 *   <li>{@link io.vram4j.tensor.MemoryScope}: try-with-resources ownership of tensors, with {@code keep} and
 *       {@code detach}.</li>
 *   <li>{@link io.vram4j.tensor.Storage}: the reference-counted block behind a tensor and its views.</li>
 *   <li>{@link io.vram4j.tensor.LeakDetector}: Cleaner-based, report-only detection of unclosed storages
 *       ({@code -Dvram4j.leakDetection=off|sampled|paranoid}).</li>
 *   <li>{@link io.vram4j.tensor.DType}: float32, float16, bfloat16 (stored in 16 bits, computed in float32),
 *       int32, int64, bool.</li>
 *   <li>{@link io.vram4j.tensor.Generator}: seeded, replayable randomness for initialisation and dropout.</li>
 *   <li>{@link io.vram4j.tensor.BackwardOps}: backward primitives used by the autograd rule table.</li>
 *   <li>{@link io.vram4j.tensor.internal.AutocastHook}: where {@link io.vram4j.amp.Autocast} picks the dtype of
 *       {@code matmul}, {@code linear}, {@code softmax}, losses, reductions and the like (per thread; no
 *       interceptor by default).</li>
 *   <li>{@link io.vram4j.tensor.LiveTensors}: the registry of live storages (shape, dtype, bytes, device,
 *       allocation site, module, {@link io.vram4j.tensor.MemoryCategory}), reported by allocation site.</li>
 *   <li>{@link io.vram4j.tensor.MemoryProfiler}: the peak split into parameters, gradients, optimizer state,
 *       activations and temporaries, with the module forward or node backward
 *       ({@link io.vram4j.tensor.internal.ExecutionContext}) that reached it.</li>
 * </ul>
 *
 * <h2>Memory rules</h2>
 * <ul>
 *   <li>A tensor's storage is exactly {@code numel × dtype.byteSize()} bytes, requested with
 *       {@code CachingAllocator.malloc(bytes, device.stream())}; 0-element tensors allocate nothing.</li>
 *   <li>Each op allocates its outputs (and what it saves for backward, e.g. layer-norm statistics, dropout
 *       masks, max indices) and nothing else from the allocator. Float32 copies of 16-bit or strided operands
 *       needed while a kernel runs are off-allocator scratch, freed when the op returns.</li>
 *   <li>On a device without storage ({@code sim}) ops allocate exactly as on {@code host} and compute nothing,
 *       so memory statistics (peaks included) match a real run.</li>
 *   <li>Memory is freed when the last handle over a storage is closed: tensors, views, and tensors saved by
 *       autograd nodes (released by {@code backward()} as it consumes the graph, or when the graph's output
 *       tensors are closed). The garbage collector never frees device memory.</li>
 * </ul>
 *
 * <p>Tensors are not thread-safe; storages' reference counts and the allocator are.
 */
package io.vram4j.tensor;
