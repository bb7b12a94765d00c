package io.vram4j.device.cuda;

import io.vram4j.device.DeviceUnavailableException;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;

/**
 * A module of kernels loaded into a CUDA device's primary context ({@code cuModuleLoadData}; PTX is JIT-compiled
 * by the driver for the GPU), and its functions ({@code cuModuleGetFunction}). Obtain one with
 * {@link CudaDevice#loadModule(byte[])}; {@link #close()} unloads it ({@code cuModuleUnload}).
 *
 * <p>Thread-safe: functions may be looked up and launched from any thread (each call makes the context current).
 */
public final class CudaModule implements AutoCloseable {
    private static final Pattern PTX_VERSION = Pattern.compile("(?m)^\\s*\\.version\\s+(\\d+\\.\\d+)");

    private final CudaDevice device;
    private final CudaContext context;
    private final long handle;
    private volatile boolean closed;

    private CudaModule(CudaDevice device, CudaContext context, long handle) {
        this.device = device;
        this.context = context;
        this.handle = handle;
    }

    /**
     * @throws DeviceUnavailableException in one line naming the driver version and the PTX ISA version when the
     *     driver is too old for the PTX ({@code CUDA_ERROR_UNSUPPORTED_PTX_VERSION})
     * @throws CudaException for other driver errors (e.g. {@code CUDA_ERROR_INVALID_IMAGE})
     */
    static CudaModule load(CudaDevice device, CudaContext context, byte[] image) {
        CudaDriver driver = context.current();
        try (Arena a = Arena.ofConfined()) {
            MemorySegment img = a.allocate(image.length + 1L);
            MemorySegment.copy(image, 0, img, JAVA_BYTE, 0, image.length);
            return new CudaModule(device, context, driver.moduleLoadData(img));
        } catch (CudaException e) {
            if (e.result() == CudaDriver.CUDA_ERROR_UNSUPPORTED_PTX_VERSION) {
                throw new DeviceUnavailableException(unsupportedPtx(driver.driverVersion(), image), e);
            }
            throw e;
        }
    }

    /** The one line for a driver too old for the PTX. */
    static String unsupportedPtx(int driverVersion, byte[] image) {
        Matcher m = PTX_VERSION.matcher(new String(image, 0, Math.min(image.length, 4096), StandardCharsets.US_ASCII));
        String isa = m.find() ? "PTX ISA " + m.group(1) : "this PTX";
        return String.format(Locale.ROOT, "the CUDA driver (version %d.%d, cuDriverGetVersion %d) cannot load %s "
                        + "(cuModuleLoadData: CUDA_ERROR_UNSUPPORTED_PTX_VERSION): vram4j's kernels are compiled by nvcc 13, "
                        + "which needs a CUDA 13 driver (R580 or newer); update the driver",
                driverVersion / 1000, driverVersion % 1000 / 10, driverVersion, isa);
    }

    /**
     * @param name the kernel's entry name (unmangled: {@code extern "C"})
     * @return the function
     * @throws IllegalArgumentException when the module has no such entry ({@code CUDA_ERROR_NOT_FOUND})
     * @throws IllegalStateException when the module is closed
     */
    public CudaFunction function(String name) {
        checkOpen();
        try {
            return new CudaFunction(this, name, context.current().moduleGetFunction(handle, name));
        } catch (CudaException e) {
            if (e.result() == CudaDriver.CUDA_ERROR_NOT_FOUND) {
                throw new IllegalArgumentException("no kernel '" + name + "' in the module loaded on "
                        + device.description() + " (cuModuleGetFunction: CUDA_ERROR_NOT_FOUND)", e);
            }
            throw e;
        }
    }

    CudaDevice device() {
        return device;
    }

    void checkOpen() {
        if (closed) {
            throw new IllegalStateException("the CUDA module was unloaded (closed)");
        }
    }

    /** Unloads the module ({@code cuModuleUnload}); its functions must not be launched afterwards. Closing twice does nothing. */
    @Override
    public synchronized void close() {
        if (!closed) {
            closed = true;
            context.current().moduleUnload(handle);
        }
    }
}
