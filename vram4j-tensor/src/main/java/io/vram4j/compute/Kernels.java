package io.vram4j.compute;

import java.lang.foreign.MemorySegment;

/**
 * The float32 compute kernels of the tensor runtime, over off-heap (or heap) {@link MemorySegment}s.
 *
 * <p>Two implementations exist: {@link #scalar()} (plain loops, the reference every other implementation
 * is tested against, always present) and {@link #vector()} (the {@code jdk.incubator.vector} API, with a
 * packed, blocked and multi-threaded sgemm). {@link #best()} returns the vector one when the incubator
 * module is usable, unless {@code -Dvram4j.compute=scalar} is set.
 *
 * <h2>Conventions</h2>
 * <ul>
 *   <li>Every value is a float32 in native byte order, except the int64 indices and one-byte masks of the device
 *       paths ({@link #maxDim}, {@link #dropout}, {@link #nllLoss}, {@link #embedding}, {@link #iota}) and the
 *       float16/bfloat16 matrices of {@link #gemmBatched16}; matrices are row-major.</li>
 *   <li>Every offset, length, stride and leading dimension is counted in <em>elements</em> (floats, or the
 *       int64, byte or 16-bit elements of the segment it goes with), never in bytes. An argument pair {@code (seg, off)} names the float at byte {@code 4 * off} of
 *       {@code seg}. Offsets need not be aligned to anything but a float.</li>
 *   <li>Range kernels take the element count {@code n} first, then their inputs, then their outputs.
 *       Row kernels take {@code rows, cols} first and work on {@code rows} contiguous rows of
 *       {@code cols} floats each.</li>
 *   <li>Element-wise and row kernels allow an output to be <em>exactly</em> the same range as an input
 *       (in-place, e.g. {@code relu(n, x, 0, x, 0)}); partially overlapping ranges give undefined results.
 *       In {@link #sgemm} the output must not overlap either input.</li>
 *   <li>Results agree with the scalar reference to within float rounding: vector kernels may sum in a
 *       different order and use vectorised transcendental functions accurate to a few ulps.</li>
 *   <li>Repeating a call gives the same bits, also across JIT tiers for everything built on {@code exp}
 *       (exp, sigmoid, GELU, softmax, log-softmax backward: the vector kernels use their own exp from adds,
 *       multiplies and FMAs). The vector {@link #tanh} and {@link #log} compute element by element with
 *       {@link Math#tanh} and {@link Math#log}, as the scalar kernels do (the Vector API's library functions
 *       can differ in the last bit between interpreted and C2-compiled code), so they give the scalar bits.</li>
 * </ul>
 *
 * <h2>Thread-safety</h2>
 * Implementations are stateless and thread-safe: any number of threads may call any kernel at once, as
 * long as no thread writes memory another is reading or writing.
 *
 * <h2>Exceptions</h2>
 * {@link IllegalArgumentException} for negative sizes or bad leading dimensions, and (as FFM throws it)
 * when an output segment is read-only; {@link IndexOutOfBoundsException} when a range does not fit its
 * segment; {@link NullPointerException} for a null segment that is not optional. These are checked before
 * anything is written, by one checking layer that {@link #scalar()}, {@link #vector()}, {@link #best()} and
 * {@link #withThreads} put in front of the implementation, so every implementation throws them alike, each
 * with a message that names the argument. Segment access may also throw {@link IllegalStateException} (its arena is closed)
 * or {@link WrongThreadException} (it is confined to another thread).
 */
public interface Kernels {

    /** @return the name of this implementation: {@code "scalar"} or {@code "vector"} */
    String name();

    /**
     * @return how many threads large sgemm calls are split over (1 for the scalar kernels)
     */
    int threads();

    /**
     * Returns kernels like these whose sgemm splits large problems over {@code threads} threads.
     *
     * @param threads at least 1
     * @return kernels with that parallelism (the scalar kernels return themselves)
     * @throws IllegalArgumentException if {@code threads < 1}
     */
    Kernels withThreads(int threads);

    /**
     * Runs every kernel of this implementation on small inputs (a few hundred kilobytes of work, off-heap
     * memory freed on return) so the JIT compiles the hot loops before real work arrives. Results of later calls
     * do not depend on it. {@code train} no longer calls it: the profile it teaches the JIT (every kernel, every
     * shape) made the training loops that follow slower: a default MLP epoch took about 40% longer and a Transformer run
     * about 12% longer end to end (BENCHMARKS.md, "The main job"). It remains for benchmarks that want compiled kernels
     * from the first measured call.
     *
     * <p>Thread-safe; calling it again is harmless but mostly useless. Compilation continues in the
     * background for a short while after it returns.
     *
     * @return the wall time it took, in nanoseconds
     */
    default long warmUp() {
        return WarmUp.run(this);
    }

    // ------------------------------------------------------------------------------------------------ selection

    /** @return the scalar reference kernels (always available) */
    static Kernels scalar() {
        return KernelSelector.SCALAR;
    }

    /**
     * @return the Vector API kernels, with the default thread count
     * @throws UnsupportedOperationException if {@code jdk.incubator.vector} is not usable (module not added)
     */
    static Kernels vector() {
        return KernelSelector.vector();
    }

    /** @return true when {@link #vector()} is usable in this JVM */
    static boolean vectorAvailable() {
        return KernelSelector.vectorAvailable();
    }

    /**
     * Puts an implementation behind the one layer of argument checks ({@code CheckedKernels}), as
     * {@link #scalar()}, {@link #vector()} and {@link #best()} are: the exceptions documented here are thrown
     * before anything is written or launched.
     *
     * @param kernels an implementation that does not check its arguments (the CUDA kernels, a test's)
     * @return the checked kernels ({@code kernels} itself when it is already checked); as thread-safe as
     *     {@code kernels}
     */
    static Kernels checked(Kernels kernels) {
        return CheckedKernels.of(kernels);
    }

    /**
     * @return the kernels to use: {@link #vector()} when available, else {@link #scalar()}; the system property
     *     {@code vram4j.compute} ({@code scalar} or {@code vector}) overrides the choice
     */
    static Kernels best() {
        return KernelSelector.best();
    }

    // ------------------------------------------------------------------------------------------------ gemm

