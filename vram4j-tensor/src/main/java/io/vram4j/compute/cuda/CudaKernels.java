package io.vram4j.compute.cuda;

import io.vram4j.alloc.CachingAllocator;
import io.vram4j.compute.Kernels;
import io.vram4j.device.ComputeCapability;
import io.vram4j.device.Stream;
import io.vram4j.device.cuda.CudaDevice;
import io.vram4j.device.sim.SimDevice;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Arrays;
import java.util.Map;

/**
 * {@link Kernels} on a CUDA GPU: each call queues the kernel of {@code vram4j_kernels.cu} (or a cuBLAS GEMM) on
 * one stream and returns; only the reductions, which return a value to Java, wait for the stream.
 *
 * <p>The segments it takes are device memory: {@code MemorySegment.ofAddress(ptr).reinterpret(bytes)} over
 * blocks of the device's caching allocator, which Java code never dereferences; element offsets count floats as
 * in every {@link Kernels}. Argument checks (ranges, sizes) are the checking layer's, wrapped around every
 * implementation; here are none. Temporaries (reduction partials, the cuBLAS workspace) come from the caching
 * allocator on the stream, as PyTorch's do.
 *
 * <p>Beyond {@link Kernels}, for the tensor ops that have no {@link Kernels} method (addresses are device
 * addresses, counts are elements): float16/bfloat16 casts, broadcasting binary ops and strided gathers of up to 4
 * dimensions, the causal mask, embedding gather and backward, dropout with the CPU runtime's counter-based mask and
 * its backward, multi-tensor SGD and AdamW steps (one launch per parameter group), NLL loss and its backward.
 *
 * <p><b>Device memory it takes from the caching allocator</b>, on its stream, each at the place in the code below:
 * the cuBLAS workspace ({@link CublasWorkspace#size}: 32 MiB on compute capability 9.0) at the first matrix product,
 * held until {@link #close()}, as PyTorch holds its handle's workspace; a reduction's partials, {@code (grid + 1)}
 * floats ({@link LaunchConfig#reductionPartial}), freed when it returns; 8 bytes for the NLL loss and count; a fused
 * optimizer's address table, 8 bytes per tensor and list; a copy between overlapping ranges, a buffer of its size.
 * <b>On a {@code sim} device standing for a CUDA GPU</b> ({@link io.vram4j.device.sim.SimDevice#cudaModel()}) the
 * same class runs over a queue that runs nothing ({@link SimulatedQueue}): the allocations above are made by the
 * same code, so a dry run there allocates exactly as the {@code cuda} run does, and nothing is computed (reductions
 * return 0).
 *
 * <p>Thread-safe for launches (the driver is); cuBLAS calls are serialized on this object. {@link #close()}
 * unloads the module and gives the workspace back.
 *
 * <p>Status: compiled and checked against the PTX without a GPU; not run on a GPU yet.
 */
public final class CudaKernels implements Kernels, AutoCloseable {
    private final CachingAllocator allocator;
    private final Stream stream;
    private final GpuQueue gpu;
    private final boolean simulated;
    private final Map<String, String> env;
    /** False when {@link #ATTENTION_ENV} rules the tensor-core attention out. */
    private final boolean tensorCoreAttention;
    private final ComputeCapability capability;
    private boolean blasStarted;
    private long workspace;

    private CudaKernels(CachingAllocator allocator, Stream stream, GpuQueue gpu, boolean simulated,
                        Map<String, String> env, ComputeCapability capability) {
        this.allocator = allocator;
        this.stream = stream;
        this.gpu = gpu;
        this.simulated = simulated;
        this.env = env;
        this.capability = capability;
        this.tensorCoreAttention = tensorCoreAttention(env);
    }

    /**
     * The variable that chooses the 16-bit fused attention's kernels: {@code tensor-cores} (the default; head
     * dimensions up to {@value #ATTENTION_TC_MAX_D}, above that the CUDA-core kernels run) or {@code cuda-cores}
     * (the CUDA-core kernels at every head dimension: the float32 kernels' arithmetic on the widened inputs), for
     * comparing the two on a GPU or ruling the tensor-core kernels out.
     */
    public static final String ATTENTION_ENV = "VRAM4J_CUDA_ATTENTION";

    /**
     * @return whether {@code env} leaves the 16-bit attention on tensor cores ({@link #ATTENTION_ENV})
     * @throws IllegalArgumentException for another value than {@code tensor-cores} or {@code cuda-cores} (one line
     *     naming the variable)
     */
    static boolean tensorCoreAttention(Map<String, String> env) {
        String value = env.get(ATTENTION_ENV);
        if (value == null || value.isEmpty() || value.equals("tensor-cores")) {
            return true;
        }
        if (value.equals("cuda-cores")) {
            return false;
        }
        throw new IllegalArgumentException(ATTENTION_ENV + "='" + value + "': expected tensor-cores (the default) or "
                + "cuda-cores");
    }

    /**
     * Loads the kernels into the allocator's device (the PTX resource, JIT-compiled by the driver), or, on a
     * {@code sim} device standing for a CUDA GPU, the same kernels over nothing; with the environment of the
     * process ({@code VRAM4J_LIBCUBLAS} and the cuBLAS search path, {@code CUBLAS_WORKSPACE_CONFIG}).
     *
     * @param allocator the caching allocator of a {@code cuda} device or of a sim standing for one
     * @param stream the stream every launch goes to
     * @return the kernels; cuBLAS is loaded at the first matrix product
     * @throws IllegalArgumentException when the allocator's device is neither
     * @throws io.vram4j.device.DeviceUnavailableException when the driver cannot load the PTX (one line)
     */
    public static CudaKernels create(CachingAllocator allocator, Stream stream) {
        return create(allocator, stream, System.getenv());
    }

    /**
     * {@link #create(CachingAllocator, Stream)} with another environment than the process's, e.g. to point
     * {@code VRAM4J_LIBCUBLAS} at a library or to set {@code CUBLAS_WORKSPACE_CONFIG} from a program.
     *
     * @param env the variables read: {@code VRAM4J_LIBCUBLAS}, {@code CUDA_HOME}, {@code PYTHONPATH},
     *     {@code VIRTUAL_ENV}, {@code CONDA_PREFIX}, {@code HOME} ({@link CublasLocator}),
     *     {@code CUBLAS_WORKSPACE_CONFIG} ({@link CublasWorkspace}) and {@link #ATTENTION_ENV}
     * @throws IllegalArgumentException also for a value of {@link #ATTENTION_ENV} it does not know
     */
    public static CudaKernels create(CachingAllocator allocator, Stream stream, Map<String, String> env) {
        Map<String, String> e = Map.copyOf(env);
        if (allocator.device() instanceof CudaDevice d) {
            int[] cc = d.computeCapability();
            return new CudaKernels(allocator, stream, new DriverQueue(d, e), false, e, new ComputeCapability(cc[0], cc[1]));
        }
        if (allocator.device() instanceof SimDevice s && s.cudaModel().isPresent()) {
            return new CudaKernels(allocator, stream, new SimulatedQueue(s), true, e, s.cudaModel().get());
        }
        throw new IllegalArgumentException("CUDA kernels need a cuda device or a sim standing for one (sim:PRESET, "
                + "sim:SIZE:ccMAJOR.MINOR), not " + allocator.device().description());
    }

    /** @return {@code "cuda"}, or {@code "cuda (simulated)"} on a sim device standing for a CUDA GPU */
    @Override
    public String name() {
        return simulated ? "cuda (simulated)" : "cuda";
    }

    @Override
    public int threads() {
        return 1;
    }

    @Override
    public Kernels withThreads(int threads) {
        if (threads < 1) {
            throw new IllegalArgumentException("threads must be at least 1, got " + threads);
        }
        return this;
    }

    /** Nothing to warm up on the host: the driver compiled the PTX when the module was loaded. @return 0 */
    @Override
    public long warmUp() {
        return 0;
    }

    private static long ptr(MemorySegment seg, long off) {
        return seg.address() + off * Float.BYTES;
    }

    private static long ptrOrNull(MemorySegment seg, long off) {
        return seg == null ? 0L : ptr(seg, off);
    }

    private void elementwise(CudaKernel k, long n, Object... args) {
        gpu.launch(k, LaunchConfig.elementwise(n), stream, args);
    }

    /**
     * A broadcasting binary kernel's launch: sized for 8 elements a thread where the walk is one run that both
     * operands read in order (a residual add; the kernel then moves 16 bytes a load where aligned), else for one.
     */
    private void broadcast(CudaKernel k, Dims4 d, Object... args) {
        boolean oneRun = d.extent(0) == 1 && d.extent(1) == 1 && d.extent(2) == 1 && d.stride(0, 3) == 1
                && d.stride(1, 3) == 1;
        gpu.launch(k, oneRun ? LaunchConfig.elementwise8(d.numel()) : LaunchConfig.elementwise(d.numel()), stream,
                args);
    }

