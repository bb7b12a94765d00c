package example;

import io.vram4j.memory.MemoryTracker;
import io.vram4j.nn.Linear;
import io.vram4j.tensor.Device;
import io.vram4j.tensor.Generator;
import io.vram4j.tensor.LiveTensors;
import io.vram4j.tensor.Memory;

import io.vram4j.tensor.Tensor;

/** The README's trackers and live-tensor report snippet, with a model and an input around it. */
public class Trackers {
    public static void main(String[] args) {
        LiveTensors.captureSites(true);                        // off by default: sites show as "(not captured)"
        Tensor logits;
        try (Device dev = Device.open("host:1GiB"); Device.Scope s = dev.use()) {
            Linear model = new Linear(dev, 784, 10, new Generator(0));
            Tensor x = dev.randn(new Generator(1), 64, 784);
            try (MemoryTracker t = Memory.track("forward")) {   // prints allocated, reserved and both peaks, before -> after
                logits = model.forward(x);
            }
            Memory.logMemory("after forward");                 // one line: allocated, reserved, peaks
            System.out.print(LiveTensors.report(10));          // live tensors grouped by allocation site (shape, dtype, bytes)
            logits.close();
            x.close();
            model.close();
        }
    }
}
