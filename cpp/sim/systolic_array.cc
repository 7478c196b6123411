#include "sim/systolic_array.h"

#include <cstring>

#include "base/fp32.h"
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace tinytpu {

// Columns and rows are walked from the far end so every PE reads its neighbour's pass register
// before the neighbour overwrites it: the same values a clocked array would see.
void SystolicArray::feed_activations(const I8Row& a) {
  for (int r = 0; r < kRows; ++r)
    for (int c = kRows - 1; c >= 0; --c) {
      int i = r * kRows + c;
      int8_t in = c == 0 ? a[r] : act_pass[i - 1];
      accum[i] = wrap_add(accum[i], int32_t(in) * int32_t(weight[i]));
      act_pass[i] = in;
    }
}

void SystolicArray::feed_pair(const I8Row& w_top, const I8Row& a_left) {
  for (int r = kRows - 1; r >= 0; --r)
    for (int c = kRows - 1; c >= 0; --c) {
      int i = r * kRows + c;
      int8_t w = r == 0 ? w_top[c] : w_pass[i - kRows];
      int8_t a = c == 0 ? a_left[r] : act_pass[i - 1];
      accum[i] = wrap_add(accum[i], int32_t(a) * int32_t(w));
      act_pass[i] = a;
      w_pass[i] = w;
    }
}

void SystolicArray::stream_ws(const Row& act_sums) {
  for (int r = 0; r < kRows; ++r)
    for (int c = 0; c < kRows; ++c) {
      int i = r * kRows + c;
      accum[i] = wrap_add(accum[i], int32_t(uint32_t(act_sums[r]) * uint32_t(int32_t(weight[i]))));
    }
}

namespace {

#if defined(__SSE2__) && TINYTPU_ROWS == 4
// The reference array's stream two steps at a time: PMADDWD (SSE2, in every x86-64) multiplies the Int8
// values widened to Int16 and adds each PE's two products into an Int32 lane, a row of PEs per register.
Tile os_products_sse2(const I8Tile& w, const std::array<I8Row, kRows>& act, int k) {
  auto word = [](const int8_t* p) {
    int32_t v;
    std::memcpy(&v, p, 4);
    return _mm_cvtsi32_si128(v);
  };
  auto widen = [](__m128i b) { return _mm_srai_epi16(_mm_unpacklo_epi8(b, b), 8); };  // 8 Int8 -> 8 Int16
  __m128i rows[kRows] = {};
  for (int j = 0; j < k; j += 2) {
    const int s0 = j & (kRows - 1), s1 = (j + 1) & (kRows - 1);
    const bool pair = j + 1 < k;
    // 32-bit lane c: (w[s0][c], w[s1][c]); lane r: (act[s0][r], act[s1][r]); a lone last step pairs with 0
    const __m128i wp =
        widen(_mm_unpacklo_epi8(word(&w[s0 * kRows]), pair ? word(&w[s1 * kRows]) : __m128i{}));
    const __m128i ap =
        widen(_mm_unpacklo_epi8(word(act[s0].data()), pair ? word(act[s1].data()) : __m128i{}));
    rows[0] = _mm_add_epi32(rows[0], _mm_madd_epi16(wp, _mm_shuffle_epi32(ap, 0x00)));
    rows[1] = _mm_add_epi32(rows[1], _mm_madd_epi16(wp, _mm_shuffle_epi32(ap, 0x55)));
    rows[2] = _mm_add_epi32(rows[2], _mm_madd_epi16(wp, _mm_shuffle_epi32(ap, 0xAA)));
    rows[3] = _mm_add_epi32(rows[3], _mm_madd_epi16(wp, _mm_shuffle_epi32(ap, 0xFF)));
  }
  Tile sums;
  for (int r = 0; r < kRows; ++r) _mm_storeu_si128(reinterpret_cast<__m128i*>(&sums[r * kRows]), rows[r]);
  return sums;
}
#endif

// Each PE's products over a stream of K steps, step j the weight row and activation slot j mod rows, summed:
// at most k * 2^14 (k < 2^8), far inside Int32.
Tile os_products(const I8Tile& w, const std::array<I8Row, kRows>& act, int k) {
#if defined(__SSE2__) && TINYTPU_ROWS == 4
  return os_products_sse2(w, act, k);
#else
  Tile sums{};
  for (int j = 0; j < k; ++j) {
    const int slot = j & (kRows - 1);
    for (int r = 0; r < kRows; ++r) {
      const int32_t a = act[slot][r];
      for (int c = 0; c < kRows; ++c) sums[r * kRows + c] += a * int32_t(w[slot * kRows + c]);
    }
  }
  return sums;
#endif
}

}  // namespace

void SystolicArray::stream_os(const I8Tile& w, const std::array<I8Row, kRows>& act, int k) {
  // Added at once: the accumulator wraps as adding the products one by one would (addition mod 2^32).
  const Tile sums = os_products(w, act, k);
  for (int i = 0; i < kTileElems; ++i) accum[i] = wrap_add(accum[i], sums[i]);
}

void SystolicArray::stream_os_float(const Tile& w, const std::array<Row, kRows>& act, int k, int group,
                                    bool bf16) {
  const uint32_t operand_mask = bf16 ? 0xFFFF0000u : 0xFFFFFFFFu;
  for (int j = 0; j < k; ++j) {
    const int slot = j & (kRows - 1);
    for (int r = 0; r < kRows; ++r) {
      const uint32_t a = uint32_t(act[slot][r]) & operand_mask;
      for (int c = 0; c < kRows; ++c) {
        const int i = r * kRows + c;
        const uint32_t product = fp32::mul(a, uint32_t(w[slot * kRows + c]) & operand_mask);
        run[i] = int32_t(run_open ? fp32::add(uint32_t(run[i]), product) : product);
      }
    }
    run_open = true;
    if (group != 0 && ((j + 1) % group == 0 || j == k - 1)) {
      for (int i = 0; i < kTileElems; ++i)
        accum[i] = int32_t(fp32::add(uint32_t(accum[i]), uint32_t(run[i])));
      run_open = false;
    }
  }
}

Row SystolicArray::results() const {
  Row out{};
  for (int c = 0; c < kRows; ++c)
    for (int r = 0; r < kRows; ++r) out[c] = wrap_add(out[c], accum[r * kRows + c]);
  return out;
}

}  // namespace tinytpu
