package io.vram4j.data;

import java.util.Objects;

/**
 * An immutable data set of 8-bit grayscale images with class labels, such as MNIST or Fashion-MNIST.
 *
 * <p>Pixels are kept as the bytes of the file (one byte each, so the 60,000 Fashion-MNIST training images
 * take 47 MB rather than 188 MB as floats) and normalized when copied out by {@link #copyFeatures}:
 * {@code ((p / 255) - mean) / std}, through a 256-entry lookup table. With the {@linkplain FashionMnist#MEAN
 * mean} and {@linkplain FashionMnist#STD standard deviation} of the training set, the features have mean 0
 * and standard deviation 1 over it (as {@code torchvision.transforms.Normalize((0.2860,), (0.3530,))} after
 * {@code ToTensor()}).
 *
 * <p>Thread-safe (immutable).
 */
public final class ImageDataset implements Dataset {
    private final String description;
    private final byte[] pixels;
    private final byte[] labels;
    private final int count;
    private final int rows;
    private final int cols;
    private final int numClasses;
    private final float mean;
    private final float std;
    private final float[] table;

    private ImageDataset(String description, byte[] pixels, byte[] labels, int count, int rows, int cols,
                         int numClasses, float mean, float std) {
        this.description = description;
        this.pixels = pixels;
        this.labels = labels;
        this.count = count;
        this.rows = rows;
        this.cols = cols;
        this.numClasses = numClasses;
        this.mean = mean;
        this.std = std;
        this.table = new float[256];
        for (int p = 0; p < 256; p++) {
            table[p] = (p / 255f - mean) / std;
        }
    }

    /**
     * Pairs images with their labels.
     *
     * @param images the images
     * @param labels one label per image
     * @param numClasses the number of classes; every label must be below it
     * @param mean mean subtracted from {@code pixel / 255}
     * @param std standard deviation {@code pixel / 255 - mean} is divided by; positive
     * @return the data set, sharing the arrays of {@code images} and {@code labels}
     * @throws IdxFormatException if the counts differ or a label is out of range, naming the files
     * @throws IllegalArgumentException if {@code numClasses < 1}, or {@code std} is not positive and finite
     */
    public static ImageDataset of(IdxReader.Images images, IdxReader.Labels labels, int numClasses, float mean, float std) {
        Objects.requireNonNull(images, "images");
        Objects.requireNonNull(labels, "labels");
        if (numClasses < 1 || numClasses > 256) {
            throw new IllegalArgumentException("numClasses must be in 1..256, got " + numClasses);
        }
        if (!(std > 0) || !Float.isFinite(std) || !Float.isFinite(mean)) {
            throw new IllegalArgumentException("mean must be finite and std positive and finite, got mean " + mean + ", std " + std);
        }
        if (images.count() != labels.count()) {
            throw new IdxFormatException(labels.source(), labels.count() + " labels for the " + images.count()
                    + " images of " + images.source() + "; expected one label per image");
        }
        byte[] l = labels.labels();
        for (int i = 0; i < l.length; i++) {
            if ((l[i] & 0xff) >= numClasses) {
                throw new IdxFormatException(labels.source(), "label " + (l[i] & 0xff) + " at index " + i
                        + "; expected labels 0.." + (numClasses - 1));
            }
        }
        return new ImageDataset(images.source() + " + " + labels.source(), images.pixels(), l, images.count(),
                images.rows(), images.cols(), numClasses, mean, std);
    }

    /**
     * @param n how many samples to keep, {@code n >= 0}; more than {@link #size()} keeps all
     * @return the first {@code n} samples (sharing this data set's arrays), or this data set when it has at
     *         most {@code n}
     * @throws IllegalArgumentException if {@code n < 0}
     */
    public ImageDataset limit(int n) {
        if (n < 0) {
            throw new IllegalArgumentException("limit must be non-negative, got " + n);
        }
        if (n >= count) {
            return this;
        }
        return new ImageDataset(description + " (first " + n + ")", pixels, labels, n, rows, cols, numClasses, mean, std);
    }

    @Override
    public int size() {
        return count;
    }

    @Override
    public int features() {
        return rows * cols;
    }

    /** @return rows of each image */
    public int rows() {
        return rows;
    }

    /** @return columns of each image */
    public int cols() {
        return cols;
    }

    @Override
    public int numClasses() {
        return numClasses;
    }

    /** @return the mean subtracted from {@code pixel / 255} */
    public float mean() {
        return mean;
    }

    /** @return the standard deviation {@code pixel / 255 - mean} is divided by */
    public float std() {
        return std;
    }

    @Override
    public void copyFeatures(int index, float[] dst, int offset) {
        Objects.checkIndex(index, count);
        int n = rows * cols;
        Objects.checkFromIndexSize(offset, n, dst.length);
        int src = index * n;
        for (int i = 0; i < n; i++) {
            dst[offset + i] = table[pixels[src + i] & 0xff];
        }
    }

    /**
     * @param index sample index
     * @param pixel pixel index in the image, {@code 0 <= pixel < rows * cols}
     * @return the raw pixel value, 0..255
     */
    public int rawPixel(int index, int pixel) {
        Objects.checkIndex(index, count);
        Objects.checkIndex(pixel, rows * cols);
        return pixels[index * rows * cols + pixel] & 0xff;
    }

    @Override
    public int label(int index) {
        Objects.checkIndex(index, count);
        return labels[index] & 0xff;
    }

    @Override
    public String description() {
        return description;
    }

    @Override
    public String toString() {
        return "ImageDataset[" + count + " images " + rows + "×" + cols + ", " + numClasses + " classes, " + description + "]";
    }
}
