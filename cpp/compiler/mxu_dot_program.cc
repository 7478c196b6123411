// An MXU_DOT's instructions (mxu_dot.h): its dispatches and read-back as lowering emits them, and the
// program the cost estimate and the floor weigh.
#include <algorithm>

#include "compiler/cost.h"
#include "compiler/mxu_dot.h"
#include "isa/instr_builders.h"
#include "sim/controller.h"
#include "sim/timing.h"

namespace tinytpu::compiler {

// WS: one activation row per dispatch, its column sums written or accumulated into a PSUM row of bucket 0.
// OS: MXU_OS, then MXU_OS_ACCUMULATE per slice. A single dispatch is one MXU_VPU_EPILOGUE, synchronous: its
// column sums land in dst (row 0) when it finishes, combined with the epilogue's operand or, by an op the
// Controller does not wire (hardware.md §2.3), unchanged.
std::vector<Instr> mxu_dot_dispatches(const MxuDot& m, const MxuDotPlaces& at) {
  if (m.single_dispatch()) {
    constexpr VpuOpcode kPassThrough = VpuOpcode::kOr;
    const MxuDot::Dispatch& ds = m.dispatches[0];
    const bool to_vmem = at.out_slot >= 0;
    const int src2 = to_vmem ? 0 : m.epilogue_op ? at.epilogue_src : at.dst;
    return {instr::mxu_vpu_epilogue(to_vmem ? 0 : at.dst, at.weights[ds.weight], at.acts[0], /*tiles*/ 1,
                                    src2, m.epilogue_op.value_or(kPassThrough), to_vmem,
                                    to_vmem ? at.out_slot : 0)};
  }
  std::vector<Instr> out;
  for (size_t i = 0; i < m.dispatches.size(); ++i) out.push_back(dispatch(m, at, i));
  return out;
}

Instr dispatch(const MxuDot& m, const MxuDotPlaces& at, size_t i) {
  const MxuDot::Dispatch& ds = m.dispatches[i];
  const int w = at.weights[ds.weight], a = at.acts[i];
  if (m.float32)  // a seeded block's first dispatch keeps the seed
    return ds.accumulate || (m.seeded && i == 0) ? instr::mxu_os_float_accumulate(w, a, ds.k, ds.group)
                                                 : instr::mxu_os_float(w, a, ds.k, ds.group);
  if (m.os) return ds.accumulate ? instr::mxu_os_accumulate(w, a, ds.k) : instr::mxu_os(w, a, ds.k);
  return instr::mxu(w, a, /*tiles*/ 1, ds.accumulate ? PsumMode::kAccumulate : PsumMode::kWrite,
                    /*bucket*/ 0, ds.row);
}

// WS: once the MXU is done, the whole bucket read (bucket 0 is free again after the read), or its row 0 alone
// when no other row holds a result.
std::vector<Instr> mxu_dot_readback(const MxuDot& m, const MxuDotPlaces& at) {
  if (m.single_dispatch()) return {};
  const bool row0_only =
      std::all_of(m.dispatches.begin(), m.dispatches.end(), [](const auto& ds) { return ds.row == 0; });
  return {instr::wait_mxu(), row0_only ? instr::psum_read_row(at.dst, /*bucket*/ 0, /*row*/ 0)
                                       : instr::psum_read(at.dst, /*bucket*/ 0)};
}

std::vector<OsPass> os_passes(const MxuDot& m) {
  std::vector<OsPass> out;
  for (size_t i = 0; i < m.dispatches.size(); ++i)
    if (!m.dispatches[i].accumulate)
      out.push_back({i, i + 1, m.dispatches[i].row});
    else
      out.back().end = i + 1;
  return out;
}

int os_outputs(const MxuDot& m) { return m.across ? int(m.chains.size()) : 1; }

std::vector<Instr> os_rows(const std::vector<int>& rows) {
  std::vector<Instr> out;
  for (int r = 0; r < kRows; ++r)
    if (rows[r] >= 0) out.push_back(instr::load_mxu_matrix_row(rows[r], r));
  return out;
}

// Plain OS: the live rows stacked in bucket 0 (the first by PSUM_WRITE when it is row 0, whose other rows
// LOAD_MXU_MATRIX_ROW zeroed, else after PSUM_CLEAR). Across chains: row r into bucket r, at the pass's row.
// Only the rows in `rows` (a vreg, not -1): a read-back in groups stacks each group with its own call.
std::vector<Instr> os_stack(const MxuDot& m, const OsPass& pass, bool first, const std::vector<int>& rows) {
  std::vector<Instr> out;
  if (!m.across) {
    const int first_live = int(std::find(m.live_rows.begin(), m.live_rows.end(), true) - m.live_rows.begin());
    for (int r = 0; r < kRows; ++r) {
      if (rows[r] < 0) continue;
      if (r == first_live && r != 0) out.push_back(instr::psum_clear(/*bucket*/ 0));
      out.push_back(r == 0 ? instr::psum_write(/*bucket*/ 0, rows[r])
                           : instr::psum_accumulate_row(/*bucket*/ 0, r, rows[r]));
    }
    return out;
  }
  for (int r = 0; r < os_outputs(m); ++r) {
    if (rows[r] < 0) continue;
    if (first && pass.row == 0) {
      out.push_back(instr::psum_write(/*bucket*/ r, rows[r]));
      continue;
    }
    if (first) out.push_back(instr::psum_clear(/*bucket*/ r));
    out.push_back(instr::psum_accumulate_row(/*bucket*/ r, pass.row, rows[r]));
  }
  return out;
}

std::vector<Instr> os_read(const MxuDot& m, const std::vector<int>& dst) {
  std::vector<Instr> out;
  for (int o = 0; o < os_outputs(m); ++o)
    if (dst[o] >= 0) out.push_back(instr::psum_read(dst[o], /*bucket*/ o));
  return out;
}

std::vector<Instr> mxu_dot_program(const MxuDot& m, const MxuDotPlaces& at) {
  std::vector<Instr> out = mxu_dot_dispatches(m, at);
  if (!m.os) {
    for (const Instr& in : mxu_dot_readback(m, at)) out.push_back(in);
    return out;
  }
  out.clear();
  if (m.seeded) out.push_back(instr::mxu_seed(at.seed));
  std::vector<int> rows(kRows, -1);
  for (int r = 0; r < kRows; ++r)
    if (m.live_rows[r]) rows[r] = r;
  const std::vector<int> dst(size_t(os_outputs(m)), 0);
  const std::vector<OsPass> passes = os_passes(m);
  for (size_t p = 0; p < passes.size(); ++p) {
    for (size_t i = passes[p].first; i < passes[p].end; ++i) out.push_back(dispatch(m, at, i));
    for (const auto& list : {os_rows(rows), os_stack(m, passes[p], p == 0, rows)})
      out.insert(out.end(), list.begin(), list.end());
  }
  for (const Instr& in : os_read(m, dst)) out.push_back(in);
  return out;
}

int64_t mxu_floor(const MxuDot& m) {
  if (m.single_dispatch()) return 0;  // an epilogue dispatch: the kernel's other instructions' bound
  const MxuDotPlaces at{std::vector<int>(m.weights.size()), std::vector<int>(m.dispatches.size())};
  int64_t act_rows = 0, interval = 0;
  for (const MxuDot::Dispatch& ds : m.dispatches) {
    act_rows += m.os ? ds.k : 1;
    interval += m.os ? os_dispatch_interval(ds.k) : ws_dispatch_interval(1);
  }
  const std::vector<Instr> program = mxu_dot_program(m, at);
  int64_t rows = 0;
  for (const Instr& in : program) rows += in.op == uint8_t(SxuOpcode::kLoadMxuMatrixRow);
  const int64_t outputs = m.os ? os_outputs(m) : 1;
  const int64_t records = int64_t(program.size()) + int64_t(m.weights.size()) + act_rows / kRows + outputs;
  return kRecordCycles * records + outputs + interval + rows * instr_cycles(SxuOpcode::kLoadMxuMatrixRow);
}

}  // namespace tinytpu::compiler
