package io.vram4j.cli;

import io.vram4j.device.DeviceUnavailableException;
import io.vram4j.device.Devices;
import io.vram4j.device.cuda.CudaDevice;
import io.vram4j.device.cuda.CudaDeviceInfo;
import io.vram4j.memory.stats.FormatSize;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Spec;

import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;

/**
 * {@code vram4j devices}: every device vram4j can open here: {@code host} with its default capacity, the
 * {@code sim} presets, and each CUDA GPU with its name, compute capability, total and free memory, driver version
 * and support for virtual memory management (expandable segments). Without a CUDA driver or GPU the {@code cuda}
 * line says why; that is not an error.
 */
@Command(name = "devices", mixinStandardHelpOptions = true,
        description = "List the devices vram4j can open here: host, the sim presets, and CUDA GPUs.")
final class DevicesCommand implements Callable<Integer> {
    @Mixin
    JsonOutput json;

    @Spec
    picocli.CommandLine.Model.CommandSpec spec;

    @Override
    public Integer call() {
        PrintWriter out = spec.commandLine().getOut();
        List<CudaDeviceInfo> gpus = List.of();
        String cudaProblem = null;
        try {
            gpus = CudaDevice.list();
            if (gpus.isEmpty()) {
                cudaProblem = "no CUDA device";
            }
        } catch (DeviceUnavailableException e) {
            cudaProblem = e.getMessage();
        }
        long hostCapacity = Devices.hostDefaultCapacity();
        if (json.json) {
            Map<String, Object> doc = new LinkedHashMap<>();
            doc.put("host", Map.of("spec", "host", "capacity_bytes", hostCapacity,
                    "physical_memory_bytes", Devices.physicalMemory()));
            Map<String, Long> presets = new LinkedHashMap<>(Devices.presets());
            Map<String, String> capabilities = new LinkedHashMap<>();
            presets.keySet().forEach(p -> capabilities.put(p, Devices.presetCapability(p).toString()));
            doc.put("sim", Map.of("default_capacity_bytes", Devices.SIM_DEFAULT_CAPACITY, "presets", presets,
                    "preset_compute_capabilities", capabilities));
            List<Map<String, Object>> cuda = new ArrayList<>();
            for (CudaDeviceInfo g : gpus) {
                Map<String, Object> m = new LinkedHashMap<>();
                m.put("spec", "cuda:" + g.index());
                m.put("name", g.name());
                m.put("compute_capability", g.computeCapabilityMajor() + "." + g.computeCapabilityMinor());
                m.put("total_memory_bytes", g.totalMemory());
                m.put("free_memory_bytes", g.freeMemory());
                m.put("driver_version", g.driverVersionString());
                m.put("virtual_memory_management", g.virtualMemoryManagement());
                m.put("dry_run_spec", dryRunSpec(g));
                cuda.add(m);
            }
            doc.put("cuda", cuda);
            if (cudaProblem != null) {
                doc.put("cuda_unavailable", cudaProblem);
            }
            json.print(doc);
            return 0;
        }
        out.printf("%-14s %s%n", "host", "off-heap memory of this process, default capacity "
                + FormatSize.formatSize(hostCapacity) + " (half of " + FormatSize.formatSize(Devices.physicalMemory())
                + "); host:SIZE for another");
        out.printf("%-14s %s%n", "sim", "simulated, accounting only, default " + FormatSize.formatSize(Devices.SIM_DEFAULT_CAPACITY)
                + "; sim:SIZE stands for host, sim:SIZE:ccX.Y and the presets for a CUDA GPU (sim:PRESET:host for host):");
        for (Map.Entry<String, Long> p : Devices.presets().entrySet()) {
            out.printf("  %-14s %s (%,d bytes), compute capability %s%n", "sim:" + p.getKey(),
                    FormatSize.formatSize(p.getValue()), p.getValue(), Devices.presetCapability(p.getKey()));
        }
        if (cudaProblem != null) {
            out.printf("%-14s none: %s%n", "cuda", cudaProblem);
        }
        for (CudaDeviceInfo g : gpus) {
            out.printf("%-14s %s, compute capability %d.%d, %s total, %s free, driver %s, expandable segments: %s; "
                            + "dry run: --device %s%n",
                    "cuda:" + g.index(), g.name(), g.computeCapabilityMajor(), g.computeCapabilityMinor(),
                    FormatSize.formatSize(g.totalMemory()), FormatSize.formatSize(g.freeMemory()),
                    g.driverVersionString(), g.virtualMemoryManagement() ? "yes" : "no (no virtual memory management)",
                    dryRunSpec(g));
        }
        return 0;
    }

    /** @return the sim spec standing for this GPU: its total bytes and compute capability */
    static String dryRunSpec(CudaDeviceInfo g) {
        return "sim:" + g.totalMemory() + ":cc" + g.computeCapabilityMajor() + "." + g.computeCapabilityMinor();
    }
}
