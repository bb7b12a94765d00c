package io.vram4j.device.cuda;

import io.vram4j.device.DeviceUnavailableException;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.VarHandle;
import java.nio.charset.StandardCharsets;
import java.util.OptionalLong;

import static io.vram4j.device.NativeCalls.rethrow;
import static java.lang.foreign.MemoryLayout.PathElement.groupElement;
import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_FLOAT;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

/**
 * The CUDA driver API calls vram4j makes, as FFM downcalls into {@code libcuda.so.1}, looked up at run time (no
 * CUDA library is needed to build or to run without a GPU). Versioned entry points are bound by their exported
 * names ({@code cuMemAlloc_v2}, {@code cuMemGetInfo_v2}, ...), the ones {@code cuda.h} of CUDA 12 and 13 maps
 * the plain names to (without per-thread default streams).
 *
 * <p>Every {@code CUresult} is checked: an error throws {@link CudaException} naming the call, its arguments and
 * {@code cuGetErrorName}; the only results turned into return values are {@code CUDA_ERROR_OUT_OF_MEMORY} from
 * the allocating calls (0, false or empty: the caller runs its out-of-memory path) and
 * {@code CUDA_ERROR_NOT_READY} from the queries (false).
 *
 * <p>The calls act on the calling thread's current context; {@link CudaContext} makes a device's primary context
 * current before using them. Thread-safe (the driver API is).
 */
@SuppressWarnings("restricted")
final class CudaDriver {
    static final int CUDA_SUCCESS = 0;
    static final int CUDA_ERROR_OUT_OF_MEMORY = 2;
    static final int CUDA_ERROR_NO_DEVICE = 100;
    static final int CUDA_ERROR_INVALID_IMAGE = 200;
    static final int CUDA_ERROR_UNSUPPORTED_PTX_VERSION = 222;
    static final int CUDA_ERROR_NOT_FOUND = 500;
    static final int CUDA_ERROR_NOT_READY = 600;

    static final int CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16;
    static final int CU_DEVICE_ATTRIBUTE_PCI_BUS_ID = 33;
    static final int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75;
    static final int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76;
    static final int CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED = 102;

    static final int CU_STREAM_NON_BLOCKING = 0x1;
    static final int CU_EVENT_DISABLE_TIMING = 0x2;
    static final int CU_MEMHOSTALLOC_DEFAULT = 0x0;

    static final int CU_MEM_ALLOCATION_TYPE_PINNED = 0x1;
    static final int CU_MEM_HANDLE_TYPE_NONE = 0x0;
    static final int CU_MEM_LOCATION_TYPE_DEVICE = 0x1;
    static final int CU_MEM_ACCESS_FLAGS_PROT_READWRITE = 0x3;
    static final int CU_MEM_ALLOC_GRANULARITY_MINIMUM = 0x0;
    static final int CU_MEM_ALLOC_GRANULARITY_RECOMMENDED = 0x1;

    /** {@code CUmemLocation}: {@code { CUmemLocationType type; int id; }}, 8 bytes. */
    static final StructLayout MEM_LOCATION = MemoryLayout.structLayout(
            JAVA_INT.withName("type"), JAVA_INT.withName("id")).withName("CUmemLocation");
    /** {@code CUmemAllocationProp} of CUDA 12/13, 32 bytes (checked against {@code cuda.h} by a test). */
    static final StructLayout MEM_ALLOCATION_PROP = MemoryLayout.structLayout(
            JAVA_INT.withName("type"),
            JAVA_INT.withName("requestedHandleTypes"),
            MEM_LOCATION.withName("location"),
            ADDRESS.withName("win32HandleMetaData"),
            MemoryLayout.structLayout(
                    JAVA_BYTE.withName("compressionType"),
                    JAVA_BYTE.withName("gpuDirectRDMACapable"),
                    JAVA_SHORT.withName("usage"),
                    MemoryLayout.sequenceLayout(4, JAVA_BYTE).withName("reserved")).withName("allocFlags"))
            .withName("CUmemAllocationProp");
    /** {@code CUmemAccessDesc}: {@code { CUmemLocation location; CUmemAccess_flags flags; }}, 12 bytes. */
    static final StructLayout MEM_ACCESS_DESC = MemoryLayout.structLayout(
            MEM_LOCATION.withName("location"), JAVA_INT.withName("flags")).withName("CUmemAccessDesc");

