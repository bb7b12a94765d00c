package io.vram4j.cli;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Random;
import java.util.zip.GZIPOutputStream;
import java.util.zip.ZipEntry;
import java.util.zip.ZipOutputStream;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The GPU run's helper scripts that need no GPU: {@code gpu/fashion_mnist.py}, which carries the full
 * Fashion-MNIST to the GPU machine as only the part the jar does not bundle and rebuilds the official files there,
 * and {@code gpu/summarize.py}, which gives the run's summary table one line per training run. A small data set
 * in the IDX format stands in for the official one (its images random, so that a wrong offset changes bytes), and
 * a zip with the jar's resource layout stands in for the jar.
 */
class GpuScriptsTest {
    private static final PythonScript FASHION = PythonScript.gpu("fashion_mnist.py");
    private static final PythonScript SUMMARIZE = PythonScript.gpu("summarize.py");
    private static final String[] IMAGES = {"train-images-idx3-ubyte", "t10k-images-idx3-ubyte"};
    private static final String[] LABELS = {"train-labels-idx1-ubyte", "t10k-labels-idx1-ubyte"};
    private static final int ROWS = 4;
    private static final int COLS = 3;

    /** An official-like folder of gzipped IDX files (train 50 images, test 20) and a jar bundling the first few. */
    private record DataSet(Path official, Path jar, byte[][] images, byte[][] labels) {
    }

    @Test
    void splitThenJoinRebuildsTheOfficialFilesByteForByte(@TempDir Path dir) throws IOException {
        DataSet d = dataSet(dir, 10, 5);
        Path part = dir.resolve("part.tar.xz");
        PythonScript.Result split = FASHION.run("split", d.official().toString(), d.jar().toString(), part.toString());
        assertEquals(0, split.code(), split.out());
        assertTrue(Files.size(part) > 0);

        Path out = Files.createDirectory(dir.resolve("rebuilt"));
        PythonScript.Result join = FASHION.run("join", part.toString(), d.jar().toString(), out.toString());
        assertEquals(0, join.code(), join.out());
        for (int i = 0; i < 2; i++) {
            assertArrayEquals(d.images()[i], Files.readAllBytes(out.resolve(IMAGES[i])), IMAGES[i]);
            assertArrayEquals(d.labels()[i], Files.readAllBytes(out.resolve(LABELS[i])), LABELS[i]);
            assertTrue(join.out().contains(IMAGES[i] + ": " + d.images()[i].length + " bytes, SHA-256 as the official file"),
                    join.out());
        }
    }

    @Test
    void aJarThatDoesNotBundleTheFirstImagesIsRefusedNamingIt(@TempDir Path dir) throws IOException {
        DataSet d = dataSet(dir, 10, 5);
        // a jar whose bundled training images are images 1..10, not 0..9
        Path shifted = dir.resolve("shifted.jar");
        writeJar(shifted, slice(d.images()[0], 1, 10), slice(d.images()[1], 0, 5));
        PythonScript.Result r = FASHION.run("split", d.official().toString(), shifted.toString(),
                dir.resolve("p.tar.xz").toString());
        assertEquals(2, r.code(), r.out());
        assertOneLine(r.out(), shifted + "!" + IMAGES[0] + ".gz: not the first 10 images of");
    }

    @Test
    void aDamagedPartOrAnotherJarIsRefusedAndNothingIsWrittenForIt(@TempDir Path dir) throws IOException {
        DataSet d = dataSet(dir, 10, 5);
        Path part = dir.resolve("part.tar.xz");
        assertEquals(0, FASHION.run("split", d.official().toString(), d.jar().toString(), part.toString()).code());

        Path notTar = Files.write(dir.resolve("junk.tar.xz"), new byte[] {1, 2, 3, 4});
        Path out = Files.createDirectory(dir.resolve("out"));
        PythonScript.Result junk = FASHION.run("join", notTar.toString(), d.jar().toString(), out.toString());
        assertEquals(2, junk.code(), junk.out());
        assertOneLine(junk.out(), notTar + ": not a readable tar.xz");

        // the same part against a jar that bundles 12 images instead of 10
        DataSet other = dataSet(Files.createDirectory(dir.resolve("other")), 12, 5);
        PythonScript.Result wrongJar = FASHION.run("join", part.toString(), other.jar().toString(), out.toString());
        assertEquals(2, wrongJar.code(), wrongJar.out());
        assertOneLine(wrongJar.out(), "12 images; the part was made against a jar with 10");

        // a jar bundling the same count of different images: the rebuilt file's checksum gives it away
        Path forged = dir.resolve("forged.jar");
        byte[] train = d.images()[0].clone();
        train[16 + 3] ^= 0x5a;
        writeJar(forged, slice(train, 0, 10), slice(d.images()[1], 0, 5));
        PythonScript.Result mismatch = FASHION.run("join", part.toString(), forged.toString(), out.toString());
        assertEquals(2, mismatch.code(), mismatch.out());
        assertOneLine(mismatch.out(), IMAGES[0] + ": the rebuilt file's SHA-256 differs from the official file's");
        assertFalse(Files.exists(out.resolve(IMAGES[0])), "a file that fails its checksum is not written");
    }

