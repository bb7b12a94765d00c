package io.vram4j.tensor;

import java.util.ArrayList;
import java.util.LinkedHashSet;

/**
 * Closes, at the end of a try-with-resources block, every tensor created inside it on this thread, except
 * those handed out with {@link #keep} (to the enclosing scope) or {@link #detach} (to nobody: the caller
 * closes them). Scopes nest per thread; a tensor belongs to the innermost scope open when it was created.
 *
 * <pre>{@code
 * Tensor loss;
 * try (MemoryScope scope = MemoryScope.open()) {
 *     Tensor h = x.matmul(w).relu();               // closed when the scope ends
 *     loss = scope.keep(h.sum());                  // survives (moves to the enclosing scope, if any)
 * }
 * }</pre>
 *
 * <p>Closing a tensor frees its storage only when no view or autograd node still holds it. Scopes are
 * confined to the thread that opened them.
 */
public final class MemoryScope implements AutoCloseable {
    private static final ThreadLocal<MemoryScope> CURRENT = new ThreadLocal<>();

    private final MemoryScope parent;
    private final Thread owner;
    private final LinkedHashSet<Tensor> tensors = new LinkedHashSet<>(); // tensors compare by identity
    private boolean closed;

    private MemoryScope(MemoryScope parent) {
        this.parent = parent;
        this.owner = Thread.currentThread();
    }

    /** @return a new scope nested in this thread's current one */
    public static MemoryScope open() {
        MemoryScope s = new MemoryScope(CURRENT.get());
        CURRENT.set(s);
        return s;
    }

    /** @return this thread's innermost open scope, or null */
    public static MemoryScope current() {
        return CURRENT.get();
    }

    static void register(Tensor t) {
        MemoryScope s = CURRENT.get();
        if (s != null) {
            s.tensors.add(t);
            t.scope = s;
        }
    }

    static void unregister(Tensor t) {
        MemoryScope s = t.scope;
        if (s != null) {
            s.tensors.remove(t);
            t.scope = null;
        }
    }

    /**
     * Lets {@code t} outlive this scope: it moves to the enclosing scope (which closes it in turn unless kept
     * again) or, when there is none, to nobody.
     *
     * @param t a tensor of this scope (or of no scope)
     * @return {@code t}
     * @throws IllegalArgumentException when {@code t} belongs to another scope
     */
    public <T extends Tensor> T keep(T t) {
        take(t);
        if (parent != null && !parent.closed) {
            parent.tensors.add(t);
            t.scope = parent;
        }
        return t;
    }

    /**
     * Lets {@code t} outlive this and every enclosing scope: the caller must close it.
     *
     * @param t a tensor of this scope (or of no scope)
     * @return {@code t}
     */
    public <T extends Tensor> T detach(T t) {
        take(t);
        return t;
    }

    private void take(Tensor t) {
        if (t.scope != null && t.scope != this) {
            throw new IllegalArgumentException("the tensor belongs to another memory scope");
        }
        tensors.remove(t);
        t.scope = null;
    }

    /**
     * Removes a tensor from whatever scope holds it, on any thread's chain (for long-lived state such as
     * optimizer buffers created while a scope is open). The caller must close it.
     *
     * @param t a tensor
     * @return {@code t}
     */
    public static <T extends Tensor> T detachFromAny(T t) {
        unregister(t);
        return t;
    }

    /** @return how many tensors this scope would close now */
    public int size() {
        return tensors.size();
    }

    /** Closes every tensor still registered here, newest first, and pops this scope. Idempotent. */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        if (Thread.currentThread() != owner) {
            throw new IllegalStateException("a memory scope must be closed by the thread that opened it");
        }
        if (CURRENT.get() != this) {
            throw new IllegalStateException("memory scopes must be closed innermost first");
        }
        closed = true;
        CURRENT.set(parent);
        RuntimeException failure = null;
        for (Tensor t : new ArrayList<>(tensors).reversed()) {
            t.scope = null;
            try {
                t.close();
            } catch (RuntimeException e) {
                if (failure == null) {
                    failure = e;
                } else {
                    failure.addSuppressed(e);
                }
            }
        }
        tensors.clear();
        if (failure != null) {
            throw failure;
        }
    }
}
