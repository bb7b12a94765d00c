package io.vram4j.compute.cuda;

import io.vram4j.device.DeviceUnavailableException;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.nio.file.Path;
import java.util.Map;

import static io.vram4j.device.NativeCalls.rethrow;
import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_FLOAT;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * cuBLAS through FFM: the library ({@link CublasLocator}) and the calls the tensor runtime makes. The constants
 * are those of the cuBLAS documentation ({@code cublas_api.h}: {@code cublasStatus_t}, {@code cublasComputeType_t},
 * {@code cublasGemmAlgo_t}) and {@code library_types.h} ({@code cudaDataType_t}); no cuBLAS header is needed to
 * build. Every {@code cublasStatus_t} is checked: an error throws {@link IllegalStateException} naming the call
 * and {@code cublasGetStatusName}.
 *
 * <p>A handle ({@link #create()}) is used by one thread at a time, as cuBLAS requires; the library object is
 * thread-safe.
 */
@SuppressWarnings("restricted")
final class Cublas {
    static final int CUBLAS_STATUS_SUCCESS = 0;
    static final int CUBLAS_STATUS_NOT_INITIALIZED = 1;
    static final int CUBLAS_STATUS_ALLOC_FAILED = 3;
    static final int CUBLAS_STATUS_INVALID_VALUE = 7;
    static final int CUBLAS_STATUS_ARCH_MISMATCH = 8;
    static final int CUBLAS_STATUS_MAPPING_ERROR = 11;
    static final int CUBLAS_STATUS_EXECUTION_FAILED = 13;
    static final int CUBLAS_STATUS_INTERNAL_ERROR = 14;
    static final int CUBLAS_STATUS_NOT_SUPPORTED = 15;
    static final int CUBLAS_STATUS_LICENSE_ERROR = 16;

    /** {@code cudaDataType_t} (library_types.h). */
    static final int CUDA_R_32F = 0;
    static final int CUDA_R_16F = 2;
    static final int CUDA_R_16BF = 14;

    /** {@code cublasComputeType_t}: float32 accumulation (on tensor cores for 16-bit inputs). */
    static final int CUBLAS_COMPUTE_32F = 68;
    /** {@code cublasComputeType_t}: float32 accumulation, float32 inputs rounded to TF32 on tensor cores. */
    static final int CUBLAS_COMPUTE_32F_FAST_TF32 = 77;
    /** {@code cublasGemmAlgo_t}: cuBLAS chooses. */
    static final int CUBLAS_GEMM_DEFAULT = -1;

    private final Path library;
    private final MethodHandle create;
    private final MethodHandle destroy;
    private final MethodHandle setStream;
    private final MethodHandle setWorkspace;
    private final MethodHandle gemmEx;
    private final MethodHandle gemmStridedBatchedEx;
    private final MethodHandle statusName;

    private Cublas(Path library, SymbolLookup lookup) {
        this.library = library;
        create = bind(lookup, "cublasCreate_v2", FunctionDescriptor.of(JAVA_INT, ADDRESS));
        destroy = bind(lookup, "cublasDestroy_v2", FunctionDescriptor.of(JAVA_INT, JAVA_LONG));
        setStream = bind(lookup, "cublasSetStream_v2", FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG));
        setWorkspace = bind(lookup, "cublasSetWorkspace_v2",
                FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG, JAVA_LONG));
        gemmEx = bind(lookup, "cublasGemmEx", FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_INT, JAVA_INT,
                JAVA_INT, JAVA_INT, JAVA_INT, ADDRESS, JAVA_LONG, JAVA_INT, JAVA_INT, JAVA_LONG, JAVA_INT, JAVA_INT,
                ADDRESS, JAVA_LONG, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT));
        gemmStridedBatchedEx = bind(lookup, "cublasGemmStridedBatchedEx", FunctionDescriptor.of(JAVA_INT, JAVA_LONG,
                JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT, ADDRESS, JAVA_LONG, JAVA_INT, JAVA_INT, JAVA_LONG,
                JAVA_LONG, JAVA_INT, JAVA_INT, JAVA_LONG, ADDRESS, JAVA_LONG, JAVA_INT, JAVA_INT, JAVA_LONG, JAVA_INT,
                JAVA_INT, JAVA_INT));
        statusName = bind(lookup, "cublasGetStatusName", FunctionDescriptor.of(ADDRESS, JAVA_INT));
    }

    /**
     * Finds and loads cuBLAS ({@link CublasLocator}); the library stays loaded for the life of the process.
     *
     * @param env the environment ({@code System.getenv()})
     * @return the bindings
     * @throws DeviceUnavailableException in one line when no library is found, it cannot be loaded, or it lacks an
     *     entry point
     */
    static Cublas load(Map<String, String> env) {
        return load(CublasLocator.SYSTEM.locate(env));
    }

    /**
     * Loads a cuBLAS library file.
     *
     * @throws DeviceUnavailableException in one line when it cannot be loaded or lacks an entry point
     */
    static Cublas load(Path lib) {
        SymbolLookup lookup;
        try {
            lookup = SymbolLookup.libraryLookup(lib, Arena.global());
        } catch (IllegalArgumentException e) {
            throw new DeviceUnavailableException("no cuBLAS: " + lib + " cannot be loaded (" + e.getMessage() + ")");
        }
        return new Cublas(lib, lookup);
    }

    private MethodHandle bind(SymbolLookup lookup, String name, FunctionDescriptor d) {
        MemorySegment symbol = lookup.find(name).orElseThrow(() -> new DeviceUnavailableException("no cuBLAS: "
                + library + " has no " + name + " (cuBLAS 11.4 or newer is needed)"));
        return Linker.nativeLinker().downcallHandle(symbol, d);
    }

    /** @return the library loaded */
    Path library() {
        return library;
    }

    /** @return a new handle in the current context ({@code cublasCreate_v2}) */
    long create() {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment out = a.allocate(ADDRESS);
            check((int) create.invokeExact(out), "cublasCreate_v2()");
            return out.get(ADDRESS, 0).address();
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** {@code cublasDestroy_v2}. */
    void destroy(long handle) {
        try {
            check((int) destroy.invokeExact(handle), "cublasDestroy_v2()");
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** Makes later calls of the handle run on a stream ({@code cublasSetStream_v2}). */
    void setStream(long handle, long stream) {
        try {
            check((int) setStream.invokeExact(handle, stream), "cublasSetStream_v2(0x" + Long.toHexString(stream) + ")");
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /**
     * Gives the handle its workspace ({@code cublasSetWorkspace_v2}): device memory from the caching allocator,
     * as PyTorch gives it, so cuBLAS allocates nothing itself.
     *
     * @param workspace device address, 256-byte aligned
     * @param bytes its size ({@link CublasWorkspace#size})
     */
    void setWorkspace(long handle, long workspace, long bytes) {
        try {
            check((int) setWorkspace.invokeExact(handle, workspace, bytes),
                    "cublasSetWorkspace_v2(0x" + Long.toHexString(workspace) + ", " + bytes + ")");
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /**
     * {@code cublasGemmEx} for a row-major product (see {@link ColumnMajorGemm}) with float32 scalars and
     * accumulation: {@code C = alpha op(A) op(B) + beta C}.
     *
     * @param type the element type of A, B and C ({@link #CUDA_R_32F}, {@link #CUDA_R_16F}, {@link #CUDA_R_16BF})
     * @param compute {@link #CUBLAS_COMPUTE_32F} (or {@link #CUBLAS_COMPUTE_32F_FAST_TF32})
     */
    void gemm(long handle, ColumnMajorGemm g, float alpha, long a, long b, float beta, long c, int type, int compute) {
        MemorySegment scalars = scalars(alpha, beta);
        int status;
        try {
            status = (int) gemmEx.invokeExact(handle, g.transa(), g.transb(), g.m(), g.n(), g.k(), scalars, b, type,
                    g.lda(), a, type, g.ldb(), scalars.asSlice(Float.BYTES), c, type, g.ldc(), compute,
                    CUBLAS_GEMM_DEFAULT);
        } catch (Throwable t) {
            throw rethrow(t);
        }
        if (status != CUBLAS_STATUS_SUCCESS) {   // the call is described only when it failed: products are per op
            check(status, "cublasGemmEx(" + g + ")");
        }
    }

    /**
     * {@code cublasGemmStridedBatchedEx}: {@link #gemm} for {@code batch} products whose operands lie
     * {@code strideA}, {@code strideB}, {@code strideC} elements apart (row-major strides, as
     * {@code Kernels#sgemmBatched}).
     */
    void gemmBatched(long handle, ColumnMajorGemm g, float alpha, long a, long strideA, long b, long strideB, float beta,
                     long c, long strideC, int batch, int type, int compute) {
        MemorySegment scalars = scalars(alpha, beta);
        int status;
        try {
            status = (int) gemmStridedBatchedEx.invokeExact(handle, g.transa(), g.transb(), g.m(), g.n(), g.k(),
                    scalars, b, type, g.lda(), strideB, a, type, g.ldb(), strideA, scalars.asSlice(Float.BYTES), c,
                    type, g.ldc(), strideC, batch, compute, CUBLAS_GEMM_DEFAULT);
        } catch (Throwable t) {
            throw rethrow(t);
        }
        if (status != CUBLAS_STATUS_SUCCESS) {
            check(status, "cublasGemmStridedBatchedEx(" + g + ", batch " + batch + ")");
        }
    }

    /**
     * alpha and beta in the calling thread's scratch memory ({@link HostScratch}): with the host pointer mode cuBLAS
     * reads them during the call, so they need to live only until it returns.
     */
    private static MemorySegment scalars(float alpha, float beta) {
        MemorySegment s = HostScratch.get(2 * Float.BYTES);
        s.set(JAVA_FLOAT, 0, alpha);
        s.set(JAVA_FLOAT, Float.BYTES, beta);
        return s;
    }

    /** @return the name of a status, from {@code cublasGetStatusName} */
    String statusName(int status) {
        try {
            MemorySegment s = (MemorySegment) statusName.invokeExact(status);
            return s.address() == 0 ? "CUBLAS_STATUS_" + status : s.reinterpret(256).getString(0);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    private void check(int status, String call) {
        if (status != CUBLAS_STATUS_SUCCESS) {
            throw new IllegalStateException(call + ": " + statusName(status));
        }
    }

}
