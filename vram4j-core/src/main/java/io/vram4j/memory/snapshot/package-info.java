/**
 * PyTorch CUDA memory snapshots (spec section 10): the model, and readers and writers for the pickles of
 * {@code torch.cuda.memory._dump_snapshot()} and for JSON with the same structure.
 *
 * <ul>
 * <li>Model: {@link io.vram4j.memory.snapshot.MemorySnapshot} holds {@link io.vram4j.memory.snapshot.SegmentInfo}s
 *     (with {@link io.vram4j.memory.snapshot.BlockInfo}s), one trace of
 *     {@link io.vram4j.memory.snapshot.TraceEntry}s per device, {@code allocator_settings} and
 *     {@code external_annotations}; stacks are lists of {@link io.vram4j.memory.snapshot.Frame}s. All immutable
 *     records; sizes in bytes, {@code time_us} in microseconds since the epoch, stream handles as raw 64 bits.
 *     The same records describe a live allocator's state
 *     ({@link io.vram4j.alloc.CachingAllocator#segments()}) and the states replay and the timeline rebuild.</li>
 * <li>{@link io.vram4j.memory.snapshot.SnapshotReader} reads every format generation, pickle or JSON by content,
 *     and reports malformed input as {@link io.vram4j.memory.snapshot.SnapshotFormatException} naming the source
 *     and the location.</li>
 * <li>{@link io.vram4j.memory.snapshot.SnapshotWriter} writes pickles that Python and PyTorch's {@code memory_viz}
 *     page load (protocol 2, the viewer's opcodes only), and JSON.</li>
 * </ul>
 */
package io.vram4j.memory.snapshot;