    /**
     * Single-precision general matrix multiply with BLAS semantics on row-major matrices:
     * {@code C = alpha * op(A) * op(B) + beta * C}, where {@code op(A)} is {@code m x k}, {@code op(B)} is
     * {@code k x n} and {@code C} is {@code m x n}.
     *
     * <p>{@code op(X)} is {@code X} or its transpose. Without transpose {@code A} is stored as {@code m}
     * rows of stride {@code lda}; with it, as {@code k} rows of stride {@code lda} (so {@code A} is
     * {@code k x m}). Likewise {@code B} is {@code k x n} or, transposed, {@code n x k}.
     * When {@code beta == 0}, {@code C} is not read, so NaN or garbage in it does not propagate.
     * When {@code k == 0} or {@code alpha == 0}, {@code A} and {@code B} are not read.
     *
     * @param transA whether to use the transpose of {@code A}
     * @param transB whether to use the transpose of {@code B}
     * @param m rows of {@code op(A)} and {@code C}, at least 0
     * @param n columns of {@code op(B)} and {@code C}, at least 0
     * @param k columns of {@code op(A)} and rows of {@code op(B)}, at least 0
     * @param alpha multiplier of the product
     * @param a the segment holding {@code A}
     * @param aOff element offset of {@code A[0][0]}
     * @param lda row stride of {@code A} as stored: at least {@code k} (not transposed) or {@code m}
     *     (transposed), and at least 1
     * @param b the segment holding {@code B}
     * @param bOff element offset of {@code B[0][0]}
     * @param ldb row stride of {@code B} as stored: at least {@code n} (not transposed) or {@code k}
     *     (transposed), and at least 1
     * @param beta multiplier of the old {@code C}
     * @param c the segment holding {@code C}; must not overlap {@code A} or {@code B}
     * @param cOff element offset of {@code C[0][0]}
     * @param ldc row stride of {@code C}, at least {@code max(1, n)}
     */
    void sgemm(boolean transA, boolean transB, int m, int n, int k, float alpha,
               MemorySegment a, long aOff, int lda, MemorySegment b, long bOff, int ldb,
               float beta, MemorySegment c, long cOff, int ldc);

    /**
     * {@link #sgemm} from a bias, PyTorch's {@code addmm} (what its {@code linear} runs):
     * {@code C = alpha * op(A) * op(B) + bias}, the bias ({@code n} floats, {@code biasStride} apart) added to every
     * row of C. The old C is not read. This default writes the bias into every row of C ({@link #copy4}) and adds the
     * product to it ({@code beta = 1}); on a GPU the bias is added in the product's epilogue (cuBLASLt).
     *
     * @param bias the segment holding the bias
     * @param biasOff element offset of its first value
     * @param biasStride element distance between its values, at least 0
     * @throws IndexOutOfBoundsException if an operand's reach does not fit its segment
     * @throws IllegalArgumentException for a negative extent, leading dimension or stride, or {@code c} read-only
     * @see #sgemm
     */
    default void sgemmBias(boolean transA, boolean transB, int m, int n, int k, float alpha,
                           MemorySegment a, long aOff, int lda, MemorySegment b, long bOff, int ldb,
                           MemorySegment bias, long biasOff, long biasStride, MemorySegment c, long cOff, int ldc) {
        if (m == 0 || n == 0) {
            return;
        }
        copy4(1, 1, m, n, bias, biasOff, 0, 0, 0, biasStride, c, cOff, 0, 0, ldc, 1);
        sgemm(transA, transB, m, n, k, alpha, a, aOff, lda, b, bOff, ldb, 1f, c, cOff, ldc);
    }

    /**
     * A batch of independent {@link #sgemm} calls with the same shapes: for {@code i} in
     * {@code [0, batch)}, {@code C_i = alpha * op(A_i) * op(B_i) + beta * C_i}, where {@code A_i} starts at
     * {@code aOff + i * strideA}, and likewise for {@code B_i} and {@code C_i}. A stride of 0 reuses one
     * matrix for the whole batch (allowed for {@code A} and {@code B}, not for {@code C} when
     * {@code batch > 1}). The {@code C_i} must not overlap each other or any {@code A_i}, {@code B_i}.
     *
     * @param batch number of products, at least 0
     * @param strideA element distance between consecutive {@code A_i}, at least 0
     * @param strideB element distance between consecutive {@code B_i}, at least 0
     * @param strideC element distance between consecutive {@code C_i}, at least 0
     * @see #sgemm
     */
    void sgemmBatched(int batch, boolean transA, boolean transB, int m, int n, int k, float alpha,
                      MemorySegment a, long aOff, int lda, long strideA,
                      MemorySegment b, long bOff, int ldb, long strideB,
                      float beta, MemorySegment c, long cOff, int ldc, long strideC);

    // ------------------------------------------------------------------------------------------------ binary

    /** {@code out[i] = a[i] + b[i]} for {@code i < n}. */
    void add(long n, MemorySegment a, long aOff, MemorySegment b, long bOff, MemorySegment out, long outOff);

    /** {@code out[i] = a[i] - b[i]} for {@code i < n}. */
    void sub(long n, MemorySegment a, long aOff, MemorySegment b, long bOff, MemorySegment out, long outOff);

    /** {@code out[i] = a[i] * b[i]} for {@code i < n}. */
    void mul(long n, MemorySegment a, long aOff, MemorySegment b, long bOff, MemorySegment out, long outOff);

    /** {@code out[i] = a[i] / b[i]} for {@code i < n} (IEEE division: x/0 is ±Inf or NaN). */
    void div(long n, MemorySegment a, long aOff, MemorySegment b, long bOff, MemorySegment out, long outOff);

    // ------------------------------------------------------------------------------------------------ with a scalar

    /** {@code y[i] += alpha * x[i]} for {@code i < n} (BLAS saxpy with unit strides). */
    void axpy(long n, float alpha, MemorySegment x, long xOff, MemorySegment y, long yOff);

    /** {@code out[i] = s * x[i]} for {@code i < n}. */
    void scale(long n, float s, MemorySegment x, long xOff, MemorySegment out, long outOff);

    /** {@code out[i] = x[i] + s} for {@code i < n}. */
    void addScalar(long n, float s, MemorySegment x, long xOff, MemorySegment out, long outOff);

    /** {@code out[i] = v} for {@code i < n}. */
    void fill(long n, float v, MemorySegment out, long outOff);

    /** {@code dst[i] = src[i]} for {@code i < n}; the ranges may overlap (as {@code memmove}). */
    void copy(long n, MemorySegment src, long srcOff, MemorySegment dst, long dstOff);

    // ------------------------------------------------------------------------------------------------ bytes

