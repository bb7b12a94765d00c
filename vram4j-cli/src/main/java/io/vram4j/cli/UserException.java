package io.vram4j.cli;

/** A mistake in what the user asked for; printed as one line, exit code 2. */
final class UserException extends RuntimeException {
    UserException(String message) {
        super(message);
    }

    UserException(String message, Throwable cause) {
        super(message, cause);
    }
}
