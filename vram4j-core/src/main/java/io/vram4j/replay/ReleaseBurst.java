package io.vram4j.replay;

/**
 * A run of {@code segment_free}/{@code segment_unmap} entries in a recorded trace, with its explanation.
 *
 * @param firstEntry index of the first release entry
 * @param segments number of released segments or ranges
 * @param bytes bytes released
 * @param kind {@link Kind#OOM_PATH} when the run sits inside one malloc: directly followed by an {@code oom} entry,
 *     or by that malloc's new segment and allocation while none of the released segments could have served it (best
 *     fit runs before the retry sequence); else {@link Kind#EMPTY_CACHE}, which what-if replays perform at its place
 *     (TraceAnalysis Note [Release bursts])
 * @param reservedBefore recorded reserved bytes before the burst
 * @param nextSegmentBytes bytes the malloc then obtained as new segments or mapped ranges (OOM path followed by
 *     them only, else 0)
 */
public record ReleaseBurst(int firstEntry, int segments, long bytes, Kind kind, long reservedBefore, long nextSegmentBytes) {
    /** Why memory was released. */
    public enum Kind {
        /** An explicit {@code torch.cuda.empty_cache()}. */
        EMPTY_CACHE,
        /** The out-of-memory path of one malloc: release cached segments and retry. */
        OOM_PATH
    }
}
