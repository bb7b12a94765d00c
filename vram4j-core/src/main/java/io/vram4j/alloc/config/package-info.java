/**
 * Allocator settings in the string format of {@code PYTORCH_CUDA_ALLOC_CONF}: option names, value formats,
 * validation messages and reset rules as PyTorch's {@code CUDAAllocatorConfig}
 * ({@link io.vram4j.alloc.config.AllocatorConfig}).
 */
package io.vram4j.alloc.config;
