package io.vram4j.data;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.zip.GZIPOutputStream;

/** Builds small IDX files for tests. */
final class IdxFiles {
    private IdxFiles() {
    }

    static byte[] idx(int magic, int[] dims, byte[] data) {
        ByteBuffer b = ByteBuffer.allocate(4 + 4 * dims.length + data.length);
        b.putInt(magic);
        for (int d : dims) {
            b.putInt(d);
        }
        b.put(data);
        return b.array();
    }

    /** Images whose pixel p of image i is (i * 31 + p) & 0xff. */
    static byte[] images(int n, int rows, int cols) {
        byte[] data = new byte[n * rows * cols];
        for (int i = 0; i < n; i++) {
            for (int p = 0; p < rows * cols; p++) {
                data[i * rows * cols + p] = (byte) (i * 31 + p);
            }
        }
        return idx(IdxReader.IMAGES_MAGIC, new int[] {n, rows, cols}, data);
    }

    /** Labels i % classes. */
    static byte[] labels(int n, int classes) {
        byte[] data = new byte[n];
        for (int i = 0; i < n; i++) {
            data[i] = (byte) (i % classes);
        }
        return idx(IdxReader.LABELS_MAGIC, new int[] {n}, data);
    }

    static byte[] gzip(byte[] raw) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        try (GZIPOutputStream g = new GZIPOutputStream(out)) {
            g.write(raw);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return out.toByteArray();
    }

    static Path write(Path dir, String name, byte[] content) {
        try {
            return Files.write(dir.resolve(name), content);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
