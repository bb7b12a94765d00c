package io.vram4j.data;

/**
 * A fixed-size, random-access set of labelled samples, each a vector of {@code features()} floats and an
 * integer class label. What a {@link DataLoader} batches.
 *
 * <p>Implementations must allow {@link #copyFeatures} and {@link #label} to be called from a background
 * thread (the loader's prefetch worker) while no one modifies the data set; immutable data sets are.
 */
public interface Dataset {
    /** @return the number of samples */
    int size();

    /** @return the number of floats in one sample */
    int features();

    /** @return the number of classes; every label is in {@code [0, numClasses())} */
    int numClasses();

    /**
     * Writes sample {@code index}'s features, ready for the model (e.g. normalized), into
     * {@code dst[offset .. offset + features())}.
     *
     * @param index sample index, {@code 0 <= index < size()}
     * @param dst destination
     * @param offset where in {@code dst} the sample starts
     * @throws IndexOutOfBoundsException if {@code index} or the destination range is out of bounds
     */
    void copyFeatures(int index, float[] dst, int offset);

    /**
     * @param index sample index, {@code 0 <= index < size()}
     * @return its class label, {@code 0 <= label < numClasses()}
     * @throws IndexOutOfBoundsException if {@code index} is out of bounds
     */
    int label(int index);

    /** @return a short description of where the samples come from, for messages */
    String description();
}
