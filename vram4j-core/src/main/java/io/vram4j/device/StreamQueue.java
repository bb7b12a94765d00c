package io.vram4j.device;

/**
 * The work queue behind a {@link Stream}: how markers (events) are recorded on it and when they complete. This is
 * the SPI a device backend implements for its streams; users call {@link Stream} and {@link Event} instead.
 *
 * <p>The {@code host} and {@code sim} devices run no work asynchronously and use {@link #counting()}: a marker
 * stays pending until the stream is {@linkplain #synchronize() synchronized}, an explicit model that lets tests
 * reproduce "stream still busy". The {@code cuda} device backs each marker with a CUDA event.
 *
 * <p>Implementations are thread-safe.
 */
public interface StreamQueue {

    /**
     * Records a marker at the current end of the queue (as {@code cuEventRecord}).
     *
     * @return a token naming the marker, passed back to the other methods
     */
    long record();

    /**
     * @param token a marker of this queue, not yet {@linkplain #release released}
     * @return true once the work before the marker has completed (as {@code cuEventQuery} returning success)
     */
    boolean isComplete(long token);

    /**
     * Blocks until the work before the marker has completed (as {@code cuEventSynchronize}).
     *
     * @param token a marker of this queue, not yet {@linkplain #release released}
     */
    void await(long token);

    /**
     * Gives up a completed marker (as {@code cuEventDestroy}); called once per marker by {@link Event}.
     *
     * @param token a completed marker of this queue
     */
    default void release(long token) {
    }

    /**
     * Makes work queued here after this call wait for a marker of another queue (as {@code cuStreamWaitEvent}).
     * The default, for queues that run no work asynchronously, blocks until the marker has completed
     * ({@link #await} on its queue), which in the counting model completes it.
     *
     * @param source the queue the marker was recorded on
     * @param token a marker of {@code source}, not yet {@linkplain #release released}
     */
    default void waitFor(StreamQueue source, long token) {
        source.await(token);
    }

    /** Blocks until all work queued so far has completed (as {@code cuStreamSynchronize}). */
    void synchronize();

    /** @return true when no queued work is pending (as {@code cuStreamQuery} returning success) */
    boolean query();

    /** @return a new queue of the counting model used by {@code host} and {@code sim} (see the class comment) */
    static StreamQueue counting() {
        return new CountingQueue();
    }
}
