package io.vram4j.compute.cuda;

import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The size of the cuBLAS workspace that vram4j allocates from the caching allocator and hands to
 * {@code cublasSetWorkspace_v2}, chosen as PyTorch chooses it (ATen {@code CublasHandlePool.cpp},
 * {@code parseChosenWorkspaceSize}): from {@code CUBLAS_WORKSPACE_CONFIG}, a list of {@code :SIZE:COUNT} pairs
 * (SIZE in KiB) whose products are summed; without it, 32 MiB ({@code :4096:8}) on compute capability 9.0
 * (H100) and 8 MiB + 128 KiB ({@code :4096:2:16:8}) elsewhere. A value without any pair is ignored with a
 * warning, as PyTorch does, and the default used.
 *
 * <p>Stateless and thread-safe.
 */
final class CublasWorkspace {
    private static final Pattern PAIR = Pattern.compile(":([0-9]+):([0-9]+)");
    private static final System.Logger LOG = System.getLogger("io.vram4j.compute.cuda");

    private CublasWorkspace() {
    }

    /**
     * @param config the value of {@code CUBLAS_WORKSPACE_CONFIG}, or null when unset
     * @param major the GPU's compute capability, major
     * @param minor and minor
     * @return the workspace size in bytes
     */
    static long size(String config, int major, int minor) {
        long defaultSize = major == 9 && minor == 0 ? 4096L * 8 * 1024 : 4096L * 1024 * 2 + 16L * 1024 * 8;
        if (config == null) {
            return defaultSize;
        }
        Matcher m = PAIR.matcher(config);
        long total = 0;
        boolean any = false;
        try {
            while (m.find()) {
                any = true;
                total = Math.addExact(total, Math.multiplyExact(Math.multiplyExact(Long.parseLong(m.group(1)), 1024L),
                        Long.parseLong(m.group(2))));
            }
        } catch (NumberFormatException | ArithmeticException e) {
            throw new IllegalArgumentException("CUBLAS_WORKSPACE_CONFIG='" + config + "': the workspace size does not "
                    + "fit 64 bits");
        }
        if (!any) {
            LOG.log(System.Logger.Level.WARNING, "Could not parse CUBLAS_WORKSPACE_CONFIG='" + config
                    + "' (expected :SIZE:COUNT pairs), using the default workspace size of " + defaultSize + " bytes");
            return defaultSize;
        }
        return total;
    }
}
