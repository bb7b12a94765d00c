package io.vram4j.replay;

/**
 * A run of {@code segment_free}/{@code segment_unmap} entries in a recorded trace, with its explanation.
 *
 * @param firstEntry index of the first release entry
 * @param segments number of released segments or ranges
 * @param bytes bytes released
 * @param kind {@link Kind#OOM_PATH} when the run sits inside one malloc (followed by that malloc's new
 *     segment), else {@link Kind#EMPTY_CACHE}
 * @param reservedBefore recorded reserved bytes before the burst
 * @param nextSegmentBytes the size of the segment the malloc then obtained (OOM path only, else 0)
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
