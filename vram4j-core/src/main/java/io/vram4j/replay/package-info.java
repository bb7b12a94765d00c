/**
 * Replay and what-if analysis of recorded memory snapshots: a PyTorch snapshot's trace is replayed through
 * vram4j's allocator on a simulated device, exactly (recorded settings, segment addresses and capacity) or
 * under other settings and GPU sizes ({@link io.vram4j.replay.Replayer}, {@link io.vram4j.replay.ReplayReport},
 * {@link io.vram4j.replay.CapacityEstimate}, {@link io.vram4j.replay.Sweep}); out-of-memory forensics with
 * counterfactuals by replay ({@link io.vram4j.replay.OomForensics}, {@link io.vram4j.replay.OomReportWriter}) and
 * an observer that leaves a failure's evidence ({@link io.vram4j.replay.OomEvidenceObserver}).
 */
package io.vram4j.replay;