    @Test
    void wrongArgumentsPrintTheUsageWithStatus2() {
        PythonScript.Result r = FASHION.run("merge", "a", "b");
        assertEquals(2, r.code(), r.out());
        assertTrue(r.out().contains("fashion_mnist.py split OFFICIAL_DIR JAR OUT.tar.xz"), r.out());
    }

    @Test
    void summaryLinesForVram4jAndPytorchRunsAndForAFailedOne(@TempDir Path dir) throws IOException {
        Path ours = Files.writeString(dir.resolve("v.json"), """
                {"status": "ok", "accuracy": 0.8845, "samples_per_sec": 51234.5, "device": "cuda:0",
                 "epochs": [{"seconds": 1.25}, {"seconds": 1.0}],
                 "peaks": {"training_peak_allocated_bytes": 3145728, "training_peak_reserved_bytes": 23068672}}
                """);
        Path err = Files.writeString(dir.resolve("v.txt"), "WARNING: Using incubator modules: jdk.incubator.vector\n");
        PythonScript.Result v = SUMMARIZE.run("train", ours.toString(), err.toString());
        assertEquals("acc 0.8845, epochs 1.2 1.0 s, 51,234 samples/s, peak alloc 3.0 MiB / reserved 22.0 MiB (cuda:0)",
                v.out().strip());

        Path torch = Files.writeString(dir.resolve("t.json"), "{\"torch\": \"2.11.0\", \"loader\": \"pinned\", "
                + "\"epoch_seconds\": [2.5, 2.25], \"test_accuracy\": 0.881, \"peak_allocated_bytes\": 1048576, "
                + "\"peak_reserved_bytes\": 2097152}\n");
        PythonScript.Result t = SUMMARIZE.run("train", torch.toString(), err.toString());
        assertEquals("acc 0.8810, epochs 2.5 2.2 s, peak alloc 1.0 MiB / reserved 2.0 MiB (torch 2.11.0, loader pinned)",
                t.out().strip());

        Path empty = Files.writeString(dir.resolve("e.json"), "");
        Path failed = Files.writeString(dir.resolve("e.txt"),
                "WARNING: Using incubator modules: jdk.incubator.vector\nvram4j: no CUDA driver: libcuda.so.1 not found\n");
        PythonScript.Result f = SUMMARIZE.run("train", empty.toString(), failed.toString());
        assertEquals("failed: vram4j: no CUDA driver: libcuda.so.1 not found", f.out().strip());
        assertEquals(2, SUMMARIZE.run("bench").code());
    }

    // ------------------------------------------------------------------------------------------------ helpers

    private static void assertOneLine(String out, String expected) {
        String s = out.strip();
        assertFalse(s.contains("\n"), "one line expected: " + s);
        assertTrue(s.startsWith("fashion_mnist.py: ") && s.contains(expected), s);
    }

    private static DataSet dataSet(Path dir, int bundledTrain, int bundledTest) throws IOException {
        Random rnd = new Random(bundledTrain);
        byte[][] images = {idxImages(rnd, 50), idxImages(rnd, 20)};
        byte[][] labels = {idxLabels(rnd, 50), idxLabels(rnd, 20)};
        Path official = Files.createDirectories(dir.resolve("official"));
        for (int i = 0; i < 2; i++) {
            Files.write(official.resolve(IMAGES[i] + ".gz"), gzip(images[i]));
            Files.write(official.resolve(LABELS[i] + ".gz"), gzip(labels[i]));
        }
        Path jar = dir.resolve("vram4j.jar");
        writeJar(jar, slice(images[0], 0, bundledTrain), slice(images[1], 0, bundledTest));
        return new DataSet(official, jar, images, labels);
    }

    private static byte[] idxImages(Random rnd, int count) {
        byte[] pixels = new byte[count * ROWS * COLS];
        rnd.nextBytes(pixels);
        return ByteBuffer.allocate(16 + pixels.length).putInt(0x803).putInt(count).putInt(ROWS).putInt(COLS).put(pixels)
                .array();
    }

    private static byte[] idxLabels(Random rnd, int count) {
        ByteBuffer b = ByteBuffer.allocate(8 + count).putInt(0x801).putInt(count);
        for (int i = 0; i < count; i++) {
            b.put((byte) rnd.nextInt(10));
        }
        return b.array();
    }

    /** @return an IDX image file of images [from, from + count) of {@code idx} */
    private static byte[] slice(byte[] idx, int from, int count) {
        int size = ROWS * COLS;
        return ByteBuffer.allocate(16 + count * size).putInt(0x803).putInt(count).putInt(ROWS).putInt(COLS)
                .put(idx, 16 + from * size, count * size).array();
    }

    private static void writeJar(Path jar, byte[] trainImages, byte[] testImages) throws IOException {
        try (OutputStream f = Files.newOutputStream(jar); ZipOutputStream z = new ZipOutputStream(f)) {
            for (int i = 0; i < 2; i++) {
                z.putNextEntry(new ZipEntry("io/vram4j/data/fashion-mnist/" + IMAGES[i] + ".gz"));
                z.write(gzip(i == 0 ? trainImages : testImages));
                z.closeEntry();
            }
        }
    }

    private static byte[] gzip(byte[] data) throws IOException {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (GZIPOutputStream g = new GZIPOutputStream(bytes)) {
            g.write(data);
        }
        return bytes.toByteArray();
    }
}
