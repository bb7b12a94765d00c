package io.vram4j.predict;

/**
 * The recordings cannot be extrapolated: they do not align event by event, a size does not follow the
 * {@link Growth} model, or a trace does not start from an empty allocator. The message names the recording, the
 * event and its frames.
 */
public final class PredictionException extends IllegalArgumentException {
    /**
     * @param message what was wrong, in one line
     */
    public PredictionException(String message) {
        super(message);
    }
}
