package io.vram4j.device;

import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A CUDA GPU's compute capability, {@code major.minor} (as {@code torch.cuda.get_device_capability()} returns it,
 * e.g. 9.0 for an H100): what a {@code sim} device standing for a CUDA GPU needs to know about it, since the
 * memory the CUDA kernels take depends on it (the cuBLAS workspace is 32 MiB on 9.0, 8 MiB + 128 KiB elsewhere).
 *
 * @param major the major version, 1 to 99
 * @param minor the minor version, 0 to 9
 */
public record ComputeCapability(int major, int minor) {
    private static final Pattern FORM = Pattern.compile("([0-9]{1,2})\\.([0-9])");

    /** @throws IllegalArgumentException outside 1.0 to 99.9 */
    public ComputeCapability {
        if (major < 1 || major > 99 || minor < 0 || minor > 9) {
            throw new IllegalArgumentException("compute capability " + major + "." + minor + " is out of range (1.0 to 99.9)");
        }
    }

    /**
     * @param text {@code MAJOR.MINOR}, e.g. {@code "9.0"} or {@code "8.6"}
     * @return the capability
     * @throws IllegalArgumentException naming the text when it is not of that form
     */
    public static ComputeCapability parse(String text) {
        Matcher m = FORM.matcher(text.strip());
        if (!m.matches()) {
            throw new IllegalArgumentException("'" + text + "' is not a compute capability (MAJOR.MINOR, e.g. 9.0 or 8.6)");
        }
        return new ComputeCapability(Integer.parseInt(m.group(1)), Integer.parseInt(m.group(2)));
    }

    /** @return {@code MAJOR.MINOR}, e.g. {@code "9.0"} */
    @Override
    public String toString() {
        return major + "." + minor;
    }
}
