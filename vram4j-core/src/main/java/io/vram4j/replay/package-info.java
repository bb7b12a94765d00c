/**
 * Replay and what-if analysis of recorded memory snapshots: a PyTorch snapshot's trace is replayed through
 * vram4j's allocator on a simulated device, exactly (recorded settings, segment addresses and capacity) or
 * under other settings and GPU sizes ({@link io.vram4j.replay.Replayer}, {@link io.vram4j.replay.ReplayReport}).
 */
package io.vram4j.replay;
