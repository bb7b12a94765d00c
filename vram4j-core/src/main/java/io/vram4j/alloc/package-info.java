/**
 * The caching allocator: PyTorch's CUDA caching allocator, rule for rule, over a
 * {@link io.vram4j.device.DeviceBackend}.
 *
 * <p>{@link io.vram4j.alloc.CachingAllocator} is the public face (one per device, thread-safe); the engine,
 * {@code DeviceCachingAllocator}, is package-private and reads top to bottom as PyTorch's
 * {@code CUDACachingAllocator.cpp}: malloc (round, pick a pool, best fit, new segment, OOM retry sequence),
 * free (merge neighbours), streams and events, releasing memory (empty_cache, oversize release, garbage
 * collection), expandable segments, the out-of-memory message, settings and statistics. Size rules are in
 * {@link io.vram4j.alloc.SizeRules}; settings in {@link io.vram4j.alloc.config}. Memory history
 * ({@link io.vram4j.alloc.CachingAllocator#recordMemoryHistory}) and
 * {@link io.vram4j.alloc.CachingAllocator#snapshot()} produce PyTorch's snapshot format
 * ({@link io.vram4j.memory.snapshot}); {@link io.vram4j.alloc.CachingAllocator#segments()} gives the allocator's
 * state in the same model ({@link io.vram4j.memory.snapshot.SegmentInfo}), with no separate type of its own.
 */
package io.vram4j.alloc;
