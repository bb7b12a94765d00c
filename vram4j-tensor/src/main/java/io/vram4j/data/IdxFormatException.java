package io.vram4j.data;

/**
 * An IDX file that is not what it should be: wrong magic number, bad dimensions, truncated data, trailing
 * bytes, or images and labels that do not match. The message names the file and what was expected.
 */
public final class IdxFormatException extends IllegalArgumentException {
    private final String source;

    /**
     * @param source the file (or resource) the problem is in
     * @param message what is wrong and what was expected
     */
    public IdxFormatException(String source, String message) {
        super(source + ": " + message);
        this.source = source;
    }

    /**
     * @param source the file (or resource) the problem is in
     * @param message what is wrong and what was expected
     * @param cause the underlying error
     */
    public IdxFormatException(String source, String message, Throwable cause) {
        super(source + ": " + message, cause);
        this.source = source;
    }

    /** @return the file or resource the problem is in */
    public String source() {
        return source;
    }
}
