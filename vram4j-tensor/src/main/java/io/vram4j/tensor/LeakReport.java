package io.vram4j.tensor;

/**
 * A storage that became unreachable without being released: its memory is still allocated (the leak detector
 * only reports; the garbage collector never frees device memory).
 *
 * @param device the device description, e.g. {@code host:1GiB}
 * @param address the block's device address
 * @param bytes the storage size in bytes
 * @param site the allocation stack, one frame per line ({@code "\tat ..."}), or a note when it was not captured
 */
public record LeakReport(String device, long address, long bytes, String site) {
    /** @return the message printed to stderr */
    public String message() {
        return "LEAK: a tensor storage of " + bytes + " bytes on " + device + " (address 0x" + Long.toHexString(address)
                + ") was garbage-collected without being closed; its memory stays allocated. Allocated at:\n" + site;
    }
}
