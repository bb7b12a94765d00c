/**
 * vram4j's caching device allocator (PyTorch's CUDA caching allocator for the JVM), its devices, memory
 * statistics, snapshots in PyTorch's formats, the memory timeline page, replay of recorded traces and prediction
 * from them. Devices: {@code host}, {@code sim} and {@code cuda} (a GPU through the CUDA driver API).
 *
 * <p>Exports the API packages; the {@code host} device's implementation ({@code io.vram4j.device.host}) is
 * internal ({@link io.vram4j.device.Devices#open} opens it).
 */
module io.vram4j.core {
    requires com.fasterxml.jackson.core;
    requires com.fasterxml.jackson.databind;
    requires java.management;
    requires jdk.management;
    requires pickle; // net.razorvine:pickle has no module descriptor: its automatic name comes from the jar name

    exports io.vram4j.alloc;
    exports io.vram4j.alloc.config;
    exports io.vram4j.device;
    exports io.vram4j.device.cuda;
    exports io.vram4j.device.sim;
    exports io.vram4j.memory;
    exports io.vram4j.memory.snapshot;
    exports io.vram4j.memory.stats;
    exports io.vram4j.memory.viz;
    exports io.vram4j.predict;
    exports io.vram4j.replay;
}
