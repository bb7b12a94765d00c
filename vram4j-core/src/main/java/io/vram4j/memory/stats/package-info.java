/**
 * Allocator statistics with PyTorch's 122 {@code memory_stats} keys ({@link io.vram4j.memory.stats.MemoryStats}),
 * the {@code memory_summary} table ({@link io.vram4j.memory.stats.MemorySummary}) and the C++
 * {@code format_size} of out-of-memory messages ({@link io.vram4j.memory.stats.FormatSize}).
 */
package io.vram4j.memory.stats;
