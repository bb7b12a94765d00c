package io.vram4j.device;

import java.util.Collections;
import java.util.Map;
import java.util.SortedMap;
import java.util.TreeMap;

/**
 * Named GPUs, the capacity CUDA reports for them ({@code cudaDeviceProp.totalGlobalMem}, which is what
 * {@code torch.cuda.get_device_properties(i).total_memory} returns) and their compute capability, for
 * {@code sim:<PRESET>} devices, which stand for that GPU under {@code cuda}.
 *
 * <p>The figure is less than the marketing size (and than {@code nvidia-smi}'s "memory.total"): the driver
 * keeps some memory for itself, and how much varies a little between driver versions and ECC settings, so each
 * figure is one real, published reading, cited beside it. Where the source printed exact bytes (CUDA's
 * {@code deviceQuery} sample: "Total amount of global memory: N MBytes (B bytes)") we use them; where it only
 * printed PyTorch's {@code _CudaDeviceProperties(... total_memory=NMB ...)}, which is
 * {@code total_memory // 2**20}, we use N MiB.
 */
final class GpuPresets {
    private static final long MIB = ByteSize.MIB;

    /** Preset name to bytes, sorted by name. */
    private static final SortedMap<String, Long> PRESETS = build();
    /**
     * Preset name to compute capability, from NVIDIA's table of CUDA GPUs ("CUDA GPU Compute Capability",
     * developer.nvidia.com/cuda-gpus): Ampere data-center A100 8.0, GA102 (RTX 3090, A10G) 8.6, Ada (L4, L40S,
     * RTX 4090) 8.9, Hopper (H100, H200) 9.0, Turing T4 7.5, Volta V100 7.0.
     */
    private static final Map<String, ComputeCapability> CAPABILITIES = Map.ofEntries(
            Map.entry("A100-40GB", new ComputeCapability(8, 0)), Map.entry("A100-80GB", new ComputeCapability(8, 0)),
            Map.entry("H100-80GB", new ComputeCapability(9, 0)), Map.entry("H200", new ComputeCapability(9, 0)),
            Map.entry("L4", new ComputeCapability(8, 9)), Map.entry("T4", new ComputeCapability(7, 5)),
            Map.entry("V100-16GB", new ComputeCapability(7, 0)), Map.entry("V100-32GB", new ComputeCapability(7, 0)),
            Map.entry("RTX4090", new ComputeCapability(8, 9)), Map.entry("RTX3090", new ComputeCapability(8, 6)),
            Map.entry("A10G", new ComputeCapability(8, 6)), Map.entry("L40S", new ComputeCapability(8, 9)));

    private GpuPresets() {
    }

    private static SortedMap<String, Long> build() {
        TreeMap<String, Long> m = new TreeMap<>();
        // deviceQuery, NVIDIA A100-SXM4-40GB, driver 12.2: "40339 MBytes (42298834944 bytes)"
        // (bottlerocket-os/bottlerocket pull request #3873)
        m.put("A100-40GB", 42_298_834_944L);
        // deviceQuery, NVIDIA A100-SXM4-80GB, driver 12.2 / runtime 12.1: "81051 MBytes (84987740160 bytes)"
        m.put("A100-80GB", 84_987_740_160L);
        // deviceQuery, NVIDIA H100 80GB HBM3, driver 12.8: "81090 MBytes (85028896768 bytes)"; PyTorch prints
        // the same device as total_memory=81090MB
        m.put("H100-80GB", 85_028_896_768L);
        // PyTorch on Modal: _CudaDeviceProperties(name='NVIDIA H200', major=9, minor=0, total_memory=143156MB, ...)
        m.put("H200", 143_156L * MIB);
        // deviceQuery, NVIDIA L4, driver 12.0 / runtime 11.8: "22518 MBytes (23612293120 bytes)"
        m.put("L4", 23_612_293_120L);
        // deviceQuery, Tesla T4, driver 11.0: "15110 MBytes (15843721216 bytes)"; PyTorch on Colab prints
        // total_memory=15109MB (the floor of the same figure)
        m.put("T4", 15_843_721_216L);
        // deviceQuery, Tesla V100-SXM2-16GB, driver 9.0: "16160 MBytes (16945512448 bytes)"; PyTorch prints
        // total_memory=16160MB
        m.put("V100-16GB", 16_945_512_448L);
        // deviceQuery, Tesla V100-SXM2-32GB, driver 11.2: "32510 MBytes (34089730048 bytes)"; PyTorch prints
        // total_memory=32510MB for a V100-PCIE-32GB
        m.put("V100-32GB", 34_089_730_048L);
        // deviceQuery, NVIDIA GeForce RTX 4090, driver 12.1: "24564 MBytes (25756696576 bytes)"; PyTorch prints
        // total_memory=24563MB
        m.put("RTX4090", 25_756_696_576L);
        // deviceQuery, NVIDIA GeForce RTX 3090, driver 11.8: "24268 MBytes (25447170048 bytes)"; the Hugging Face
        // docs show PyTorch's total_memory=24268MB
        m.put("RTX3090", 25_447_170_048L);
        // PyTorch (Ultralytics yolov3 log): _CudaDeviceProperties(name='NVIDIA A10G', total_memory=22723MB)
        m.put("A10G", 22_723L * MIB);
        // deviceQuery (cuda-device-query README), NVIDIA L40S, driver 12.4: "45373 MBytes (47576711168 bytes)"
        m.put("L40S", 47_576_711_168L);
        return Collections.unmodifiableSortedMap(m);
    }

    /** @return preset name to capacity in bytes, sorted by name, unmodifiable */
    static SortedMap<String, Long> all() {
        return PRESETS;
    }

    /**
     * @param preset a canonical preset name ({@link #canonicalName})
     * @return the GPU's compute capability
     * @throws IllegalArgumentException for a name that is not a preset
     */
    static ComputeCapability capability(String preset) {
        ComputeCapability c = CAPABILITIES.get(preset);
        if (c == null) {
            throw new IllegalArgumentException("no preset named " + preset);
        }
        return c;
    }

    /** @return the canonical name of a preset, matched case-insensitively, or null */
    static String canonicalName(String name) {
        for (String preset : PRESETS.keySet()) {
            if (preset.equalsIgnoreCase(name.strip())) {
                return preset;
            }
        }
        return null;
    }

    /** @return the preset names, comma-separated */
    static String names() {
        return String.join(", ", PRESETS.keySet());
    }
}