    /** {@link #elementwise} for the kernels that take 8 elements a thread ({@link LaunchConfig#elementwise8}). */
    private void elementwise8(CudaKernel k, long n, Object... args) {
        gpu.launch(k, LaunchConfig.elementwise8(n), stream, args);
    }

    // ------------------------------------------------------------------------------------------------ gemm

    /**
     * Starts cuBLAS at the first product, with its workspace from the caching allocator on the stream
     * ({@link CublasWorkspace#size} bytes), held until {@link #close()}.
     */
    private synchronized void startBlas() {
        if (blasStarted) {
            return;
        }
        gpu.openBlas(stream);
        long ws = 0;
        try {
            long size = CublasWorkspace.size(env.get("CUBLAS_WORKSPACE_CONFIG"), capability.major(), capability.minor());
            if (size > 0) {
                ws = allocator.malloc(size, stream);
                gpu.setBlasWorkspace(ws, size);
            }
        } catch (RuntimeException e) {
            if (ws != 0) {
                allocator.free(ws);
            }
            gpu.closeBlas();
            throw e;
        }
        blasStarted = true;
        workspace = ws;
    }

    @Override
    public void sgemm(boolean transA, boolean transB, int m, int n, int k, float alpha, MemorySegment a, long aOff,
                      int lda, MemorySegment b, long bOff, int ldb, float beta, MemorySegment c, long cOff, int ldc) {
        if (m == 0 || n == 0) {
            return;
        }
        startBlas();
        synchronized (this) {
            gpu.gemm(ColumnMajorGemm.ofRowMajor(transA, transB, m, n, k, lda, ldb, ldc), alpha, ptr(a, aOff),
                    ptr(b, bOff), beta, ptr(c, cOff), Cublas.CUDA_R_32F);
        }
    }

    /**
     * A float32 product from a bias: one {@code cublasLtMatmul} with the bias added in its epilogue (as PyTorch's
     * {@code addmm} on float32), where the bias is contiguous and cuBLASLt has an algorithm; otherwise the bias
     * written into C and a cuBLAS product added ({@link Kernels#sgemmBias}'s default).
     */
    @Override
    public void sgemmBias(boolean transA, boolean transB, int m, int n, int k, float alpha, MemorySegment a,
                          long aOff, int lda, MemorySegment b, long bOff, int ldb, MemorySegment bias, long biasOff,
                          long biasStride, MemorySegment c, long cOff, int ldc) {
        if (productWithBias(transA, transB, m, n, k, lda, ldb, ldc, alpha, ptr(a, aOff), ptr(b, bOff), biasStride,
                ptr(bias, biasOff), ptr(c, cOff), Cublas.CUDA_R_32F)) {
            return;
        }
        Kernels.super.sgemmBias(transA, transB, m, n, k, alpha, a, aOff, lda, b, bOff, ldb, bias, biasOff,
                biasStride, c, cOff, ldc);
    }

    @Override
    public void sgemmBatched(int batch, boolean transA, boolean transB, int m, int n, int k, float alpha,
                             MemorySegment a, long aOff, int lda, long strideA, MemorySegment b, long bOff, int ldb,
                             long strideB, float beta, MemorySegment c, long cOff, int ldc, long strideC) {
        stridedBatched(Cublas.CUDA_R_32F, batch, transA, transB, m, n, k, alpha, ptr(a, aOff), lda, strideA,
                ptr(b, bOff), ldb, strideB, beta, ptr(c, cOff), ldc, strideC);
    }

    /** {@code cublasGemmStridedBatchedEx} on 16-bit A, B and C ({@code CUDA_R_16BF}/{@code CUDA_R_16F}), float32 compute. */
    @Override
    public void gemmBatched16(boolean bf16, int batch, boolean transA, boolean transB, int m, int n, int k,
                              float alpha, MemorySegment a, long aOff, int lda, long strideA, MemorySegment b,
                              long bOff, int ldb, long strideB, float beta, MemorySegment c, long cOff, int ldc,
                              long strideC) {
        stridedBatched(bf16 ? Cublas.CUDA_R_16BF : Cublas.CUDA_R_16F, batch, transA, transB, m, n, k, alpha,
                ptr16(a, aOff), lda, strideA, ptr16(b, bOff), ldb, strideB, beta, ptr16(c, cOff), ldc, strideC);
    }

    /**
     * A 16-bit product from a bias: one {@code cublasLtMatmul} with the bias added in its epilogue, as PyTorch runs
     * {@code addmm}, where the product is one matrix (a batch whose B is shared and whose rows of A and C follow on
     * from one matrix to the next, as a linear layer's {@code [batch, t, in]} input, is folded into one product of
     * {@code batch * m} rows, as PyTorch folds it), the bias is contiguous and cuBLASLt has an algorithm for it.
     * Otherwise, or without cuBLASLt ({@code VRAM4J_CUBLASLT=0}, or no {@code libcublasLt} beside cuBLAS), the bias is
     * written into C and a cuBLAS product added to it ({@link Kernels#gemmBatched16Bias}'s default): the same values,
     * with one launch and two passes over C more.
     */
    @Override
    public void gemmBatched16Bias(boolean bf16, int batch, boolean transA, boolean transB, int m, int n, int k,
                                  float alpha, MemorySegment a, long aOff, int lda, long strideA, MemorySegment b,
                                  long bOff, int ldb, long strideB, MemorySegment bias, long biasOff, long biasStride,
                                  MemorySegment c, long cOff, int ldc, long strideC) {
        long rows = (long) batch * m;
        boolean folds = batch == 1
                || !transA && strideB == 0 && strideA == (long) m * lda && strideC == (long) m * ldc;
        if (folds && rows <= Integer.MAX_VALUE && productWithBias(transA, transB, (int) rows, n, k, lda, ldb, ldc,
                alpha, ptr16(a, aOff), ptr16(b, bOff), biasStride, ptr16(bias, biasOff), ptr16(c, cOff),
                bf16 ? Cublas.CUDA_R_16BF : Cublas.CUDA_R_16F)) {
            return;
        }
        Kernels.super.gemmBatched16Bias(bf16, batch, transA, transB, m, n, k, alpha, a, aOff, lda, strideA, b, bOff,
                ldb, strideB, bias, biasOff, biasStride, c, cOff, ldc, strideC);
    }

    /**
     * One row-major product from a bias on cuBLASLt ({@link GpuQueue#gemmBias}), where it is not empty, the bias is
     * contiguous and cuBLASLt takes it; device addresses, A, B, C and the bias of CUDA type {@code type}.
     *
     * @return false, with nothing queued, where the caller must add the bias itself
     */
    private boolean productWithBias(boolean transA, boolean transB, int m, int n, int k, int lda, int ldb, int ldc,
                                    float alpha, long a, long b, long biasStride, long bias, long c, int type) {
        if (m == 0 || n == 0 || k == 0 || biasStride != 1) {
            return false;
        }
        startBlas();
        synchronized (this) {
            return gpu.gemmBias(ColumnMajorGemm.ofRowMajor(transA, transB, m, n, k, lda, ldb, ldc), alpha, a, b, bias,
                    c, type);
        }
    }

    /** @return whether products with a bias run on cuBLASLt (known from the first product on; false on {@code sim}) */
    boolean usesCublasLt() {
        return gpu instanceof DriverQueue q && q.cublasLtLoaded();
    }

    /** {@code cublasGemmStridedBatchedEx} with A, B and C of one CUDA type, float32 compute. */
    private void stridedBatched(int type, int batch, boolean transA, boolean transB, int m, int n, int k, float alpha,
                                long a, int lda, long strideA, long b, int ldb, long strideB, float beta, long c,
                                int ldc, long strideC) {
        if (batch == 0 || m == 0 || n == 0) {
            return;
        }
        startBlas();
        synchronized (this) {
            gpu.gemmBatched(ColumnMajorGemm.ofRowMajor(transA, transB, m, n, k, lda, ldb, ldc), alpha,
                    a, strideA, b, strideB, beta, c, strideC, batch, type);
        }
    }

    // ------------------------------------------------------------------------------------------------ element-wise

    @Override
    public void add(long n, MemorySegment a, long aOff, MemorySegment b, long bOff, MemorySegment out, long outOff) {
        elementwise(CudaKernelTable.ADD, n, ptr(a, aOff), ptr(b, bOff), ptr(out, outOff), n);
    }

    @Override
    public void sub(long n, MemorySegment a, long aOff, MemorySegment b, long bOff, MemorySegment out, long outOff) {
        elementwise(CudaKernelTable.SUB, n, ptr(a, aOff), ptr(b, bOff), ptr(out, outOff), n);
    }

    @Override
    public void mul(long n, MemorySegment a, long aOff, MemorySegment b, long bOff, MemorySegment out, long outOff) {
        elementwise(CudaKernelTable.MUL, n, ptr(a, aOff), ptr(b, bOff), ptr(out, outOff), n);
    }

