package io.vram4j.device;

import io.vram4j.device.cuda.CudaDevice;
import io.vram4j.device.cuda.CudaSegments;
import io.vram4j.device.host.HostDevice;
import io.vram4j.device.sim.SimDevice;

import java.util.Locale;
import java.util.Objects;
import java.util.SortedMap;

/**
 * Opens devices from a spec string. Accepted specs (the type is case-insensitive):
 * <ul>
 *   <li>{@code host}: real off-heap memory with the default capacity, half the physical memory
 *       ({@link HostDevice#defaultCapacity()});</li>
 *   <li>{@code host:SIZE}, e.g. {@code host:8GiB}: real memory with that capacity. It may exceed the physical
 *       memory, since pages are only backed once written, but touching more than the machine has ends in the
 *       kernel's out-of-memory killer;</li>
 *   <li>{@code sim}: a simulated device with {@link #SIM_DEFAULT_CAPACITY} (80 GiB), standing for {@code host};</li>
 *   <li>{@code sim:SIZE}, e.g. {@code sim:80GiB}: a simulated device with that capacity, standing for {@code host}
 *       (a dry run there allocates as the real run on {@code host:SIZE} does);</li>
 *   <li>{@code sim:PRESET}, e.g. {@code sim:A100-80GB}: a simulated device with the capacity CUDA reports for
 *       that GPU, standing for that GPU under {@code cuda} ({@link SimDevice#cudaModel()}: its compute capability,
 *       {@link #presetCapability}); see {@link #presets()} (names are case-insensitive);</li>
 *   <li>{@code sim:SIZE:ccMAJOR.MINOR}, e.g. {@code sim:85028896768:cc9.0}: a simulated device of that capacity
 *       standing for a CUDA GPU of that compute capability (the total and capability {@code vram4j devices} lists
 *       for a GPU, so that a dry run there makes the allocations a run on that {@code cuda} device makes);</li>
 *   <li>{@code sim:PRESET:host}: the preset's capacity, standing for {@code host} (as {@code sim:SIZE});</li>
 *   <li>{@code cuda} or {@code cuda:N}: CUDA GPU {@code N} (default 0) through the driver API
 *       ({@link CudaDevice}); it has index {@code N}.</li>
 * </ul>
 * {@code SIZE} is anything {@link ByteSize#parse} accepts; capacities must be positive and at most
 * {@link AbstractDevice#MAX_CAPACITY} (1 PiB). Opened {@code host} and {@code sim} devices have index 0. Thread-safe.
 */
public final class Devices {
    /** The capacity of a plain {@code sim} device: 80 GiB. */
    public static final long SIM_DEFAULT_CAPACITY = 80 * ByteSize.GIB;

    private Devices() {
    }

    /**
     * @param spec the device spec, e.g. {@code "host:8GiB"} or {@code "sim:H100-80GB"}
     * @return an open device; the caller closes it
     * @throws IllegalArgumentException when the spec is malformed, naming the spec and what is accepted
     * @throws NullPointerException if {@code spec} is null
     * @throws UnsupportedOperationException for {@code host} on a system other than Linux
     * @throws DeviceUnavailableException for {@code cuda} without a CUDA driver or device, or with an index past
     *     the last device
     */
    public static DeviceBackend open(String spec) {
        return open(spec, CudaSegments.DRIVER);
    }

    /**
     * {@link #open(String)}, placing a {@code cuda} device's segments by {@code segments}: the CLI's {@code train}
     * and {@code find-batch-size} open {@code cuda} with {@link CudaSegments#LOWEST_ADDRESS_FIRST}, so that their
     * dry runs on {@code sim} predict them byte for byte.
     *
     * @param spec the device spec
     * @param segments where a {@code cuda} device places segments; {@code host} and {@code sim} ignore it
     * @return an open device; the caller closes it
     */
    public static DeviceBackend open(String spec, CudaSegments segments) {
        Objects.requireNonNull(spec, "device spec");
        String s = spec.strip();
        int colon = s.indexOf(':');
        String type = (colon < 0 ? s : s.substring(0, colon)).strip().toLowerCase(Locale.ROOT);
        String argument = colon < 0 ? null : s.substring(colon + 1).strip();
        switch (type) {
            case "host" -> {
                long capacity = argument == null ? HostDevice.defaultCapacity() : capacity(spec, argument, false);
                return new HostDevice(0, capacity, "host:" + ByteSize.format(capacity));
            }
            case "sim" -> {
                return openSim(spec, argument);
            }
            case "cuda" -> {
                return CudaDevice.open(cudaOrdinal(spec, argument), segments);
            }
            default -> throw new IllegalArgumentException("unknown device '" + spec + "'; " + expected());
        }
    }

