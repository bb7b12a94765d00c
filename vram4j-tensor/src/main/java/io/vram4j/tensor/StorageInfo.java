package io.vram4j.tensor;

import io.vram4j.tensor.internal.ExecutionContext;

/**
 * What one storage's block holds, kept by the {@link LiveTensors} registry from allocation until the block is
 * freed (a leaked storage's block stays allocated, so its entry stays too). It does not reference the storage,
 * so the leak detector still sees unreachable storages. Fields are written on the tensor's thread.
 */
final class StorageInfo {
    static final byte ROLE_NONE = 0;
    static final byte ROLE_PARAMETER = 1;
    static final byte ROLE_GRADIENT = 2;
    static final byte ROLE_OPTIMIZER_STATE = 3;

    final Device device;
    final long address;
    final long bytes;
    volatile byte role;
    volatile int savedRefs;
    int[] shape;
    DType dtype;
    String site;
    /** What was running when the storage was allocated (null: nothing), described when a report shows it. */
    ExecutionContext.Captured context;

    StorageInfo(Device device, long address, long bytes) {
        this.device = device;
        this.address = address;
        this.bytes = bytes;
    }

    /** @return the memory category now (see {@link MemoryCategory}) */
    MemoryCategory category() {
        return switch (role) {
            case ROLE_PARAMETER -> MemoryCategory.PARAMETERS;
            case ROLE_GRADIENT -> MemoryCategory.GRADIENTS;
            case ROLE_OPTIMIZER_STATE -> MemoryCategory.OPTIMIZER_STATE;
            default -> savedRefs > 0 ? MemoryCategory.ACTIVATIONS : MemoryCategory.TEMPORARIES;
        };
    }
}