    /**
     * Sets {@code bytes} bytes of {@code out} from byte {@code byteOff} to {@code value}, whatever the elements'
     * type (a tensor's {@code zero_()}). On a GPU this is {@code cuMemsetD8Async} queued on the kernels' stream
     * behind the launches before it, as PyTorch's {@code cudaMemsetAsync}: the host does not wait for the device.
     *
     * @throws IndexOutOfBoundsException if the range does not fit the segment
     * @throws IllegalArgumentException if {@code bytes < 0} or {@code out} is read-only
     */
    default void fillBytes(long bytes, byte value, MemorySegment out, long byteOff) {
        out.asSlice(byteOff, bytes).fill(value);
    }

    /**
     * Copies {@code bytes} bytes; the ranges may overlap (as {@code memmove}). On a GPU this is
     * {@code cuMemcpyDtoDAsync} queued on the kernels' stream (an overlapping pair through a temporary block), as
     * PyTorch's {@code cudaMemcpyAsync} for a device-to-device {@code copy_}.
     *
     * @throws IndexOutOfBoundsException if a range does not fit its segment
     * @throws IllegalArgumentException if {@code bytes < 0} or {@code dst} is read-only
     */
    default void copyBytes(long bytes, MemorySegment src, long srcByteOff, MemorySegment dst, long dstByteOff) {
        MemorySegment.copy(src, srcByteOff, dst, dstByteOff, bytes);
    }

    /**
     * Copies {@code bytes} bytes of host memory into {@code dst}. On a GPU this is {@code cuMemcpyHtoDAsync} queued on
     * the kernels' stream: the driver reads pageable memory before the call returns, so {@code src} may be reused or
     * freed at once, and the kernels queued before the copy still see the old bytes, as PyTorch's {@code copy_} from
     * a CPU tensor.
     *
     * @throws IndexOutOfBoundsException if a range does not fit its segment
     * @throws IllegalArgumentException if {@code bytes < 0} or {@code dst} is read-only
     */
    default void copyFromHost(long bytes, MemorySegment src, long srcByteOff, MemorySegment dst, long dstByteOff) {
        MemorySegment.copy(src, srcByteOff, dst, dstByteOff, bytes);
    }

    // ------------------------------------------------------------------------------------------------ conversions

    /**
     * Converts {@code n} floats to IEEE float16 ({@code torch.float16}), rounding to nearest even
     * ({@link Float#floatToFloat16}). Offsets are in elements of each side: floats in {@code src}, 16-bit values
     * in {@code dst}.
     *
     * @throws IndexOutOfBoundsException if a range does not fit its segment
     * @throws IllegalArgumentException if {@code n < 0} or {@code dst} is read-only
     */
    void floatToFp16(long n, MemorySegment src, long srcOff, MemorySegment dst, long dstOff);

    /**
     * Converts {@code n} floats to bfloat16 ({@code torch.bfloat16}), rounding to nearest even as PyTorch's
     * {@code c10::BFloat16} does ({@link Half#floatToBf16(float)}). Offsets as {@link #floatToFp16}.
     *
     * @throws IndexOutOfBoundsException if a range does not fit its segment
     * @throws IllegalArgumentException if {@code n < 0} or {@code dst} is read-only
     */
    void floatToBf16(long n, MemorySegment src, long srcOff, MemorySegment dst, long dstOff);

    /**
     * Widens {@code n} float16 values to floats (exact). Offsets are in elements of each side: 16-bit values in
     * {@code src}, floats in {@code dst}.
     *
     * @throws IndexOutOfBoundsException if a range does not fit its segment
     * @throws IllegalArgumentException if {@code n < 0} or {@code dst} is read-only
     */
    void fp16ToFloat(long n, MemorySegment src, long srcOff, MemorySegment dst, long dstOff);

    /**
     * Widens {@code n} bfloat16 values to floats (exact). Offsets as {@link #fp16ToFloat}.
     *
     * @throws IndexOutOfBoundsException if a range does not fit its segment
     * @throws IllegalArgumentException if {@code n < 0} or {@code dst} is read-only
     */
    void bf16ToFloat(long n, MemorySegment src, long srcOff, MemorySegment dst, long dstOff);

    // ------------------------------------------------------------------------------------------------ 16-bit element-wise

    /** Element type code of the 16-bit element-wise kernels: IEEE float16 ({@code torch.float16}). */
    int FLOAT16 = 0;
    /** Element type code of the 16-bit element-wise kernels: bfloat16 ({@code torch.bfloat16}). */
    int BFLOAT16 = 1;
    /** Element type code of the strided attention kernels ({@link #attentionForwardStrided}) for float32 operands. */
    int FLOAT32 = 2;

    /** Op codes of {@link #unary16}, in the order of the float32 kernels they compute as. */
    int UNARY_NEG = 0, UNARY_EXP = 1, UNARY_LOG = 2, UNARY_SQRT = 3, UNARY_TANH = 4, UNARY_RELU = 5, UNARY_GELU = 6;
    /** Op codes of {@link #pointwiseBackward16}. */
    int BACKWARD_RELU = 0, BACKWARD_GELU = 1;

    /**
     * A unary op on 16-bit values, as PyTorch's kernels run on float16/bfloat16 tensors under autocast: each value
     * is widened to float, computed as the float32 kernel ({@link #neg}, {@link #exp}, {@link #log}, {@link #sqrt},
     * {@link #tanh}, {@link #relu}, {@link #gelu}) computes it, and rounded to nearest even once, so the bits equal
     * those of widening the whole input, the float32 kernel and narrowing back, without a float32 copy of either
     * tensor. The op that keeps a 16-bit tensor in device memory from costing float32 temporaries there.
     *
     * @param op {@link #UNARY_NEG} .. {@link #UNARY_GELU}
     * @param type {@link #FLOAT16} or {@link #BFLOAT16}, for {@code x} and {@code out} alike
     * @param n elements
     * @param xOff offset of {@code x}'s first element, in 16-bit elements; likewise {@code outOff}
     * @throws IndexOutOfBoundsException if a range does not fit its segment
     * @throws IllegalArgumentException if {@code n < 0}, {@code op} or {@code type} is unknown, or {@code out} is
     *     read-only
     */
    void unary16(int op, int type, long n, MemorySegment x, long xOff, MemorySegment out, long outOff);

