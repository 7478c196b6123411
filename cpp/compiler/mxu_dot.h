#pragma once
#include <map>
#include <set>
#include <vector>

#include "compiler/tile_program.h"
#include "isa/instr.h"

namespace tinytpu::compiler {

// The choices of the MXU code that depend on the data: made per call, from the operands the default plan
// reads (compiled plans are kept per choice).
// - veto: dot-product chains with an element out of int8 range, which stay on the VPU;
// - same_values: an operand tile (WMEM) or row (AMEM, lanes 0..3) with the same values as an earlier one,
//   which is then loaded once per launch (a matrix of ones, say, has one weight tile).
struct Choices {
  std::set<int> veto;
  std::map<MxuTile, MxuTile> same_values;
  // The operand whose values it has (itself if none earlier); a block of k activation rows row by row.
  const MxuTile& canonical(const MxuTile& t) const;
  MxuTile canonical_rows(const MxuTile& block, int k) const;
};

// Moves integer dot products onto the MXU: a chain ADD(..., MUL(x_k, y_k), ...) over int32 lanes whose
// factors are leaves (optionally cast from a narrower integer) becomes MXU_DOT nodes when each group of
// four lanes shares one factor per term (the same element or constant: the shape of a matmul row block)
// and every constant factor fits int8. The other condition, that every element fits int8, depends on
// the data: the chains that pass the first are numbered from `first_chain` on, and one the caller found
// out of range at launch time is vetoed (`choices`) and stays on the VPU, which is exact for any data.
// Returns the next chain number.
//
// On a float32 MXU (config mxu_dtype 2) float32 sums in tinygrad's shape (Fuser::float_chain: from +0.0 or
// unrolled whole, groups of G products) go output-stationary on the float PEs, in their order: dispatches
// whose runs are the groups, K-blocks of one launch's operands each seeded with the block before's sums
// (MXU_SEED from the block's vreg), never summed by ADD nodes: the VPU's bits, whatever the data. On a
// bfloat16 MXU (mxu_dtype 1) likewise, for products whose factors are bfloat16s: leaves of the slots
// `bfloat16_slots` marks (kept factors whose operations leave the low 16 bits zero, ElementMemos) or
// constants whose low 16 bits are zero. Their products are exact in float32, as the bfloat16 PE's are.
//
// Schedules (lowering emits them; see MxuDot): weight-stationary dispatches into PSUM rows, or
// output-stationary MXU_OS over a 4x4 lane block, whichever a cycle estimate finds cheaper per block; and
// chains whose lane groups share their weight tiles (a convolution's channels) output-stationary across
// chains, up to four a block, when that is estimated cheaper than their own blocks. Dispatches are
// asynchronous; results are read with instructions that block until Done (LOAD_MXU_RESULT,
// LOAD_MXU_MATRIX_ROW) or after one WAIT_MXU. Lowering issues an OS block's dispatches under the work after
// the block before it (schedule.h). Epilogues: the generic one (46) is exact for ADD/SUB/MUL/MAX/MIN on the
// column sums and is used for a lone row-0 dispatch; the legacy one (42) works on the per-PE products of a
// weight-stationary pass, not on dot products, so it never matches a matmul epilogue.
int fuse_mxu_dots(TileProgram& prog, const TensorCoreConfig& cfg, int first_chain = 0,
                  const Choices& choices = {}, const std::vector<bool>& bfloat16_slots = {});

// Where an MXU_DOT's operands are and its result goes.
struct MxuDotPlaces {
  std::vector<int> weights;  // the WMEM tile of each of MxuDot::weights
  std::vector<int> acts;     // each dispatch's AMEM row (OS: the first of its k)
  int dst = 0;               // the result's vreg
  int epilogue_src = 0;      // a single dispatch's epilogue operand (MxuDot::epilogue_op)
  int out_slot = -1;         // a single dispatch without an epilogue op: the VMEM slot it writes, not dst
  int seed = 0;              // a seeded float block's seed's vreg (MxuDot::seeded)
};
// An MXU_DOT's instructions, which lowering emits and fuse_mxu_dots weighs.
// Weight-stationary: its dispatches, then the read-back of the result.
std::vector<Instr> mxu_dot_dispatches(const MxuDot& m, const MxuDotPlaces& at);
std::vector<Instr> mxu_dot_readback(const MxuDot& m, const MxuDotPlaces& at);
Instr dispatch(const MxuDot& m, const MxuDotPlaces& at, size_t i);  // dispatch i
// Output-stationary, pass by pass (MxuDot::across): a pass's dispatches, its live matrix rows read into
// vregs (rows[r] for row r), their stacking in PSUM (the first pass's writes the buckets), and at the end
// each output's bucket read into its vreg (dst[o]; -1: not read).
struct OsPass {
  size_t first, end;  // its dispatches
  int row;            // MxuDot::Dispatch::row
};
std::vector<OsPass> os_passes(const MxuDot& m);
int os_outputs(const MxuDot& m);
std::vector<Instr> os_rows(const std::vector<int>& rows);
std::vector<Instr> os_stack(const MxuDot& m, const OsPass& pass, bool first, const std::vector<int>& rows);
std::vector<Instr> os_read(const MxuDot& m, const std::vector<int>& dst);
// All of it in order, as emitted alone (the cost estimate's program).
std::vector<Instr> mxu_dot_program(const MxuDot& m, const MxuDotPlaces& at);

// The fewest cycles the block takes on the testbench's count (2R + P + M a launch, hardware.md §4.4) however
// it is scheduled: each dispatch's MXU interval (§2.3: the MXU does one at a time), the records of its
// program (mxu_dot_program: the SXU's other instructions run under the dispatches), of its weight tiles and
// of its activation rows shared by the kRows blocks of one K-range a launch holds, the LOAD_MXU_MATRIX_ROWs
// (no dispatch runs while the matrix is read) and per output a STORE's record and an output line
// (docs/quant.md).
int64_t mxu_floor(const MxuDot& m);

}  // namespace tinytpu::compiler
