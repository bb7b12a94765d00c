package io.vram4j.device;

/**
 * Opens devices from a spec string: {@code host}, {@code host:8GiB}, {@code sim:80GiB}, {@code sim:A100-80GB}.
 */
public final class Devices {
    private Devices() {
    }

    /**
     * @param spec the device spec
     * @return an open device
     * @throws IllegalArgumentException when the spec is malformed, naming what was expected
     */
    public static DeviceBackend open(String spec) {
        throw new UnsupportedOperationException("not yet implemented: " + spec);
    }
}
