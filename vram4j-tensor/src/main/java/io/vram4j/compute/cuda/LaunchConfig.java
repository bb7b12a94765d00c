package io.vram4j.compute.cuda;

/**
 * The grid and block of one kernel launch ({@code cuLaunchKernel}'s {@code gridDimX/Y}, {@code blockDimX} and
 * {@code sharedMemBytes}; the other dimensions are 1), chosen for the kernel shapes of {@code vram4j_kernels.cu}.
 * A configuration with {@code gridX == 0} means there is nothing to launch ({@link #isEmpty()}).
 *
 * <p>Limits from the CUDA C Programming Guide, "Compute Capabilities" (every architecture vram4j's PTX targets):
 * at most 1024 threads per block, {@code gridDim.y} at most 65535.
 *
 * @param gridX blocks along x
 * @param gridY blocks along y (the tensor of a parameter group)
 * @param blockX threads per block
 * @param sharedBytes dynamic shared memory per block, in bytes
 */
record LaunchConfig(int gridX, int gridY, int blockX, int sharedBytes) {
    /** Threads per block of the element-wise and reduction kernels. */
    static final int BLOCK = 256;
    /** The most threads a block may have. */
    static final int MAX_BLOCK = 1024;
    /** The most blocks along y. */
    static final int MAX_GRID_Y = 65535;
    /**
     * The most blocks of a grid-stride launch: 65,535 blocks of 256 threads keep every SM of an H100 (132 SMs,
     * 2048 resident threads each) busy many times over; larger n loop inside the kernel.
     */
    static final int MAX_STRIDE_GRID = 65535;
    /** Blocks of the first pass of a reduction; the second pass sums their partial results in one block. */
    static final int REDUCTION_BLOCKS = 1024;

    /** @return a launch of grid-stride element-wise kernels over {@code n} elements */
    static LaunchConfig elementwise(long n) {
        return new LaunchConfig(strideGrid(n), 1, BLOCK, 0);
    }

    /** Elements a thread of the vectorized element-wise kernels takes per step (two 16-byte loads of floats). */
    static final int VECTOR = 8;

    /**
     * @return a launch of the vectorized element-wise kernels (the casts, the 16-bit unary ops and their backward,
     *     axpy: 8 elements a thread per step where every operand is 16-byte aligned, see vram4j_kernels.cu's
     *     "8 a thread") over {@code n} elements: one thread per 8, so that no block is idle in the vector loop
     */
    static LaunchConfig elementwise8(long n) {
        nonNegative(n, "n");
        return new LaunchConfig(strideGrid((n + VECTOR - 1) / VECTOR), 1, BLOCK, 0);
    }

    /**
     * @return the first pass of a reduction over {@code n} elements: at most {@value #REDUCTION_BLOCKS} blocks,
     *     each writing one partial result (so the partial buffer needs {@code gridX} floats)
     */
    static LaunchConfig reductionPartial(long n) {
        return new LaunchConfig((int) Math.min(blocks(n, BLOCK), REDUCTION_BLOCKS), 1, BLOCK, BLOCK * Float.BYTES);
    }

    /** @return the second pass of a reduction: one block over the partial results */
    static LaunchConfig reductionFinal() {
        return new LaunchConfig(1, 1, BLOCK, BLOCK * Float.BYTES);
    }

    /** Elements of a row each thread of a row kernel takes, about: a block of 256 threads for a row of 1,024. */
    static final int ROW_ELEMENTS_PER_THREAD = 4;

    /**
     * @return one block per row; the block is the power of two nearest above {@code cols / }{@value
     *     #ROW_ELEMENTS_PER_THREAD}, from 32 (a warp) to {@value #MAX_BLOCK}, so that each thread takes a few of the
     *     row's elements and an SM holds several rows at once (a GPT-2 layer norm of 768 columns: 256 threads, 8
     *     blocks on an SM of 2,048 threads); its shared memory one float per thread (the row kernels reduce
     *     through it)
     */
    static LaunchConfig rows(int rows, int cols) {
        nonNegative(rows, "rows");
        nonNegative(cols, "cols");
        int perThread = (cols + ROW_ELEMENTS_PER_THREAD - 1) / ROW_ELEMENTS_PER_THREAD;
        int block = Math.min(MAX_BLOCK, Math.max(32, Integer.highestOneBit(Math.max(1, perThread - 1)) << 1));
        return new LaunchConfig(cols == 0 ? 0 : rows, 1, block, block * Float.BYTES);
    }

    /**
     * @param blocks blocks along x: column groups times row chunks
     * @param problems independent sums along y, at most {@value #MAX_GRID_Y} blocks (the kernel takes the rest in
     *     turn)
     * @param arrays the sums each thread keeps (one float of shared memory per thread for each)
     * @return a column-sum launch ({@code v4j_sum_dim_f32}, {@code v4j_layer_norm_param_grads_f32}): blocks of
     *     {@value #BLOCK} threads, which add their lanes' sums in a tree in shared memory
     */
    static LaunchConfig columnSums(int blocks, int problems, int arrays) {
        nonNegative(blocks, "blocks");
        nonNegative(problems, "problems");
        return new LaunchConfig(problems == 0 ? 0 : blocks, Math.min(problems, MAX_GRID_Y), BLOCK,
                arrays * BLOCK * Float.BYTES);
    }

    /** @return one block of {@value #BLOCK} threads (the NLL loss, summed in a fixed order) */
    static LaunchConfig singleBlock() {
        return new LaunchConfig(1, 1, BLOCK, BLOCK * Float.BYTES);
    }

    /**
     * @param largest the element count of the largest tensor of the group
     * @param tensors how many tensors the group has, at most {@value #MAX_GRID_Y}
     * @return a multi-tensor launch: {@code blockIdx.y} picks the tensor, a grid-stride loop along x covers it
     * @throws IllegalArgumentException for more than {@value #MAX_GRID_Y} tensors (split the group)
     */
    static LaunchConfig perTensor(long largest, int tensors) {
        nonNegative(tensors, "tensors");
        if (tensors > MAX_GRID_Y) {
            throw new IllegalArgumentException("a parameter group of " + tensors + " tensors does not fit one launch "
                    + "(gridDim.y is at most " + MAX_GRID_Y + "): split it");
        }
        return new LaunchConfig(tensors == 0 ? 0 : strideGrid(largest), tensors, BLOCK, 0);
    }

    /** @return true when the grid is empty and nothing is to be launched */
    boolean isEmpty() {
        return gridX == 0 || gridY == 0;
    }

    private static int strideGrid(long n) {
        nonNegative(n, "n");
        return (int) Math.min(blocks(n, BLOCK), MAX_STRIDE_GRID);
    }

    private static long blocks(long n, int block) {
        return n / block + (n % block == 0 ? 0 : 1);
    }

    private static void nonNegative(long v, String what) {
        if (v < 0) {
            throw new IllegalArgumentException(what + " must not be negative, got " + v);
        }
    }
}
