package io.vram4j.replay;

/**
 * A run of {@code segment_free}/{@code segment_unmap} entries in a recorded trace, with its explanation.
 *
 * @param firstEntry index of the first release entry
 * @param segments number of released segments or ranges
 * @param bytes bytes released
 * @param kind {@link Kind#OOM_PATH} when the run sits inside one malloc (directly followed by that malloc's
 *     new segment and allocation), else {@link Kind#EMPTY_CACHE}. An explicit empty_cache() right before a
 *     malloc that needs a new segment looks the same in a trace; the replay releases the same segments either
 *     way, only the capacity inferred from such a burst is then a guess
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