    private static final VarHandle PROP_TYPE = MEM_ALLOCATION_PROP.varHandle(groupElement("type"));
    private static final VarHandle PROP_LOCATION_TYPE =
            MEM_ALLOCATION_PROP.varHandle(groupElement("location"), groupElement("type"));
    private static final VarHandle PROP_LOCATION_ID =
            MEM_ALLOCATION_PROP.varHandle(groupElement("location"), groupElement("id"));
    private static final VarHandle ACCESS_LOCATION_TYPE =
            MEM_ACCESS_DESC.varHandle(groupElement("location"), groupElement("type"));
    private static final VarHandle ACCESS_LOCATION_ID =
            MEM_ACCESS_DESC.varHandle(groupElement("location"), groupElement("id"));
    private static final VarHandle ACCESS_FLAGS = MEM_ACCESS_DESC.varHandle(groupElement("flags"));

    /** The library looked up when no other is named: the driver's soname. */
    static final String DEFAULT_LIBRARY = "libcuda.so.1";
    /** System property naming another driver library (a path or soname), for tests. */
    static final String LIBRARY_PROPERTY = "vram4j.libcuda";

    private static final FunctionDescriptor I_I = FunctionDescriptor.of(JAVA_INT, JAVA_INT);
    private static final FunctionDescriptor I_P = FunctionDescriptor.of(JAVA_INT, ADDRESS);
    private static final FunctionDescriptor I_L = FunctionDescriptor.of(JAVA_INT, JAVA_LONG);
    private static final FunctionDescriptor I_PI = FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT);
    private static final FunctionDescriptor I_PL = FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG);
    private static final FunctionDescriptor I_LL = FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG);

    private static CudaDriver system;
    private static DeviceUnavailableException systemFailure;

    private final String library;
    private final int initResult;
    private final MethodHandle cuGetErrorName;
    private final MethodHandle cuGetErrorString;
    private final MethodHandle cuDriverGetVersion;
    private final MethodHandle cuDeviceGetCount;
    private final MethodHandle cuDeviceGet;
    private final MethodHandle cuDeviceGetName;
    private final MethodHandle cuDeviceTotalMem;
    private final MethodHandle cuDeviceGetAttribute;
    private final MethodHandle cuDevicePrimaryCtxRetain;
    private final MethodHandle cuDevicePrimaryCtxRelease;
    private final MethodHandle cuCtxSetCurrent;
    private final MethodHandle cuCtxSynchronize;
    private final MethodHandle cuMemAlloc;
    private final MethodHandle cuMemFree;
    private final MethodHandle cuMemGetInfo;
    private final MethodHandle cuStreamCreate;
    private final MethodHandle cuStreamDestroy;
    private final MethodHandle cuStreamSynchronize;
    private final MethodHandle cuStreamQuery;
    private final MethodHandle cuStreamWaitEvent;
    private final MethodHandle cuEventCreate;
    private final MethodHandle cuEventRecord;
    private final MethodHandle cuEventQuery;
    private final MethodHandle cuEventSynchronize;
    private final MethodHandle cuEventDestroy;
    private final MethodHandle cuEventElapsedTime;
    private final MethodHandle cuMemcpyHtoD;
    private final MethodHandle cuMemcpyDtoH;
    private final MethodHandle cuMemcpyDtoD;
    private final MethodHandle cuMemcpyHtoDAsync;
    private final MethodHandle cuMemcpyDtoHAsync;
    private final MethodHandle cuMemcpyDtoDAsync;
    private final MethodHandle cuMemsetD8;
    private final MethodHandle cuMemsetD8Async;
    private final MethodHandle cuMemHostAlloc;
    private final MethodHandle cuMemFreeHost;
    private final MethodHandle cuMemGetAllocationGranularity;
    private final MethodHandle cuMemAddressReserve;
    private final MethodHandle cuMemAddressFree;
    private final MethodHandle cuMemCreate;
    private final MethodHandle cuMemRelease;
    private final MethodHandle cuMemMap;
    private final MethodHandle cuMemUnmap;
    private final MethodHandle cuMemSetAccess;
    private final MethodHandle cuModuleLoadData;
    private final MethodHandle cuModuleGetFunction;
    private final MethodHandle cuModuleUnload;
    private final MethodHandle cuLaunchKernel;

    private CudaDriver(String library, SymbolLookup lookup) {
        this.library = library;
        Binder b = new Binder(library, lookup);
        cuGetErrorName = b.bind("cuGetErrorName", FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS));
        cuGetErrorString = b.bind("cuGetErrorString", FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS));
        MethodHandle cuInit = b.bind("cuInit", I_I);
        cuDriverGetVersion = b.bind("cuDriverGetVersion", I_P);
        cuDeviceGetCount = b.bind("cuDeviceGetCount", I_P);
        cuDeviceGet = b.bind("cuDeviceGet", I_PI);
        cuDeviceGetName = b.bind("cuDeviceGetName", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, JAVA_INT));
        cuDeviceTotalMem = b.bind("cuDeviceTotalMem_v2", I_PI);
        cuDeviceGetAttribute = b.bind("cuDeviceGetAttribute",
                FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, JAVA_INT));
        cuDevicePrimaryCtxRetain = b.bind("cuDevicePrimaryCtxRetain", I_PI);
        cuDevicePrimaryCtxRelease = b.bind("cuDevicePrimaryCtxRelease_v2", I_I);
        cuCtxSetCurrent = b.bind("cuCtxSetCurrent", I_L);
        cuCtxSynchronize = b.bind("cuCtxSynchronize", FunctionDescriptor.of(JAVA_INT));
        cuMemAlloc = b.bind("cuMemAlloc_v2", I_PL);
        cuMemFree = b.bind("cuMemFree_v2", I_L);
        cuMemGetInfo = b.bind("cuMemGetInfo_v2", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS));
        cuStreamCreate = b.bind("cuStreamCreate", I_PI);
        cuStreamDestroy = b.bind("cuStreamDestroy_v2", I_L);
        cuStreamSynchronize = b.bind("cuStreamSynchronize", I_L);
        cuStreamQuery = b.bind("cuStreamQuery", I_L);
        cuStreamWaitEvent = b.bind("cuStreamWaitEvent", FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG, JAVA_INT));
        cuEventCreate = b.bind("cuEventCreate", I_PI);
        cuEventRecord = b.bind("cuEventRecord", I_LL);
        cuEventQuery = b.bind("cuEventQuery", I_L);
        cuEventSynchronize = b.bind("cuEventSynchronize", I_L);
        cuEventDestroy = b.bind("cuEventDestroy_v2", I_L);
        // CUDA 13's cuda.h maps the name to _v2 (same signature); drivers before 12.8 have only the first
        cuEventElapsedTime = b.bindFirst(FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, JAVA_LONG),
                "cuEventElapsedTime_v2", "cuEventElapsedTime");
        cuMemcpyHtoD = b.bind("cuMemcpyHtoD_v2", FunctionDescriptor.of(JAVA_INT, JAVA_LONG, ADDRESS, JAVA_LONG));
        cuMemcpyDtoH = b.bind("cuMemcpyDtoH_v2", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, JAVA_LONG));
        cuMemcpyDtoD = b.bind("cuMemcpyDtoD_v2", FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG, JAVA_LONG));
        cuMemcpyHtoDAsync = b.bind("cuMemcpyHtoDAsync_v2",
                FunctionDescriptor.of(JAVA_INT, JAVA_LONG, ADDRESS, JAVA_LONG, JAVA_LONG));
        cuMemcpyDtoHAsync = b.bind("cuMemcpyDtoHAsync_v2",
                FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, JAVA_LONG, JAVA_LONG));
        cuMemcpyDtoDAsync = b.bind("cuMemcpyDtoDAsync_v2",
                FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG));
        cuMemsetD8 = b.bind("cuMemsetD8_v2", FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_BYTE, JAVA_LONG));
        cuMemsetD8Async = b.bind("cuMemsetD8Async",
                FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_BYTE, JAVA_LONG, JAVA_LONG));
        cuMemHostAlloc = b.bind("cuMemHostAlloc", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, JAVA_INT));
        cuMemFreeHost = b.bind("cuMemFreeHost", I_P);
        cuMemGetAllocationGranularity = b.bind("cuMemGetAllocationGranularity",
                FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, JAVA_INT));
        cuMemAddressReserve = b.bind("cuMemAddressReserve",
                FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG));
        cuMemAddressFree = b.bind("cuMemAddressFree", I_LL);
        cuMemCreate = b.bind("cuMemCreate", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, ADDRESS, JAVA_LONG));
        cuMemRelease = b.bind("cuMemRelease", I_L);
        cuMemMap = b.bind("cuMemMap",
                FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG));
        cuMemUnmap = b.bind("cuMemUnmap", I_LL);
        cuMemSetAccess = b.bind("cuMemSetAccess",
                FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG, ADDRESS, JAVA_LONG));
        cuModuleLoadData = b.bind("cuModuleLoadData", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS));
        cuModuleGetFunction = b.bind("cuModuleGetFunction", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, ADDRESS));
        cuModuleUnload = b.bind("cuModuleUnload", I_L);
        cuLaunchKernel = b.bind("cuLaunchKernel", FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_INT, JAVA_INT,
                JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_LONG, ADDRESS, ADDRESS));
        try {
            initResult = (int) cuInit.invokeExact(0);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /**
     * The driver of this machine: the library named by the system property {@value #LIBRARY_PROPERTY}, else the
     * environment variable {@code VRAM4J_LIBCUDA}, else {@value #DEFAULT_LIBRARY}; loaded and initialized
     * ({@code cuInit(0)}) once per process.
     *
     * @return the driver
     * @throws DeviceUnavailableException "no CUDA driver: ... not found" when the library cannot be loaded or
     *     lacks an entry point; the same exception on every later call
     */
    static synchronized CudaDriver system() {
        if (system == null && systemFailure == null) {
            String name = System.getProperty(LIBRARY_PROPERTY);
            if (name == null || name.isBlank()) {
                name = System.getenv("VRAM4J_LIBCUDA");
            }
            if (name == null || name.isBlank()) {
                name = DEFAULT_LIBRARY;
            }
            try {
                system = load(name);
            } catch (DeviceUnavailableException e) {
                systemFailure = e;
            }
        }
        if (systemFailure != null) {
            throw new DeviceUnavailableException(systemFailure.getMessage(), systemFailure);
        }
        return system;
    }

    /**
     * Loads a driver library and calls {@code cuInit(0)}. The library stays loaded for the life of the process.
     *
     * @param library a path or a soname
     * @return the driver
     * @throws DeviceUnavailableException when the library cannot be loaded or lacks an entry point
     */
    static CudaDriver load(String library) {
        SymbolLookup lookup;
        try {
            lookup = SymbolLookup.libraryLookup(library, Arena.global());
        } catch (IllegalArgumentException e) {
            throw new DeviceUnavailableException("no CUDA driver: " + library + " not found");
        }
        return new CudaDriver(library, lookup);
    }

    /** @return the library this driver was loaded from */
    String library() {
        return library;
    }

    /**
     * @return the result of {@code cuInit(0)}: {@link #CUDA_SUCCESS}, or e.g. {@link #CUDA_ERROR_NO_DEVICE} on a
     *     machine with a driver and no GPU
     */
    int initResult() {
        return initResult;
    }

    /** @return the name of a {@code CUresult}, e.g. {@code "CUDA_ERROR_OUT_OF_MEMORY"} ({@code cuGetErrorName}) */
    String errorName(int result) {
        return errorText(cuGetErrorName, result, "CUDA_ERROR_" + result);
    }

    /** @return the description of a {@code CUresult} ({@code cuGetErrorString}) */
    String errorString(int result) {
        return errorText(cuGetErrorString, result, "unknown error");
    }

    // ---- devices and contexts ----------------------------------------------------------------------------

    /** @return the driver version, e.g. 13000 for CUDA 13.0 ({@code cuDriverGetVersion}) */
    int driverVersion() {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment out = a.allocate(JAVA_INT);
            check((int) cuDriverGetVersion.invokeExact(out), "cuDriverGetVersion()");
            return out.get(JAVA_INT, 0);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /**
     * @return the number of CUDA devices; 0 when {@code cuInit} found none
     * @throws DeviceUnavailableException when {@code cuInit} failed otherwise (e.g. a driver too old, or no access
     *     to the GPU's device files)
     */
    int deviceCount() {
        if (initResult == CUDA_ERROR_NO_DEVICE) {
            return 0;
        }
        if (initResult != CUDA_SUCCESS) {
            throw new DeviceUnavailableException("no usable CUDA driver: cuInit(0) in " + library + " failed with "
                    + errorName(initResult) + " (" + errorString(initResult) + ")");
        }
        try (Arena a = Arena.ofConfined()) {
            MemorySegment out = a.allocate(JAVA_INT);
            check((int) cuDeviceGetCount.invokeExact(out), "cuDeviceGetCount()");
            return out.get(JAVA_INT, 0);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** @return the {@code CUdevice} of an ordinal ({@code cuDeviceGet}) */
    int device(int ordinal) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment out = a.allocate(JAVA_INT);
            check((int) cuDeviceGet.invokeExact(out, ordinal), "cuDeviceGet(" + ordinal + ")");
            return out.get(JAVA_INT, 0);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** @return the device's name, e.g. {@code "NVIDIA H100 80GB HBM3"} ({@code cuDeviceGetName}) */
    String deviceName(int device) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment out = a.allocate(256);
            check((int) cuDeviceGetName.invokeExact(out, 256, device), "cuDeviceGetName(256, " + device + ")");
            return out.getString(0, StandardCharsets.UTF_8);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** @return the device's memory in bytes ({@code cuDeviceTotalMem_v2}), as {@code totalGlobalMem} */
    long deviceTotalMem(int device) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment out = a.allocate(JAVA_LONG);
            check((int) cuDeviceTotalMem.invokeExact(out, device), "cuDeviceTotalMem_v2(" + device + ")");
            return out.get(JAVA_LONG, 0);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** @return a device attribute ({@code cuDeviceGetAttribute}) */
    int attribute(int attribute, int device) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment out = a.allocate(JAVA_INT);
            check((int) cuDeviceGetAttribute.invokeExact(out, attribute, device),
                    "cuDeviceGetAttribute(" + attribute + ", " + device + ")");
            return out.get(JAVA_INT, 0);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** @return the device's primary context, retained ({@code cuDevicePrimaryCtxRetain}) */
    long primaryCtxRetain(int device) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment out = a.allocate(ADDRESS);
            check((int) cuDevicePrimaryCtxRetain.invokeExact(out, device), "cuDevicePrimaryCtxRetain(" + device + ")");
            return out.get(ADDRESS, 0).address();
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** Releases the primary context retained by {@link #primaryCtxRetain} ({@code cuDevicePrimaryCtxRelease_v2}). */
    void primaryCtxRelease(int device) {
        try {
            check((int) cuDevicePrimaryCtxRelease.invokeExact(device), "cuDevicePrimaryCtxRelease_v2(" + device + ")");
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** Makes a context current on the calling thread ({@code cuCtxSetCurrent}). */
    void ctxSetCurrent(long context) {
        try {
            check((int) cuCtxSetCurrent.invokeExact(context), "cuCtxSetCurrent(" + hex(context) + ")");
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** Waits for all work of the current context ({@code cuCtxSynchronize}). */
    void ctxSynchronize() {
        try {
            check((int) cuCtxSynchronize.invokeExact(), "cuCtxSynchronize()");
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    // ---- memory ------------------------------------------------------------------------------------------

    /**
     * {@code cuMemAlloc_v2}.
     *
     * @param size bytes, positive
     * @return the device pointer, or 0 on {@code CUDA_ERROR_OUT_OF_MEMORY}
     */
    long memAlloc(long size) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment out = a.allocate(JAVA_LONG);
            int r = (int) cuMemAlloc.invokeExact(out, size);
            if (r == CUDA_ERROR_OUT_OF_MEMORY) {
                return 0;
            }
            check(r, "cuMemAlloc_v2(" + size + ")");
            return out.get(JAVA_LONG, 0);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** {@code cuMemFree_v2}. */
    void memFree(long pointer) {
        try {
            check((int) cuMemFree.invokeExact(pointer), "cuMemFree_v2(" + hex(pointer) + ")");
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** @return {free, total} bytes of the current context's device ({@code cuMemGetInfo_v2}) */
    long[] memGetInfo() {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment free = a.allocate(JAVA_LONG);
            MemorySegment total = a.allocate(JAVA_LONG);
            check((int) cuMemGetInfo.invokeExact(free, total), "cuMemGetInfo_v2()");
            return new long[] {free.get(JAVA_LONG, 0), total.get(JAVA_LONG, 0)};
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /**
     * {@code cuMemHostAlloc}: page-locked host memory.
     *
     * @return the memory, or {@link MemorySegment#NULL} on {@code CUDA_ERROR_OUT_OF_MEMORY}
     */
    MemorySegment memHostAlloc(long size, int flags) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment out = a.allocate(ADDRESS);
            int r = (int) cuMemHostAlloc.invokeExact(out, size, flags);
            if (r == CUDA_ERROR_OUT_OF_MEMORY) {
                return MemorySegment.NULL;
            }
            check(r, "cuMemHostAlloc(" + size + ", " + flags + ")");
            return out.get(ADDRESS, 0).reinterpret(size);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** {@code cuMemFreeHost}. */
    void memFreeHost(MemorySegment memory) {
        try {
            check((int) cuMemFreeHost.invokeExact(memory), "cuMemFreeHost(" + hex(memory.address()) + ")");
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    // ---- copies ------------------------------------------------------------------------------------------

    /** {@code cuMemcpyHtoD_v2}: synchronous copy of {@code size} bytes from host memory. */
    void memcpyHtoD(long dst, MemorySegment src, long size) {
        try {
            int result = (int) cuMemcpyHtoD.invokeExact(dst, src, size);
            if (result != CUDA_SUCCESS) {
                throw failure(result, "cuMemcpyHtoD_v2(" + hex(dst) + ", " + hex(src.address()) + ", " + size + ")");
            }
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** {@code cuMemcpyDtoH_v2}: synchronous copy of {@code size} bytes to host memory. */
    void memcpyDtoH(MemorySegment dst, long src, long size) {
        try {
            int result = (int) cuMemcpyDtoH.invokeExact(dst, src, size);
            if (result != CUDA_SUCCESS) {
                throw failure(result, "cuMemcpyDtoH_v2(" + hex(dst.address()) + ", " + hex(src) + ", " + size + ")");
            }
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** {@code cuMemcpyDtoD_v2}. */
    void memcpyDtoD(long dst, long src, long size) {
        try {
            int result = (int) cuMemcpyDtoD.invokeExact(dst, src, size);
            if (result != CUDA_SUCCESS) {
                throw failure(result, "cuMemcpyDtoD_v2(" + hex(dst) + ", " + hex(src) + ", " + size + ")");
            }
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** {@code cuMemcpyHtoDAsync_v2} on a stream. */
    void memcpyHtoDAsync(long dst, MemorySegment src, long size, long stream) {
        try {
            int result = (int) cuMemcpyHtoDAsync.invokeExact(dst, src, size, stream);
            if (result != CUDA_SUCCESS) {
                throw failure(result, "cuMemcpyHtoDAsync_v2(" + hex(dst) + ", " + hex(src.address()) + ", " + size
                        + ", " + hex(stream) + ")");
            }
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** {@code cuMemcpyDtoHAsync_v2} on a stream. */
    void memcpyDtoHAsync(MemorySegment dst, long src, long size, long stream) {
        try {
            int result = (int) cuMemcpyDtoHAsync.invokeExact(dst, src, size, stream);
            if (result != CUDA_SUCCESS) {
                throw failure(result, "cuMemcpyDtoHAsync_v2(" + hex(dst.address()) + ", " + hex(src) + ", " + size
                        + ", " + hex(stream) + ")");
            }
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** {@code cuMemcpyDtoDAsync_v2} on a stream. */
    void memcpyDtoDAsync(long dst, long src, long size, long stream) {
        try {
            int result = (int) cuMemcpyDtoDAsync.invokeExact(dst, src, size, stream);
            if (result != CUDA_SUCCESS) {
                throw failure(result, "cuMemcpyDtoDAsync_v2(" + hex(dst) + ", " + hex(src) + ", " + size + ", "
                        + hex(stream) + ")");
            }
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** {@code cuMemsetD8_v2}. */
    void memsetD8(long dst, byte value, long count) {
        try {
            int result = (int) cuMemsetD8.invokeExact(dst, value, count);
            if (result != CUDA_SUCCESS) {
                throw failure(result, "cuMemsetD8_v2(" + hex(dst) + ", " + value + ", " + count + ")");
            }
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** {@code cuMemsetD8Async} on a stream. */
    void memsetD8Async(long dst, byte value, long count, long stream) {
        try {
            int result = (int) cuMemsetD8Async.invokeExact(dst, value, count, stream);
            if (result != CUDA_SUCCESS) {
                throw failure(result, "cuMemsetD8Async(" + hex(dst) + ", " + value + ", " + count + ", " + hex(stream) + ")");
            }
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    // ---- modules and launches ----------------------------------------------------------------------------

    /**
     * {@code cuModuleLoadData}: loads PTX (JIT-compiled by the driver for the current device) or a cubin.
     *
     * @param image the image; PTX must end with a NUL byte
     * @return the {@code CUmodule}
     */
    long moduleLoadData(MemorySegment image) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment out = a.allocate(ADDRESS);
            check((int) cuModuleLoadData.invokeExact(out, image), "cuModuleLoadData(" + image.byteSize() + " bytes)");
            return out.get(ADDRESS, 0).address();
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** @return the {@code CUfunction} of a kernel entry of a module ({@code cuModuleGetFunction}) */
    long moduleGetFunction(long module, String name) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment out = a.allocate(ADDRESS);
            check((int) cuModuleGetFunction.invokeExact(out, module, a.allocateFrom(name)),
                    "cuModuleGetFunction(" + hex(module) + ", \"" + name + "\")");
            return out.get(ADDRESS, 0).address();
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** {@code cuModuleUnload}. */
    void moduleUnload(long module) {
        try {
            check((int) cuModuleUnload.invokeExact(module), "cuModuleUnload(" + hex(module) + ")");
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /**
     * {@code cuLaunchKernel} with a 2-D grid and a 1-D block; the driver copies the parameter values at the call.
     *
     * @param params {@code void* kernelParams[]}: one pointer per kernel parameter to its value
     */
    void launchKernel(long function, int gridX, int gridY, int blockX, int sharedBytes, long stream,
                      MemorySegment params) {
        try {
            int result = (int) cuLaunchKernel.invokeExact(function, gridX, gridY, 1, blockX, 1, 1, sharedBytes, stream,
                    params, MemorySegment.NULL);
            if (result != CUDA_SUCCESS) {
                throw failure(result, "cuLaunchKernel(" + hex(function) + ", grid " + gridX + "x" + gridY + ", block "
                        + blockX + ", shared " + sharedBytes + ", stream " + hex(stream) + ")");
            }
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    // ---- streams and events ------------------------------------------------------------------------------

    /** @return a new stream ({@code cuStreamCreate}) */
    long streamCreate(int flags) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment out = a.allocate(ADDRESS);
            check((int) cuStreamCreate.invokeExact(out, flags), "cuStreamCreate(" + flags + ")");
            return out.get(ADDRESS, 0).address();
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** {@code cuStreamDestroy_v2}. */
    void streamDestroy(long stream) {
        try {
            check((int) cuStreamDestroy.invokeExact(stream), "cuStreamDestroy_v2(" + hex(stream) + ")");
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** {@code cuStreamSynchronize}. */
    void streamSynchronize(long stream) {
        try {
            int result = (int) cuStreamSynchronize.invokeExact(stream);
            if (result != CUDA_SUCCESS) {
                throw failure(result, "cuStreamSynchronize(" + hex(stream) + ")");
            }
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** @return true when the stream's work is done ({@code cuStreamQuery}: success true, not ready false) */
    boolean streamQuery(long stream) {
        try {
            int r = (int) cuStreamQuery.invokeExact(stream);
            if (r == CUDA_ERROR_NOT_READY) {
                return false;
            }
            check(r, "cuStreamQuery(" + hex(stream) + ")");
            return true;
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** @return a new event ({@code cuEventCreate}) */
    long eventCreate(int flags) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment out = a.allocate(ADDRESS);
            check((int) cuEventCreate.invokeExact(out, flags), "cuEventCreate(" + flags + ")");
            return out.get(ADDRESS, 0).address();
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /**
     * Makes work queued on {@code stream} after this call wait until {@code event} has completed
     * ({@code cuStreamWaitEvent} with flags 0, {@code CU_EVENT_WAIT_DEFAULT}); the host does not wait.
     */
    void streamWaitEvent(long stream, long event) {
        try {
            int result = (int) cuStreamWaitEvent.invokeExact(stream, event, 0);
            if (result != CUDA_SUCCESS) {
                throw failure(result, "cuStreamWaitEvent(" + hex(stream) + ", " + hex(event) + ", 0)");
            }
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** {@code cuEventRecord}. */
    void eventRecord(long event, long stream) {
        try {
            int result = (int) cuEventRecord.invokeExact(event, stream);
            if (result != CUDA_SUCCESS) {
                throw failure(result, "cuEventRecord(" + hex(event) + ", " + hex(stream) + ")");
            }
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** @return true once the event's work is done ({@code cuEventQuery}: success true, not ready false) */
    boolean eventQuery(long event) {
        try {
            int r = (int) cuEventQuery.invokeExact(event);
            if (r == CUDA_ERROR_NOT_READY) {
                return false;
            }
            check(r, "cuEventQuery(" + hex(event) + ")");
            return true;
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** {@code cuEventSynchronize}. */
    void eventSynchronize(long event) {
        try {
            int result = (int) cuEventSynchronize.invokeExact(event);
            if (result != CUDA_SUCCESS) {
                throw failure(result, "cuEventSynchronize(" + hex(event) + ")");
            }
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /**
     * @return milliseconds between two completed events created with timing ({@code cuEventElapsedTime}; about
     *     0.5 microseconds of resolution)
     */
    float eventElapsedMs(long start, long end) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment ms = a.allocate(JAVA_FLOAT);
            int result = (int) cuEventElapsedTime.invokeExact(ms, start, end);
            if (result != CUDA_SUCCESS) {
                throw failure(result, "cuEventElapsedTime(" + hex(start) + ", " + hex(end) + ")");
            }
            return ms.get(JAVA_FLOAT, 0);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** {@code cuEventDestroy_v2}. */
    void eventDestroy(long event) {
        try {
            check((int) cuEventDestroy.invokeExact(event), "cuEventDestroy_v2(" + hex(event) + ")");
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    // ---- virtual memory management -----------------------------------------------------------------------

    /** @return the allocation granularity of pinned device memory on a device ({@code cuMemGetAllocationGranularity}) */
    long memGetAllocationGranularity(int device, int option) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment out = a.allocate(JAVA_LONG);
            check((int) cuMemGetAllocationGranularity.invokeExact(out, allocationProp(a, device), option),
                    "cuMemGetAllocationGranularity(device " + device + ", option " + option + ")");
            return out.get(JAVA_LONG, 0);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /**
     * {@code cuMemAddressReserve(size, alignment, addr, 0)}.
     *
     * @return the base, or 0 on {@code CUDA_ERROR_OUT_OF_MEMORY}
     */
    long memAddressReserve(long size, long alignment, long addressHint) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment out = a.allocate(JAVA_LONG);
            int r = (int) cuMemAddressReserve.invokeExact(out, size, alignment, addressHint, 0L);
            if (r == CUDA_ERROR_OUT_OF_MEMORY) {
                return 0;
            }
            check(r, "cuMemAddressReserve(" + size + ", " + alignment + ", " + hex(addressHint) + ", 0)");
            return out.get(JAVA_LONG, 0);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** {@code cuMemAddressFree}. */
    void memAddressFree(long base, long size) {
        try {
            check((int) cuMemAddressFree.invokeExact(base, size), "cuMemAddressFree(" + hex(base) + ", " + size + ")");
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /**
     * {@code cuMemCreate} of pinned device memory on a device.
     *
     * @return the allocation handle, or empty on {@code CUDA_ERROR_OUT_OF_MEMORY}
     */
    OptionalLong memCreate(long size, int device) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment out = a.allocate(JAVA_LONG);
            int r = (int) cuMemCreate.invokeExact(out, size, allocationProp(a, device), 0L);
            if (r == CUDA_ERROR_OUT_OF_MEMORY) {
                return OptionalLong.empty();
            }
            check(r, "cuMemCreate(" + size + ", device " + device + ", 0)");
            return OptionalLong.of(out.get(JAVA_LONG, 0));
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** {@code cuMemRelease}. */
    void memRelease(long handle) {
        try {
            check((int) cuMemRelease.invokeExact(handle), "cuMemRelease(" + hex(handle) + ")");
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** {@code cuMemMap(address, size, 0, handle, 0)}. */
    void memMap(long address, long size, long handle) {
        try {
            check((int) cuMemMap.invokeExact(address, size, 0L, handle, 0L),
                    "cuMemMap(" + hex(address) + ", " + size + ", 0, " + hex(handle) + ", 0)");
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** {@code cuMemUnmap}. */
    void memUnmap(long address, long size) {
        try {
            check((int) cuMemUnmap.invokeExact(address, size), "cuMemUnmap(" + hex(address) + ", " + size + ")");
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** {@code cuMemSetAccess}: read-write access for one device. */
    void memSetAccess(long address, long size, int device) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment desc = a.allocate(MEM_ACCESS_DESC);
            ACCESS_LOCATION_TYPE.set(desc, 0L, CU_MEM_LOCATION_TYPE_DEVICE);
            ACCESS_LOCATION_ID.set(desc, 0L, device);
            ACCESS_FLAGS.set(desc, 0L, CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
            check((int) cuMemSetAccess.invokeExact(address, size, desc, 1L),
                    "cuMemSetAccess(" + hex(address) + ", " + size + ", read-write on device " + device + ", 1)");
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    // ---- internals ---------------------------------------------------------------------------------------

    /** @return a zeroed {@code CUmemAllocationProp} for pinned memory on a device, as PyTorch fills it */
    static MemorySegment allocationProp(Arena arena, int device) {
        MemorySegment prop = arena.allocate(MEM_ALLOCATION_PROP); // zeroed
        PROP_TYPE.set(prop, 0L, CU_MEM_ALLOCATION_TYPE_PINNED);
        PROP_LOCATION_TYPE.set(prop, 0L, CU_MEM_LOCATION_TYPE_DEVICE);
        PROP_LOCATION_ID.set(prop, 0L, device);
        return prop;
    }

    /**
     * @param result a {@code CUresult}
     * @param call the call with its arguments
     * @throws CudaException unless {@code result} is {@link #CUDA_SUCCESS}
     */
    void check(int result, String call) {
        if (result != CUDA_SUCCESS) {
            throw failure(result, call);
        }
    }

    /**
     * @return the exception for a failed call; the calls made per kernel launch or copy test the result first and
     *     describe the call only when it failed, so that a successful call builds no message
     */
    CudaException failure(int result, String call) {
        return new CudaException(call, result, errorName(result), errorString(result));
    }

    private static String errorText(MethodHandle function, int result, String fallback) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment out = a.allocate(ADDRESS);
            int r = (int) function.invokeExact(result, out);
            MemorySegment text = out.get(ADDRESS, 0);
            if (r != CUDA_SUCCESS || text.address() == 0) {
                return fallback;
            }
            return text.reinterpret(1024).getString(0, StandardCharsets.UTF_8);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    static String hex(long value) {
        return "0x" + Long.toHexString(value);
    }

    /** Looks up entry points, failing with one line that names the library and the missing symbol. */
    private record Binder(String library, SymbolLookup lookup) {
        MethodHandle bind(String name, FunctionDescriptor descriptor) {
            MemorySegment symbol = lookup.find(name).orElseThrow(() -> new DeviceUnavailableException(
                    "no usable CUDA driver: " + library + " has no " + name + " (a driver for CUDA 12 or newer is needed)"));
            return Linker.nativeLinker().downcallHandle(symbol, descriptor);
        }

        /** Binds the first of {@code names} the library has (a versioned entry point, then the older one). */
        MethodHandle bindFirst(FunctionDescriptor descriptor, String... names) {
            for (String name : names) {
                if (lookup.find(name).isPresent()) {
                    return bind(name, descriptor);
                }
            }
            return bind(names[0], descriptor);   // fails naming the first
        }
    }
}
