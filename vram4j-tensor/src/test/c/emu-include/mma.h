/*
 * Stands for CUDA's mma.h when the kernels compile as host C++ (cuda_emulation.h): the warp matrix functions
 * (nvcuda::wmma) at the one shape the kernels use, 16 x 16 x 16, on float16 or bfloat16 inputs with a float
 * accumulator. Test-only.
 *
 * On a GPU a fragment is spread over the 32 threads of a warp in an unspecified way, and the functions are
 * collective. Here every thread (fiber) holds the whole 16 x 16 tile, widened to float, so a load, a product and
 * a fill need no other thread. What keeps the emulation as strict as the GPU:
 *  - store_matrix_sync writes only the elements of the running thread's lane (element e of the tile when
 *    e % 32 == lane), so the tile is whole only once all 32 threads of the warp stored it: a thread reading it
 *    back without a barrier reads what was there before (NaN in fresh shared memory), as the GPU's unspecified
 *    layout allows;
 *  - a pointer not 32-byte aligned (256 bits), or a leading dimension not a multiple of 16 bytes, fails the
 *    launch with a message, as the CUDA programming guide's rules for these functions require;
 *  - element access (x[i], i below num_elements, 8) reaches the running lane's elements, x[i] being element
 *    lane + 32 i of the tile: a mapping no GPU uses, so a kernel that scales elements by their row must find each
 *    element's row by loading a tile of row numbers into a fragment, as the CUDA programming guide leaves the
 *    mapping unspecified, and not assume one.
 * A product computes only the running thread's lane's elements (see mma_sync), 8 of the 256, so an emulated warp
 * does the work of one product, not 32. The product adds the 16 terms of each element in order in float; tensor cores may add them in another order
 * and with other intermediate rounding, which is why the kernels' tests compare with a 16-bit tolerance.
 */
#ifndef VRAM4J_EMU_MMA_H
#define VRAM4J_EMU_MMA_H

#include "../cuda_emulation.h"

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace nvcuda {
namespace wmma {
struct matrix_a {};
struct matrix_b {};
struct accumulator {};
struct row_major {};
struct col_major {};
enum layout_t { mem_row_major, mem_col_major };

/* x[i] of a fragment: element lane + 32 i of its tile (the running thread's lane), found from x's own address */
template <typename F>
struct lane_elements {
    float &operator[](unsigned i) {
        if (i >= 8) {
            emu::misuse("fragment x[%u]: a lane holds 8 elements", i);
        }
        F *f = reinterpret_cast<F *>(reinterpret_cast<char *>(this) - offsetof(F, x));
        return f->v[emu::lane() + 32 * i];
    }
};

template <typename Use, int M, int N, int K, typename T, typename Layout = void>
struct fragment {
    static_assert(M == 16 && N == 16 && K == 16, "the emulator knows the 16 x 16 x 16 shape only");
    enum { num_elements = 8 };
    float v[256];   /* row-major, widened */
    lane_elements<fragment> x;
};

namespace detail {
inline float widen(float f) { return f; }
inline float widen(__half h) { return __half2float(h); }
inline float widen(__nv_bfloat16 b) { return __uint_as_float(((unsigned) b.x) << 16); }

template <typename T>
inline void check(const T *p, unsigned ldm, const char *what) {
    if (reinterpret_cast<std::uintptr_t>(p) % 32 != 0) {
        emu::misuse("%s: pointer %p is not 32-byte aligned", what, (const void *) p);
    }
    if ((ldm * sizeof(T)) % 16 != 0) {
        emu::misuse("%s: leading dimension %u is not a multiple of 16 bytes", what, ldm);
    }
}

/* element (r, c) of a tile at p: row-major r * ldm + c, column-major c * ldm + r */
inline unsigned at(bool row_major, unsigned r, unsigned c, unsigned ldm) {
    return row_major ? r * ldm + c : c * ldm + r;
}

template <typename T>
inline void load(float *v, const T *p, unsigned ldm, bool row_major, const char *what) {
    check(p, ldm, what);
    for (unsigned r = 0; r < 16; r++) {
        for (unsigned c = 0; c < 16; c++) {
            v[r * 16 + c] = widen(p[at(row_major, r, c, ldm)]);
        }
    }
}
}  // namespace detail

template <typename Use, typename T, typename Layout>
inline void load_matrix_sync(fragment<Use, 16, 16, 16, T, Layout> &a, const T *p, unsigned ldm) {
    static_assert(!std::is_same<Use, accumulator>::value, "an accumulator load names its memory layout");
    detail::load(a.v, p, ldm, std::is_same<Layout, row_major>::value, "load_matrix_sync");
}

inline void load_matrix_sync(fragment<accumulator, 16, 16, 16, float> &c, const float *p, unsigned ldm,
                             layout_t layout) {
    detail::load(c.v, p, ldm, layout == mem_row_major, "load_matrix_sync");
}

inline void store_matrix_sync(float *p, const fragment<accumulator, 16, 16, 16, float> &c, unsigned ldm,
                              layout_t layout) {
    detail::check(p, ldm, "store_matrix_sync");
    for (unsigned e = emu::lane(); e < 256; e += 32) {
        p[detail::at(layout == mem_row_major, e / 16, e % 16, ldm)] = c.v[e];
    }
}

template <typename Use, typename T, typename Layout>
inline void fill_fragment(fragment<Use, 16, 16, 16, T, Layout> &a, float value) {
    for (float &x : a.v) {
        x = value;
    }
}

/* Only the elements of the running thread's lane are computed (the others become NaN): they are all its store
   writes, and a product's accumulator is used element for element, so no thread needs another lane's elements. */
template <typename T, typename LA, typename LB>
inline void mma_sync(fragment<accumulator, 16, 16, 16, float> &d, const fragment<matrix_a, 16, 16, 16, T, LA> &a,
                     const fragment<matrix_b, 16, 16, 16, T, LB> &b,
                     const fragment<accumulator, 16, 16, 16, float> &c) {
    float r[256];
    for (unsigned e = 0; e < 256; e++) {
        r[e] = CUDART_NAN_F;
    }
    for (unsigned e = emu::lane(); e < 256; e += 32) {
        unsigned i = e / 16;
        unsigned j = e % 16;
        float s = c.v[e];
        for (unsigned k = 0; k < 16; k++) {
            s += a.v[i * 16 + k] * b.v[k * 16 + j];
        }
        r[e] = s;
    }
    for (unsigned e = 0; e < 256; e++) {
        d.v[e] = r[e];
    }
}
}  // namespace wmma
}  // namespace nvcuda

#endif
