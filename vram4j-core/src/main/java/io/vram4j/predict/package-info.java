/**
 * Will it fit? Predicts a run at another batch size or sequence length from two or three snapshots of the same
 * program at small values ({@link io.vram4j.predict.Predictor}): the traces are aligned event by event, each
 * allocation's size is modelled as a function of the parameter ({@link io.vram4j.predict.Growth}), the trace at the
 * target value is synthesized and replayed through the exact allocator ({@link io.vram4j.replay.Replayer}), which
 * gives the peaks, the fragmentation at the peak and, on a given capacity, whether and where it runs out of memory.
 */
package io.vram4j.predict;
