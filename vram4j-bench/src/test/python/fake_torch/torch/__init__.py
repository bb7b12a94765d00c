"""A stand-in for torch, for DifferentialScriptTest: just enough of torch.cuda for `differential.py pytorch` to run
without a GPU, writing every call that changes allocator state to $FAKE_TORCH_LOG, one per line:
`malloc ID SIZE` (caching_allocator_alloc or torch.empty of uint8), `record ID`, `free ID` (caching_allocator_delete,
or a tensor's last reference dropped), `sync`, `empty_cache`, `reset_peak`, `reset_accumulated`. IDs count blocks
from 0 in allocation order. Not PyTorch's allocator: its statistics only count live blocks, its snapshot is empty."""
import os

__version__ = "fake"
uint8 = "uint8"

_log = open(os.environ["FAKE_TORCH_LOG"], "w")
_live = {}  # id -> size
_next = [0]


def _write(line):
    _log.write(line + "\n")
    _log.flush()


def _malloc(size):
    i = _next[0]
    _next[0] += 1
    _live[i] = size
    _write(f"malloc {i} {size}")
    return i


def _free(i):
    del _live[i]
    _write(f"free {i}")


class Tensor:
    def __init__(self, size):
        self._id = _malloc(size)

    def record_stream(self, stream):
        assert isinstance(stream, cuda.Stream)
        _write(f"record {self._id}")

    def __del__(self):
        _free(self._id)


def empty(size, dtype=None, device=None):
    assert isinstance(size, int) and dtype == uint8 and device == "cuda"
    return Tensor(size)


class _Cuda:
    class Stream:
        pass

    @staticmethod
    def init():
        pass

    @staticmethod
    def caching_allocator_alloc(size, device=None, stream=None):
        assert device == 0 and stream is None
        return 1 << 40 | _malloc(size)  # an address-like int

    @staticmethod
    def caching_allocator_delete(ptr):
        _free(ptr & ((1 << 40) - 1))

    @staticmethod
    def synchronize():
        _write("sync")

    @staticmethod
    def empty_cache():
        _write("empty_cache")

    @staticmethod
    def reset_peak_memory_stats(device):
        _write("reset_peak")

    @staticmethod
    def reset_accumulated_memory_stats(device):
        _write("reset_accumulated")

    @staticmethod
    def memory_stats(device):
        return {"allocation.all.current": len(_live),
                "allocated_bytes.all.current": sum((s + 511) // 512 * 512 for s in _live.values()),
                "requested_bytes.all.current": sum(_live.values())}

    @staticmethod
    def memory_snapshot():
        return []


cuda = _Cuda()
