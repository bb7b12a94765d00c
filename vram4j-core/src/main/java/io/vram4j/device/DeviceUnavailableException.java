package io.vram4j.device;

/**
 * A device that was asked for is not on this machine: no CUDA driver, no CUDA device, or an index past the last
 * device. The message is one line that says which (e.g. {@code "no CUDA driver: libcuda.so.1 not found"}); the
 * CLI prints it and exits with code 2. Nothing was opened.
 */
public final class DeviceUnavailableException extends RuntimeException {
    /** @param message one line naming what is missing */
    public DeviceUnavailableException(String message) {
        super(message);
    }

    /**
     * @param message one line naming what is missing
     * @param cause the failure behind it
     */
    public DeviceUnavailableException(String message, Throwable cause) {
        super(message, cause);
    }
}
