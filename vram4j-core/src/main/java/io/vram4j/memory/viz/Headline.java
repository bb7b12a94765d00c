package io.vram4j.memory.viz;

/**
 * The headline figures of one device's recording. Bytes throughout; an entry is an index into the device's trace
 * ({@code -1}: the state before the first entry). Immutable and thread-safe.
 *
 * @param peakAllocated          the most bytes in allocated blocks at any moment (PyTorch's
 *                               {@code allocated_bytes.all.peak} over the trace)
 * @param peakAllocatedEntry     the entry after which allocated bytes first reached that peak
 * @param peakReserved           the most bytes in segments at any moment ({@code reserved_bytes.all.peak})
 * @param peakReservedEntry      the entry after which reserved bytes first reached that peak
 * @param peakRequested          the most requested bytes alive at any moment: the top of the timeline
 * @param reservedAtPeak         reserved bytes at the allocated peak
 * @param largestFreeAtPeak      the largest inactive block at the allocated peak
 * @param freeBlocksAtPeak       inactive blocks at the allocated peak
 * @param ooms                   {@code oom} entries in the trace
 * @param entries                trace entries
 * @param allocs                 {@code alloc} entries
 * @param segmentsAtEnd          segments at the end of the trace
 */
public record Headline(long peakAllocated, int peakAllocatedEntry, long peakReserved, int peakReservedEntry,
        long peakRequested, long reservedAtPeak, long largestFreeAtPeak, int freeBlocksAtPeak, int ooms, int entries,
        int allocs, int segmentsAtEnd) {

    /**
     * @return reserved − allocated at the allocated peak: the memory the cache held but could not use then (the
     *     "reserved but unallocated" figure of PyTorch's out-of-memory message)
     */
    public long fragmentationAtPeak() {
        return reservedAtPeak - peakAllocated;
    }
}