    @Override
    public void div(long n, MemorySegment a, long aOff, MemorySegment b, long bOff, MemorySegment out, long outOff) {
        elementwise(CudaKernelTable.DIV, n, ptr(a, aOff), ptr(b, bOff), ptr(out, outOff), n);
    }

    @Override
    public void axpy(long n, float alpha, MemorySegment x, long xOff, MemorySegment y, long yOff) {
        elementwise8(CudaKernelTable.AXPY, n, alpha, ptr(x, xOff), ptr(y, yOff), n);
    }

    @Override
    public void scale(long n, float s, MemorySegment x, long xOff, MemorySegment out, long outOff) {
        elementwise(CudaKernelTable.SCALE, n, s, ptr(x, xOff), ptr(out, outOff), n);
    }

    @Override
    public void addScalar(long n, float s, MemorySegment x, long xOff, MemorySegment out, long outOff) {
        elementwise(CudaKernelTable.ADD_SCALAR, n, s, ptr(x, xOff), ptr(out, outOff), n);
    }

    @Override
    public void fill(long n, float v, MemorySegment out, long outOff) {
        elementwise(CudaKernelTable.FILL, n, v, ptr(out, outOff), n);
    }

    /** Device-to-device on the stream; partially overlapping ranges go through a temporary block (memmove). */
    @Override
    public void copy(long n, MemorySegment src, long srcOff, MemorySegment dst, long dstOff) {
        copyBytes(n * Float.BYTES, src, srcOff * Float.BYTES, dst, dstOff * Float.BYTES);
    }

    /** {@code cuMemsetD8Async} on the stream. */
    @Override
    public void fillBytes(long bytes, byte value, MemorySegment out, long byteOff) {
        if (bytes > 0) {
            gpu.fill(out.address() + byteOff, bytes, value, stream);
        }
    }

    /** {@code cuMemcpyDtoDAsync} on the stream; partially overlapping ranges go through a temporary block. */
    @Override
    public void copyBytes(long bytes, MemorySegment src, long srcByteOff, MemorySegment dst, long dstByteOff) {
        long s = src.address() + srcByteOff;
        long d = dst.address() + dstByteOff;
        if (bytes == 0 || s == d) {
            return;
        }
        if (s + bytes <= d || d + bytes <= s) {
            gpu.copyDeviceToDevice(s, d, bytes, stream);
            return;
        }
        long tmp = allocator.malloc(bytes, stream);
        try {
            gpu.copyDeviceToDevice(s, tmp, bytes, stream);
            gpu.copyDeviceToDevice(tmp, d, bytes, stream);
        } finally {
            allocator.free(tmp);
        }
    }

    /** {@code cuMemcpyHtoDAsync} on the stream (pageable memory is staged by the driver before it returns). */
    @Override
    public void copyFromHost(long bytes, MemorySegment src, long srcByteOff, MemorySegment dst, long dstByteOff) {
        if (bytes > 0) {
            gpu.copyFromHost(src.asSlice(srcByteOff, bytes), dst.address() + dstByteOff, stream);
        }
    }

    @Override
    public void neg(long n, MemorySegment x, long xOff, MemorySegment out, long outOff) {
        elementwise(CudaKernelTable.NEG, n, ptr(x, xOff), ptr(out, outOff), n);
    }

    @Override
    public void exp(long n, MemorySegment x, long xOff, MemorySegment out, long outOff) {
        elementwise(CudaKernelTable.EXP, n, ptr(x, xOff), ptr(out, outOff), n);
    }

    @Override
    public void log(long n, MemorySegment x, long xOff, MemorySegment out, long outOff) {
        elementwise(CudaKernelTable.LOG, n, ptr(x, xOff), ptr(out, outOff), n);
    }

    @Override
    public void sqrt(long n, MemorySegment x, long xOff, MemorySegment out, long outOff) {
        elementwise(CudaKernelTable.SQRT, n, ptr(x, xOff), ptr(out, outOff), n);
    }

    @Override
    public void tanh(long n, MemorySegment x, long xOff, MemorySegment out, long outOff) {
        elementwise(CudaKernelTable.TANH, n, ptr(x, xOff), ptr(out, outOff), n);
    }

    @Override
    public void sigmoid(long n, MemorySegment x, long xOff, MemorySegment out, long outOff) {
        elementwise(CudaKernelTable.SIGMOID, n, ptr(x, xOff), ptr(out, outOff), n);
    }

    @Override
    public void relu(long n, MemorySegment x, long xOff, MemorySegment out, long outOff) {
        elementwise(CudaKernelTable.RELU, n, ptr(x, xOff), ptr(out, outOff), n);
    }

    @Override
    public void reluBackward(long n, MemorySegment dy, long dyOff, MemorySegment x, long xOff, MemorySegment dx, long dxOff) {
        elementwise(CudaKernelTable.RELU_BACKWARD, n, ptr(dy, dyOff), ptr(x, xOff), ptr(dx, dxOff), n);
    }

    @Override
    public void gelu(long n, MemorySegment x, long xOff, MemorySegment out, long outOff) {
        elementwise(CudaKernelTable.GELU, n, ptr(x, xOff), ptr(out, outOff), n);
    }

    @Override
    public void geluBackward(long n, MemorySegment dy, long dyOff, MemorySegment x, long xOff, MemorySegment dx, long dxOff) {
        elementwise(CudaKernelTable.GELU_BACKWARD, n, ptr(dy, dyOff), ptr(x, xOff), ptr(dx, dxOff), n);
    }

    // ------------------------------------------------------------------------------------------------ reductions

    /** Two launches (partials, then their total), then the one float copied back after the stream is done. */
    private float reduce(int op, long n, long x, long y) {
        if (n == 0) {
            return op == 1 ? Float.NEGATIVE_INFINITY : 0f;
        }
        LaunchConfig first = LaunchConfig.reductionPartial(n);
        long buf = allocator.malloc((first.gridX() + 1L) * Float.BYTES, stream);
        try {
            long result = buf + (long) first.gridX() * Float.BYTES;
            gpu.launch(CudaKernelTable.REDUCE_PARTIAL, first, stream, op, x, y, buf, n);
            gpu.launch(CudaKernelTable.REDUCE_PARTIAL, LaunchConfig.reductionFinal(), stream, op == 1 ? 1 : 0,
                    buf, 0L, result, (long) first.gridX());
            return gpu.readFloat(result, stream);
        } finally {
            allocator.free(buf);
        }
    }

    @Override
    public float sum(long n, MemorySegment x, long xOff) {
        return reduce(0, n, ptr(x, xOff), 0L);
    }

    @Override
    public float max(long n, MemorySegment x, long xOff) {
        return reduce(1, n, ptr(x, xOff), 0L);
    }

    @Override
    public float sumOfSquares(long n, MemorySegment x, long xOff) {
        return reduce(2, n, ptr(x, xOff), 0L);
    }

    @Override
    public float dot(long n, MemorySegment x, long xOff, MemorySegment y, long yOff) {
        return reduce(3, n, ptr(x, xOff), ptr(y, yOff));
    }

    @Override
    public boolean anyNonFinite(long n, MemorySegment x, long xOff) {
        return reduce(4, n, ptr(x, xOff), 0L) > 0;
    }

    // ------------------------------------------------------------------------------------------------ rows

    /** One block per row: {@code (in, out, rows, cols)} or, backward, {@code (y, dy, dx, rows, cols)}. */
    private void rowKernel(CudaKernel k, int rows, int cols, Object... ptrs) {
        Object[] args = Arrays.copyOf(ptrs, ptrs.length + 2);
        args[ptrs.length] = rows;
        args[ptrs.length + 1] = cols;
        gpu.launch(k, LaunchConfig.rows(rows, cols), stream, args);
    }

    @Override
    public void softmaxRows(int rows, int cols, MemorySegment x, long xOff, MemorySegment out, long outOff) {
        rowKernel(CudaKernelTable.SOFTMAX_ROWS, rows, cols, ptr(x, xOff), ptr(out, outOff));
    }

    @Override
    public void logSoftmaxRows(int rows, int cols, MemorySegment x, long xOff, MemorySegment out, long outOff) {
        rowKernel(CudaKernelTable.LOG_SOFTMAX_ROWS, rows, cols, ptr(x, xOff), ptr(out, outOff));
    }

    @Override
    public void softmaxBackwardRows(int rows, int cols, MemorySegment y, long yOff, MemorySegment dy, long dyOff,
                                    MemorySegment dx, long dxOff) {
        rowKernel(CudaKernelTable.SOFTMAX_BACKWARD_ROWS, rows, cols, ptr(y, yOff), ptr(dy, dyOff), ptr(dx, dxOff));
    }

    @Override
    public void logSoftmaxBackwardRows(int rows, int cols, MemorySegment y, long yOff, MemorySegment dy, long dyOff,
                                       MemorySegment dx, long dxOff) {
        rowKernel(CudaKernelTable.LOG_SOFTMAX_BACKWARD_ROWS, rows, cols, ptr(y, yOff), ptr(dy, dyOff), ptr(dx, dxOff));
    }

