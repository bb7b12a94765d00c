package io.vram4j.compute.cuda;

/**
 * A row-major product ({@code io.vram4j.compute.Kernels#sgemm}'s convention) as the column-major call cuBLAS
 * takes. A row-major {@code m x n} matrix with row stride {@code ld} is, read column-major, its {@code n x m}
 * transpose with leading dimension {@code ld}; so {@code C = op(A) op(B)} (row-major) is
 * {@code C^T = op(B)^T op(A)^T} (column-major): cuBLAS multiplies B by A with the operands swapped, {@code m}
 * and {@code n} exchanged and each operation kept (cuBLAS documentation, "cublasGemmEx": column-major storage).
 *
 * @param transa cuBLAS's {@code transa} for its first operand ({@code CUBLAS_OP_N} 0 or {@code CUBLAS_OP_T} 1)
 * @param transb cuBLAS's {@code transb} for its second operand
 * @param m rows of cuBLAS's {@code op(A)} and {@code C} (the row-major {@code n})
 * @param n columns of cuBLAS's {@code op(B)} and {@code C} (the row-major {@code m})
 * @param k the inner dimension
 * @param lda leading dimension of cuBLAS's first operand (the row-major {@code ldb})
 * @param ldb leading dimension of cuBLAS's second operand (the row-major {@code lda})
 * @param ldc leading dimension of {@code C}
 */
record ColumnMajorGemm(int transa, int transb, int m, int n, int k, int lda, int ldb, int ldc) {
    /** {@code CUBLAS_OP_N} (cublas_api.h, {@code cublasOperation_t}). */
    static final int CUBLAS_OP_N = 0;
    /** {@code CUBLAS_OP_T}. */
    static final int CUBLAS_OP_T = 1;

    /**
     * @return the cuBLAS call for the row-major {@code C = op(A) op(B)}, {@code op(A)} {@code m x k},
     *     {@code op(B)} {@code k x n}, with the row strides of the stored matrices; its first operand is the
     *     row-major {@code B}, its second the row-major {@code A}
     */
    static ColumnMajorGemm ofRowMajor(boolean transA, boolean transB, int m, int n, int k, int lda, int ldb, int ldc) {
        return new ColumnMajorGemm(transB ? CUBLAS_OP_T : CUBLAS_OP_N, transA ? CUBLAS_OP_T : CUBLAS_OP_N,
                n, m, k, ldb, lda, ldc);
    }
}
