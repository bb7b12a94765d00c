package io.vram4j.device.cuda;

import io.vram4j.device.Stream;

/**
 * GPU time between two points of a stream: a pair of events created with timing ({@code cuEventCreate} with flags
 * 0), recorded by {@link #start} and {@link #stop}, read by {@link #elapsedMs} ({@code cuEventElapsedTime}, about
 * 0.5 microseconds of resolution), as {@code torch.cuda.Event(enable_timing=True)}. The events cost a record each;
 * vram4j's own events are created without timing, so a timer is for measuring, not for every launch of a run.
 *
 * <p>Not thread-safe: one thread starts, stops and reads a timer. {@link #close()} destroys the events.
 */
public final class GpuTimer implements AutoCloseable {
    private final CudaDevice device;
    private final long start;
    private final long end;
    private boolean closed;

    GpuTimer(CudaDevice device, long start, long end) {
        this.device = device;
        this.start = start;
        this.end = end;
    }

    /**
     * Records the start on {@code stream}.
     *
     * @throws IllegalArgumentException if the stream is not the device's
     */
    public void start(Stream stream) {
        device.recordTimingEvent(start, stream);
    }

    /**
     * Records the end on {@code stream}.
     *
     * @throws IllegalArgumentException if the stream is not the device's
     */
    public void stop(Stream stream) {
        device.recordTimingEvent(end, stream);
    }

    /**
     * Waits for the end event ({@code cuEventSynchronize}) and returns the time between the two records.
     *
     * @return milliseconds of GPU time between start and stop
     * @throws io.vram4j.device.cuda.CudaException when a record is missing (the driver's error, named)
     */
    public float elapsedMs() {
        return device.elapsedMs(start, end);
    }

    /** Destroys both events; closing again does nothing. */
    @Override
    public void close() {
        if (!closed) {
            closed = true;
            device.destroyTimingEvents(start, end);
        }
    }
}