    @Override
    public void layerNormRows(int rows, int cols, MemorySegment x, long xOff, MemorySegment gamma, long gammaOff,
                              MemorySegment beta, long betaOff, float eps, MemorySegment out, long outOff,
                              MemorySegment mean, long meanOff, MemorySegment rstd, long rstdOff) {
        gpu.launch(CudaKernelTable.LAYER_NORM_ROWS, LaunchConfig.rows(rows, cols), stream, ptr(x, xOff),
                ptrOrNull(gamma, gammaOff), ptrOrNull(beta, betaOff), eps, ptr(out, outOff), ptrOrNull(mean, meanOff),
                ptrOrNull(rstd, rstdOff), rows, cols);
    }

    @Override
    public void layerNormBackwardRows(int rows, int cols, MemorySegment dy, long dyOff, MemorySegment x, long xOff,
                                      MemorySegment mean, long meanOff, MemorySegment rstd, long rstdOff,
                                      MemorySegment gamma, long gammaOff, MemorySegment dx, long dxOff,
                                      MemorySegment dgamma, long dgammaOff, MemorySegment dbeta, long dbetaOff) {
        if (dx != null) {
            gpu.launch(CudaKernelTable.LAYER_NORM_BACKWARD_ROWS, LaunchConfig.rows(rows, cols), stream,
                    ptr(dy, dyOff), ptr(x, xOff), ptr(mean, meanOff), ptr(rstd, rstdOff), ptrOrNull(gamma, gammaOff),
                    ptr(dx, dxOff), rows, cols);
        }
        if ((dgamma != null || dbeta != null) && cols > 0) {
            layerNormParamGrads(ptr(dy, dyOff), ptr(x, xOff), ptr(mean, meanOff), ptr(rstd, rstdOff),
                    ptrOrNull(dgamma, dgammaOff), ptrOrNull(dbeta, dbetaOff), rows, cols);
        }
    }

    /**
     * dgamma and dbeta (either address may be 0) as column sums over the rows: one launch when the rows fit one
     * chunk of {@link #SUM_ROWS_PER_THREAD} rows a thread, else a launch writing a partial sum per chunk and a sum over
     * those: one launch for both outputs (their partial sums side by side, the sums written to each), where the
     * chunks fit one block's (rows up to {@code 256 * 256}), else {@link #sumColumns} for each.
     */
    private void layerNormParamGrads(long dy, long x, long mean, long rstd, long dgamma, long dbeta, int rows,
                                     int cols) {
        int chunk = SUM_ROWS_PER_THREAD * (LaunchConfig.BLOCK / SUM_COLUMNS);
        int chunks = Math.max(1, (rows + chunk - 1) / chunk);
        LaunchConfig config = LaunchConfig.columnSums(Math.multiplyExact((cols + SUM_COLUMNS - 1) / SUM_COLUMNS,
                chunks), 1, 2);
        if (chunks == 1) {
            gpu.launch(CudaKernelTable.LAYER_NORM_PARAM_GRADS, config, stream, dy, x, mean, rstd, dgamma, dbeta, rows,
                    cols, chunk);
            return;
        }
        // the partial sums of the outputs asked for, side by side in one block: [outputs, chunks, cols]
        long bytes = (long) chunks * cols * Float.BYTES;
        long partial = allocator.malloc((dgamma != 0 && dbeta != 0 ? 2 : 1) * bytes, stream);
        try {
            long pg = dgamma == 0 ? 0 : partial;
            long pb = dbeta == 0 ? 0 : dgamma == 0 ? partial : partial + bytes;
            gpu.launch(CudaKernelTable.LAYER_NORM_PARAM_GRADS, config, stream, dy, x, mean, rstd, pg, pb, rows, cols,
                    chunk);
            if (pg != 0 && pb != 0 && chunks <= chunk) {   // both summed by one launch, each into its output
                LaunchConfig sum = LaunchConfig.columnSums((cols + SUM_COLUMNS - 1) / SUM_COLUMNS, 2, 1);
                launchSumDim(-1, sum, partial, dgamma, -1, (dbeta - dgamma) / Float.BYTES, 2, chunks, cols, chunk);
                return;
            }
            if (pg != 0) {
                sumColumns(-1, pg, dgamma, -1, 1, chunks, cols);
            }
            if (pb != 0) {
                sumColumns(-1, pb, dbeta, -1, 1, chunks, cols);
            }
        } finally {
            allocator.free(partial);
        }
    }

    // ------------------------------------------------------------------------------------------------ conversions

    @Override
    public void floatToFp16(long n, MemorySegment src, long srcOff, MemorySegment dst, long dstOff) {
        floatTo16(n, ptr(src, srcOff), ptr16(dst, dstOff), false);
    }

    @Override
    public void floatToBf16(long n, MemorySegment src, long srcOff, MemorySegment dst, long dstOff) {
        floatTo16(n, ptr(src, srcOff), ptr16(dst, dstOff), true);
    }

    @Override
    public void fp16ToFloat(long n, MemorySegment src, long srcOff, MemorySegment dst, long dstOff) {
        floatFrom16(n, ptr16(src, srcOff), ptr(dst, dstOff), false);
    }

    @Override
    public void bf16ToFloat(long n, MemorySegment src, long srcOff, MemorySegment dst, long dstOff) {
        floatFrom16(n, ptr16(src, srcOff), ptr(dst, dstOff), true);
    }

    @Override
    public void unary16(int op, int type, long n, MemorySegment x, long xOff, MemorySegment out, long outOff) {
        elementwise8(CudaKernelTable.UNARY16, n, op, type, ptr16(x, xOff), ptr16(out, outOff), n);
    }

    @Override
    public void binary16(int op, int type, int d0, int d1, int d2, int d3, MemorySegment a, long aOff, long as0,
                         long as1, long as2, long as3, MemorySegment b, long bOff, long bs0, long bs1, long bs2,
                         long bs3, MemorySegment out, long outOff) {
        Dims4 d = Dims4.of(new int[] {d0, d1, d2, d3}, new long[] {as0, as1, as2, as3}, new long[] {bs0, bs1, bs2, bs3});
        broadcast(CudaKernelTable.BINARY16_BCAST4, d, op, type, ptr16(a, aOff), ptr16(b, bOff),
                ptr16(out, outOff), d.numel(), d.extent(0), d.extent(1), d.extent(2), d.extent(3), d.stride(0, 0),
                d.stride(0, 1), d.stride(0, 2), d.stride(0, 3), d.stride(1, 0), d.stride(1, 1), d.stride(1, 2),
                d.stride(1, 3));
    }

    @Override
    public void binaryMixed(int op, int type, int half16, int d0, int d1, int d2, int d3, MemorySegment a, long aOff,
                            long as0, long as1, long as2, long as3, MemorySegment b, long bOff, long bs0, long bs1,
                            long bs2, long bs3, MemorySegment out, long outOff) {
        Dims4 d = Dims4.of(new int[] {d0, d1, d2, d3}, new long[] {as0, as1, as2, as3}, new long[] {bs0, bs1, bs2, bs3});
        broadcast(CudaKernelTable.BINARY_MIXED_BCAST4, d, op, type, half16,
                half16 == 0 ? ptr16(a, aOff) : ptr(a, aOff), half16 == 1 ? ptr16(b, bOff) : ptr(b, bOff),
                ptr(out, outOff), d.numel(), d.extent(0), d.extent(1), d.extent(2), d.extent(3), d.stride(0, 0),
                d.stride(0, 1), d.stride(0, 2), d.stride(0, 3), d.stride(1, 0), d.stride(1, 1), d.stride(1, 2),
                d.stride(1, 3));
    }

    @Override
    public void pointwiseBackward16(int op, int type, long n, MemorySegment dy, long dyOff, MemorySegment x,
                                    long xOff, MemorySegment dx, long dxOff) {
        elementwise8(CudaKernelTable.POINTWISE_BACKWARD16, n, op, type, ptr16(dy, dyOff), ptr16(x, xOff),
                ptr16(dx, dxOff), n);
    }

    private static long ptr16(MemorySegment seg, long off) {
        return seg.address() + off * Short.BYTES;
    }

    // ------------------------------------------------------------------------------------------------ beyond Kernels

    /**
     * Converts {@code n} floats to 16-bit values (round to nearest even, as {@code io.vram4j.compute.Half}).
     *
     * @param src device address of the floats
     * @param dst device address of the 16-bit values
     * @param bf16 true for bfloat16, false for float16
     */
    public void floatTo16(long n, long src, long dst, boolean bf16) {
        elementwise8(bf16 ? CudaKernelTable.F32_TO_BF16 : CudaKernelTable.F32_TO_F16, n, src, dst, n);
    }

    /** Converts {@code n} 16-bit values (bfloat16 when {@code bf16}) at device address {@code src} to floats at {@code dst}. */
    public void floatFrom16(long n, long src, long dst, boolean bf16) {
        elementwise8(bf16 ? CudaKernelTable.BF16_TO_F32 : CudaKernelTable.F16_TO_F32, n, src, dst, n);
    }

