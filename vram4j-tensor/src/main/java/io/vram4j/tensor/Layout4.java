package io.vram4j.tensor;

/**
 * A shape walked by several operands, each with its own element strides, folded into at most 4 dimensions for the
 * strided kernels ({@code Kernels.copy4}, {@code Kernels.binary4}), with {@link StridedLoop#fold}; leading dimensions
 * of extent 1 pad the result to 4 (a shape with an extent of 0 folds to {@code [1, 1, 1, 0]}).
 *
 * @param dims the 4 extents, outermost first
 * @param strides for each operand, its 4 strides
 */
record Layout4(int[] dims, long[][] strides) {

    /**
     * @param shape the shape every operand is walked in
     * @param operandStrides each operand's strides for {@code shape}
     * @return the folded layout, or null when more than 4 dimensions remain (the caller loops instead)
     */
    static Layout4 of(int[] shape, long[]... operandStrides) {
        int ops = operandStrides.length;
        long[] dims = new long[shape.length];
        long[][] st = new long[ops][shape.length];
        int r = StridedLoop.fold(shape, operandStrides, dims, st);
        if (r > 4) {
            return null;
        }
        int[] d4 = {1, 1, 1, 1};
        long[][] s4 = new long[ops][4];
        if (r < 0) {   // an extent of 0: nothing to walk
            d4[3] = 0;
            return new Layout4(d4, s4);
        }
        for (int i = 0; i < r; i++) {
            if (dims[i] > Integer.MAX_VALUE) {
                return null;
            }
            d4[4 - r + i] = (int) dims[i];
        }
        for (int o = 0; o < ops; o++) {
            System.arraycopy(st[o], 0, s4[o], 4 - r, r);
        }
        return new Layout4(d4, s4);
    }

    /** @return the number of dimensions of extent above 1 */
    int rank() {
        int r = 0;
        for (int d : dims) {
            r += d > 1 ? 1 : 0;
        }
        return r;
    }

    /** @return true when every operand walks the elements contiguously (one row of stride 1) */
    boolean contiguous() {
        if (rank() > 1) {
            return false;
        }
        for (long[] s : strides) {
            if (dims[3] > 1 && s[3] != 1) {
                return false;
            }
        }
        return true;
    }

    int d(int i) {
        return dims[i];
    }

    long s(int operand, int i) {
        return strides[operand][i];
    }
}
