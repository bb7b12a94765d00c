package io.vram4j.data;

import java.io.BufferedInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.Objects;
import java.util.zip.GZIPInputStream;
import java.util.zip.ZipException;

/**
 * Reads IDX files, the format of MNIST and Fashion-MNIST, gzipped or plain (detected from the gzip magic
 * bytes {@code 1f 8b}, not from the file name).
 *
 * <p>An IDX file is a big-endian header, the magic number {@code 0x0000TTDD} (two zero bytes, the element
 * type {@code TT}, the number of dimensions {@code DD}), then {@code DD} unsigned 32-bit dimensions, then the
 * elements in row-major order. This reader accepts what the MNIST files use: unsigned bytes ({@code TT = 0x08})
 * with three dimensions for images ({@code 0x00000803}: count, rows, columns) and one for labels
 * ({@code 0x00000801}: count). Anything else, a truncated file, or bytes after the data is rejected with an
 * {@link IdxFormatException} naming the file and what was expected.
 *
 * <p>Stateless and thread-safe.
 */
public final class IdxReader {
    /** Magic number of an IDX file of unsigned bytes with three dimensions (MNIST images). */
    public static final int IMAGES_MAGIC = 0x00000803;
    /** Magic number of an IDX file of unsigned bytes with one dimension (MNIST labels). */
    public static final int LABELS_MAGIC = 0x00000801;
    /** Largest number of elements one file may hold (the data lives in one Java array). */
    public static final long MAX_ELEMENTS = Integer.MAX_VALUE - 8;

    private IdxReader() {
    }

    /**
     * Images: {@code count} images of {@code rows × cols} unsigned bytes, row-major, image after image.
     *
     * @param source where they were read from (for messages)
     * @param count number of images
     * @param rows rows of each image
     * @param cols columns of each image
     * @param pixels {@code count * rows * cols} bytes, each an unsigned pixel 0..255
     */
    public record Images(String source, int count, int rows, int cols, byte[] pixels) {
        /** Checks the array length against the dimensions. */
        public Images {
            Objects.requireNonNull(source, "source");
            Objects.requireNonNull(pixels, "pixels");
            if (count < 0 || rows < 1 || cols < 1 || (long) count * rows * cols != pixels.length) {
                throw new IllegalArgumentException("images of " + count + "×" + rows + "×" + cols
                        + " need " + (long) count * rows * cols + " bytes, got " + pixels.length);
            }
        }

        /** @return pixels per image, {@code rows * cols} */
        public int pixelsPerImage() {
            return rows * cols;
        }

        /**
         * @param image index of an image, {@code 0 <= image < count}
         * @param pixel index of a pixel in it, {@code 0 <= pixel < rows * cols}
         * @return the pixel value, 0..255
         */
        public int pixel(int image, int pixel) {
            return pixels[Math.multiplyExact(image, pixelsPerImage()) + pixel] & 0xff;
        }
    }

    /**
     * Labels: one unsigned byte per sample.
     *
     * @param source where they were read from (for messages)
     * @param labels the labels, each unsigned 0..255
     */
    public record Labels(String source, byte[] labels) {
        /** Checks for nulls. */
        public Labels {
            Objects.requireNonNull(source, "source");
            Objects.requireNonNull(labels, "labels");
        }

        /** @return the number of labels */
        public int count() {
            return labels.length;
        }

        /**
         * @param i index, {@code 0 <= i < count}
         * @return the label, 0..255
         */
        public int label(int i) {
            return labels[i] & 0xff;
        }
    }

    /**
     * @param file an IDX image file, gzipped or plain
     * @return its images
     * @throws IdxFormatException if it is not an IDX file of unsigned-byte images, or is truncated or too long
     * @throws UncheckedIOException if it cannot be read (a missing file is an {@link IdxFormatException})
     */
    public static Images readImages(Path file) {
        try (InputStream in = open(file)) {
            return readImages(in, file.toString());
        } catch (IOException e) {
            throw new UncheckedIOException(file + ": cannot read: " + e.getMessage(), e);
        }
    }

    /**
     * @param file an IDX label file, gzipped or plain
     * @return its labels
     * @throws IdxFormatException if it is not an IDX file of unsigned-byte labels, or is truncated or too long
     * @throws UncheckedIOException if it cannot be read (a missing file is an {@link IdxFormatException})
     */
    public static Labels readLabels(Path file) {
        try (InputStream in = open(file)) {
            return readLabels(in, file.toString());
        } catch (IOException e) {
            throw new UncheckedIOException(file + ": cannot read: " + e.getMessage(), e);
        }
    }

    /**
     * Reads images from a stream (gzipped or plain) to its end. Does not close the stream.
     *
     * @param in the stream
     * @param source the name of the stream, for messages
     * @return the images
     * @throws IdxFormatException if the content is not an IDX file of unsigned-byte images, or is truncated or too long
     * @throws IOException if reading fails
     */
    public static Images readImages(InputStream in, String source) throws IOException {
        InputStream data = decompressed(in, source);
        int[] dims = header(data, source, IMAGES_MAGIC, "images");
        int count = dims[0];
        int rows = dims[1];
        int cols = dims[2];
        if (rows == 0 || cols == 0) {
            throw new IdxFormatException(source, "images of " + rows + "×" + cols + " pixels; expected at least 1×1");
        }
        long total = (long) count * rows * cols;
        if (total > MAX_ELEMENTS) {
            throw new IdxFormatException(source, count + " images of " + rows + "×" + cols + " pixels are "
                    + total + " bytes, more than the " + MAX_ELEMENTS + " this reader supports");
        }
        byte[] pixels = body(data, source, (int) total, count + " images of " + rows + "×" + cols + " pixels");
        return new Images(source, count, rows, cols, pixels);
    }

