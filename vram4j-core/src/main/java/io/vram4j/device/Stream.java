package io.vram4j.device;

/**
 * An ordered queue of device work, identified by a raw 64-bit handle as CUDA's {@code cudaStream_t}
 * (0 is the default stream).
 *
 * <p>Completion is the business of the stream's {@link StreamQueue}. On the {@code host} and {@code sim} devices
 * no work runs asynchronously, so completion is an explicit, testable model: every {@link Event} recorded on a
 * stream stays <em>pending</em> until the stream is {@linkplain #synchronize() synchronized}, which completes all
 * events recorded on it so far. This lets tests reproduce the "stream still busy" situations of PyTorch's
 * {@code record_stream} tests. On the {@code cuda} device events are CUDA events and complete when the GPU has
 * done the work queued before them.
 *
 * <p>Thread-safe. Streams compare by handle; ordering in the allocator's free sets treats handles as
 * unsigned 64-bit integers, as PyTorch does with raw pointers.
 */
public final class Stream {
    private final int deviceIndex;
    private final long handle;
    private final StreamQueue queue;

    /**
     * A stream of the counting completion model ({@link StreamQueue#counting()}).
     *
     * @param deviceIndex the owning device's index
     * @param handle the raw handle; 0 is the default stream
     */
    public Stream(int deviceIndex, long handle) {
        this(deviceIndex, handle, StreamQueue.counting());
    }

    /**
     * @param deviceIndex the owning device's index
     * @param handle the raw handle; 0 is the default stream
     * @param queue the work queue that decides when events complete
     */
    public Stream(int deviceIndex, long handle, StreamQueue queue) {
        this.deviceIndex = deviceIndex;
        this.handle = handle;
        this.queue = java.util.Objects.requireNonNull(queue, "queue");
    }

    /** @return the raw stream handle as it appears in snapshots ({@code stream} field); 0 for the default stream */
    public long handle() {
        return handle;
    }

    /** @return the index of the device this stream belongs to */
    public int deviceIndex() {
        return deviceIndex;
    }

    /** @return true for the default stream (handle 0) */
    public boolean isDefault() {
        return handle == 0;
    }

    /**
     * Records an event at the current end of this stream (as {@code cudaEventRecord}). In the counting model it
     * completes when the stream is next synchronized; on {@code cuda} when the GPU has done the work before it.
     *
     * @return a new event, usually pending
     */
    public Event recordEvent() {
        return new Event(this, queue.record());
    }

    /**
     * Makes the work queued on this stream from now on wait until {@code event} has completed, without blocking
     * the calling thread (as {@code cudaStreamWaitEvent} and PyTorch's {@code Stream.wait_event}); the way to
     * order a stream after a copy queued on another. On {@code cuda} this is {@code cuStreamWaitEvent}. On
     * {@code host} and {@code sim}, which run nothing asynchronously, it waits for the event (completing it in the
     * counting model). Nothing is queued when the event has completed already.
     *
     * @param event an event of a stream of the same device
     * @throws IllegalArgumentException if the event belongs to another device
     */
    public void waitEvent(Event event) {
        if (event.stream().deviceIndex != deviceIndex) {
            throw new IllegalArgumentException(this + " cannot wait for an event of " + event.stream());
        }
        event.waitedOnBy(queue);
    }

    /** Waits until every event recorded on this stream so far has completed (as {@code cudaStreamSynchronize}). */
    public void synchronize() {
        queue.synchronize();
    }

    /** @return true when no recorded event is pending (as {@code cudaStreamQuery} returning success) */
    public boolean query() {
        return queue.query();
    }

    StreamQueue queue() {
        return queue;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof Stream s && s.handle == handle && s.deviceIndex == deviceIndex;
    }

    @Override
    public int hashCode() {
        return Long.hashCode(handle) * 31 + deviceIndex;
    }

    @Override
    public String toString() {
        return "Stream(device=" + deviceIndex + ", handle=" + Long.toUnsignedString(handle) + ")";
    }
}