    /**
     * A pointwise backward on 16-bit values ({@link #reluBackward}, {@link #geluBackward}), widened, computed and
     * rounded once as {@link #unary16}; {@code dy}, {@code x} and {@code dx} are all of {@code type}.
     *
     * @param op {@link #BACKWARD_RELU} or {@link #BACKWARD_GELU}
     * @param type {@link #FLOAT16} or {@link #BFLOAT16}
     * @param n elements; offsets in 16-bit elements
     * @throws IndexOutOfBoundsException if a range does not fit its segment
     * @throws IllegalArgumentException if {@code n < 0}, {@code op} or {@code type} is unknown, or {@code dx} is
     *     read-only
     */
    void pointwiseBackward16(int op, int type, long n, MemorySegment dy, long dyOff, MemorySegment x, long xOff,
                             MemorySegment dx, long dxOff);

    /**
     * {@link #binary4} on 16-bit values: {@code a}, {@code b} and the contiguous {@code out} all of {@code type},
     * read with their element strides (0 where broadcast), each pair widened, combined as {@link #add},
     * {@link #sub}, {@link #mul}, {@link #div} combine floats, and rounded once, so the bits equal those of widening
     * both inputs, the float32 op and narrowing back, without a float32 copy of any operand. Offsets and strides
     * count 16-bit elements.
     *
     * @param op 0 add, 1 sub, 2 mul, 3 div
     * @param type {@link #FLOAT16} or {@link #BFLOAT16}
     * @throws IndexOutOfBoundsException if an operand's reach does not fit its segment
     * @throws IllegalArgumentException for another op or type, a negative extent or stride, or a read-only
     *     {@code out}
     */
    void binary16(int op, int type, int d0, int d1, int d2, int d3, MemorySegment a, long aOff, long as0, long as1,
                  long as2, long as3, MemorySegment b, long bOff, long bs0, long bs1, long bs2, long bs3,
                  MemorySegment out, long outOff);

    /**
     * {@link #binary4} with one operand of 16-bit {@code type} and the other float32, into a contiguous float32
     * {@code out}: the 16-bit operand is widened as it is read, so the bits equal those of widening it into a float32
     * copy first and {@link #binary4}, without that copy (PyTorch's type promotion inside one kernel, e.g. a float32
     * residual stream plus a bf16 projection under autocast). Offsets and strides count elements of each operand's
     * own type.
     *
     * @param op 0 add, 1 sub, 2 mul, 3 div
     * @param type {@link #FLOAT16} or {@link #BFLOAT16}, the 16-bit operand's
     * @param half16 which operand is 16-bit: 0 {@code a}, 1 {@code b}
     * @throws IndexOutOfBoundsException if an operand's reach does not fit its segment
     * @throws IllegalArgumentException for another op, type or {@code half16}, a negative extent or stride, or a
     *     read-only {@code out}
     */
    void binaryMixed(int op, int type, int half16, int d0, int d1, int d2, int d3, MemorySegment a, long aOff,
                     long as0, long as1, long as2, long as3, MemorySegment b, long bOff, long bs0, long bs1, long bs2,
                     long bs3, MemorySegment out, long outOff);

    // ------------------------------------------------------------------------------------------------ unary

    /** {@code out[i] = -x[i]}. */
    void neg(long n, MemorySegment x, long xOff, MemorySegment out, long outOff);

    /** {@code out[i] = exp(x[i])}. */
    void exp(long n, MemorySegment x, long xOff, MemorySegment out, long outOff);

    /** {@code out[i] = ln(x[i])} (NaN for negative inputs, -Inf for ±0). */
    void log(long n, MemorySegment x, long xOff, MemorySegment out, long outOff);

    /** {@code out[i] = sqrt(x[i])} (correctly rounded; NaN for negative inputs). */
    void sqrt(long n, MemorySegment x, long xOff, MemorySegment out, long outOff);

    /** {@code out[i] = tanh(x[i])}. */
    void tanh(long n, MemorySegment x, long xOff, MemorySegment out, long outOff);

    /** {@code out[i] = 1 / (1 + exp(-x[i]))}. */
    void sigmoid(long n, MemorySegment x, long xOff, MemorySegment out, long outOff);

    /** {@code out[i] = max(x[i], 0)}; NaN stays NaN (as PyTorch's relu). */
    void relu(long n, MemorySegment x, long xOff, MemorySegment out, long outOff);

    /**
     * ReLU backward: {@code dx[i] = x[i] > 0 ? dy[i] : 0}.
     *
     * @param x the forward input (or its output: the sign test gives the same mask)
     */
    void reluBackward(long n, MemorySegment dy, long dyOff, MemorySegment x, long xOff, MemorySegment dx, long dxOff);

    /**
     * GELU with the tanh approximation (PyTorch {@code gelu(x, approximate='tanh')}):
     * {@code out = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))}.
     */
    void gelu(long n, MemorySegment x, long xOff, MemorySegment out, long outOff);

    /** GELU (tanh approximation) backward: {@code dx[i] = dy[i] * gelu'(x[i])}. */
    void geluBackward(long n, MemorySegment dy, long dyOff, MemorySegment x, long xOff, MemorySegment dx, long dxOff);

    // ------------------------------------------------------------------------------------------------ reductions

    /** @return the sum of {@code x[0..n)}, 0 when {@code n == 0} */
    float sum(long n, MemorySegment x, long xOff);

    /** @return the largest of {@code x[0..n)}; NaN if any is NaN; -Inf when {@code n == 0} */
    float max(long n, MemorySegment x, long xOff);

    /** @return the sum of squares of {@code x[0..n)}, 0 when {@code n == 0} */
    float sumOfSquares(long n, MemorySegment x, long xOff);

    /** @return the dot product of {@code x[0..n)} and {@code y[0..n)}, 0 when {@code n == 0} */
    float dot(long n, MemorySegment x, long xOff, MemorySegment y, long yOff);

    /**
     * @return true if any of {@code x[0..n)} is infinite or NaN (what a GradScaler checks after
     *     unscaling gradients)
     */
    boolean anyNonFinite(long n, MemorySegment x, long xOff);

    // ------------------------------------------------------------------------------------------------ rows

    /**
     * Softmax over the last dimension of a {@code rows x cols} matrix, numerically stable:
     * {@code out[r][j] = exp(x[r][j] - max_r) / sum_j exp(x[r][j] - max_r)}.
     * A row containing +Inf or NaN gives NaN in that row.
     */
    void softmaxRows(int rows, int cols, MemorySegment x, long xOff, MemorySegment out, long outOff);

    /**
     * Log-softmax over the last dimension: {@code out[r][j] = x[r][j] - max_r - log(sum_j exp(x[r][j] - max_r))}.
     */
    void logSoftmaxRows(int rows, int cols, MemorySegment x, long xOff, MemorySegment out, long outOff);

