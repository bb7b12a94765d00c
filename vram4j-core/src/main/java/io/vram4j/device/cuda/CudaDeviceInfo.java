package io.vram4j.device.cuda;

/**
 * What the driver says of one CUDA device, as {@code ./vram4j devices} lists it.
 *
 * @param index the device ordinal ({@code cuda:N})
 * @param name the device name, e.g. {@code "NVIDIA H100 80GB HBM3"}
 * @param computeCapabilityMajor e.g. 9 for Hopper
 * @param computeCapabilityMinor e.g. 0
 * @param totalMemory bytes ({@code cuDeviceTotalMem_v2}, as {@code totalGlobalMem})
 * @param freeMemory bytes free now ({@code cuMemGetInfo_v2})
 * @param driverVersion e.g. 13000 for CUDA 13.0 ({@code cuDriverGetVersion})
 * @param virtualMemoryManagement whether expandable segments can be used
 *     ({@code CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED})
 */
public record CudaDeviceInfo(int index, String name, int computeCapabilityMajor, int computeCapabilityMinor,
        long totalMemory, long freeMemory, int driverVersion, boolean virtualMemoryManagement) {

    /** @return the driver version as CUDA writes it, e.g. {@code "13.0"} */
    public String driverVersionString() {
        return driverVersion / 1000 + "." + driverVersion % 1000 / 10;
    }
}
