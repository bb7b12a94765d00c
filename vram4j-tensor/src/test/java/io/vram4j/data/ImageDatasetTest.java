package io.vram4j.data;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;

import static io.vram4j.data.IdxFiles.idx;
import static io.vram4j.data.IdxFiles.images;
import static io.vram4j.data.IdxFiles.labels;
import static io.vram4j.data.IdxFiles.write;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class ImageDatasetTest {
    @TempDir
    Path dir;

    @Test
    void normalizesWithMeanAndStd() {
        IdxReader.Images im = IdxReader.readImages(write(dir, "i", images(3, 2, 2)));
        IdxReader.Labels l = IdxReader.readLabels(write(dir, "l", labels(3, 10)));
        ImageDataset ds = ImageDataset.of(im, l, 10, FashionMnist.MEAN, FashionMnist.STD);
        assertEquals(3, ds.size());
        assertEquals(4, ds.features());
        float[] x = new float[6];
        ds.copyFeatures(1, x, 2);
        for (int p = 0; p < 4; p++) {
            int raw = (31 + p) & 0xff;
            assertEquals((raw / 255f - 0.2860f) / 0.3530f, x[2 + p], 1e-6f);
            assertEquals(raw, ds.rawPixel(1, p));
        }
        assertEquals(2, ds.label(2));
        assertThrows(IndexOutOfBoundsException.class, () -> ds.copyFeatures(3, x, 0));
        assertThrows(IndexOutOfBoundsException.class, () -> ds.copyFeatures(0, x, 3));
        ImageDataset two = ds.limit(2);
        assertEquals(2, two.size());
        assertSame(ds, ds.limit(100));
        assertThrows(IndexOutOfBoundsException.class, () -> two.label(2));
    }

    @Test
    void mismatchedCountsNameBothFiles() {
        Path i = write(dir, "train-images", images(5, 2, 2));
        Path l = write(dir, "train-labels", labels(4, 10));
        IdxFormatException e = assertThrows(IdxFormatException.class, () -> ImageDataset.of(
                IdxReader.readImages(i), IdxReader.readLabels(l), 10, 0f, 1f));
        assertTrue(e.getMessage().contains(l.toString()) && e.getMessage().contains(i.toString()), e.getMessage());
        assertTrue(e.getMessage().contains("4 labels for the 5 images"), e.getMessage());
    }

    @Test
    void labelsOutOfRangeAreRejected() {
        Path i = write(dir, "i", images(2, 1, 1));
        Path l = write(dir, "l", idx(IdxReader.LABELS_MAGIC, new int[] {2}, new byte[] {3, 10}));
        IdxFormatException e = assertThrows(IdxFormatException.class, () -> ImageDataset.of(
                IdxReader.readImages(i), IdxReader.readLabels(l), 10, 0f, 1f));
        assertTrue(e.getMessage().contains("label 10 at index 1; expected labels 0..9"), e.getMessage());
    }

    @Test
    void bundledSubsetIsFashionMnist() {
        FashionMnist.Source src = FashionMnist.bundled();
        ImageDataset train = src.train();
        ImageDataset test = src.test();
        assertEquals(10_000, train.size());
        assertEquals(2_000, test.size());
        assertEquals(784, train.features());
        assertEquals(28, test.rows());
        // the official training file starts with an ankle boot (9), then a T-shirt (0); the test file with an ankle boot, a pullover
        assertEquals(9, train.label(0));
        assertEquals(0, train.label(1));
        assertEquals(9, test.label(0));
        assertEquals(2, test.label(1));
        // normalized features over the subset have mean ~0 and std ~1
        double sum = 0;
        double sq = 0;
        float[] x = new float[784];
        for (int s = 0; s < train.size(); s++) {
            train.copyFeatures(s, x, 0);
            for (float v : x) {
                sum += v;
                sq += v * v;
            }
        }
        double n = 784.0 * train.size();
        double mean = sum / n;
        double std = Math.sqrt(sq / n - mean * mean);
        assertEquals(0, mean, 0.02);
        assertEquals(1, std, 0.02);
        int[] perClass = new int[10];
        for (int s = 0; s < train.size(); s++) {
            perClass[train.label(s)]++;
        }
        for (int c : perClass) {
            assertTrue(c > 900 && c < 1100, "class balance " + java.util.Arrays.toString(perClass));
        }
    }

    @Test
    void resolutionOrder() throws Exception {
        // no --data, system folder missing -> bundled
        FashionMnist.Source s = FashionMnist.resolve(null, dir.resolve("absent"));
        assertEquals(FashionMnist.Origin.BUNDLED, s.origin());
        assertTrue(s.describe().contains("bundled subset"), s.describe());
        // a complete system folder (plain and gzipped names mixed) wins over the bundled subset
        Path sys = Files.createDirectory(dir.resolve("sys"));
        write(sys, "train-images-idx3-ubyte", images(6, 28, 28));
        write(sys, "train-labels-idx1-ubyte.gz", IdxFiles.gzip(labels(6, 10)));
        write(sys, "t10k-images-idx3-ubyte.gz", IdxFiles.gzip(images(2, 28, 28)));
        write(sys, "t10k-labels-idx1-ubyte", labels(2, 10));
        s = FashionMnist.resolve(null, sys);
        assertEquals(FashionMnist.Origin.SYSTEM, s.origin());
        assertEquals(6, s.train().size());
        assertEquals(2, s.test().size());
        // --data wins over both
        s = FashionMnist.resolve(sys, dir.resolve("absent"));
        assertEquals(FashionMnist.Origin.DIRECTORY, s.origin());
        assertTrue(s.describe().contains(sys.toString()));
        // an incomplete system folder is skipped
        Files.delete(sys.resolve("t10k-labels-idx1-ubyte"));
        assertEquals(FashionMnist.Origin.BUNDLED, FashionMnist.resolve(null, sys).origin());
    }

    @Test
    void badDataFolderIsAClearError() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> FashionMnist.resolve(Path.of("/nonexistent"), null));
        assertEquals("data folder '/nonexistent' does not exist", e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> FashionMnist.resolve(dir, null));
        assertTrue(e.getMessage().contains("has no train-images-idx3-ubyte.gz or train-images-idx3-ubyte"), e.getMessage());
        Path file = write(dir, "file", new byte[1]);
        e = assertThrows(IllegalArgumentException.class, () -> FashionMnist.resolve(file, null));
        assertTrue(e.getMessage().contains("is not a folder"), e.getMessage());
    }
}
