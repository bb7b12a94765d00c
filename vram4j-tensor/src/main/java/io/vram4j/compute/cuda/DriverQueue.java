package io.vram4j.compute.cuda;

import io.vram4j.device.Stream;
import io.vram4j.device.cuda.CudaDevice;
import io.vram4j.device.cuda.CudaModule;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Map;

/**
 * {@link GpuQueue} on a CUDA GPU: the kernels of {@code vram4j_kernels.cu} loaded into the device
 * ({@link CudaLauncher}), cuBLAS found at the first product ({@link Cublas#load(Map)}) with cuBLASLt beside it where
 * there is one ({@link CublasLt#load}; its products share cuBLAS's workspace and stream, as PyTorch's do), and the
 * device's
 * asynchronous copies; each call timed on the GPU when {@code VRAM4J_KERNEL_TIMES} names a report file
 * ({@link KernelClock}).
 *
 * <p>Thread-safe for launches and copies; the cuBLAS handle is used by one thread at a time (the caller's lock).
 */
final class DriverQueue implements GpuQueue {
    private static final System.Logger LOG = System.getLogger("io.vram4j.compute.cuda");
    private final CudaDevice device;
    private final CudaModule module;
    private final CudaLauncher launcher;
    private final Map<String, String> env;
    /** Times every call when {@code VRAM4J_KERNEL_TIMES} names a report file; null otherwise. */
    private final KernelClock clock;
    private Cublas cublas;
    private long handle;
    private Stream blasStream;
    /**
     * cuBLASLt, its handle and the plans of the products made on it; null where it is not loaded (the biases are then
     * written before cuBLAS products).
     */
    private CublasLt lt;
    private long ltHandle;
    private CublasLt.Plans ltPlans;
    private long workspace;
    private long workspaceBytes;

    /**
     * @param device the GPU
     * @param env the environment cuBLAS is looked up with ({@link CublasLocator})
     * @throws io.vram4j.device.DeviceUnavailableException when the driver cannot load the PTX (one line)
     */
    DriverQueue(CudaDevice device, Map<String, String> env) {
        this.device = device;
        this.clock = KernelClock.fromEnvironment(device, env);
        this.module = device.loadModule(CudaKernelTable.ptx());
        this.launcher = new CudaLauncher(module);
        this.env = env;
    }

    @Override
    public void launch(CudaKernel kernel, LaunchConfig config, Stream stream, Object... values) {
        if (clock == null) {
            launcher.launch(kernel, config, stream, values);
        } else {
            clock.time(kernel.name(), stream, () -> launcher.launch(kernel, config, stream, values));
        }
    }

    private static String typeName(int type) {
        return type == Cublas.CUDA_R_32F ? "f32" : type == Cublas.CUDA_R_16F ? "f16" : "bf16";
    }

    @Override
    public void openBlas(Stream stream) {
        Cublas c = Cublas.load(env);
        long h = c.create();
        try {
            c.setStream(h, stream.handle());
        } catch (RuntimeException e) {
            c.destroy(h);
            throw e;
        }
        cublas = c;
        handle = h;
        blasStream = stream;
        CublasLt l = CublasLt.load(c.library(), env).orElse(null);
        if (l != null) {
            try {
                ltHandle = l.create();
                ltPlans = l.plans(ltHandle);
                lt = l;
            } catch (RuntimeException e) {
                lt = null;   // products with a bias go through cuBLAS, as without cuBLASLt
            }
        }
    }

    @Override
    public void setBlasWorkspace(long address, long bytes) {
        cublas.setWorkspace(handle, address, bytes);
        workspace = address;
        workspaceBytes = bytes;
    }

