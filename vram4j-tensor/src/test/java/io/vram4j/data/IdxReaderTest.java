package io.vram4j.data;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayInputStream;
import java.nio.file.Path;
import java.util.Arrays;

import static io.vram4j.data.IdxFiles.gzip;
import static io.vram4j.data.IdxFiles.idx;
import static io.vram4j.data.IdxFiles.images;
import static io.vram4j.data.IdxFiles.labels;
import static io.vram4j.data.IdxFiles.write;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class IdxReaderTest {
    @TempDir
    Path dir;

    @Test
    void readsPlainAndGzippedImagesAlike() {
        byte[] raw = images(5, 3, 4);
        IdxReader.Images plain = IdxReader.readImages(write(dir, "img", raw));
        IdxReader.Images gz = IdxReader.readImages(write(dir, "img-no-suffix", gzip(raw)));
        for (IdxReader.Images im : new IdxReader.Images[] {plain, gz}) {
            assertEquals(5, im.count());
            assertEquals(3, im.rows());
            assertEquals(4, im.cols());
            assertEquals(12, im.pixelsPerImage());
            assertEquals((2 * 31 + 7) & 0xff, im.pixel(2, 7));
        }
        assertTrue(Arrays.equals(plain.pixels(), gz.pixels()));
    }

    @Test
    void readsLabelsAndUnsignedBytes() throws Exception {
        byte[] raw = idx(IdxReader.LABELS_MAGIC, new int[] {3}, new byte[] {0, 9, (byte) 200});
        IdxReader.Labels l = IdxReader.readLabels(new ByteArrayInputStream(gzip(raw)), "mem");
        assertEquals(3, l.count());
        assertEquals(9, l.label(1));
        assertEquals(200, l.label(2));
        assertEquals("mem", l.source());
    }

    @Test
    void emptyFilesAreValid() {
        assertEquals(0, IdxReader.readLabels(write(dir, "l", labels(0, 10))).count());
        assertEquals(0, IdxReader.readImages(write(dir, "i", images(0, 28, 28))).count());
    }

    @Test
    void wrongMagicNamesFileAndExpectation() {
        Path labelsAsImages = write(dir, "labels.gz", gzip(labels(4, 10)));
        IdxFormatException e = assertThrows(IdxFormatException.class, () -> IdxReader.readImages(labelsAsImages));
        assertTrue(e.getMessage().contains(labelsAsImages.toString()), e.getMessage());
        assertTrue(e.getMessage().contains("0x00000801"), e.getMessage());
        assertTrue(e.getMessage().contains("expected 0x00000803"), e.getMessage());
        assertEquals(labelsAsImages.toString(), e.source());

        Path text = write(dir, "readme.txt", "hello, world".getBytes());
        e = assertThrows(IdxFormatException.class, () -> IdxReader.readLabels(text));
        assertTrue(e.getMessage().contains("not an IDX file"), e.getMessage());
    }

    @Test
    void truncatedDataIsRejected() {
        byte[] raw = images(4, 2, 2);
        for (byte[] content : new byte[][] {Arrays.copyOf(raw, raw.length - 1), gzip(Arrays.copyOf(raw, raw.length - 5))}) {
            Path f = write(dir, "short", content);
            IdxFormatException e = assertThrows(IdxFormatException.class, () -> IdxReader.readImages(f));
            assertTrue(e.getMessage().contains("truncated"), e.getMessage());
            assertTrue(e.getMessage().contains("4 images of 2×2"), e.getMessage());
        }
        Path header = write(dir, "header", Arrays.copyOf(raw, 9));
        IdxFormatException e = assertThrows(IdxFormatException.class, () -> IdxReader.readImages(header));
        assertTrue(e.getMessage().contains("truncated header"), e.getMessage());
        Path tiny = write(dir, "tiny", new byte[] {0, 0});
        e = assertThrows(IdxFormatException.class, () -> IdxReader.readImages(tiny));
        assertTrue(e.getMessage().contains("too short"), e.getMessage());
    }

    @Test
    void truncatedGzipStreamIsRejected() {
        byte[] gz = gzip(images(50, 28, 28));
        Path f = write(dir, "cut.gz", Arrays.copyOf(gz, gz.length / 2));
        IdxFormatException e = assertThrows(IdxFormatException.class, () -> IdxReader.readImages(f));
        assertTrue(e.getMessage().startsWith(f.toString()), e.getMessage());
    }

    @Test
    void trailingBytesAreRejected() {
        byte[] raw = labels(3, 10);
        Path f = write(dir, "long", Arrays.copyOf(raw, raw.length + 2));
        IdxFormatException e = assertThrows(IdxFormatException.class, () -> IdxReader.readLabels(f));
        assertTrue(e.getMessage().contains("unexpected bytes after the 3 labels"), e.getMessage());
    }

    @Test
    void hugeOrZeroDimensionsAreRejectedBeforeAllocating() {
        Path huge = write(dir, "huge", idx(IdxReader.IMAGES_MAGIC, new int[] {Integer.MAX_VALUE, 28, 28}, new byte[0]));
        IdxFormatException e = assertThrows(IdxFormatException.class, () -> IdxReader.readImages(huge));
        assertTrue(e.getMessage().contains("more than"), e.getMessage());
        Path negative = write(dir, "neg", idx(IdxReader.LABELS_MAGIC, new int[] {-1}, new byte[0]));
        e = assertThrows(IdxFormatException.class, () -> IdxReader.readLabels(negative));
        assertTrue(e.getMessage().contains("4294967295"), e.getMessage());
        Path zero = write(dir, "zero", idx(IdxReader.IMAGES_MAGIC, new int[] {1, 0, 28}, new byte[0]));
        assertThrows(IdxFormatException.class, () -> IdxReader.readImages(zero));
        // a large announced count with little data fails as truncated, without allocating the announced size
        Path big = write(dir, "big", idx(IdxReader.IMAGES_MAGIC, new int[] {2_000_000, 28, 28}, new byte[100]));
        e = assertThrows(IdxFormatException.class, () -> IdxReader.readImages(big));
        assertTrue(e.getMessage().contains("ends after 100 bytes"), e.getMessage());
    }

    @Test
    void missingFileIsAClearError() {
        Path missing = dir.resolve("nope.gz");
        IdxFormatException e = assertThrows(IdxFormatException.class, () -> IdxReader.readLabels(missing));
        assertEquals(missing + ": no such file", e.getMessage());
    }
}
