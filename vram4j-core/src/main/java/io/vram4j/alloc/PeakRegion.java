package io.vram4j.alloc;

/**
 * A region of code over which the peak of allocated and reserved bytes is measured
 * ({@link CachingAllocator#openPeakRegion()}) without touching PyTorch's peak statistics. Regions nest: an
 * inner region's peaks also count for the outer one. Close it once, in LIFO order with other regions of the
 * same allocator; the peaks are readable after {@link #close()}.
 */
public final class PeakRegion implements AutoCloseable {
    private final DeviceCachingAllocator engine;
    private final long[] saved;
    private long[] peaks;

    PeakRegion(DeviceCachingAllocator engine, long[] saved) {
        this.engine = engine;
        this.saved = saved;
    }

    /**
     * @return the highest allocated bytes seen inside the region
     * @throws IllegalStateException before {@link #close()}
     */
    public long peakAllocated() {
        return closedPeaks()[0];
    }

    /**
     * @return the highest reserved bytes seen inside the region
     * @throws IllegalStateException before {@link #close()}
     */
    public long peakReserved() {
        return closedPeaks()[1];
    }

    private long[] closedPeaks() {
        if (peaks == null) {
            throw new IllegalStateException("close the peak region before reading its peaks");
        }
        return peaks;
    }

    @Override
    public void close() {
        if (peaks == null) {
            peaks = engine.closeRegion(saved);
        }
    }
}