    /**
     * Softmax backward given the forward output {@code y}:
     * {@code dx[r][j] = y[r][j] * (dy[r][j] - sum_i dy[r][i] y[r][i])}.
     */
    void softmaxBackwardRows(int rows, int cols, MemorySegment y, long yOff, MemorySegment dy, long dyOff,
                             MemorySegment dx, long dxOff);

    /**
     * Log-softmax backward given the forward output {@code y = logSoftmax(x)}:
     * {@code dx[r][j] = dy[r][j] - exp(y[r][j]) * sum_i dy[r][i]}.
     */
    void logSoftmaxBackwardRows(int rows, int cols, MemorySegment y, long yOff, MemorySegment dy, long dyOff,
                                MemorySegment dx, long dxOff);

    /**
     * Layer normalisation over the last dimension (PyTorch {@code layer_norm} with
     * {@code normalized_shape = [cols]}): {@code out = (x - mean) * rstd * gamma + beta} per row, with the
     * biased variance and {@code rstd = 1 / sqrt(var + eps)}.
     *
     * @param gamma per-column scale ({@code cols} floats), or null for 1
     * @param beta per-column shift ({@code cols} floats), or null for 0
     * @param eps added to the variance, e.g. {@code 1e-5f}
     * @param mean receives the {@code rows} row means (for the backward pass), or null
     * @param rstd receives the {@code rows} reciprocal standard deviations, or null
     */
    void layerNormRows(int rows, int cols, MemorySegment x, long xOff,
                       MemorySegment gamma, long gammaOff, MemorySegment beta, long betaOff, float eps,
                       MemorySegment out, long outOff, MemorySegment mean, long meanOff,
                       MemorySegment rstd, long rstdOff);

    /**
     * Layer normalisation backward. With {@code xhat = (x - mean) * rstd} and {@code g = dy * gamma}:
     * {@code dx = rstd * (g - mean_j(g) - xhat * mean_j(g * xhat))},
     * {@code dgamma[j] = sum_r dy[r][j] * xhat[r][j]}, {@code dbeta[j] = sum_r dy[r][j]}.
     * {@code dgamma} and {@code dbeta} are overwritten, not accumulated into.
     *
     * @param mean the row means from {@link #layerNormRows}
     * @param rstd the reciprocal standard deviations from {@link #layerNormRows}
     * @param gamma the scale used in the forward pass, or null for 1
     * @param dx receives the input gradient ({@code rows x cols}), or null to skip it
     * @param dgamma receives the gradient of {@code gamma} ({@code cols} floats), or null to skip it
     * @param dbeta receives the gradient of {@code beta} ({@code cols} floats), or null to skip it
     */
    void layerNormBackwardRows(int rows, int cols, MemorySegment dy, long dyOff, MemorySegment x, long xOff,
                               MemorySegment mean, long meanOff, MemorySegment rstd, long rstdOff,
                               MemorySegment gamma, long gammaOff,
                               MemorySegment dx, long dxOff, MemorySegment dgamma, long dgammaOff,
                               MemorySegment dbeta, long dbetaOff);

    // ------------------------------------------------------------------------------------------------ device paths
    // Kernels that let the tensor ops on device memory run without host work or one launch per element (issue 10).
    // Index and mask segments: int64 indices and one byte per mask element; their offsets count those elements.

    /**
     * Copies a strided float view of up to 4 dimensions into another strided layout ({@code contiguous()},
     * {@code expand()} materialised, a slice written): {@code dst[i . t] = src[i . s]} for every index
     * {@code i = (i0, i1, i2, i3)} of extents {@code d0..d3}, outermost first (unused leading dimensions have extent 1).
     * The destination elements must be distinct and must not overlap the source.
     *
     * @param s0 element stride of dimension 0 in {@code src}, at least 0 (0 where broadcast); likewise s1..s3
     * @param t0 element stride of dimension 0 in {@code dst}, at least 0; likewise t1..t3
     * @throws IllegalArgumentException for a negative extent or stride
     */
    void copy4(int d0, int d1, int d2, int d3, MemorySegment src, long srcOff, long s0, long s1, long s2, long s3,
               MemorySegment dst, long dstOff, long t0, long t1, long t2, long t3);

    /**
     * {@link #copy4} over 16-bit elements (float16 or bfloat16: the bits are copied, NaN payloads too), offsets
     * and strides in 16-bit elements: a strided 16-bit view made contiguous, or written into a strided layout,
     * without a float32 image of either side.
     *
     * @throws IndexOutOfBoundsException if an operand's reach does not fit its segment
     * @throws IllegalArgumentException for a negative extent or stride, or a read-only {@code dst}
     */
    void copy16(int d0, int d1, int d2, int d3, MemorySegment src, long srcOff, long s0, long s1, long s2, long s3,
                MemorySegment dst, long dstOff, long t0, long t1, long t2, long t3);

    /**
     * A broadcasting binary op into a contiguous output of up to 4 dimensions:
     * {@code out[i] = a[i . aStrides] op b[i . bStrides]}, each input read with its own element strides (0 where
     * broadcast), so nothing is materialised. Element results are those of {@link #add}, {@link #sub}, {@link #mul},
     * {@link #div}.
     *
     * @param op 0 add, 1 sub, 2 mul, 3 div
     * @throws IllegalArgumentException for another op, a negative extent or stride
     */
    void binary4(int op, int d0, int d1, int d2, int d3, MemorySegment a, long aOff, long as0, long as1, long as2,
                 long as3, MemorySegment b, long bOff, long bs0, long bs1, long bs2, long bs3,
                 MemorySegment out, long outOff);

    /**
     * Sums the middle dimension of a contiguous {@code [outer, n, inner]} block into {@code outer * inner} floats
     * ({@code out[o][i] = x[o][0][i] + x[o][1][i] + ...}). The CPU kernels add
     * {@code 0 + x[o][0][i] + x[o][1][i] + ...} in that order, or, when {@code inner == 1},
     * {@code 0 + sum(x[o][0..n))} with their {@link #sum} (the order the tensor ops' host loop adds in, so results
     * equal it bit for bit); the CUDA kernels add in parallel in another fixed order, so a repeated call gives the
     * same bits but they can differ from the CPU's in the last places ({@code CudaKernels#sumDim}).
     *
     * @throws IndexOutOfBoundsException if a range does not fit its segment
     * @throws IllegalArgumentException for a negative extent, or {@code out} read-only
     */
    void sumDim(int outer, int n, int inner, MemorySegment x, long xOff, MemorySegment out, long outOff);

