package io.vram4j.bench;

import io.vram4j.alloc.CachingAllocator;
import io.vram4j.alloc.config.AllocatorConfig;
import io.vram4j.device.DeviceBackend;
import io.vram4j.device.Devices;
import io.vram4j.memory.snapshot.Frame;
import io.vram4j.memory.snapshot.MemorySnapshot;
import io.vram4j.memory.snapshot.SnapshotWriter;
import io.vram4j.memory.snapshot.TraceAction;
import io.vram4j.memory.snapshot.TraceEntry;

import java.io.BufferedOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;

/**
 * Generates a benchmark input: a PyTorch-format memory snapshot pickle of more than 1 GiB with more than 2 million
 * trace entries, every one with a stack of PyTorch's depth (about 50 to 160 frames: the allocator's and the
 * dispatcher's C++ frames, the user's Python frames between {@code torch/nn/modules/module.py}'s
 * {@code _call_impl} frames, the interpreter's own C frames; backward allocations only C++ frames of the autograd
 * engine thread). It is written as PyTorch writes it: frame dicts shared, one list of them per entry.
 *
 * <p>The trace is recorded, not invented: a transformer-like training loop (24 blocks, forward activations kept
 * for backward, gradients, AdamW state, temporaries) runs on vram4j's caching allocator over a simulated 80 GiB
 * device with memory history on, so segments, addresses and the final state are consistent and {@code replay}
 * reproduces it exactly; each entry then gets the stack of the (simulated) site that allocated the block.
 *
 * <p>Run: {@code java -Xmx4g -cp vram4j-bench/target/benchmarks.jar io.vram4j.bench.BigSnapshot OUT.pickle
 * [ENTRIES]} (default 3,200,000 entries, about 1.08 GB; deterministic). Not a committed file: a generator.
 */
public final class BigSnapshot {
    private static final long MIB = 1L << 20;
    private static final int LAYERS = 24;
    private static final String[] FORWARD_OPS = {"linear", "matmul", "softmax", "gelu", "layer_norm", "add", "dropout", "scaled_dot_product_attention"};
    private static final String[] BACKWARD_NODES = {"MmBackward0", "AddmmBackward0", "SoftmaxBackward0", "GeluBackward0",
            "NativeLayerNormBackward0", "AddBackward0", "NativeDropoutBackward0", "ScaledDotProductEfficientAttentionBackward0"};

    private final SplittableRandom random = new SplittableRandom(20261124);
    private final List<List<Frame>> siteStacks = new ArrayList<>();
    /** The site of every malloc, in order. */
    private int[] mallocSites = new int[1 << 20];
    private int mallocs;

    private BigSnapshot() {
    }

    public static void main(String[] args) throws IOException {
        if (args.length < 1) {
            System.err.println("usage: BigSnapshot OUT.pickle [ENTRIES]");
            System.exit(2);
        }
        Path out = Path.of(args[0]);
        int entries = args.length > 1 ? Integer.parseInt(args[1]) : 3_200_000;
        long t0 = System.nanoTime();
        MemorySnapshot s = new BigSnapshot().generate(entries);
        try (OutputStream o = new BufferedOutputStream(Files.newOutputStream(out), 1 << 20)) {
            SnapshotWriter.writePickle(s, o, false);
        }
        long frames = 0;
        for (TraceEntry e : s.trace(0)) {
            frames += e.frames().size();
        }
        System.out.printf("wrote %s: %,d bytes, %,d trace entries, %,d frames in their stacks (%.1f per entry), %,d segments, %.1f s%n",
                out, Files.size(out), s.trace(0).size(), frames, (double) frames / s.trace(0).size(), s.segments().size(),
                (System.nanoTime() - t0) / 1e9);
    }

    private MemorySnapshot generate(int targetEntries) {
        buildSites();
        MemorySnapshot recorded;
        try (DeviceBackend device = Devices.open("sim:80GiB")) {
            CachingAllocator alloc = CachingAllocator.create(device, AllocatorConfig.DEFAULT);
            alloc.recordMemoryHistory("all", "all", "none", targetEntries + 100_000);
            List<Long> params = new ArrayList<>();
            List<Long> optimizerState = new ArrayList<>();
            for (int layer = 0; layer < LAYERS; layer++) {
                for (int k = 0; k < 4; k++) {
                    params.add(malloc(alloc, 12 * MIB + k * MIB, site(layer, 0, false)));
                }
            }
            int step = 0;
            while (mallocs * 3L < targetEntries) { // each malloc gives alloc, free_requested, free_completed
                step(alloc, params, optimizerState, step++);
            }
            recorded = alloc.snapshot();
            alloc.recordMemoryHistory(null, null, "none", 1);
            for (long p : params) {
                alloc.free(p);
            }
            for (long p : optimizerState) {
                alloc.free(p);
            }
            alloc.close();
        }
        return withStacks(recorded, targetEntries);
    }

