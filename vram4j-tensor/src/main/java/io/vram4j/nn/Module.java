package io.vram4j.nn;

import io.vram4j.tensor.internal.ExecutionContext;
import io.vram4j.tensor.Tensor;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A layer or model (as {@code torch.nn.Module}): it owns named {@link Parameter}s and child modules, both
 * kept in registration order, and a training flag. {@link #close()} closes every parameter (and its
 * gradient) recursively. Parameter names are dotted paths, e.g. {@code h.0.attn.c_attn.weight}.
 *
 * <p>Single-input modules override {@link #forward(Tensor)}, which returns a new tensor the caller owns and
 * never closes its input. Not thread-safe.
 */
public abstract class Module implements AutoCloseable {
    private final Map<String, Parameter> parameters = new LinkedHashMap<>();
    private final Map<String, Module> children = new LinkedHashMap<>();
    private boolean training = true;
    private boolean closed;
    private Module parent;
    private String name;
    private String path;

    /**
     * Registers a parameter that takes over {@code data}.
     *
     * @param name unique among this module's parameters and children, without dots
     * @param data the initial value (its handle is taken over)
     * @return the parameter
     */
    protected final Parameter registerParameter(String name, Tensor data) {
        checkName(name);
        Parameter p = data instanceof Parameter q ? q : new Parameter(data);
        parameters.put(name, p);
        return p;
    }

    /**
     * @param name unique among this module's parameters and children, without dots
     * @param module a child module, closed with this one
     * @return {@code module}
     */
    protected final <M extends Module> M registerModule(String name, M module) {
        checkName(name);
        children.put(name, module);
        Module m = module; // generic type variables cannot reach private fields
        if (m.parent == null) {
            m.parent = this;
            m.name = name;
        }
        return module;
    }

    /**
     * Runs {@link #forward} inside an {@link ExecutionContext} region named by this module's path, so memory
     * tools can tell which module allocated what and reached the peak (as PyTorch's {@code __call__} runs hooks
     * around {@code forward}). Modules call their children through it.
     *
     * @param input the input (not closed)
     * @return the output of {@link #forward}
     */
    public final Tensor call(Tensor input) {
        try (ExecutionContext.Region r = ExecutionContext.enterForward(path())) {
            return forward(input);
        }
    }

    /** @return the dotted path from the root module, e.g. {@code h.3.attn}; {@code ""} for a root */
    public final String path() {
        if (path == null) {
            path = parent == null ? "" : parent.path().isEmpty() ? name : parent.path() + "." + name;
        }
        return path;
    }

    private void checkName(String name) {
        if (name.isEmpty() || name.contains(".")) {
            throw new IllegalArgumentException("invalid name '" + name + "'");
        }
        if (parameters.containsKey(name) || children.containsKey(name)) {
            throw new IllegalArgumentException("'" + name + "' is already registered");
        }
    }

    /**
     * @param input the input (not closed)
     * @return a new output tensor
     * @throws UnsupportedOperationException for modules that take other inputs
     */
    public Tensor forward(Tensor input) {
        throw new UnsupportedOperationException(getClass().getSimpleName() + " does not take a single input");
    }

    /** @return every parameter of this module and its descendants, in registration order */
    public List<Parameter> parameters() {
        return List.copyOf(namedParameters().values());
    }

    /** @return dotted names to parameters, recursively, in registration order */
    public Map<String, Parameter> namedParameters() {
        Map<String, Parameter> out = new LinkedHashMap<>();
        collect("", out);
        return Collections.unmodifiableMap(out);
    }

    private void collect(String prefix, Map<String, Parameter> out) {
        parameters.forEach((n, p) -> out.put(prefix + n, p));
        children.forEach((n, m) -> m.collect(prefix + n + ".", out));
    }

    /** @return the direct children by name */
    public Map<String, Module> children() {
        return Collections.unmodifiableMap(children);
    }

    /** @return the number of parameter elements */
    public long parameterCount() {
        long n = 0;
        for (Parameter p : parameters()) {
            n += p.numel();
        }
        return n;
    }

    /** Sets training mode (dropout active) on this module and its descendants. @return this */
    public Module train(boolean mode) {
        training = mode;
        children.values().forEach(m -> m.train(mode));
        return this;
    }

    /** @return {@code train(true)} */
    public Module train() {
        return train(true);
    }

    /** @return {@code train(false)} */
    public Module eval() {
        return train(false);
    }

    /** @return true in training mode (the default) */
    public boolean isTraining() {
        return training;
    }

    /**
     * Clears parameter gradients.
     *
     * @param setToNone close them (their memory goes back to the allocator) rather than fill with zeros
     */
    public void zeroGrad(boolean setToNone) {
        for (Parameter p : parameters()) {
            if (setToNone) {
                p.setGrad(null);
            } else if (p.grad() != null) {
                p.grad().zero();
            }
        }
    }

    /** Writes all parameters to a safetensors file (host only). */
    public void save(Path file) throws IOException {
        Safetensors.save(file, new LinkedHashMap<>(namedParameters()));
    }

    /**
     * Reads parameters from a safetensors file into this module's parameters (converting dtypes when they
     * differ).
     *
     * @throws IOException when the file cannot be read, is malformed, lacks a parameter or has another shape
     */
    public void load(Path file) throws IOException {
        Safetensors.loadInto(file, namedParameters());
    }

    /** Closes every parameter and child. Idempotent. */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        List<AutoCloseable> all = new ArrayList<>(parameters.values());
        all.addAll(children.values());
        RuntimeException failure = null;
        for (AutoCloseable c : all) {
            try {
                c.close();
            } catch (Exception e) {
                RuntimeException r = e instanceof RuntimeException re ? re : new IllegalStateException(e);
                if (failure == null) {
                    failure = r;
                } else {
                    failure.addSuppressed(r);
                }
            }
        }
        if (failure != null) {
            throw failure;
        }
    }
}
