package io.vram4j.predict;

/**
 * How allocation sizes grow with the parameter the recordings differ in.
 */
public enum Growth {
    /**
     * Affine, {@code size = a + b * p}: the batch size (every activation has one batch dimension). Two recordings
     * define it; a third is checked against it.
     */
    AFFINE(2),
    /**
     * Up to quadratic, {@code size = a + b * p + c * p^2}: the sequence length (attention scores are
     * {@code T x T}). Needs three recordings.
     */
    QUADRATIC(3);

    private final int recordings;

    Growth(int recordings) {
        this.recordings = recordings;
    }

    /** @return the fewest recordings that define the model */
    public int recordings() {
        return recordings;
    }
}