    /**
     * Dropout with the mask the CPU runtime draws for the same seed (element {@code i} kept when its counter-based
     * uniform is at least {@code p}): {@code out = keep ? x * scale : 0}, {@code mask} one byte per element.
     */
    public void dropout(long n, long x, long out, long mask, float p, float scale, long seed) {
        elementwise(CudaKernelTable.DROPOUT, n, x, out, mask, n, p, scale, seed);
    }

    /**
     * Embedding gather: row {@code idx[i]} of a {@code rows x cols} float table for each of {@code count} int64
     * indices. An index out of range leaves its row unwritten and sets the int at {@code bad} to 1.
     */
    public void embedding(long count, int cols, long rows, long weight, long idx, long out, long bad) {
        elementwise(CudaKernelTable.EMBEDDING, count * cols, weight, idx, out, count, cols, rows, bad);
    }

    /**
     * Embedding backward, reproducible: row {@code r} of {@code dweight} ({@code rows x cols}, every row written) is
     * 0 plus the rows {@code i} of {@code g} with {@code idx[i] == r}, added in index order (the CPU kernels' bits;
     * PyTorch, which sorts the indices, also sums each row in a fixed order). A counting sort of the positions by row
     * (a zero fill and three launches over int workspaces from the caching allocator: counts, offsets and cursors of
     * the rows, the positions listed by row), then one launch summing each row's list. An index outside
     * {@code [0, rows)} adds nothing.
     *
     * @param g device address of {@code count x cols} float32 gradients of the gathered rows
     * @param idx device address of {@code count} int64 indices
     * @param dweight device address of the {@code rows x cols} float32 result
     * @throws IllegalArgumentException for {@code count} or {@code rows} beyond the kernels' int positions and offsets
     *     (2^31 - 1)
     */
    public void embeddingBackward(long count, long rows, int cols, long g, long idx, long dweight) {
        if (rows * cols == 0) {
            return;
        }
        if (count > Integer.MAX_VALUE || rows >= Integer.MAX_VALUE) {
            throw new IllegalArgumentException("embeddingBackward: " + count + " indices into " + rows
                    + " rows exceed the int positions and offsets of the kernels");
        }
        long rowInts = (rows + 1) * Integer.BYTES;
        long counts = allocator.malloc(rowInts, stream);
        long offsets = 0;
        long cursor = 0;
        long order = 0;
        try {
            offsets = allocator.malloc(rowInts, stream);
            cursor = allocator.malloc(rowInts, stream);
            order = allocator.malloc(Math.max(1, count) * Integer.BYTES, stream);
            gpu.fill(counts, rowInts, (byte) 0, stream);
            if (count > 0) {
                elementwise(CudaKernelTable.EMBEDDING_COUNT, count, idx, counts, count, rows);
            }
            LaunchConfig one = new LaunchConfig(1, 1, LaunchConfig.BLOCK, LaunchConfig.BLOCK * Long.BYTES);
            gpu.launch(CudaKernelTable.EMBEDDING_OFFSETS, one, stream, counts, offsets, cursor, (int) rows);
            if (count > 0) {
                gpu.launch(CudaKernelTable.EMBEDDING_PLACE, one, stream, idx, cursor, order, count, rows);
            }
            elementwise(CudaKernelTable.EMBEDDING_ROW_SUMS, rows * cols, g, offsets, order, dweight, rows, cols);
        } finally {
            for (long p : new long[] {order, cursor, offsets, counts}) {
                if (p != 0) {
                    allocator.free(p);
                }
            }
        }
    }

    /** Dropout backward: {@code dx = mask ? dy * scale : 0} over {@code n} elements. */
    public void dropoutBackward(long n, long dy, long mask, long dx, float scale) {
        elementwise(CudaKernelTable.DROPOUT_BACKWARD, n, dy, mask, dx, n, scale);
    }

    /**
     * {@code out = a op b} for a contiguous output of up to 4 dimensions, {@code a} and {@code b} read with their own
     * element strides (0 where broadcast).
     *
     * @param op 0 add, 1 sub, 2 mul, 3 div
     * @param shape the output's extents, at most 4
     * @param aStrides {@code a}'s strides for the output's shape, in elements
     * @param bStrides {@code b}'s likewise
     */
    public void binaryBroadcast(int op, long a, long[] aStrides, long b, long[] bStrides, long out, int[] shape) {
        Dims4 d = Dims4.of(shape, aStrides, bStrides);
        broadcast(CudaKernelTable.BINARY_BCAST4, d, op, a, b, out, d.numel(), d.extent(0), d.extent(1),
                d.extent(2), d.extent(3), d.stride(0, 0), d.stride(0, 1), d.stride(0, 2), d.stride(0, 3),
                d.stride(1, 0), d.stride(1, 1), d.stride(1, 2), d.stride(1, 3));
    }

    /** Gathers a strided float view of up to 4 dimensions at {@code src} into contiguous memory at {@code dst}. */
    public void gather(long src, long[] strides, long dst, int[] shape) {
        Dims4 d = Dims4.of(shape, strides);
        elementwise(CudaKernelTable.GATHER4, d.numel(), src, dst, d.numel(), d.extent(0), d.extent(1), d.extent(2),
                d.extent(3), d.stride(0, 0), d.stride(0, 1), d.stride(0, 2), d.stride(0, 3));
    }

    /** Copies {@code mats} matrices of {@code t x s} floats, writing {@code fill} where column &gt; row. */
    public void maskUpper(long mats, int t, int s, long x, long out, float fill) {
        long n = mats * t * s;
        elementwise(CudaKernelTable.MASK_UPPER, n, x, out, n, t, s, fill);
    }

    /**
     * One SGD step for a parameter group in one launch (as {@code optim.SGD}): {@code params}, {@code grads},
     * {@code bufs} and {@code sizes} are device arrays of {@code count} 64-bit entries (pointers and element counts).
     *
     * @param bufs the momentum buffers, or 0 when {@code momentum == 0}
     * @param largest the largest element count of the group (sizes the grid)
     * @param first whether the buffers are initialized by this step
     */
    public void sgd(long params, long grads, long bufs, long sizes, int count, long largest, float lr, float momentum,
                    float weightDecay, boolean nesterov, boolean first) {
        gpu.launch(CudaKernelTable.SGD_MULTI, LaunchConfig.perTensor(largest, count), stream, params, grads, bufs,
                sizes, count, lr, momentum, weightDecay, nesterov ? 1 : 0, first ? 1 : 0);
    }

    /**
     * One AdamW step for a parameter group in one launch (as {@code optim.AdamW}), arrays as {@link #sgd}.
     *
     * @param decay {@code 1 - lr * weightDecay}
     * @param stepSize {@code lr / (1 - beta1^t)}
     * @param bc2Sqrt {@code sqrt(1 - beta2^t)}
     */
    public void adamw(long params, long grads, long ms, long vs, long sizes, int count, long largest, float beta1,
                      float beta2, float eps, float decay, float stepSize, float bc2Sqrt) {
        gpu.launch(CudaKernelTable.ADAMW_MULTI, LaunchConfig.perTensor(largest, count), stream, params, grads, ms,
                vs, sizes, count, beta1, beta2, eps, decay, stepSize, bc2Sqrt);
    }

    /**
     * NLL loss over {@code n x c} log-probabilities and int64 targets: the mean over targets other than
     * {@code ignoreIndex} into the float at {@code out}, their number into the int at {@code count}; a target out
     * of range sets the int at {@code bad} to 1.
     */
    public void nllLoss(long logp, long targets, long out, long count, int n, int c, long ignoreIndex, long bad) {
        gpu.launch(CudaKernelTable.NLL_LOSS, LaunchConfig.singleBlock(), stream, logp, targets, out, count, n, c,
                ignoreIndex, bad);
    }

    /** NLL loss backward into {@code dlogp} (zeroed first): {@code -g / count} at each kept target. */
    public void nllLossBackward(long g, long targets, long dlogp, int n, int c, long ignoreIndex, long count) {
        elementwise(CudaKernelTable.NLL_LOSS_BACKWARD, n, g, targets, dlogp, n, c, ignoreIndex, count);
    }

    // ------------------------------------------------------------------------------------------------ device paths

    /** The gather kernel when {@code dst} is contiguous, else the strided copy kernel. */
    @Override
    public void copy4(int d0, int d1, int d2, int d3, MemorySegment src, long srcOff, long s0, long s1, long s2,
                      long s3, MemorySegment dst, long dstOff, long t0, long t1, long t2, long t3) {
        long[] ss = {s0, s1, s2, s3};
        int[] shape = {d0, d1, d2, d3};
        if ((d3 <= 1 || t3 == 1) && (d2 <= 1 || t2 == d3) && (d1 <= 1 || t1 == (long) d2 * d3)
                && (d0 <= 1 || t0 == (long) d1 * d2 * d3)) {
            gather(ptr(src, srcOff), ss, ptr(dst, dstOff), shape);
            return;
        }
        Dims4 d = Dims4.of(shape, ss, new long[] {t0, t1, t2, t3});
        elementwise(CudaKernelTable.COPY4, d.numel(), ptr(src, srcOff), ptr(dst, dstOff), d.numel(), d.extent(0),
                d.extent(1), d.extent(2), d.extent(3), d.stride(0, 0), d.stride(0, 1), d.stride(0, 2), d.stride(0, 3),
                d.stride(1, 0), d.stride(1, 1), d.stride(1, 2), d.stride(1, 3));
    }

