package io.vram4j.compute.cuda;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;

import static io.vram4j.device.NativeCalls.rethrow;
import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_FLOAT;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * cuBLASLt through FFM, for the one product the tensor runtime asks of it: a linear layer's, with the bias added in
 * the product's epilogue ({@code CUBLASLT_EPILOGUE_BIAS}), as PyTorch's {@code addmm} runs {@code nn.Linear} on CUDA
 * ({@code at::cuda::blas::gemm_and_bias}). The bias is then neither written into the output first nor added by a
 * kernel of its own: one launch, and one pass over the output instead of three.
 *
 * <p>The constants are those of {@code cublasLt.h} (CUDA 11.4 and later: {@code cublasLtMatmulDescAttributes_t},
 * {@code cublasLtEpilogue_t}, {@code cublasLtMatmulPreferenceAttributes_t}, the 96 bytes of
 * {@code cublasLtMatmulHeuristicResult_t}); no header is needed to build. PyTorch makes a product's descriptor,
 * layouts and preference and asks the heuristic for an algorithm on every call; here they are made once for each
 * shape, type and alignment and kept with the algorithm ({@link Plans}), so a later product of the same kind sets its
 * bias pointer and runs: 2 native calls instead of some 20.
 *
 * <p>The library is {@code libcublasLt} beside the cuBLAS that {@link CublasLocator} found, or, where there is none,
 * that cuBLAS library itself if it has the entry points (the tests' stand-in). A handle is used by one thread at a
 * time; the library object is thread-safe.
 */
@SuppressWarnings("restricted")
final class CublasLt {
    private static final System.Logger LOG = System.getLogger("io.vram4j.compute.cuda");
    /** {@code VRAM4J_CUBLASLT=0} leaves cuBLASLt out: a bias is then written into the output before a cuBLAS product. */
    static final String ENV = "VRAM4J_CUBLASLT";

    /** {@code cublasLtMatmulDescAttributes_t}. */
    static final int DESC_TRANSA = 3;
    static final int DESC_TRANSB = 4;
    static final int DESC_EPILOGUE = 7;
    static final int DESC_BIAS_POINTER = 8;
    /** {@code cublasLtEpilogue_t}: {@code D = alpha op(A) op(B) + beta C}, plus {@code bias[i]} on every row i of D. */
    static final int EPILOGUE_BIAS = 4;
    /** {@code cublasLtMatmulPreferenceAttributes_t}: the most workspace an algorithm may use, {@code uint64_t}. */
    static final int PREF_MAX_WORKSPACE_BYTES = 1;
    /**
     * {@code cublasLtMatmulPreferenceAttributes_t}: how far the A, B, C and D pointers are aligned, in bytes,
     * {@code uint32_t} (5 to 8). cuBLASLt assumes 256 unless told, and may then pick an algorithm that needs more
     * alignment than a view's pointer has; PyTorch's {@code gemm_and_bias} sets all four from its pointers (D from
     * the bias), and so does {@link #matmulBias}.
     */
    static final int PREF_MIN_ALIGNMENT_A_BYTES = 5;
    static final int PREF_MIN_ALIGNMENT_B_BYTES = 6;
    static final int PREF_MIN_ALIGNMENT_C_BYTES = 7;
    static final int PREF_MIN_ALIGNMENT_D_BYTES = 8;
    /**
     * The bias alignment, in bytes, below which {@link #matmulBias} declines (the caller then adds the bias another
     * way): users of the bias epilogue report alignment faults with a bias less aligned than this.
     */
    static final int BIAS_ALIGNMENT = 16;
    /** {@code sizeof(cublasLtMatmulHeuristicResult_t)}: the algorithm (64 bytes) first, then its workspace and state. */
    static final long HEURISTIC_RESULT_BYTES = 96;
    /** The plans a handle keeps ({@link Plans}), the least recently used freed beyond it. */
    static final int PLANS = 64;

    private final Path library;
    private final MethodHandle create;
    private final MethodHandle destroy;
    private final MethodHandle descCreate;
    private final MethodHandle descSet;
    private final MethodHandle descDestroy;
    private final MethodHandle layoutCreate;
    private final MethodHandle layoutDestroy;
    private final MethodHandle prefCreate;
    private final MethodHandle prefSet;
    private final MethodHandle prefDestroy;
    private final MethodHandle heuristic;
    private final MethodHandle matmul;
    private final MethodHandle statusName;

    private CublasLt(Path library, SymbolLookup lookup) {
        this.library = library;
        Linker linker = Linker.nativeLinker();
        create = bind(linker, lookup, "cublasLtCreate", FunctionDescriptor.of(JAVA_INT, ADDRESS));
        destroy = bind(linker, lookup, "cublasLtDestroy", FunctionDescriptor.of(JAVA_INT, JAVA_LONG));
        descCreate = bind(linker, lookup, "cublasLtMatmulDescCreate",
                FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, JAVA_INT));
        descSet = bind(linker, lookup, "cublasLtMatmulDescSetAttribute",
                FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_INT, ADDRESS, JAVA_LONG));
        descDestroy = bind(linker, lookup, "cublasLtMatmulDescDestroy", FunctionDescriptor.of(JAVA_INT, JAVA_LONG));
        layoutCreate = bind(linker, lookup, "cublasLtMatrixLayoutCreate",
                FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, JAVA_LONG, JAVA_LONG, JAVA_LONG));
        layoutDestroy = bind(linker, lookup, "cublasLtMatrixLayoutDestroy", FunctionDescriptor.of(JAVA_INT, JAVA_LONG));
        prefCreate = bind(linker, lookup, "cublasLtMatmulPreferenceCreate", FunctionDescriptor.of(JAVA_INT, ADDRESS));
        prefSet = bind(linker, lookup, "cublasLtMatmulPreferenceSetAttribute",
                FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_INT, ADDRESS, JAVA_LONG));
        prefDestroy = bind(linker, lookup, "cublasLtMatmulPreferenceDestroy",
                FunctionDescriptor.of(JAVA_INT, JAVA_LONG));
        heuristic = bind(linker, lookup, "cublasLtMatmulAlgoGetHeuristic", FunctionDescriptor.of(JAVA_INT,
                JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_INT, ADDRESS,
                ADDRESS));
        matmul = bind(linker, lookup, "cublasLtMatmul", FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG,
                ADDRESS, JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG, ADDRESS, JAVA_LONG, JAVA_LONG, JAVA_LONG,
                JAVA_LONG, ADDRESS, JAVA_LONG, JAVA_LONG, JAVA_LONG));
        statusName = bind(linker, lookup, "cublasLtGetStatusName", FunctionDescriptor.of(ADDRESS, JAVA_INT));
    }

    private static MethodHandle bind(Linker linker, SymbolLookup lookup, String name, FunctionDescriptor d) {
        return linker.downcallHandle(lookup.find(name).orElseThrow(
                () -> new IllegalStateException("has no " + name)), d);
    }

    /**
     * Loads cuBLASLt for a cuBLAS library, unless {@value #ENV} is {@code 0}.
     *
     * @param cublas the cuBLAS library loaded ({@link Cublas#library()})
     * @param env the environment ({@code System.getenv()})
     * @return the bindings, or empty where cuBLASLt is turned off, not beside {@code cublas}, or lacks an entry point
     *     (the caller then adds biases without it)
     */
    static Optional<CublasLt> load(Path cublas, Map<String, String> env) {
        if ("0".equals(env.get(ENV))) {
            return Optional.empty();
        }
        String name = cublas.getFileName().toString();
        Path beside = name.startsWith("libcublas.") ? cublas.resolveSibling("libcublasLt." + name.substring(10)) : null;
        boolean found = beside != null && Files.isRegularFile(beside);
        Path lib = found ? beside : cublas;
        try {
            return Optional.of(new CublasLt(lib, SymbolLookup.libraryLookup(lib, Arena.global())));
        } catch (RuntimeException e) {   // not loadable, or an entry point missing
            // a libcublasLt that will not serve is worth a warning; a cuBLAS without cuBLASLt's entry points is not
            LOG.log(found ? System.Logger.Level.WARNING : System.Logger.Level.DEBUG, () -> "cuBLASLt left out: " + lib
                    + " " + (e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage()));
            return Optional.empty();
        }
    }

    /** @return the library loaded */
    Path library() {
        return library;
    }

    /** @return a new handle in the current context ({@code cublasLtCreate}) */
    long create() {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment out = a.allocate(ADDRESS);
            check((int) create.invokeExact(out), "cublasLtCreate()");
            return out.get(ADDRESS, 0).address();
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** {@code cublasLtDestroy}. */
    void destroy(long handle) {
        try {
            check((int) destroy.invokeExact(handle), "cublasLtDestroy()");
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /**
     * What a product's plan depends on: its shape and leading dimensions, its type, the alignments the heuristic is
     * told ({@link #alignment}: of cuBLASLt's A, B, C and D, the bias counted with D) and the workspace it may use.
     */
    record PlanKey(int transa, int transb, int m, int n, int k, int lda, int ldb, int ldc, int type, int alignA,
                   int alignB, int alignC, int alignD, long workspaceBytes) {
    }

    /** A product's descriptor (its bias pointer set per call), layouts and algorithm; all 0 and null: none offered. */
    private record Plan(long desc, long la, long lb, long ld, MemorySegment algo) {
    }

    /**
     * The plans of one handle, by {@link PlanKey}, at most {@value #PLANS} (the least recently used is freed).
     * Not thread-safe: used by one thread at a time, as the handle is. {@link #close()} frees every plan, not the
     * handle.
     */
    final class Plans implements AutoCloseable {
        private final long handle;
        /** A product's bias pointer, alpha and beta (0), set per call: native memory made once. */
        private final MemorySegment biasPointer = Arena.ofAuto().allocate(JAVA_LONG);
        private final MemorySegment alpha = Arena.ofAuto().allocate(JAVA_FLOAT);
        private final MemorySegment beta = Arena.ofAuto().allocate(JAVA_FLOAT);
        private final LinkedHashMap<PlanKey, Plan> byKey = new LinkedHashMap<>(16, 0.75f, true) {
            @Override
            protected boolean removeEldestEntry(Map.Entry<PlanKey, Plan> eldest) {
                if (size() <= PLANS) {
                    return false;
                }
                free(eldest.getValue());
                return true;
            }
        };

        private Plans(long handle) {
            this.handle = handle;
        }

        @Override
        public void close() {
            for (Plan p : byKey.values()) {
                free(p);
            }
            byKey.clear();
        }
    }

    /** @return an empty set of plans for products on {@code handle} (a handle from {@link #create()}) */
    Plans plans(long handle) {
        return new Plans(handle);
    }

    private void free(Plan p) {
        release(layoutDestroy, p.ld());
        release(layoutDestroy, p.lb());
        release(layoutDestroy, p.la());
        release(descDestroy, p.desc());
    }

    /**
     * {@code D = alpha op(A) op(B) + bias} for the row-major product that {@code g} describes ({@link ColumnMajorGemm}:
     * cuBLASLt gets B as its first operand and A as its second, and computes D's column-major transpose), with
     * {@code bias[j]} added to every element of column {@code j} of the row-major D (row {@code j} of cuBLASLt's
     * {@code g.m() x g.n()} D; the bias is {@code g.m()} contiguous elements of D's type), float32 compute and scale,
     * queued on {@code stream}. The old contents of D are not read.
     *
     * @param plans the plans of the handle the product runs on ({@link #plans}); the first product of a
     *     {@link PlanKey} makes and keeps its plan
     * @param a device address of the row-major A
     * @param b device address of the row-major B
     * @param bias device address of the bias
     * @param d device address of D, written
     * @param stream the CUDA stream ({@code CUstream}) the product is queued on
     * @param type {@link Cublas#CUDA_R_32F}, {@link Cublas#CUDA_R_16F} or {@link Cublas#CUDA_R_16BF}, for A, B, D
     *     and the bias
     * @param workspace device memory the algorithm may use ({@code workspaceBytes} of it), or 0
     * @return false, with nothing queued, where cuBLASLt has no algorithm for the product
     *     ({@code CUBLAS_STATUS_NOT_SUPPORTED} or none returned) or the bias is aligned to less than
     *     {@value #BIAS_ALIGNMENT} bytes; the heuristic is told each pointer's alignment (up to 256 bytes)
     * @throws IllegalStateException naming the call and {@code cublasLtGetStatusName} for any other failure
     */
    boolean matmulBias(Plans plans, ColumnMajorGemm g, float alpha, long a, long b, long bias, long d, int type,
                       long workspace, long workspaceBytes, long stream) {
        if (bias % BIAS_ALIGNMENT != 0) {
            return false;
        }
        long limit = workspace == 0 ? 0 : workspaceBytes;
        // cuBLASLt's A is our B and its B our A (ColumnMajorGemm); C and D are d; the bias counts as D
        PlanKey key = new PlanKey(g.transa(), g.transb(), g.m(), g.n(), g.k(), g.lda(), g.ldb(), g.ldc(), type,
                alignment(b), alignment(a), alignment(d), Math.min(alignment(d), alignment(bias)), limit);
        Plan p = plans.byKey.get(key);
        if (p == null) {
            p = plan(plans.handle, key);
            plans.byKey.put(key, p);
        }
        if (p.algo() == null) {
            return false;
        }
        try {
            plans.biasPointer.set(JAVA_LONG, 0, bias);
            check((int) descSet.invokeExact(p.desc(), DESC_BIAS_POINTER, plans.biasPointer, 8L),
                    "cublasLtMatmulDescSetAttribute(BIAS_POINTER)");
            plans.alpha.set(JAVA_FLOAT, 0, alpha);
            plans.beta.set(JAVA_FLOAT, 0, 0f);
            int r = (int) matmul.invokeExact(plans.handle, p.desc(), plans.alpha, b, p.la(), a, p.lb(), plans.beta,
                    d, p.ld(), d, p.ld(), p.algo(), workspace, limit, stream);
            if (r != Cublas.CUBLAS_STATUS_SUCCESS) {
                check(r, "cublasLtMatmul(m=" + g.m() + ", n=" + g.n() + ", k=" + g.k() + ", type " + type + ")");
            }
            return true;
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /**
     * Makes the plan of a product: its descriptor (the bias epilogue, float32 compute and scale), its three layouts,
     * and the heuristic's algorithm for them, told the key's alignments and workspace (the preference is freed
     * after).
     *
     * @return the plan; where the heuristic offers no algorithm ({@code CUBLAS_STATUS_NOT_SUPPORTED} or none
     *     returned) an empty one, its objects freed
     * @throws IllegalStateException for any other failure, nothing left allocated
     */
    private Plan plan(long handle, PlanKey key) {
        long desc = 0;
        long la = 0;
        long lb = 0;
        long ld = 0;
        long pref = 0;
        boolean kept = false;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ADDRESS);
            check((int) descCreate.invokeExact(out, Cublas.CUBLAS_COMPUTE_32F, Cublas.CUDA_R_32F),
                    "cublasLtMatmulDescCreate()");
            desc = out.get(ADDRESS, 0).address();
            setInt(arena, desc, DESC_TRANSA, key.transa());
            setInt(arena, desc, DESC_TRANSB, key.transb());
            setInt(arena, desc, DESC_EPILOGUE, EPILOGUE_BIAS);
            boolean an = key.transa() == ColumnMajorGemm.CUBLAS_OP_N;
            boolean bn = key.transb() == ColumnMajorGemm.CUBLAS_OP_N;
            la = layout(arena, key.type(), an ? key.m() : key.k(), an ? key.k() : key.m(), key.lda());
            lb = layout(arena, key.type(), bn ? key.k() : key.n(), bn ? key.n() : key.k(), key.ldb());
            ld = layout(arena, key.type(), key.m(), key.n(), key.ldc());
            check((int) prefCreate.invokeExact(out), "cublasLtMatmulPreferenceCreate()");
            pref = out.get(ADDRESS, 0).address();
            MemorySegment limit = arena.allocate(JAVA_LONG);
            limit.set(JAVA_LONG, 0, key.workspaceBytes());
            check((int) prefSet.invokeExact(pref, PREF_MAX_WORKSPACE_BYTES, limit, 8L),
                    "cublasLtMatmulPreferenceSetAttribute(MAX_WORKSPACE_BYTES)");
            setAlignment(arena, pref, PREF_MIN_ALIGNMENT_A_BYTES, key.alignA());
            setAlignment(arena, pref, PREF_MIN_ALIGNMENT_B_BYTES, key.alignB());
            setAlignment(arena, pref, PREF_MIN_ALIGNMENT_C_BYTES, key.alignC());
            setAlignment(arena, pref, PREF_MIN_ALIGNMENT_D_BYTES, key.alignD());
            MemorySegment result = Arena.ofAuto().allocate(HEURISTIC_RESULT_BYTES, 8);
            MemorySegment returned = arena.allocate(JAVA_INT);
            int s = (int) heuristic.invokeExact(handle, desc, la, lb, ld, ld, pref, 1, result, returned);
            if (s == Cublas.CUBLAS_STATUS_NOT_SUPPORTED
                    || s == Cublas.CUBLAS_STATUS_SUCCESS && returned.get(JAVA_INT, 0) < 1) {
                return new Plan(0, 0, 0, 0, null);
            }
            check(s, "cublasLtMatmulAlgoGetHeuristic()");
            kept = true;
            return new Plan(desc, la, lb, ld, result);
        } catch (Throwable t) {
            throw rethrow(t);
        } finally {
            release(prefDestroy, pref);
            if (!kept) {
                free(new Plan(desc, la, lb, ld, null));
            }
        }
    }

    private void setInt(Arena arena, long desc, int attribute, int value) throws Throwable {
        MemorySegment v = arena.allocate(JAVA_INT);
        v.set(JAVA_INT, 0, value);
        check((int) descSet.invokeExact(desc, attribute, v, 4L), "cublasLtMatmulDescSetAttribute(" + attribute + ")");
    }

    /**
     * @return the largest power of two up to 256 that divides {@code address}, as PyTorch's {@code _getAlignment}
     */
    static int alignment(long address) {
        int a = 256;
        while (address % a != 0) {
            a /= 2;
        }
        return a;
    }

    /** Tells the preference how far an operand is aligned, in bytes ({@link #alignment}). */
    private void setAlignment(Arena arena, long pref, int attribute, int bytes) throws Throwable {
        MemorySegment v = arena.allocate(JAVA_INT);
        v.set(JAVA_INT, 0, bytes);
        check((int) prefSet.invokeExact(pref, attribute, v, 4L),
                "cublasLtMatmulPreferenceSetAttribute(" + attribute + ")");
    }

    /** A column-major layout of {@code rows x cols} stored with leading dimension {@code ld}. */
    private long layout(Arena arena, int type, int rows, int cols, int ldim) throws Throwable {
        MemorySegment out = arena.allocate(ADDRESS);
        check((int) layoutCreate.invokeExact(out, type, (long) rows, (long) cols, (long) ldim),
                "cublasLtMatrixLayoutCreate(" + rows + " x " + cols + ", ld " + ldim + ")");
        return out.get(ADDRESS, 0).address();
    }

    /** Destroys a descriptor, layout or preference made by {@link #plan} (0: never made). */
    private static void release(MethodHandle destroyer, long object) {
        if (object == 0) {
            return;
        }
        try {
            int ignored = (int) destroyer.invokeExact(object);   // a failure to free cannot be acted on here
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    private void check(int status, String call) throws Throwable {
        if (status == Cublas.CUBLAS_STATUS_SUCCESS) {
            return;
        }
        MemorySegment name = (MemorySegment) statusName.invokeExact(status);
        String text = name.equals(MemorySegment.NULL) ? "status " + status
                : name.reinterpret(256).getString(0);
        throw new IllegalStateException("cuBLASLt " + call + " failed: " + text + " (" + library + ")");
    }
}
