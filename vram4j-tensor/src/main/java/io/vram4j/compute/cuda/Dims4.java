package io.vram4j.compute.cuda;

/**
 * A shape of up to 4 dimensions with one or two operands' strides, padded at the front with extent 1 and stride 0
 * to exactly 4, as the {@code *4} kernels of {@code vram4j_kernels.cu} take them (outermost first).
 *
 * @param extents the 4 extents
 * @param strides per operand, its 4 strides in elements
 */
record Dims4(int[] extents, long[][] strides) {
    /**
     * @param shape 0 to 4 extents
     * @param operandStrides each operand's strides for {@code shape}
     * @throws IllegalArgumentException for more than 4 dimensions or strides of another rank
     */
    static Dims4 of(int[] shape, long[]... operandStrides) {
        if (shape.length > 4) {
            throw new IllegalArgumentException("the CUDA kernels take at most 4 dimensions, got " + shape.length
                    + " (merge contiguous dimensions first)");
        }
        int pad = 4 - shape.length;
        int[] e = {1, 1, 1, 1};
        System.arraycopy(shape, 0, e, pad, shape.length);
        long[][] s = new long[operandStrides.length][4];
        for (int o = 0; o < operandStrides.length; o++) {
            if (operandStrides[o].length != shape.length) {
                throw new IllegalArgumentException("operand " + o + " has " + operandStrides[o].length
                        + " strides for " + shape.length + " dimensions");
            }
            System.arraycopy(operandStrides[o], 0, s[o], pad, shape.length);
        }
        return new Dims4(e, s);
    }

    /** @return extent {@code i} (0 outermost) */
    int extent(int i) {
        return extents[i];
    }

    /** @return stride {@code i} of operand {@code operand}, in elements */
    long stride(int operand, int i) {
        return strides[operand][i];
    }

    /** @return the number of elements */
    long numel() {
        long n = 1;
        for (int e : extents) {
            n *= e;
        }
        return n;
    }
}
