#include "sim/controller.h"

#include <algorithm>
#include <iterator>

#include "isa/vpu_ops.h"

namespace tinytpu {

namespace {

// Generic epilogue (46): the column sums combined lane-wise with row 0 of src2. Only ADD, MUL, MAX, SUB,
// MIN and IPAIR_ROTATE are wired in the Controller; any other op passes the column sums through
// unchanged (hardware.md §2.3 "Drain-time side effects" item 3). The wired ops are the VPU's own.
Row generic_epilogue(uint8_t op, const Row& colsums, const Row& src2) {
  constexpr VpuOpcode kWired[] = {VpuOpcode::kAdd, VpuOpcode::kMul, VpuOpcode::kMax,
                                  VpuOpcode::kSub, VpuOpcode::kMin, VpuOpcode::kIpairRotate};
  if (std::find(std::begin(kWired), std::end(kWired), VpuOpcode(op)) == std::end(kWired)) return colsums;
  Tile out;
  kVpuOps[op].fn(row_tile(colsums), row_tile(src2), Tile{}, out);
  Row r;
  std::copy_n(out.begin(), kRows, r.begin());
  return r;
}

int8_t requantize(int32_t acc, int32_t mul, uint8_t shift) {
  // scaleShift is UInt#(5): shift 0 makes the rounding addend 1 << 31 (hardware.md §2.3 item 1).
  int64_t wide = int64_t(acc) * int64_t(mul);
  int64_t rounded = wide + (int64_t(1) << ((shift - 1) & 31));
  int64_t shifted = rounded >> shift;
  return int8_t(std::clamp<int64_t>(shifted, -128, 127));
}

}  // namespace

Controller::Controller() {
  fill_uninit(os_weight);
  fill_uninit(os_act);
  fill_uninit(output_buf);
  fill_uninit(matrix_buf);
  fill_uninit(bias);
  fill_uninit(epilogue_buf);
  fill_uninit(stat_buf);
  fill_uninit(src2);
  fill_uninit(bank);
  fill_uninit(queued_operand);
}

void Controller::start(const MxuDispatch& d, SystolicArray& array, const Tile& operand) {
  if (pipelined &&
      active()) {  // behind a running dispatch (can_start(kind)): it enters after this cycle's tick
    queued = d;
    queued_operand = operand;  // a seed's words as at its EXEC: the vreg may be written before it begins
    queued_valid = true;
    return;
  }
  begin(d, array, operand);
}

void Controller::begin(const MxuDispatch& d, SystolicArray& array, const Tile& operand) {
  bool os = output_stationary(d.kind);
  group = d.group;
  fp = d.fp;
  fp_latency = d.fp_latency;
  seed = d.kind == MxuStart::kSeed;
  if (pipelined && replacing(d.kind)) {  // every earlier dispatch's products are in the array by now
    bank = array.matrix();
    bank_pending = drains.size;
  }
  w_base = d.w_base;
  a_base = d.a_base;
  t_len = os ? 0 : d.len;
  if (os) {
    os_klen = d.len;
    os_feed = 0;
  }
  act_idx = 0;
  stream_cycle = 0;
  psum_mode = PsumMode::kOff;
  df = os ? Dataflow::kOS : d.kind == MxuStart::kAccumulate ? Dataflow::kWSAccumulate : Dataflow::kWS;
  epilogue_active = generic_active = requant_active = false;
  switch (d.kind) {
    case MxuStart::kPsum:
      psum_addr = d.psum_addr;
      psum_row = d.psum_row;
      psum_mode = d.psum_mode;
      break;
    case MxuStart::kEpilogue:
      std::copy_n(operand.begin(), kRows, bias.begin());
      epi = d.epi;
      epilogue_active = true;
      break;
    case MxuStart::kGeneric:
      src2 = operand;
      vpu_op = d.vpu_op;
      wb_vmem = d.wb_vmem;
      generic_active = true;
      break;
    case MxuStart::kRequant:
      requant_active = true;
      requant_base = d.requant_base;
      requant_offset = 0;
      break;
    case MxuStart::kSeed:
      os_weight_words = operand;
      break;
    default:
      break;
  }
  // Every start clears the PE accumulators except the accumulate variants.
  if (!accumulating(d.kind)) array.clear_all();
  if (pipelined && os) {
    issuing = true;
    reads = 0;
    state = CState::kLoadActsOS;
    return;
  }
  state = CState::kLoadWeights;
}

// Read k of an output-stationary dispatch's operands: the first also latches the weight tile, each one
// activation row into the slot whose index is 2 bits (a K past the slots overwrites the first). A seed's one
// read takes nothing from the SRAMs: its words came from its vreg at its start.
void Controller::read_os_operands(const WeightSram& wsram, const ActivationSram& asram, int k) {
  if (seed) return;
  const int addr = asram.wrap(a_base + k), slot = k & (kRows - 1);
  if (k == 0) os_weight = wsram.mem[w_base];
  os_act[slot] = asram.mem[addr];
  if (fp == 0) return;
  if (k == 0) os_weight_words = wsram.words[w_base];
  os_act_words[slot] = asram.words[addr];
}

// The read operands' products into the array at once: the int8 PEs', the float PEs', or a seed's words.
void Controller::stream_products(SystolicArray& array) const {
  if (!fp)
    array.stream_os(os_weight, os_act, os_klen);
  else if (seed)
    array.seed(os_weight_words);
  else
    array.stream_os_float(os_weight_words, os_act_words, os_klen, group, fp == 1);
}

// The pipelined MXU's cycle (docs/model.md "A pipelined MXU"): the issuing dispatch's next operand read, and
// at its last one its products into the array (the SXU reads no result before every drain is done, so they
// may land there at once); the drain due this tick, which latches the results; then the dispatch queued
// behind enters, to read from the next tick on.
void Controller::tick_pipelined(SystolicArray& array, const WeightSram& wsram, const ActivationSram& asram) {
  ++clock;
  if (issuing) {
    read_os_operands(wsram, asram, reads);
    if (++reads == os_issue_cycles(os_klen)) {
      stream_products(array);
      const uint32_t due = clock + 2 * kRows + (fp ? fp_latency : 0);
      drains.push(drains.empty() ? due : std::max(due, drains.back() + 1));  // drains stay in order
      issuing = false;
    }
  }
  if (!drains.empty() && drains.front() == clock) {
    output_buf = array.results();
    matrix_buf = array.matrix();
    drains.pop();
    if (bank_pending) --bank_pending;
  }
  if (queued_valid && !issuing) {
    queued_valid = false;
    begin(queued, array, queued_operand);
  }
  state = issuing ? CState::kLoadActsOS : !drains.empty() ? CState::kStreamOS : CState::kDone;
}

// One cycle of an output-stationary stream: the staircase's next feed, then the drain.
void Controller::stream_os_cycle(SystolicArray& array) {
  const uint32_t total = os_klen + 2 * (kRows - 1), t = os_feed++;
  if (fp) {  // the float PEs' products land at the drain (stream_products); their pipeline adds its stages
    if (t >= total + fp_latency) {
      stream_products(array);
      state = CState::kDrain;
    }
    return;
  }
  if (t >= total) {
    state = CState::kDrain;
    return;
  }
  I8Row w_top{}, a_left{};
  for (int i = 0; i < kRows; ++i) {
    if (t >= uint32_t(i) && t - i < os_klen) {
      int k = int(t - i) & (kRows - 1);  // the weight-row / activation-slot index is 2 bits
      w_top[i] = os_weight[k * kRows + i];
      a_left[i] = os_act[k][i];
    }
  }
  array.feed_pair(w_top, a_left);
}

void Controller::tick(SystolicArray& array, WeightSram& wsram, ActivationSram& asram, PsumBank& psum) {
  ++busy_cycles;
  if (pipelined && df == Dataflow::kOS) return tick_pipelined(array, wsram, asram);
  switch (state) {
    case CState::kLoadWeights:
      wsram.resp = wsram.mem[w_base];
      state = df == Dataflow::kOS ? CState::kLoadWeightsRespOS : CState::kLoadWeightsResp;
      break;
    case CState::kLoadWeightsResp:
      array.load_weights(wsram.resp);
      asram.resp = asram.mem[a_base];
      act_idx = 1;
      stream_cycle = 0;
      state = CState::kStream;
      break;
    case CState::kLoadWeightsRespOS:
      os_weight = wsram.resp;
      if (fp && !seed) os_weight_words = wsram.words[w_base];
      asram.resp = asram.mem[a_base];
      os_act_load_idx = 1;
      state = CState::kLoadActsOS;
      break;
    case CState::kLoadActsOS: {
      uint8_t k = os_act_load_idx;
      os_act[(k - 1) & (kRows - 1)] = asram.resp;  // the slot index is 2 bits: kLen > 4 wraps
      if (fp) os_act_words[(k - 1) & (kRows - 1)] = asram.words[asram.wrap(a_base + k - 1)];
      if (k < os_klen) {
        asram.resp = asram.mem[asram.wrap(a_base + k)];
        os_act_load_idx = uint8_t(asram.wrap(k + 1));
      } else {
        os_feed = 0;
        state = CState::kStreamOS;
      }
      break;
    }
    case CState::kStreamOS:
      stream_os_cycle(array);
      break;
    case CState::kStream: {
      uint32_t total = uint32_t(t_len) + kRows - 1;
      if (stream_cycle >= total) {
        state = CState::kDrain;
        break;
      }
      array.feed_activations(stream_cycle < t_len ? asram.resp : I8Row{});
      if (act_idx < t_len) {
        asram.resp = asram.mem[asram.wrap(a_base + act_idx)];
        act_idx = uint8_t(asram.wrap(act_idx + 1));
      }
      ++stream_cycle;
      break;
    }
    case CState::kDrain:
      drain(array, asram, psum.mem[psum.bucket(psum_addr)]);
      state = CState::kDone;
      break;
    case CState::kIdle:
    case CState::kDone:
      break;
  }
}

void Controller::run_whole(SystolicArray& array, const WeightSram& wsram, ActivationSram& asram,
                           Tile& psum_bucket) {
  if (df == Dataflow::kOS) {
    // The FSM's loads: the weight tile, then K activation rows into slots whose index is 2 bits (a K past
    // the slots overwrites the first; K 0 still loads one)
    for (int k = 0; k < os_issue_cycles(os_klen); ++k) read_os_operands(wsram, asram, k);
    stream_products(array);
    issuing = false;
  } else {
    array.load_weights(wsram.mem[w_base]);
    Row sums{};
    for (int t = 0; t < t_len; ++t) {
      const I8Row& a = asram.mem[asram.wrap(a_base + t)];
      for (int r = 0; r < kRows; ++r) sums[r] += a[r];  // at most 31 rows of Int8: no overflow
    }
    array.stream_ws(sums);
  }
  drain(array, asram, psum_bucket);
  state = CState::kDone;
}

Tile Controller::stat_tile() const {
  Tile t{};
  for (int r = 0; r < kRows; ++r) {
    t[r * kRows] = int32_t(uint64_t(stat_buf[r]));
    t[r * kRows + 1] = int32_t(uint64_t(stat_buf[r]) >> 32);
  }
  return t;
}

void Controller::drain(SystolicArray& array, ActivationSram& asram, Tile& psum_bucket) {
  Row r = array.results();
  output_buf = r;
  matrix_buf = array.matrix();
  if (df == Dataflow::kWS) array.clear_all();
  if (requant_active) {
    I8Row q;
    for (int c = 0; c < kRows; ++c) q[c] = requantize(r[c], scale_mul, scale_shift);
    const int addr = asram.wrap(uint8_t(requant_base + requant_offset));
    asram.mem[addr] = q;
    asram.widen(addr);
    ++requant_offset;
  } else if (epilogue_active) {
    // The legacy epilogue works on the per-PE matrix, not the column sums (hardware.md §8 item 8).
    for (int i = 0; i < kTileElems; ++i) {
      int32_t v = matrix_buf[i];
      if (epi.bias) v = wrap_add(v, bias[i % kRows]);
      if (epi.relu && v < 0) v = 0;
      epilogue_buf[i] = v;
    }
    if (epi.reduce) {
      for (int row = 0; row < kRows; ++row) {
        uint64_t acc = 0;  // Int#(64) with wrap
        for (int c = 0; c < kRows; ++c) {
          int64_t e = epilogue_buf[row * kRows + c];
          acc += epi.sumsq ? uint64_t(e) * uint64_t(e) : uint64_t(e);
        }
        stat_buf[row] = int64_t(acc);
      }
    }
  } else if (generic_active) {
    Row src2_row;
    std::copy_n(src2.begin(), kRows, src2_row.begin());
    epilogue_buf = row_tile(generic_epilogue(vpu_op, r, src2_row));
  } else if (psum_mode == PsumMode::kWrite) {
    std::copy_n(r.begin(), kRows, psum_bucket.begin() + psum_row * kRows);
  } else if (psum_mode == PsumMode::kAccumulate) {
    PsumBank::accumulate_into_row(psum_bucket, psum_row, r);
  }
}

}  // namespace tinytpu