    /** One training step: forward activations per layer, backward frees them and makes gradients, optimizer. */
    private void step(CachingAllocator alloc, List<Long> params, List<Long> optimizerState, int step) {
        int batchScale = 1 + step % 3;
        List<Long> saved = new ArrayList<>();
        for (int layer = 0; layer < LAYERS; layer++) {
            for (int op = 0; op < FORWARD_OPS.length; op++) {
                long size = (long) (batchScale * (1 + op % 4) * MIB * (0.5 + random.nextDouble())) + random.nextInt(4096);
                saved.add(malloc(alloc, size, site(layer, op, false)));
                long tmp = malloc(alloc, 64 * 1024 + random.nextInt(512 * 1024), site(layer, (op + 3) % FORWARD_OPS.length, false));
                alloc.free(tmp);
            }
        }
        List<Long> grads = new ArrayList<>();
        for (int layer = LAYERS - 1; layer >= 0; layer--) {
            for (int op = FORWARD_OPS.length - 1; op >= 0; op--) {
                long g = malloc(alloc, (long) (MIB * (0.25 + random.nextDouble())), site(layer, op, true));
                alloc.free(saved.remove(saved.size() - 1));
                if (op % 2 == 0) {
                    grads.add(g);
                } else {
                    alloc.free(g);
                }
            }
        }
        if (optimizerState.isEmpty()) {
            for (int i = 0; i < params.size() * 2; i++) {
                optimizerState.add(malloc(alloc, 12 * MIB + (i % 4) * MIB, site(i % LAYERS, 7, false)));
            }
        }
        for (long g : grads) {
            alloc.free(g);
        }
    }

    private long malloc(CachingAllocator alloc, long size, int site) {
        if (mallocs == mallocSites.length) {
            mallocSites = java.util.Arrays.copyOf(mallocSites, mallocs * 2);
        }
        mallocSites[mallocs++] = site;
        return alloc.malloc(size);
    }

    /** The recorded entries with the stack of the site of their block (segment events: of the malloc that made them). */
    private MemorySnapshot withStacks(MemorySnapshot recorded, int targetEntries) {
        List<TraceEntry> trace = recorded.trace(0);
        List<TraceEntry> out = new ArrayList<>(trace.size());
        Map<Long, Integer> live = new HashMap<>();
        int next = 0;
        List<Frame> emptyCache = siteStacks.get(siteStacks.size() - 1);
        for (TraceEntry e : trace) {
            List<Frame> frames;
            switch (e.action()) {
                case ALLOC -> {
                    int site = mallocSites[next++];
                    live.put(e.addr(), site);
                    frames = siteStacks.get(site);
                }
                case FREE_REQUESTED, FREE_COMPLETED -> {
                    Integer site = e.action() == TraceAction.FREE_COMPLETED ? live.remove(e.addr()) : live.get(e.addr());
                    frames = site != null ? siteStacks.get(site) : emptyCache;
                }
                case SEGMENT_ALLOC, SEGMENT_MAP -> frames = next < mallocs ? siteStacks.get(mallocSites[next]) : emptyCache;
                default -> frames = emptyCache;
            }
            out.add(new TraceEntry(e.action(), e.addr(), e.size(), e.stream(), e.timeUs(), e.deviceFree(), frames,
                    e.compileContext(), e.userMetadata()));
        }
        return new MemorySnapshot(recorded.segments(), List.of(out), recorded.allocatorSettings(),
                recorded.externalAnnotations());
    }

    // ---- stacks ----------------------------------------------------------------------------------------------

    private int site(int layer, int op, boolean backward) {
        return (layer * FORWARD_OPS.length + op) * 2 + (backward ? 1 : 0);
    }

    private void buildSites() {
        for (int layer = 0; layer < LAYERS; layer++) {
            for (int op = 0; op < FORWARD_OPS.length; op++) {
                siteStacks.add(forwardStack(layer, op));
                siteStacks.add(backwardStack(op));
            }
        }
        List<Frame> emptyCache = new ArrayList<>(cppPrefix("empty_cache"));
        emptyCache.add(new Frame("empty_cache", "/usr/lib/python3/dist-packages/torch/cuda/memory.py", 222));
        emptyCache.add(new Frame("train", "/home/user/project/train.py", 141));
        emptyCache.add(new Frame("<module>", "/home/user/project/train.py", 260));
        siteStacks.add(List.copyOf(emptyCache));
    }

    private static List<Frame> cppPrefix(String op) {
        return cppPrefix(op, 6);
    }

