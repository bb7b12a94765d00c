package io.vram4j.memory.viz;

import io.vram4j.memory.snapshot.Frame;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;

class StackTableTest {
    @Test
    void theSiteIsTheInnermostFrameOutsideTheFrameworks() {
        assertEquals("forward (model.py:40)", StackTable.siteLabel(List.of(
                new Frame("malloc", "??", 0),
                new Frame("linear", "C:\\Python\\Lib\\site-packages\\torch\\nn\\functional.py", 12),
                new Frame("<module>", "<string>", 1),
                new Frame("forward", "/home/me/model.py", 40),
                new Frame("main", "/home/me/train.py", 9))));
        assertEquals("forward (model.py:54)", StackTable.siteLabel(List.of(
                new Frame("torch::unwind::unwind()", "??", 0),
                new Frame("torch::cuda::(anonymous namespace)::gather_with_cpp()", "memory_snapshot.cpp", 0),
                new Frame("at::detail::empty_cuda", "", 0),
                new Frame("wrapper_CUDA_index_Tensor", "RegisterCUDA_0.cpp", 0),
                new Frame("forward", "/home/u/cs336_basics/model.py", 54))), "C++ frames are skipped");
        assertEquals("<init> (Linear.java:35)", StackTable.siteLabel(List.of(
                new Frame("allocate", "io/vram4j/tensor/Tensor.java", 92),
                new Frame("empty", "io/vram4j/tensor/Device.java", 171),
                new Frame("<init>", "io/vram4j/nn/Linear.java", 35))));
        assertEquals("BmmBackward0 (autograd)", StackTable.siteLabel(List.of(
                new Frame("torch::unwind::unwind()", "??", 0),
                new Frame("c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc(unsigned long)",
                        "CUDACachingAllocator.cpp", 0),
                new Frame("at::_ops::bmm::call(at::Tensor const&, at::Tensor const&)", "??", 0),
                new Frame("torch::autograd::generated::BmmBackward0::apply(std::vector<at::Tensor>&&)", "??", 0),
                new Frame("torch::autograd::Engine::thread_main()", "??", 0))), "the backward pass has no Python frame");
        assertEquals("at::(anonymous namespace)::create_out (RegisterCUDA_0.cpp:0)", StackTable.siteLabel(List.of(
                new Frame("torch::unwind::unwind()", "??", 0),
                new Frame("at::detail::empty_cuda(c10::ArrayRef<long>)", "??", 0),
                new Frame("at::(anonymous namespace)::create_out(c10::ArrayRef<long>)", "RegisterCUDA_0.cpp", 0))));
        assertEquals("AccumulateGrad (autograd)", StackTable.siteLabel(List.of(
                new Frame("at::detail::empty_strided_cuda(c10::ArrayRef<long>)", "??", 0),
                new Frame("torch::autograd::utils::clone_obey_contract(at::Tensor const&)", "??", 0),
                new Frame("torch::autograd::AccumulateGrad::apply(std::vector<at::Tensor>&&)", "??", 0),
                new Frame("torch::autograd::Node::operator()(std::vector<at::Tensor>&&)", "??", 0),
                new Frame("torch::autograd::Engine::evaluate_function(std::shared_ptr<GraphTask>&)", "??", 0))));
        // the outermost operator below the engine: to_dtype, not the empty_strided it called
        assertEquals("aten::to_dtype (autograd engine)", StackTable.siteLabel(List.of(
                new Frame("at::detail::empty_strided_cuda(c10::ArrayRef<long>)", "??", 0),
                new Frame("at::_ops::empty_strided::call(c10::ArrayRef<c10::SymInt>)", "??", 0),
                new Frame("at::_ops::to_dtype::call(at::Tensor const&, c10::ScalarType)", "??", 0),
                new Frame("void torch::autograd::validate_outputs_impl<torch::autograd::Edge>()", "engine.cpp", 0),
                new Frame("torch::autograd::Engine::evaluate_function(std::shared_ptr<GraphTask>&)", "??", 0),
                new Frame("torch::autograd::Engine::thread_main()", "??", 0))));
        assertEquals("aten::exp", StackTable.siteLabel(List.of(
                new Frame("at::detail::empty_cuda(c10::ArrayRef<long>)", "??", 0),
                new Frame("at::_ops::exp::call(at::Tensor const&)", "??", 0),
                new Frame("_start", "??", 0))), "C++ only, outside the engine: the operator");
        assertEquals("empty_cache (memory.py:7)", StackTable.siteLabel(List.of(
                new Frame("empty_cache", "/usr/lib/python3/torch/cuda/memory.py", 7))), "all internal: the innermost frame");
    }

    @Test
    void stacksAreInternedAndSitesShared() {
        StackTable t = new StackTable();
        List<Frame> a = List.of(new Frame("f", "a.py", 1), new Frame("g", "b.py", 2));
        List<Frame> b = List.of(new Frame("f", "a.py", 1), new Frame("h", "c.py", 3));
        assertEquals(-1, t.intern(List.of()));
        assertEquals(0, t.intern(a));
        assertEquals(1, t.intern(b));
        assertEquals(0, t.intern(List.of(new Frame("f", "a.py", 1), new Frame("g", "b.py", 2))));
        assertEquals(List.of("f (a.py:1)"), t.sites);
        assertEquals(List.of(0, 0), t.stackSite);
    }
}