    /**
     * Reads labels from a stream (gzipped or plain) to its end. Does not close the stream.
     *
     * @param in the stream
     * @param source the name of the stream, for messages
     * @return the labels
     * @throws IdxFormatException if the content is not an IDX file of unsigned-byte labels, or is truncated or too long
     * @throws IOException if reading fails
     */
    public static Labels readLabels(InputStream in, String source) throws IOException {
        InputStream data = decompressed(in, source);
        int[] dims = header(data, source, LABELS_MAGIC, "labels");
        byte[] labels = body(data, source, dims[0], dims[0] + " labels");
        return new Labels(source, labels);
    }

    private static InputStream open(Path file) throws IOException {
        try {
            return Files.newInputStream(file);
        } catch (NoSuchFileException e) {
            throw new IdxFormatException(file.toString(), "no such file");
        }
    }

    /** Wraps {@code in} in a gzip decoder when it starts with the gzip magic bytes 1f 8b. */
    private static InputStream decompressed(InputStream in, String source) throws IOException {
        BufferedInputStream buffered = new BufferedInputStream(in, 1 << 16);
        buffered.mark(2);
        int b0 = buffered.read();
        int b1 = buffered.read();
        buffered.reset();
        if (b0 == 0x1f && b1 == 0x8b) {
            try {
                return new BufferedInputStream(new GZIPInputStream(buffered, 1 << 16), 1 << 16);
            } catch (ZipException | java.io.EOFException e) {
                throw new IdxFormatException(source, "starts like a gzip file (1f 8b) but is not one: " + e.getMessage(), e);
            }
        }
        return buffered;
    }

    private static int[] header(InputStream in, String source, int expectedMagic, String what) throws IOException {
        byte[] magicBytes = new byte[4];
        int got = readUpTo(in, source, magicBytes, 0, 4);
        if (got < 4) {
            throw new IdxFormatException(source, "too short for an IDX file (" + got + " bytes); expected the "
                    + what + " magic number 0x" + hex(expectedMagic));
        }
        int magic = bigEndian(magicBytes, 0);
        if (magic != expectedMagic) {
            String hint = magic == IMAGES_MAGIC ? " (an images file)"
                    : magic == LABELS_MAGIC ? " (a labels file)"
                    : (magic >>> 16) != 0 ? " (not an IDX file)" : "";
            throw new IdxFormatException(source, "magic number 0x" + hex(magic) + hint + "; expected 0x"
                    + hex(expectedMagic) + " for IDX " + what + " (unsigned bytes, " + (expectedMagic & 0xff)
                    + " dimension" + ((expectedMagic & 0xff) == 1 ? "" : "s") + ")");
        }
        int ndim = expectedMagic & 0xff;
        byte[] dimBytes = new byte[4 * ndim];
        got = readUpTo(in, source, dimBytes, 0, dimBytes.length);
        if (got < dimBytes.length) {
            throw new IdxFormatException(source, "truncated header: " + (4 + got) + " bytes; expected "
                    + (4 + dimBytes.length) + " (magic and " + ndim + " dimension" + (ndim == 1 ? "" : "s") + ")");
        }
        int[] dims = new int[ndim];
        for (int i = 0; i < ndim; i++) {
            dims[i] = bigEndian(dimBytes, 4 * i);
            if (dims[i] < 0) {
                throw new IdxFormatException(source, "dimension " + i + " is " + Integer.toUnsignedString(dims[i])
                        + "; expected at most " + Integer.MAX_VALUE);
            }
        }
        return dims;
    }

    private static byte[] body(InputStream in, String source, int length, String what) throws IOException {
        // Read in chunks so that a huge count in a corrupt header does not allocate before the data is seen.
        byte[] out = new byte[Math.min(length, 1 << 20)];
        int filled = 0;
        while (filled < length) {
            if (filled == out.length) {
                out = java.util.Arrays.copyOf(out, (int) Math.min(length, Math.max(2L * out.length, 1 << 20)));
            }
            int n = readUpTo(in, source, out, filled, out.length - filled);
            filled += n;
            if (filled < out.length) {
                throw new IdxFormatException(source, "truncated: the header announces " + what + " (" + length
                        + " bytes of data), but the file ends after " + filled + " bytes of data");
            }
        }
        if (readByte(in, source) >= 0) {
            throw new IdxFormatException(source, "unexpected bytes after the " + what + " (" + length
                    + " bytes of data) the header announces");
        }
        return out;
    }

    /** Reads until {@code len} bytes or the end; returns how many were read. */
    private static int readUpTo(InputStream in, String source, byte[] b, int off, int len) throws IOException {
        int total = 0;
        while (total < len) {
            int n;
            try {
                n = in.read(b, off + total, len - total);
            } catch (java.io.EOFException | ZipException e) {
                throw corruptGzip(source, e);
            }
            if (n < 0) {
                break;
            }
            total += n;
        }
        return total;
    }

    private static int readByte(InputStream in, String source) throws IOException {
        try {
            return in.read();
        } catch (java.io.EOFException | ZipException e) {
            throw corruptGzip(source, e);
        }
    }

    private static IdxFormatException corruptGzip(String source, IOException e) {
        return new IdxFormatException(source, "corrupt or truncated gzip data (" + e.getMessage() + ")", e);
    }

    private static int bigEndian(byte[] b, int off) {
        return (b[off] & 0xff) << 24 | (b[off + 1] & 0xff) << 16 | (b[off + 2] & 0xff) << 8 | (b[off + 3] & 0xff);
    }

    private static String hex(int v) {
        return String.format("%08x", v);
    }
}