    @Override
    public void copy16(int d0, int d1, int d2, int d3, MemorySegment src, long srcOff, long s0, long s1, long s2,
                       long s3, MemorySegment dst, long dstOff, long t0, long t1, long t2, long t3) {
        Dims4 d = Dims4.of(new int[] {d0, d1, d2, d3}, new long[] {s0, s1, s2, s3}, new long[] {t0, t1, t2, t3});
        elementwise(CudaKernelTable.COPY4_16, d.numel(), ptr16(src, srcOff), ptr16(dst, dstOff), d.numel(),
                d.extent(0), d.extent(1), d.extent(2), d.extent(3), d.stride(0, 0), d.stride(0, 1), d.stride(0, 2),
                d.stride(0, 3), d.stride(1, 0), d.stride(1, 1), d.stride(1, 2), d.stride(1, 3));
    }

    @Override
    public void binary4(int op, int d0, int d1, int d2, int d3, MemorySegment a, long aOff, long as0, long as1,
                        long as2, long as3, MemorySegment b, long bOff, long bs0, long bs1, long bs2, long bs3,
                        MemorySegment out, long outOff) {
        binaryBroadcast(op, ptr(a, aOff), new long[] {as0, as1, as2, as3}, ptr(b, bOff), new long[] {bs0, bs1, bs2, bs3},
                ptr(out, outOff), new int[] {d0, d1, d2, d3});
    }

    /**
     * Columns a block of the column sums takes (one warp's coalesced row segment; a row sum, inner 1, takes 1): the
     * width {@code v4j_sum_dim_f32}, {@code v4j_sum_dim16} and {@code v4j_layer_norm_param_grads_f32} assume.
     */
    static final int SUM_COLUMNS = 32;
    /** Rows each thread of a column sum adds before the tree: a block's chunk is this times its lanes. */
    static final int SUM_ROWS_PER_THREAD = 32;

    /**
     * In parallel and in a fixed order (a tree over each block's lanes, then over chunks of rows), not the host
     * loop's order: the bits can differ from the CPU kernels' in the last places, and a repeated call gives the same
     * ones (as PyTorch's deterministic reductions).
     */
    @Override
    public void sumDim(int outer, int n, int inner, MemorySegment x, long xOff, MemorySegment out, long outOff) {
        sumColumns(-1, ptr(x, xOff), ptr(out, outOff), -1, outer, n, inner);
    }

    /** As {@link #sumDim}, reading the 16-bit values widened ({@code v4j_sum_dim16}); partial sums are float32. */
    @Override
    public void sumDim16(int type, int outer, int n, int inner, MemorySegment x, long xOff, MemorySegment out,
                         long outOff) {
        sumColumns(type, ptr16(x, xOff), ptr(out, outOff), -1, outer, n, inner);
    }

    /** As {@link #sumDim16}, the last launch rounding each sum once into the 16-bit {@code out}. */
    @Override
    public void sumDimTo16(int type, int outer, int n, int inner, MemorySegment x, long xOff, MemorySegment out,
                           long outOff) {
        sumColumns(type, ptr16(x, xOff), ptr16(out, outOff), type, outer, n, inner);
    }

    /**
     * {@code v4j_sum_dim_f32} (or, for a 16-bit {@code type} of x, {@code v4j_sum_dim16}; -1 for float32) over
     * {@code [outer, n, inner]} at {@code x} into {@code out}, floats or ({@code outType} 0 or 1) 16-bit values: one
     * launch when the rows fit one chunk, else a launch writing {@code [chunks, outer, inner]} float32 partial sums
     * (from the caching allocator) and this again over them.
     */
    private void sumColumns(int type, long x, long out, int outType, int outer, int n, int inner) {
        if ((long) outer * inner == 0) {
            return;
        }
        int width = inner == 1 ? 1 : SUM_COLUMNS;
        int chunk = SUM_ROWS_PER_THREAD * (LaunchConfig.BLOCK / width);
        int chunks = Math.max(1, (int) (((long) n + chunk - 1) / chunk));
        LaunchConfig config = LaunchConfig.columnSums(Math.multiplyExact((inner + width - 1) / width, chunks), outer,
                1);
        if (chunks == 1) {
            launchSumDim(type, config, x, out, outType, inner, outer, n, inner, chunk);
            return;
        }
        long partial = allocator.malloc((long) chunks * outer * inner * Float.BYTES, stream);
        try {
            launchSumDim(type, config, x, partial, -1, inner, outer, n, inner, chunk);
            sumColumns(-1, partial, out, outType, 1, chunks, Math.multiplyExact(outer, inner));
        } finally {
            allocator.free(partial);
        }
    }

    /** One launch of a sum kernel; problem o's sums go {@code outStride} elements of out's type after o - 1's. */
    private void launchSumDim(int type, LaunchConfig config, long x, long out, int outType, long outStride, int outer,
                              int n, int inner, int chunk) {
        if (type < 0) {
            gpu.launch(CudaKernelTable.SUM_DIM, config, stream, x, out, outer, n, inner, chunk, outType, outStride);
        } else {
            gpu.launch(CudaKernelTable.SUM_DIM16, config, stream, type, x, out, outer, n, inner, chunk, outType,
                    outStride);
        }
    }

    @Override
    public void maxDim(int outer, int n, int inner, MemorySegment x, long xOff, MemorySegment values, long valuesOff,
                       MemorySegment indices, long indicesOff) {
        elementwise(CudaKernelTable.MAX_DIM, (long) outer * inner, ptr(x, xOff), ptrOrNull(values, valuesOff),
                indices.address() + indicesOff * Long.BYTES, outer, n, inner);
    }

    @Override
    public void dropout(long n, float p, float scale, long seed, MemorySegment x, long xOff, MemorySegment out,
                        long outOff, MemorySegment mask, long maskOff) {
        dropout(n, ptr(x, xOff), ptr(out, outOff), mask.address() + maskOff, p, scale, seed);
    }

    @Override
    public void dropoutBackward(long n, float scale, MemorySegment dy, long dyOff, MemorySegment mask, long maskOff,
                                MemorySegment dx, long dxOff) {
        dropoutBackward(n, ptr(dy, dyOff), mask.address() + maskOff, ptr(dx, dxOff), scale);
    }

    /** The loss and the kept-target count into a temporary (8 bytes, freed stream-ordered); a bad target traps. */
    private long nllInto(int n, int c, long ignoreIndex, long logp, long targets) {
        long tmp = allocator.malloc(2L * Float.BYTES, stream);
        nllLoss(logp, targets, tmp, tmp + Float.BYTES, n, c, ignoreIndex, 0L);
        return tmp;
    }

    @Override
    public void nllLoss(int n, int c, long ignoreIndex, MemorySegment logp, long logpOff, MemorySegment targets,
                        long targetsOff, MemorySegment out, long outOff) {
        long tmp = nllInto(n, c, ignoreIndex, ptr(logp, logpOff), targets.address() + targetsOff * Long.BYTES);
        try {
            elementwise(CudaKernelTable.SCALE, 1, 1f, tmp, ptr(out, outOff), 1L);
        } finally {
            allocator.free(tmp);
        }
    }

    /** Three launches: the kept-target count (the loss kernel into a temporary), zeros, the gradient. */
    @Override
    public void nllLossBackward(int n, int c, long ignoreIndex, MemorySegment g, long gOff, MemorySegment targets,
                                long targetsOff, MemorySegment dlogp, long dlogpOff) {
        long t = targets.address() + targetsOff * Long.BYTES;
        long tmp = nllInto(n, c, ignoreIndex, ptr(dlogp, dlogpOff), t);   // dlogp is read before it is overwritten
        try {
            fill((long) n * c, 0f, dlogp, dlogpOff);
            nllLossBackward(ptr(g, gOff), t, ptr(dlogp, dlogpOff), n, c, ignoreIndex, tmp + Float.BYTES);
        } finally {
            allocator.free(tmp);
        }
    }

    @Override
    public void embedding(long count, int rows, int cols, MemorySegment weight, long weightOff, MemorySegment idx,
                          long idxOff, MemorySegment out, long outOff) {
        embedding(count, cols, rows, ptr(weight, weightOff), idx.address() + idxOff * Long.BYTES, ptr(out, outOff), 0L);
    }

    @Override
    public void embeddingBackward(long count, int rows, int cols, MemorySegment g, long gOff, MemorySegment idx,
                                  long idxOff, MemorySegment dweight, long dweightOff) {
        embeddingBackward(count, rows, cols, ptr(g, gOff), idx.address() + idxOff * Long.BYTES,
                ptr(dweight, dweightOff));
    }