    /**
     * {@link #sumDim} of a contiguous {@code [outer, n, inner]} block of float16 or bfloat16 values ({@code type}:
     * {@link #FLOAT16}, {@link #BFLOAT16}; {@code xOff} in 16-bit elements) into {@code outer * inner} floats: each
     * value is widened as it is read (exactly) and added as {@link #sumDim} adds the widened block, so the sums have
     * its bits and no widened copy of the block is made (PyTorch's sum of a bf16 tensor accumulates in float32 too).
     *
     * @throws IndexOutOfBoundsException if a range does not fit its segment
     * @throws IllegalArgumentException for another type, a negative extent, or {@code out} read-only
     */
    void sumDim16(int type, int outer, int n, int inner, MemorySegment x, long xOff, MemorySegment out, long outOff);

    /**
     * {@link #sumDim16} with each sum rounded once to {@code type} and written as {@code outer * inner} 16-bit values
     * ({@code outOff} in 16-bit elements): the rounded bits of {@link #sumDim16}'s sums, in one pass where the
     * float32 sums and a cast would write and read them once more (a bias gradient under autocast; PyTorch's sum of a
     * bf16 tensor writes bf16, accumulating in float32).
     *
     * @throws IndexOutOfBoundsException if a range does not fit its segment
     * @throws IllegalArgumentException for another type, a negative extent, or {@code out} read-only
     */
    void sumDimTo16(int type, int outer, int n, int inner, MemorySegment x, long xOff, MemorySegment out,
                    long outOff);

    /**
     * The maximum of the middle dimension of a contiguous {@code [outer, n, inner]} block and its first index
     * ({@code torch.max(x, dim)}): NaN wins (its first index), else the first of equal maxima.
     *
     * @param values receives {@code outer * inner} floats, or null for the indices only ({@code argmax})
     * @param indices receives {@code outer * inner} int64 indices in {@code [0, n)}
     * @throws IllegalArgumentException if {@code n < 1}
     */
    void maxDim(int outer, int n, int inner, MemorySegment x, long xOff, MemorySegment values, long valuesOff,
                MemorySegment indices, long indicesOff);

    /**
     * Dropout with the counter-based mask of {@code io.vram4j.tensor}: element {@code i} is kept when
     * {@code uniform(seed, i) >= p}, where {@code uniform} is the top 24 bits of SplitMix64's finalizer of
     * {@code seed + i * 0x9E3779B97F4A7C15}, times 2^-24 (so a mask drawn by any implementation, and its
     * recomputation under checkpointing, is the same): {@code out = keep ? x * scale : 0}, {@code mask = keep}.
     *
     * @param p drop probability in [0, 1]
     * @param scale {@code 1 / (1 - p)} (0 when {@code p == 1})
     * @param seed any value
     * @param mask receives {@code n} bytes, 1 kept, 0 dropped
     */
    void dropout(long n, float p, float scale, long seed, MemorySegment x, long xOff, MemorySegment out, long outOff,
                 MemorySegment mask, long maskOff);

    /** Dropout backward: {@code dx[i] = mask[i] != 0 ? dy[i] * scale : 0}. */
    void dropoutBackward(long n, float scale, MemorySegment dy, long dyOff, MemorySegment mask, long maskOff,
                         MemorySegment dx, long dxOff);

    /**
     * Negative log-likelihood loss, mean reduction ({@code torch.nn.functional.nll_loss}): the float at {@code out}
     * gets {@code -sum(logp[i][t_i]) / count} over the {@code n} int64 targets other than {@code ignoreIndex},
     * summed in double in index order and rounded once (NaN when every target is ignored, as PyTorch).
     *
     * @param ignoreIndex any value; targets equal to it are skipped
     * @throws IndexOutOfBoundsException (host implementations, before writing) for a target outside {@code [0, c)}
     *     that is not ignored; device implementations cannot raise it without a round trip and fail the stream
     *     instead, as PyTorch's device-side assert does
     */
    void nllLoss(int n, int c, long ignoreIndex, MemorySegment logp, long logpOff, MemorySegment targets,
                 long targetsOff, MemorySegment out, long outOff);

    /**
     * NLL loss backward: {@code dlogp} ({@code n x c}, overwritten) is 0 except {@code -g / count} at each kept
     * target, {@code g} the float at {@code g}, {@code count} the number of kept targets.
     *
     * @param ignoreIndex any value
     */
    void nllLossBackward(int n, int c, long ignoreIndex, MemorySegment g, long gOff, MemorySegment targets,
                         long targetsOff, MemorySegment dlogp, long dlogpOff);

    /**
     * Embedding gather: {@code out[i] = weight[idx[i]]}, rows of {@code cols} floats of a {@code rows x cols} table,
     * for {@code count} int64 indices.
     *
     * @throws IndexOutOfBoundsException (host implementations, before writing) for an index outside
     *     {@code [0, rows)}; device implementations fail the stream instead, as {@link #nllLoss}
     */
    void embedding(long count, int rows, int cols, MemorySegment weight, long weightOff, MemorySegment idx,
                   long idxOff, MemorySegment out, long outOff);

    /**
     * Embedding backward: {@code dweight} ({@code rows x cols}, overwritten) is 0 plus row {@code i} of {@code g}
     * added into row {@code idx[i]}, for {@code i} in index order, on every implementation (the same bits on the CPU
     * and on a GPU, run after run; PyTorch's CUDA kernel also sums each row in a fixed order, after sorting the
     * indices).
     */
    void embeddingBackward(long count, int rows, int cols, MemorySegment g, long gOff, MemorySegment idx,
                           long idxOff, MemorySegment dweight, long dweightOff);

    /**
     * Copies {@code mats} contiguous {@code t x s} matrices, writing {@code fill} where column &gt; row (the causal
     * mask: {@code -Inf} forward, 0 backward).
     */
    void maskUpper(long mats, int t, int s, float fill, MemorySegment x, long xOff, MemorySegment out, long outOff);

    /** {@code out[i] = i} as int64 for {@code i < n} ({@code torch.arange(n, dtype=torch.long)}, e.g. positions). */
    void iota(long n, MemorySegment out, long outOff);

    // ------------------------------------------------------------------------------------------------ 16-bit gemm