    /**
     * {@inheritDoc}
     *
     * <p>A cuBLASLt call that fails (anything but "no algorithm") has queued nothing: it is logged once, as a warning,
     * and cuBLASLt is left out for the rest of the process, so that the caller's cuBLAS path takes this product and
     * every later one.
     */
    @Override
    public boolean gemmBias(ColumnMajorGemm g, float alpha, long a, long b, long bias, long c, int type) {
        if (lt == null) {
            return false;
        }
        CublasLt l = lt;
        try {
            if (clock == null) {
                return ltProduct(l, g, alpha, a, b, bias, c, type);
            }
            boolean[] done = new boolean[1];
            clock.time("cublasLtMatmul bias " + typeName(type), blasStream,
                    () -> done[0] = ltProduct(l, g, alpha, a, b, bias, c, type));
            return done[0];
        } catch (IllegalStateException e) {
            LOG.log(System.Logger.Level.WARNING, e.getMessage() + "; products with a bias go through cuBLAS from now on"
                    + " (" + CublasLt.ENV + "=0 does so from the start)");
            lt = null;
            ltPlans.close();
            l.destroy(ltHandle);
            return false;
        }
    }

    /** {@link CublasLt#matmulBias} on this queue's handle, workspace and stream. */
    private boolean ltProduct(CublasLt l, ColumnMajorGemm g, float alpha, long a, long b, long bias, long c, int type) {
        return l.matmulBias(ltPlans, g, alpha, a, b, bias, c, type, workspace, workspaceBytes, blasStream.handle());
    }

    /** @return whether the products with a bias run on cuBLASLt (false before the first product) */
    boolean cublasLtLoaded() {
        return lt != null;
    }

    @Override
    public void gemm(ColumnMajorGemm g, float alpha, long a, long b, float beta, long c, int type) {
        if (clock == null) {
            cublas.gemm(handle, g, alpha, a, b, beta, c, type, Cublas.CUBLAS_COMPUTE_32F);
        } else {
            clock.time("cublasGemmEx " + typeName(type), blasStream,
                    () -> cublas.gemm(handle, g, alpha, a, b, beta, c, type, Cublas.CUBLAS_COMPUTE_32F));
        }
    }

    @Override
    public void gemmBatched(ColumnMajorGemm g, float alpha, long a, long strideA, long b, long strideB, float beta,
                            long c, long strideC, int batch, int type) {
        if (clock == null) {
            cublas.gemmBatched(handle, g, alpha, a, strideA, b, strideB, beta, c, strideC, batch, type,
                    Cublas.CUBLAS_COMPUTE_32F);
        } else {
            clock.time("cublasGemmStridedBatchedEx " + typeName(type), blasStream, () -> cublas.gemmBatched(handle,
                    g, alpha, a, strideA, b, strideB, beta, c, strideC, batch, type, Cublas.CUBLAS_COMPUTE_32F));
        }
    }

    @Override
    public void closeBlas() {
        if (lt != null) {
            CublasLt l = lt;
            lt = null;
            ltPlans.close();
            l.destroy(ltHandle);
        }
        if (cublas != null) {
            Cublas c = cublas;
            cublas = null;
            c.destroy(handle);
        }
    }

    @Override
    public void fill(long dst, long bytes, byte value, Stream stream) {
        if (clock == null) {
            device.fillAsync(dst, bytes, value, stream);
        } else {
            clock.time("cuMemsetD8Async", stream, () -> device.fillAsync(dst, bytes, value, stream));
        }
    }

    @Override
    public void copyDeviceToDevice(long src, long dst, long bytes, Stream stream) {
        if (clock == null) {
            device.copyDeviceToDeviceAsync(src, dst, bytes, stream);
        } else {
            clock.time("cuMemcpyDtoDAsync", stream, () -> device.copyDeviceToDeviceAsync(src, dst, bytes, stream));
        }
    }

    @Override
    public void copyFromHost(MemorySegment src, long dst, Stream stream) {
        if (clock == null) {
            device.copyFromHostAsync(src, dst, stream);
        } else {
            clock.time("cuMemcpyHtoDAsync", stream, () -> device.copyFromHostAsync(src, dst, stream));
        }
    }

    @Override
    public float readFloat(long src, Stream stream) {
        MemorySegment host = HostScratch.get(Float.BYTES);
        stream.synchronize();
        device.copyToHost(src, host);
        return host.get(ValueLayout.JAVA_FLOAT, 0);
    }

    /** Writes the kernel times first when the clock is on ({@link KernelClock#report}), then unloads the module. */
    @Override
    public void close() {
        try {
            if (clock != null) {
                clock.report();
            }
        } finally {
            module.close();
        }
    }
}
