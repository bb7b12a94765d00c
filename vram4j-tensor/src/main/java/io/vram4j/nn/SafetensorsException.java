package io.vram4j.nn;

import java.io.IOException;

/** A safetensors file that cannot be read: truncated, malformed header, bad offsets, unknown dtype, or not matching a model. */
public final class SafetensorsException extends IOException {
    /** @param message what is wrong, naming the file */
    public SafetensorsException(String message) {
        super(message);
    }

    /** @param message what is wrong, naming the file @param cause the parse error */
    public SafetensorsException(String message, Throwable cause) {
        super(message, cause);
    }
}
