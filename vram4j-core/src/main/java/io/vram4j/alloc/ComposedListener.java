package io.vram4j.alloc;

import io.vram4j.device.Stream;

/** Forwards every trace event to two listeners, in order. */
final class ComposedListener implements AllocatorListener {
    private final AllocatorListener a;
    private final AllocatorListener b;

    private ComposedListener(AllocatorListener a, AllocatorListener b) {
        this.a = a;
        this.b = b;
    }

    static AllocatorListener of(AllocatorListener a, AllocatorListener b) {
        boolean hasA = a != null && a != AllocatorListener.NONE;
        boolean hasB = b != null && b != AllocatorListener.NONE;
        if (hasA && hasB) {
            return new ComposedListener(a, b);
        }
        return hasA ? a : hasB ? b : AllocatorListener.NONE;
    }

    @Override
    public void alloc(long addr, long size, Stream stream, Object context) {
        a.alloc(addr, size, stream, context);
        b.alloc(addr, size, stream, context);
    }

    @Override
    public void freeRequested(long addr, long size, Stream stream, Object freeContext, Object allocContext) {
        a.freeRequested(addr, size, stream, freeContext, allocContext);
        b.freeRequested(addr, size, stream, freeContext, allocContext);
    }

    @Override
    public void freeCompleted(long addr, long size, Stream stream, Object freeContext, Object allocContext) {
        a.freeCompleted(addr, size, stream, freeContext, allocContext);
        b.freeCompleted(addr, size, stream, freeContext, allocContext);
    }

    @Override
    public void segmentAlloc(long addr, long size, Stream stream, boolean small, Object context) {
        a.segmentAlloc(addr, size, stream, small, context);
        b.segmentAlloc(addr, size, stream, small, context);
    }

    @Override
    public void segmentFree(long addr, long size, Stream stream, boolean small) {
        a.segmentFree(addr, size, stream, small);
        b.segmentFree(addr, size, stream, small);
    }

    @Override
    public void segmentMap(long addr, long size, Stream stream, boolean small, Object context) {
        a.segmentMap(addr, size, stream, small, context);
        b.segmentMap(addr, size, stream, small, context);
    }

    @Override
    public void segmentUnmap(long addr, long size, Stream stream, boolean small) {
        a.segmentUnmap(addr, size, stream, small);
        b.segmentUnmap(addr, size, stream, small);
    }

    @Override
    public void oom(long deviceFree, long roundedSize, Stream stream) {
        a.oom(deviceFree, roundedSize, stream);
        b.oom(deviceFree, roundedSize, stream);
    }
}
