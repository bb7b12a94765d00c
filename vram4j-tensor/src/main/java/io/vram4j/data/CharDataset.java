package io.vram4j.data;

import java.util.Objects;

/**
 * Windows of {@code blockSize + 1} consecutive characters of a text, as the samples of a character-level
 * language model: the model reads the first {@code blockSize} tokens and predicts the last {@code blockSize}
 * (each token's successor). Sample {@code i} starts at character {@code i * stride}. The features are the token
 * ids as floats (exact up to 2^24), {@code numClasses()} is the vocabulary size and a sample's label is its last
 * token. Immutable and thread-safe.
 */
public final class CharDataset implements Dataset {
    private final int[] tokens;
    private final int blockSize;
    private final int stride;
    private final int size;
    private final CharVocabulary vocabulary;
    private final String description;

    /**
     * @param text the text (every character must be in {@code vocabulary})
     * @param vocabulary the tokens
     * @param blockSize context length, at least 1
     * @param stride characters between the starts of consecutive samples, at least 1
     * @param description for messages
     * @throws IllegalArgumentException when the text is shorter than one window or a size is not positive
     */
    public CharDataset(String text, CharVocabulary vocabulary, int blockSize, int stride, String description) {
        this.vocabulary = Objects.requireNonNull(vocabulary, "vocabulary");
        if (blockSize < 1 || stride < 1) {
            throw new IllegalArgumentException("block size and stride must be at least 1, got " + blockSize + " and " + stride);
        }
        this.tokens = vocabulary.encode(text);
        if (tokens.length < blockSize + 1) {
            throw new IllegalArgumentException(description + ": " + tokens.length + " characters are fewer than one window of "
                    + (blockSize + 1) + " (block size + 1)");
        }
        this.blockSize = blockSize;
        this.stride = stride;
        this.size = (tokens.length - blockSize - 1) / stride + 1;
        this.description = description;
    }

    /** @return the context length */
    public int blockSize() {
        return blockSize;
    }

    /** @return the tokens */
    public CharVocabulary vocabulary() {
        return vocabulary;
    }

    @Override
    public int size() {
        return size;
    }

    @Override
    public int features() {
        return blockSize + 1;
    }

    @Override
    public int numClasses() {
        return vocabulary.size();
    }

    @Override
    public void copyFeatures(int index, float[] dst, int offset) {
        int start = Objects.checkIndex(index, size) * stride;
        Objects.checkFromIndexSize(offset, blockSize + 1, dst.length);
        for (int i = 0; i <= blockSize; i++) {
            dst[offset + i] = tokens[start + i];
        }
    }

    @Override
    public int label(int index) {
        return tokens[Objects.checkIndex(index, size) * stride + blockSize];
    }

    @Override
    public String description() {
        return description;
    }
}