    /**
     * {@link #sgemmBatched} on float16 ({@code bf16 == false}) or bfloat16 matrices, accumulated in float32 and rounded
     * once to the 16-bit type (nearest even), as {@code torch.matmul} on CUDA ({@code cublasGemmEx} with
     * {@code CUBLAS_COMPUTE_32F}). Offsets, leading dimensions and strides count 16-bit elements. The CPU kernels
     * widen {@code op(A)}, {@code op(B)} (and {@code C} when {@code beta != 0}) into contiguous float32, run their
     * {@link #sgemmBatched}, and narrow the result: the values the tensor ops compute for 16-bit matmul on the host.
     *
     * @param bf16 true for bfloat16, false for float16
     * @see #sgemmBatched
     */
    void gemmBatched16(boolean bf16, int batch, boolean transA, boolean transB, int m, int n, int k, float alpha,
                       MemorySegment a, long aOff, int lda, long strideA, MemorySegment b, long bOff, int ldb,
                       long strideB, float beta, MemorySegment c, long cOff, int ldc, long strideC);

    /**
     * {@link #gemmBatched16} from a bias, PyTorch's {@code addmm} on 16-bit data (what its {@code linear} runs):
     * {@code C_i = alpha * op(A_i) * op(B_i) + bias}, the bias ({@code n} values of C's type, {@code biasStride}
     * apart) added to every row in float32, before the one rounding to the 16-bit type. The old C is not read.
     * This default writes the bias into every row of C ({@link #copy16}) and adds the product to it
     * ({@code beta = 1}); on a GPU the bias is added in the product's epilogue (cuBLASLt), which gives the same
     * value: the float32 sum of the product and the bias, rounded once.
     *
     * @param bias the segment holding the bias
     * @param biasOff element offset of its first value
     * @param biasStride element distance between its values, at least 0
     * @throws IndexOutOfBoundsException if an operand's reach does not fit its segment
     * @throws IllegalArgumentException for a negative extent, leading dimension or stride, or {@code c} read-only
     * @see #gemmBatched16
     */
    default void gemmBatched16Bias(boolean bf16, int batch, boolean transA, boolean transB, int m, int n, int k,
                                   float alpha, MemorySegment a, long aOff, int lda, long strideA, MemorySegment b,
                                   long bOff, int ldb, long strideB, MemorySegment bias, long biasOff, long biasStride,
                                   MemorySegment c, long cOff, int ldc, long strideC) {
        if (batch == 0 || m == 0 || n == 0) {
            return;
        }
        copy16(1, batch, m, n, bias, biasOff, 0, 0, 0, biasStride, c, cOff, 0, strideC, ldc, 1);
        gemmBatched16(bf16, batch, transA, transB, m, n, k, alpha, a, aOff, lda, strideA, b, bOff, ldb, strideB, 1f,
                c, cOff, ldc, strideC);
    }

    // ------------------------------------------------------------------------------------------------ fused optimizers
    // One call per parameter group (PyTorch's foreach/fused optimizers): tensor i of the group is sizes[i] floats
    // at the start of params[i], grads[i] and its state segments (each at least that long).

    /**
     * One SGD step over {@code count} tensors, as {@code torch.optim.SGD} without dampening, element by element in
     * float32: {@code d = g + wd * p} (when {@code wd != 0}); with momentum {@code b = first ? d : momentum * b + d},
     * {@code d = nesterov ? d + momentum * b : b}; then {@code p = p - lr * d}.
     *
     * @param bufs the momentum buffers, or null when {@code momentum == 0}
     * @param first whether this step initialises the buffers
     * @throws IllegalArgumentException for {@code count} above an array's length or a negative size
     */
    void sgdMulti(int count, long[] sizes, MemorySegment[] params, MemorySegment[] grads, MemorySegment[] bufs,
                  float lr, float momentum, float weightDecay, boolean nesterov, boolean first);

    /**
     * One AdamW step over {@code count} tensors, as {@code torch.optim.AdamW} (amsgrad off), element by element in
     * float32: {@code m += (g - m) * (1 - beta1)}; {@code v = beta2 * v + (1 - beta2) * g * g};
     * {@code p = p * decay - stepSize * m / (sqrt(v) / bc2Sqrt + eps)}.
     *
     * @param decay {@code 1 - lr * weightDecay}
     * @param stepSize {@code lr / (1 - beta1^t)}
     * @param bc2Sqrt {@code sqrt(1 - beta2^t)}
     * @throws IllegalArgumentException for {@code count} above an array's length or a negative size
     */
    void adamwMulti(int count, long[] sizes, MemorySegment[] params, MemorySegment[] grads, MemorySegment[] ms,
                    MemorySegment[] vs, float beta1, float beta2, float eps, float decay, float stepSize, float bc2Sqrt);

    // ------------------------------------------------------------------------------------------------ attention

    /**
     * Fused scaled dot-product attention forward over {@code batchHeads} independent problems, each of
     * {@code t} query, key and value rows of {@code d} floats, stored contiguously ({@code [batchHeads, t, d]}
     * row-major): {@code out = softmax(scale q k^T [+ causal mask]) v} and, per query row, the log-sum-exp of
     * its scaled scores {@code lse[i] = log(sum_j exp(scale q_i . k_j))} (over {@code j <= i} when causal), the
     * only statistic the backward pass needs. Computed by FlashAttention's method (Dao et al. 2022, online
     * softmax over key tiles): nothing of size {@code t x t} is stored, in memory or scratch. A causal mask is
     * the lower triangle, aligned top-left as {@code torch.nn.functional.scaled_dot_product_attention}'s
     * {@code is_causal}.
     *
     * @param batchHeads number of independent problems (batch times heads), at least 0
     * @param t rows per problem (queries = keys = values), at least 0
     * @param d floats per row (head dimension), at least 0
     * @param scale factor of the scores, e.g. {@code 1 / sqrt(d)}
     * @param causal whether row {@code i} attends to rows {@code j <= i} only
     * @param q queries, {@code batchHeads * t * d} floats
     * @param k keys, as {@code q}
     * @param v values, as {@code q}
     * @param out receives the output, as {@code q}; must not overlap an input
     * @param lse receives {@code batchHeads * t} log-sum-exps (natural logarithm)
     * @throws IllegalArgumentException besides the common checks, from an implementation that cannot take the
     *     sizes in one launch (the CUDA kernels: {@code d} above 6,143 or {@code batchHeads} above 65,535), before
     *     anything is written
     */
    void attentionForward(int batchHeads, int t, int d, float scale, boolean causal,
                          MemorySegment q, long qOff, MemorySegment k, long kOff, MemorySegment v, long vOff,
                          MemorySegment out, long outOff, MemorySegment lse, long lseOff);