    @Override
    public void maskUpper(long mats, int t, int s, float fill, MemorySegment x, long xOff, MemorySegment out,
                          long outOff) {
        maskUpper(mats, t, s, ptr(x, xOff), ptr(out, outOff), fill);
    }

    @Override
    public void iota(long n, MemorySegment out, long outOff) {
        elementwise(CudaKernelTable.IOTA, n, out.address() + outOff * Long.BYTES, n);
    }

    /**
     * Copies a fused optimizer's table (the device addresses of each list, then the sizes: 8 bytes an entry) to a
     * temporary block on the stream, from the thread's {@link HostScratch} (pageable memory, which the driver stages
     * before returning), and runs {@code launch} with the block's address; the block is freed stream-ordered.
     */
    private void withTable(int count, long[] sizes, MemorySegment[][] lists, java.util.function.LongConsumer launch) {
        long entries = (long) (lists.length + 1) * count;
        long table = allocator.malloc(entries * Long.BYTES, stream);
        try {
            MemorySegment host = HostScratch.get(entries * Long.BYTES);
            for (int l = 0; l < lists.length; l++) {
                for (int t = 0; t < count; t++) {
                    host.setAtIndex(ValueLayout.JAVA_LONG, (long) l * count + t, lists[l] == null ? 0L
                            : lists[l][t].address());
                }
            }
            MemorySegment.copy(sizes, 0, host, ValueLayout.JAVA_LONG, (long) lists.length * count * Long.BYTES, count);
            gpu.copyFromHost(host, table, stream);
            launch.accept(table);
        } finally {
            allocator.free(table);
        }
    }

    private static long largest(int count, long[] sizes) {
        long m = 0;
        for (int t = 0; t < count; t++) {
            m = Math.max(m, sizes[t]);
        }
        return m;
    }

    /** One launch for the group ({@code v4j_sgd_multi_f32}) after its pointer table is copied in. */
    @Override
    public void sgdMulti(int count, long[] sizes, MemorySegment[] params, MemorySegment[] grads, MemorySegment[] bufs,
                         float lr, float momentum, float weightDecay, boolean nesterov, boolean first) {
        if (count == 0) {
            return;
        }
        long c = count * (long) Long.BYTES;
        withTable(count, sizes, new MemorySegment[][] {params, grads, bufs}, t -> sgd(t, t + c,
                bufs == null ? 0L : t + 2 * c, t + 3 * c, count, largest(count, sizes), lr, momentum, weightDecay,
                nesterov, first));
    }

    /** One launch for the group ({@code v4j_adamw_multi_f32}) after its pointer table is copied in. */
    @Override
    public void adamwMulti(int count, long[] sizes, MemorySegment[] params, MemorySegment[] grads, MemorySegment[] ms,
                           MemorySegment[] vs, float beta1, float beta2, float eps, float decay, float stepSize,
                           float bc2Sqrt) {
        if (count == 0) {
            return;
        }
        long c = count * (long) Long.BYTES;
        withTable(count, sizes, new MemorySegment[][] {params, grads, ms, vs}, t -> adamw(t, t + c, t + 2 * c,
                t + 3 * c, t + 4 * c, count, largest(count, sizes), beta1, beta2, eps, decay, stepSize, bc2Sqrt));
    }

    // ------------------------------------------------------------------------------------------------ attention

    /** Threads per block of the attention kernels: one query (or key) row each. */
    static final int ATTENTION_BLOCK = 64;
    /** Largest tile of staged rows. */
    static final int ATTENTION_TILE = 64;
    /** Dynamic shared memory every CUDA GPU grants without opting in, in bytes. */
    static final int ATTENTION_SHARED_BYTES = 48 * 1024;

    /**
     * @return rows per staged tile at head dimension {@code d}: two tiles of {@code d} floats and two floats per
     *     row (the backward's lse and D) fit {@link #ATTENTION_SHARED_BYTES}
     * @throws IllegalArgumentException when not even one row fits (d above 6,143) or the batch exceeds the grid
     */
    static int attentionTile(int batchHeads, int d) {
        int tile = (int) Math.min(ATTENTION_TILE, ATTENTION_SHARED_BYTES / ((2L * d + 2) * Float.BYTES));
        if (tile < 1) {
            throw new IllegalArgumentException("d: a head dimension of " + d + " does not fit the fused attention "
                    + "kernels' shared memory (at most " + (ATTENTION_SHARED_BYTES / Float.BYTES / 2 - 1) + ")");
        }
        if (batchHeads > LaunchConfig.MAX_GRID_Y) {
            throw new IllegalArgumentException("batchHeads: " + batchHeads + " problems exceed one launch's gridDim.y ("
                    + LaunchConfig.MAX_GRID_Y + ")");
        }
        return tile;
    }

    /** Threads per block of the tensor-core attention kernels (four warps). */
    static final int ATTENTION_TC_BLOCK = 128;
    /** Rows a tensor-core attention block owns: queries (forward, dq) or keys (dk/dv), 16 per warp. */
    static final int ATTENTION_TC_ROWS = 64;
    /** Rows of the other operand per staged tile of the tensor-core attention kernels. */
    static final int ATTENTION_TC_TILE = 32;
    /**
     * Elements each tile row of the tensor-core attention kernels has in shared memory past its data (TC_SKEW), so
     * that a fragment's rows start in different banks.
     */
    static final int ATTENTION_TC_SKEW = 8;
    /** Largest head dimension the tensor-core attention kernels take (padded to 32 or 64 in shared memory). */
    static final int ATTENTION_TC_MAX_D = 64;

    /**
     * @return whether the 16-bit attention of head dimension {@code d} runs on tensor cores ({@code d} at most
     *     {@value #ATTENTION_TC_MAX_D}, as GPT-2's 64, unless {@link #ATTENTION_ENV} says {@code cuda-cores}); else
     *     it runs on the CUDA-core kernels
     */
    boolean attentionOnTensorCores(int d) {
        return tensorCoreAttention && d <= ATTENTION_TC_MAX_D;
    }

    /**
     * @return dynamic shared memory of one tensor-core attention launch, in bytes, at head dimension {@code d}
     *     (padded to {@code D} = 32 or 64), as the kernels lay it out, every tile row {@value #ATTENTION_TC_SKEW}
     *     elements longer than its data: the forward holds a float32 output tile (where q is staged first) and score
     *     tile and 16-bit k, v and probability tiles (the rows' maxima and sums stay in registers); each backward
     *     pass holds 16-bit tiles of its own rows (two operands), of the other operand's tile (two), a float32
     *     product tile, two 16-bit element-wise tiles, and lse and D of the query rows it sees
     */
    static int attentionTensorCoreShared(TcPass pass, int d) {
        int ldD = (d <= 32 ? 32 : 64) + ATTENTION_TC_SKEW;
        int ldT = ATTENTION_TC_TILE + ATTENTION_TC_SKEW;
        int rows = ATTENTION_TC_ROWS;
        int tile = ATTENTION_TC_TILE;
        int floats = switch (pass) {
            case FORWARD -> rows * ldD + rows * ldT + (2 * tile * ldD + rows * ldT) / 2;
            case DKDV -> (2 * rows * ldD + 2 * tile * ldD) / 2 + rows * ldT + rows * ldT + 2 * tile;
            case DQ -> (2 * rows * ldD + 2 * tile * ldD) / 2 + rows * ldT + rows * ldT + 2 * rows;
        };
        return floats * Float.BYTES;
    }

    /** The tensor-core attention's launches: the forward, then the backward's dk/dv and dq passes. */
    enum TcPass { FORWARD, DKDV, DQ }

    private static LaunchConfig attentionTensorCoreLaunch(TcPass pass, int batchHeads, int t, int d) {
        attentionTile(batchHeads, d);   // the grid's limit
        int blocks = (t + ATTENTION_TC_ROWS - 1) / ATTENTION_TC_ROWS;
        return new LaunchConfig(batchHeads == 0 ? 0 : blocks, batchHeads, ATTENTION_TC_BLOCK,
                attentionTensorCoreShared(pass, d));
    }

    private static LaunchConfig attentionLaunch(int batchHeads, int t, int sharedFloats) {
        int blocks = (t + ATTENTION_BLOCK - 1) / ATTENTION_BLOCK;
        return new LaunchConfig(batchHeads == 0 ? 0 : blocks, batchHeads, ATTENTION_BLOCK, sharedFloats * Float.BYTES);
    }

    @Override
    public void attentionForward(int batchHeads, int t, int d, float scale, boolean causal,
                                 MemorySegment q, long qOff, MemorySegment k, long kOff, MemorySegment v, long vOff,
                                 MemorySegment out, long outOff, MemorySegment lse, long lseOff) {
        long rows = (long) t * d;   // the contiguous [batchHeads, t, d] layout
        attentionForwardStrided(FLOAT32, batchHeads, 1, rows, 0, d, rows, 0, d, t, d, scale, causal, q, qOff, k, kOff,
                v, vOff, out, outOff, lse, lseOff);
    }

