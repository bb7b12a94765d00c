package io.vram4j.data;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Objects;

/**
 * The Fashion-MNIST data set (Zalando Research, MIT license): 28×28 grayscale images of clothing in 10
 * classes, 60,000 for training and 10,000 for testing, in IDX files.
 *
 * <p>{@link #resolve(Path)} finds the files, in this order:
 * <ol>
 *   <li>a folder given by the user ({@code --data DIR});</li>
 *   <li>{@link #SYSTEM_DIR}, where Debian's {@code dataset-fashion-mnist} package installs the full set;</li>
 *   <li>the subset bundled in this jar: the first 10,000 training and 2,000 test images of the official
 *       files (see {@code io/vram4j/data/fashion-mnist/README.md} and its {@code LICENSE}).</li>
 * </ol>
 * A folder must hold {@code train-images-idx3-ubyte}, {@code train-labels-idx1-ubyte},
 * {@code t10k-images-idx3-ubyte} and {@code t10k-labels-idx1-ubyte}, each gzipped ({@code .gz}) or plain.
 *
 * <p>Images are normalized with the training set's {@link #MEAN} and {@link #STD} (see {@link ImageDataset}).
 */
public final class FashionMnist {
    /** Mean of the training images' pixels scaled to [0, 1] (0.2860, as commonly used with torchvision). */
    public static final float MEAN = 0.2860f;
    /** Standard deviation of the training images' pixels scaled to [0, 1] (0.3530). */
    public static final float STD = 0.3530f;
    /** Number of classes. */
    public static final int NUM_CLASSES = 10;
    /** Class names, by label. */
    public static final List<String> CLASSES = List.of("T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
            "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot");
    /** Where Debian's {@code dataset-fashion-mnist} package puts the full data set. */
    public static final Path SYSTEM_DIR = Path.of("/usr/share/datasets/fashion-mnist");
    /** Class-path folder of the bundled subset. */
    public static final String RESOURCE_DIR = "/io/vram4j/data/fashion-mnist/";

    static final String TRAIN_IMAGES = "train-images-idx3-ubyte";
    static final String TRAIN_LABELS = "train-labels-idx1-ubyte";
    static final String TEST_IMAGES = "t10k-images-idx3-ubyte";
    static final String TEST_LABELS = "t10k-labels-idx1-ubyte";
    private static final List<String> FILES = List.of(TRAIN_IMAGES, TRAIN_LABELS, TEST_IMAGES, TEST_LABELS);

    private FashionMnist() {
    }

    /** Where a {@link Source} comes from. */
    public enum Origin {
        /** a folder the user named */
        DIRECTORY,
        /** the system-wide install in {@link #SYSTEM_DIR} */
        SYSTEM,
        /** the subset bundled in the jar */
        BUNDLED
    }

    /**
     * A place the four Fashion-MNIST files can be read from.
     *
     * @param origin which kind of place
     * @param location the folder, or the class-path folder of the bundled subset
     */
    public record Source(Origin origin, String location) {
        /** Checks for nulls. */
        public Source {
            Objects.requireNonNull(origin, "origin");
            Objects.requireNonNull(location, "location");
        }

        /** @return the training set (60,000 images for the full set, 10,000 for the bundled subset) */
        public ImageDataset train() {
            return load(TRAIN_IMAGES, TRAIN_LABELS);
        }

        /** @return the test set (10,000 images for the full set, 2,000 for the bundled subset) */
        public ImageDataset test() {
            return load(TEST_IMAGES, TEST_LABELS);
        }

        /** @return a line saying which data this is, e.g. for {@code train}'s output */
        public String describe() {
            return switch (origin) {
                case DIRECTORY -> "Fashion-MNIST from " + location;
                case SYSTEM -> "Fashion-MNIST (full set) from " + location;
                case BUNDLED -> "Fashion-MNIST bundled subset (first 10,000 train / 2,000 test images; "
                        + "install dataset-fashion-mnist or pass --data DIR for the full set)";
            };
        }

        private ImageDataset load(String imagesName, String labelsName) {
            IdxReader.Images images;
            IdxReader.Labels labels;
            if (origin == Origin.BUNDLED) {
                images = readResource(imagesName, IdxReader::readImages);
                labels = readResource(labelsName, IdxReader::readLabels);
            } else {
                Path dir = Path.of(location);
                images = IdxReader.readImages(file(dir, imagesName));
                labels = IdxReader.readLabels(file(dir, labelsName));
            }
            return ImageDataset.of(images, labels, NUM_CLASSES, MEAN, STD);
        }
    }

    /**
     * Finds the data: {@code dataDir} if not null, else {@link #SYSTEM_DIR} if it holds the four files, else
     * the bundled subset.
     *
     * @param dataDir a folder the user named, or null
     * @return where to read the data from
     * @throws IllegalArgumentException if {@code dataDir} is not a folder or lacks one of the four files,
     *         naming the folder and the file
     */
    public static Source resolve(Path dataDir) {
        return resolve(dataDir, SYSTEM_DIR);
    }

    /**
     * As {@link #resolve(Path)}, with another system folder (for tests).
     *
     * @param dataDir a folder the user named, or null
     * @param systemDir the folder to look in when {@code dataDir} is null; may not exist
     * @return where to read the data from
     */
    public static Source resolve(Path dataDir, Path systemDir) {
        if (dataDir != null) {
            return directory(dataDir);
        }
        if (systemDir != null && FILES.stream().allMatch(f -> find(systemDir, f) != null)) {
            return new Source(Origin.SYSTEM, systemDir.toString());
        }
        return bundled();
    }

    /**
     * @param dir a folder with the four files
     * @return it as a source
     * @throws IllegalArgumentException if it is not a folder or lacks one of the files
     */
    public static Source directory(Path dir) {
        Objects.requireNonNull(dir, "dir");
        if (!Files.exists(dir)) {
            throw new IllegalArgumentException("data folder '" + dir + "' does not exist");
        }
        if (!Files.isDirectory(dir)) {
            throw new IllegalArgumentException("data folder '" + dir + "' is not a folder");
        }
        for (String f : FILES) {
            if (find(dir, f) == null) {
                throw new IllegalArgumentException("data folder '" + dir + "' has no " + f + ".gz or " + f
                        + "; expected the four Fashion-MNIST IDX files " + String.join(", ", FILES));
            }
        }
        return new Source(Origin.DIRECTORY, dir.toString());
    }

    /** @return the subset bundled in the jar */
    public static Source bundled() {
        return new Source(Origin.BUNDLED, RESOURCE_DIR);
    }

    private static Path find(Path dir, String name) {
        for (String candidate : new String[] {name + ".gz", name}) {
            Path p = dir.resolve(candidate);
            if (Files.isRegularFile(p)) {
                return p;
            }
        }
        return null;
    }

    private static Path file(Path dir, String name) {
        Path p = find(dir, name);
        if (p == null) {
            throw new IllegalArgumentException("data folder '" + dir + "' has no " + name + ".gz or " + name);
        }
        return p;
    }

    private interface StreamReader<T> {
        T read(InputStream in, String source) throws IOException;
    }

    private static <T> T readResource(String name, StreamReader<T> reader) {
        String path = RESOURCE_DIR + name + ".gz";
        try (InputStream in = FashionMnist.class.getResourceAsStream(path)) {
            if (in == null) {
                throw new IllegalStateException("bundled Fashion-MNIST file " + path + " is missing from the class path");
            }
            return reader.read(in, "bundled " + name + ".gz");
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read bundled " + path + ": " + e.getMessage(), e);
        }
    }
}