    /**
     * Fused attention backward (FlashAttention-2's, Dao 2023): recomputes the probabilities tile by tile from
     * {@code q}, {@code k} and {@code lse} ({@code p_ij = exp(scale q_i . k_j - lse_i)}), with
     * {@code D_i = rowsum(dout_i * out_i)}: {@code dv_j = sum_i p_ij dout_i}, {@code dp_ij = dout_i . v_j},
     * {@code ds_ij = p_ij (dp_ij - D_i)}, {@code dq_i = scale sum_j ds_ij k_j}, {@code dk_j = scale sum_i ds_ij q_i}.
     * Shapes and layout as {@link #attentionForward}; {@code dq}, {@code dk} and {@code dv} are overwritten,
     * must not overlap each other or an input, and nothing of size {@code t x t} is stored.
     *
     * @param out the forward output
     * @param lse the forward log-sum-exps
     * @param dout the gradient of {@code out}
     * @param dq receives the gradient of {@code q}
     * @param dk receives the gradient of {@code k}
     * @param dv receives the gradient of {@code v}
     * @throws IllegalArgumentException as {@link #attentionForward}
     */
    void attentionBackward(int batchHeads, int t, int d, float scale, boolean causal,
                           MemorySegment q, long qOff, MemorySegment k, long kOff, MemorySegment v, long vOff,
                           MemorySegment out, long outOff, MemorySegment lse, long lseOff,
                           MemorySegment dout, long doutOff,
                           MemorySegment dq, long dqOff, MemorySegment dk, long dkOff, MemorySegment dv, long dvOff);

    /**
     * {@link #attentionForward} on strided operands of one element type, read and written in place (no copies of
     * them, as PyTorch's flash and memory-efficient attention read the heads split off one projection): problem
     * {@code p} is {@code (p / heads, p % heads)} of a {@code [batchHeads / heads, heads, t, d]} view with element
     * strides {@code (batchStride, headStride, rowStride, 1)}, shared by {@code q}, {@code k}, {@code v} (a contiguous
     * {@code [batchHeads, t, d]} input is {@code heads} 1, {@code batchStride} {@code t * d}, {@code headStride} 0,
     * {@code rowStride} {@code d}). The output {@code out} has the same type, in its own layout
     * ({@code outBatchStride}, {@code outHeadStride}, {@code outRowStride}, the same {@code heads}; PyTorch's flash
     * attention writes {@code [batch, t, heads, d]}: {@code (t * heads * d, d, heads * d)}), whose elements must not
     * overlap; {@code lse} is float32 and contiguous as there. 16-bit inputs ({@link #FLOAT16}, {@link #BFLOAT16})
     * are widened as they are read and each output value is rounded once from the float32 result, as PyTorch's flash
     * attention under autocast; {@link #FLOAT32} operands give the values of {@link #attentionForward} on the same
     * rows. Offsets and strides count elements of {@code type}. The CUDA kernels on 16-bit inputs at {@code d} up to
     * 64 multiply on tensor cores, as FlashAttention-2 under autocast: they round the probabilities to {@code type}
     * before multiplying them with {@code v} and divide by the sum of the rounded probabilities, so their values are
     * within a few units of {@code type}'s roundoff (of the result's largest magnitude) of the float32 kernel's, not
     * equal up to float32's last bits.
     *
     * @param type {@link #FLOAT32}, {@link #FLOAT16} or {@link #BFLOAT16}
     * @param heads at least 1, dividing {@code batchHeads}
     * @throws IllegalArgumentException as {@link #attentionForward}, for another type, a negative stride, an output
     *     layout whose elements overlap, or {@code heads} not dividing {@code batchHeads}
     */
    void attentionForwardStrided(int type, int batchHeads, int heads, long batchStride, long headStride,
                                 long rowStride, long outBatchStride, long outHeadStride, long outRowStride,
                                 int t, int d, float scale, boolean causal,
                                 MemorySegment q, long qOff, MemorySegment k, long kOff, MemorySegment v, long vOff,
                                 MemorySegment out, long outOff, MemorySegment lse, long lseOff);

    /**
     * {@link #attentionBackward} on strided operands of one element type (as {@link #attentionForwardStrided}):
     * {@code q}, {@code k}, {@code v} in the layout of {@link #attentionForwardStrided}, {@code out} (the forward's
     * output) in its layout {@code outBatchStride}, {@code outHeadStride}, {@code outRowStride}, and {@code dout} in
     * its own ({@code doutBatchStride}, {@code doutHeadStride}, {@code doutRowStride}), all with the same
     * {@code heads}, read in place (16-bit ones widened as read); {@code lse} is float32 and contiguous. The
     * gradients {@code dq}, {@code dk}, {@code dv} have {@code type} (16-bit values rounded once from the float32
     * results) and are written in the layout {@code gradBatchStride}, {@code gradHeadStride}, {@code gradRowStride}:
     * the output's (as PyTorch's flash attention backward gives them the inputs' {@code [batch, t, heads, d]}
     * order), or that of {@code q}, {@code k} and {@code v}, so that the gradients of heads split off one projection
     * fill one tensor of the projection's shape; their values are those of {@link #attentionBackward} on the same
     * rows (the CUDA kernels on 16-bit inputs at {@code d} up to 64: within a few units of {@code type}'s roundoff,
     * as {@link #attentionForwardStrided} says; they also round {@code ds} to {@code type} before its products).
     *
     * @param type {@link #FLOAT32}, {@link #FLOAT16} or {@link #BFLOAT16}
     * @throws IllegalArgumentException as {@link #attentionForwardStrided}, also for a gradient layout whose elements
     *     overlap
     */
    void attentionBackwardStrided(int type, int batchHeads, int heads, long batchStride, long headStride,
                                  long rowStride, long outBatchStride, long outHeadStride, long outRowStride,
                                  long doutBatchStride, long doutHeadStride, long doutRowStride,
                                  long gradBatchStride, long gradHeadStride, long gradRowStride,
                                  int t, int d, float scale, boolean causal,
                                  MemorySegment q, long qOff, MemorySegment k, long kOff, MemorySegment v, long vOff,
                                  MemorySegment out, long outOff, MemorySegment lse, long lseOff,
                                  MemorySegment dout, long doutOff, MemorySegment dq, long dqOff, MemorySegment dk,
                                  long dkOff, MemorySegment dv, long dvOff);
}