    @Override
    public void attentionBackward(int batchHeads, int t, int d, float scale, boolean causal,
                                  MemorySegment q, long qOff, MemorySegment k, long kOff, MemorySegment v, long vOff,
                                  MemorySegment out, long outOff, MemorySegment lse, long lseOff,
                                  MemorySegment dout, long doutOff,
                                  MemorySegment dq, long dqOff, MemorySegment dk, long dkOff,
                                  MemorySegment dv, long dvOff) {
        long rows = (long) t * d;
        attentionBackwardStrided(FLOAT32, batchHeads, 1, rows, 0, d, rows, 0, d, rows, 0, d, rows, 0, d, t, d, scale,
                causal, q, qOff, k, kOff, v, vOff, out, outOff, lse, lseOff, dout, doutOff, dq, dqOff, dk, dkOff, dv,
                dvOff);
    }

    /**
     * Head dimensions up to this take the CUDA-core attention kernels' register paths; above it their generic paths
     * accumulate in memory, which the 16-bit entries get as a float32 workspace ({@link #attentionWork}).
     */
    static final int ATTENTION_REGISTER_MAX_D = 64;

    /**
     * @return a float32 workspace of {@code copies} {@code [batchHeads, t, d]} arrays from the caching allocator for
     *     the 16-bit CUDA-core attention kernels at {@code d} above {@value #ATTENTION_REGISTER_MAX_D} (the caller
     *     frees it after the launch is queued, as the layer norm's partial sums), else 0 (none needed)
     */
    private long attentionWork(int copies, int batchHeads, int t, int d) {
        long n = (long) batchHeads * t * d;
        return d <= ATTENTION_REGISTER_MAX_D || n == 0 ? 0 : allocator.malloc(copies * n * Float.BYTES, stream);
    }

    /** The device address of element {@code off} of an attention operand of {@code type}. */
    private static long ptrOf(int type, MemorySegment seg, long off) {
        return type == FLOAT32 ? ptr(seg, off) : ptr16(seg, off);
    }

    @Override
    public void attentionForwardStrided(int type, int batchHeads, int heads, long batchStride, long headStride,
                                        long rowStride, long outBatchStride, long outHeadStride, long outRowStride,
                                        int t, int d, float scale, boolean causal, MemorySegment q, long qOff,
                                        MemorySegment k, long kOff, MemorySegment v, long vOff, MemorySegment out,
                                        long outOff, MemorySegment lse, long lseOff) {
        int c = causal ? 1 : 0;
        Object[] layouts = {heads, batchStride, headStride, rowStride, outBatchStride, outHeadStride, outRowStride};
        long pq = ptrOf(type, q, qOff);
        long pk = ptrOf(type, k, kOff);
        long pv = ptrOf(type, v, vOff);
        long po = ptrOf(type, out, outOff);
        long pl = ptr(lse, lseOff);
        if (type != FLOAT32 && attentionOnTensorCores(d)) {
            LaunchConfig config = attentionTensorCoreLaunch(TcPass.FORWARD, batchHeads, t, d);
            if (!config.isEmpty()) {
                gpu.launch(CudaKernelTable.ATTENTION_FORWARD_TC, config, stream, concat(new Object[] {type, pq, pk, pv,
                        po, pl, t, d, scale, c}, layouts));
            }
            return;
        }
        int tile = attentionTile(batchHeads, d);
        LaunchConfig config = attentionLaunch(batchHeads, t, 2 * tile * d);
        if (config.isEmpty()) {
            return;
        }
        if (type == FLOAT32) {
            gpu.launch(CudaKernelTable.ATTENTION_FORWARD, config, stream, concat(new Object[] {pq, pk, pv, po, pl, t,
                    d, scale, c, tile}, layouts));
            return;
        }
        long work = attentionWork(1, batchHeads, t, d);
        try {
            gpu.launch(CudaKernelTable.ATTENTION_FORWARD16, config, stream, concat(new Object[] {type, pq, pk, pv, po,
                    pl, work, t, d, scale, c, tile}, layouts));
        } finally {
            if (work != 0) {
                allocator.free(work);
            }
        }
    }

    @Override
    public void attentionBackwardStrided(int type, int batchHeads, int heads, long batchStride, long headStride,
                                         long rowStride, long outBatchStride, long outHeadStride, long outRowStride,
                                         long doutBatchStride, long doutHeadStride, long doutRowStride,
                                         long gradBatchStride, long gradHeadStride, long gradRowStride, int t, int d,
                                         float scale, boolean causal, MemorySegment q, long qOff, MemorySegment k,
                                         long kOff, MemorySegment v, long vOff, MemorySegment out, long outOff,
                                         MemorySegment lse, long lseOff, MemorySegment dout, long doutOff,
                                         MemorySegment dq, long dqOff, MemorySegment dk, long dkOff, MemorySegment dv,
                                         long dvOff) {
        int c = causal ? 1 : 0;
        Object[] layouts = {heads, batchStride, headStride, rowStride, outBatchStride, outHeadStride, outRowStride,
                doutBatchStride, doutHeadStride, doutRowStride, gradBatchStride, gradHeadStride, gradRowStride};
        long pq = ptrOf(type, q, qOff);
        long pk = ptrOf(type, k, kOff);
        long pv = ptrOf(type, v, vOff);
        long po = ptrOf(type, out, outOff);
        long pl = ptr(lse, lseOff);
        long pg = ptrOf(type, dout, doutOff);
        if (type != FLOAT32 && attentionOnTensorCores(d)) {
            LaunchConfig config = attentionTensorCoreLaunch(TcPass.DKDV, batchHeads, t, d);
            if (config.isEmpty()) {
                return;
            }
            // dq first: it leaves each query row's D = rowsum(dout * out) in delta, which dk/dv reads
            long delta = allocator.malloc(Math.multiplyExact((long) batchHeads, t) * Float.BYTES, stream);
            try {
                gpu.launch(CudaKernelTable.ATTENTION_BACKWARD_DQ_TC, attentionTensorCoreLaunch(TcPass.DQ, batchHeads, t,
                        d), stream, concat(new Object[] {type, pq, pk, pv, po, pl, pg, ptr16(dq, dqOff), delta, t, d,
                        scale, c}, layouts));
                gpu.launch(CudaKernelTable.ATTENTION_BACKWARD_DKDV_TC, config, stream, concat(new Object[] {type, pq,
                        pk, pv, delta, pl, pg, ptr16(dk, dkOff), ptr16(dv, dvOff), t, d, scale, c}, layouts));
            } finally {
                allocator.free(delta);
            }
            return;
        }
        int tile = attentionTile(batchHeads, d);
        LaunchConfig config = attentionLaunch(batchHeads, t, 2 * tile * d + 2 * tile);
        if (config.isEmpty()) {
            return;
        }
        LaunchConfig dqConfig = attentionLaunch(batchHeads, t, 2 * tile * d);
        if (type == FLOAT32) {
            gpu.launch(CudaKernelTable.ATTENTION_BACKWARD_DKDV, config, stream, concat(new Object[] {pq, pk, pv, po,
                    pl, pg, ptr(dk, dkOff), ptr(dv, dvOff), t, d, scale, c, tile}, layouts));
            gpu.launch(CudaKernelTable.ATTENTION_BACKWARD_DQ, dqConfig, stream, concat(new Object[] {pq, pk, pv, po,
                    pl, pg, ptr(dq, dqOff), t, d, scale, c, tile}, layouts));
            return;
        }
        long work = attentionWork(2, batchHeads, t, d);
        try {
            gpu.launch(CudaKernelTable.ATTENTION_BACKWARD_DKDV16, config, stream, concat(new Object[] {type, pq, pk,
                    pv, po, pl, pg, ptr16(dk, dkOff), ptr16(dv, dvOff), work, t, d, scale, c, tile}, layouts));
            gpu.launch(CudaKernelTable.ATTENTION_BACKWARD_DQ16, dqConfig, stream, concat(new Object[] {type, pq, pk,
                    pv, po, pl, pg, ptr16(dq, dqOff), work, t, d, scale, c, tile}, layouts));
        } finally {
            if (work != 0) {
                allocator.free(work);
            }
        }
    }

    /** The arguments of a launch: {@code head} then {@code tail}. */
    private static Object[] concat(Object[] head, Object[] tail) {
        Object[] all = Arrays.copyOf(head, head.length + tail.length);
        System.arraycopy(tail, 0, all, head.length, tail.length);
        return all;
    }

    /** Ends cuBLAS, returns its workspace to the allocator and unloads the module. Closing twice does nothing. */
    @Override
    public synchronized void close() {
        if (blasStarted) {
            blasStarted = false;
            try {
                gpu.closeBlas();
            } finally {
                if (workspace != 0) {
                    allocator.free(workspace);
                    workspace = 0;
                }
            }
        }
        gpu.close();
    }
}