    /**
     * {@code sim[:SIZE|PRESET[:MODEL]]}: a preset stands for its CUDA GPU unless {@code MODEL} says {@code host}; a
     * size stands for {@code host} unless {@code MODEL} gives a compute capability, {@code ccMAJOR.MINOR}.
     */
    private static SimDevice openSim(String spec, String argument) {
        if (argument == null) {
            return new SimDevice(0, SIM_DEFAULT_CAPACITY, "sim:" + ByteSize.format(SIM_DEFAULT_CAPACITY));
        }
        int colon = argument.indexOf(':');
        String what = (colon < 0 ? argument : argument.substring(0, colon)).strip();
        String model = colon < 0 ? null : argument.substring(colon + 1).strip();
        String preset = GpuPresets.canonicalName(what);
        long capacity = preset != null ? GpuPresets.all().get(preset) : capacity(spec, what, true);
        String name = "sim:" + (preset != null ? preset : ByteSize.format(capacity));
        ComputeCapability cuda = preset != null ? GpuPresets.capability(preset) : null;
        if (model != null) {
            if (model.equalsIgnoreCase("host")) {
                return new SimDevice(0, capacity, preset != null ? name + ":host" : name, null);
            }
            cuda = modelledCapability(spec, model);
            name += ":cc" + cuda;
        }
        return new SimDevice(0, capacity, name, cuda);
    }

    private static ComputeCapability modelledCapability(String spec, String model) {
        String m = model.toLowerCase(Locale.ROOT);
        if (!m.startsWith("cc")) {
            throw new IllegalArgumentException("invalid device '" + spec + "': '" + model + "' is neither host nor a "
                    + "compute capability such as cc9.0; " + expected());
        }
        try {
            return ComputeCapability.parse(m.substring(2));
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("invalid device '" + spec + "': " + e.getMessage() + "; " + expected(), e);
        }
    }

    /** @return the capacity of a plain {@code host} device: half the physical memory, in bytes */
    public static long hostDefaultCapacity() {
        return HostDevice.defaultCapacity();
    }

    /** @return the physical memory of this machine in bytes, as the {@code host} device sees it */
    public static long physicalMemory() {
        return HostDevice.physicalMemory();
    }

    /**
     * @param preset a preset name, case-insensitive
     * @return the compute capability of the preset's GPU, which {@code sim:PRESET} stands for
     * @throws IllegalArgumentException when it is not a preset
     */
    public static ComputeCapability presetCapability(String preset) {
        String name = GpuPresets.canonicalName(preset);
        if (name == null) {
            throw new IllegalArgumentException("unknown preset '" + preset + "' (presets: " + GpuPresets.names() + ")");
        }
        return GpuPresets.capability(name);
    }

    /**
     * @return the GPU presets for {@code sim:PRESET}: name to capacity in bytes (as CUDA's
     *         {@code totalGlobalMem}), sorted by name, unmodifiable
     */
    public static SortedMap<String, Long> presets() {
        return GpuPresets.all();
    }

    private static long capacity(String spec, String argument, boolean presetAllowed) {
        if (argument.isEmpty()) {
            throw new IllegalArgumentException("invalid device '" + spec + "': no size after ':'; " + expected());
        }
        long bytes;
        try {
            bytes = ByteSize.parse(argument);
        } catch (IllegalArgumentException e) {
            String what = presetAllowed ? "'" + argument + "' is neither a size nor a preset (" + e.getMessage() + ")"
                    : e.getMessage();
            throw new IllegalArgumentException("invalid device '" + spec + "': " + what + "; " + expected(), e);
        }
        if (bytes <= 0) {
            throw new IllegalArgumentException("invalid device '" + spec + "': the capacity must be positive; "
                    + expected());
        }
        if (bytes > AbstractDevice.MAX_CAPACITY) {
            throw new IllegalArgumentException("invalid device '" + spec + "': the capacity " + ByteSize.format(bytes)
                    + " exceeds the maximum of " + ByteSize.format(AbstractDevice.MAX_CAPACITY) + "; " + expected());
        }
        return bytes;
    }

    private static int cudaOrdinal(String spec, String argument) {
        if (argument == null) {
            return 0;
        }
        if (!argument.matches("[0-9]{1,4}")) {
            throw new IllegalArgumentException("invalid device '" + spec + "': '" + argument
                    + "' is not a device index; " + expected());
        }
        return Integer.parseInt(argument);
    }

    private static String expected() {
        return "expected host[:SIZE], sim[:SIZE|PRESET[:ccMAJOR.MINOR|:host]] or cuda[:N], e.g. host:8GiB, sim:A100-80GB, "
                + "sim:80GiB:cc9.0 or cuda:0 (presets: " + GpuPresets.names() + ")";
    }
}
