package io.vram4j.device.host;

/**
 * A failed C library call: names the call with its arguments and the {@code errno} it set.
 */
final class LibcException extends IllegalStateException {
    private final int errno;

    LibcException(String call, int errno) {
        super(call + " failed: errno " + errno + " (" + errnoName(errno) + ")");
        this.errno = errno;
    }

    /** @return the {@code errno} value the call set */
    int errno() {
        return errno;
    }

    private static String errnoName(int errno) {
        return switch (errno) {
            case 1 -> "EPERM";
            case 9 -> "EBADF";
            case 11 -> "EAGAIN";
            case 12 -> "ENOMEM";
            case 13 -> "EACCES";
            case 14 -> "EFAULT";
            case 16 -> "EBUSY";
            case 17 -> "EEXIST";
            case 22 -> "EINVAL";
            case 23 -> "ENFILE";
            case 24 -> "EMFILE";
            case 75 -> "EOVERFLOW";
            default -> "see errno(3)";
        };
    }
}