    /** The allocator's and the dispatcher's frames of one operator, with {@code dispatches} dispatcher hops. */
    private static List<Frame> cppPrefix(String op, int dispatches) {
        List<Frame> f = new ArrayList<>();
        f.add(new Frame("torch::unwind::unwind()", "??", 0));
        f.add(new Frame("torch::CapturedTraceback::gather(bool, bool, bool)", "??", 0));
        f.add(new Frame("torch::cuda::(anonymous namespace)::gather_with_cpp()", "memory_snapshot.cpp", 0));
        f.add(new Frame("c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc(unsigned long, CUstream_st*)",
                "CUDACachingAllocator.cpp", 0));
        f.add(new Frame("c10::cuda::CUDACachingAllocator::Native::NativeCachingAllocator::malloc(void**, signed char, unsigned long, CUstream_st*)", "", 0));
        f.add(new Frame("c10::cuda::CUDACachingAllocator::Native::NativeCachingAllocator::allocate(unsigned long)", "", 0));
        f.add(new Frame("at::detail::empty_generic(c10::ArrayRef<long>, c10::Allocator*, c10::DispatchKeySet, c10::ScalarType, std::optional<c10::MemoryFormat>)", "??", 0));
        f.add(new Frame("at::detail::empty_cuda(c10::ArrayRef<long>, c10::ScalarType, std::optional<c10::Device>, std::optional<c10::MemoryFormat>)", "??", 0));
        f.add(new Frame("at::(anonymous namespace)::create_out(c10::ArrayRef<long>, c10::ArrayRef<long>, c10::TensorOptions const&)", "RegisterCUDA_0.cpp", 0));
        for (int k = 0; k < dispatches; k++) {
            f.add(new Frame("c10::impl::wrap_kernel_functor_unboxed_<c10::impl::detail::WrapFunctionIntoFunctor_<c10::CompileTimeFunctionPointer<at::Tensor (c10::DispatchKeySet, at::Tensor const&), &torch::autograd::VariableType::(anonymous namespace)::"
                    + op + "_" + k + ">>>::call(c10::OperatorKernel*, c10::DispatchKeySet, at::Tensor const&)", "VariableType_" + k + ".cpp", 0));
            f.add(new Frame("at::_ops::" + op + (k == dispatches - 1 ? "::call(at::Tensor const&)" : "::redispatch(c10::DispatchKeySet, at::Tensor const&)"), "??", 0));
        }
        return f;
    }

    private List<Frame> forwardStack(int layer, int op) {
        List<Frame> f = cppPrefix(FORWARD_OPS[op]);
        f.add(new Frame("torch::autograd::THPVariable_" + FORWARD_OPS[op] + "(_object*, _object*, _object*)", "python_torch_functions_2.cpp", 0));
        f.add(new Frame("_PyObject_MakeTpCall", "??", 0));
        f.add(new Frame("forward", "/home/user/project/model/blocks.py", 40 + op * 7));
        int depth = 16 + layer % 16; // module nesting: Transformer -> Block -> Attention/MLP -> Linear ...
        for (int d = 0; d < depth; d++) {
            f.add(new Frame("_PyEval_EvalFrameDefault", "??", 0));
            f.add(new Frame("_call_impl", "/usr/lib/python3/dist-packages/torch/nn/modules/module.py", 1762));
            f.add(new Frame("_wrapped_call_impl", "/usr/lib/python3/dist-packages/torch/nn/modules/module.py", 1751));
            f.add(new Frame("forward", "/home/user/project/model/" + (d % 2 == 0 ? "transformer.py" : "blocks.py"), 100 + d * 13 + layer));
        }
        f.add(new Frame("train_step", "/home/user/project/train.py", 88));
        f.add(new Frame("train", "/home/user/project/train.py", 130));
        f.add(new Frame("<module>", "/home/user/project/train.py", 260));
        for (String c : new String[] {"PyEval_EvalCode", "PyRun_StringFlags", "_PyRun_SimpleFileObject", "_PyRun_AnyFileObject",
                "Py_RunMain", "Py_BytesMain", "__libc_init_first", "__libc_start_main", "_start"}) {
            f.add(new Frame(c, "??", 0));
        }
        return List.copyOf(f);
    }

    private static List<Frame> backwardStack(int op) {
        List<Frame> f = cppPrefix(FORWARD_OPS[op] + "_backward", 14);
        f.add(new Frame("torch::autograd::generated::" + BACKWARD_NODES[op] + "::apply(std::vector<at::Tensor, std::allocator<at::Tensor> >&&)", "??", 0));
        f.add(new Frame("torch::autograd::Node::operator()(std::vector<at::Tensor, std::allocator<at::Tensor> >&&)", "??", 0));
        f.add(new Frame("torch::autograd::Engine::evaluate_function(std::shared_ptr<torch::autograd::GraphTask>&, torch::autograd::Node*, torch::autograd::InputBuffer&, std::shared_ptr<torch::autograd::ReadyQueue> const&)", "??", 0));
        f.add(new Frame("torch::autograd::Engine::thread_main(std::shared_ptr<torch::autograd::GraphTask> const&)", "??", 0));
        f.add(new Frame("torch::autograd::Engine::thread_init(int, std::shared_ptr<torch::autograd::ReadyQueue> const&, bool)", "??", 0));
        f.add(new Frame("torch::autograd::python::PythonEngine::thread_init(int, std::shared_ptr<torch::autograd::ReadyQueue> const&, bool)", "", 0));
        f.add(new Frame("std::error_code::default_error_condition() const", "??", 0));
        f.add(new Frame("pthread_condattr_setpshared", "??", 0));
        f.add(new Frame("__clone", "??", 0));
        return List.copyOf(f);
    }
}
