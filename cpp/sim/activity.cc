#include "sim/activity.h"

#include "base/tile.h"
#include "isa/sxu_ops.h"
#include "sim/dma_engine.h"

namespace tinytpu {

Activity& Activity::operator+=(const Activity& o) {
#define ACTIVITY(name, type, energy, doc) name += o.name;
#include "sim/counters.def"
  return *this;
}

uint64_t& Activity::lane_ops(VpuEnergy datapath) {
  switch (datapath) {
    case VpuEnergy::kInt:
      return vpu_int_ops;
    case VpuEnergy::kIntMul:
      return vpu_int_mul_ops;
    case VpuEnergy::kFpAdd:
      return vpu_fp_add_ops;
    case VpuEnergy::kFpMul:
      return vpu_fp_mul_ops;
  }
  return vpu_int_ops;  // (every datapath is a case above)
}

namespace {

constexpr uint64_t kTileLanes = uint64_t(kRows) * kRows;

// A VPU op on a whole tile: its operands read from vregs, its result written to one.
void vpu_op(Activity& a, VpuOpcode opcode) {
  const VpuOpInfo& op = kVpuOps[size_t(opcode)];
  a.lane_ops(op.energy) += kTileLanes * (op.transc_steps > 0 ? op.transc_steps : 1);
  a.vreg_reads += op.arity;
  a.vreg_writes += 1;
}

// One MXU dispatch of `len` activation rows against one weight tile (hardware.md §2.3: WS sums len vectors,
// OS takes len terms; either way each PE multiplies len pairs).
void mxu_dispatch(Activity& a, int len, bool fp) {
  (fp ? a.mxu_float_macs : a.mxu_macs) += kTileLanes * uint64_t(len);
  a.wsram_reads += 1;
  a.asram_reads += uint64_t(len);
}

// One instruction's actions, by its semantics (hardware.md §2.7); what only fetches and sequences (WAIT_MXU,
// HALT, READ_CYCLE, predicates) is its fetch alone.
void count(Activity& a, const Instr& in, int depth) {
  if (const std::optional<MxuStart> start = in.op < kNumSxuOps ? kSxuOps[in.op].mxu_start : std::nullopt) {
    if (*start == MxuStart::kSeed) {  // a vreg's words into the accumulators: no SRAM read, no product
      ++a.vreg_reads;
      return;
    }
    mxu_dispatch(a, in.mxuTLen % depth,
                 float_dispatch(*start));  // the Controller's length operand keeps log2(depth) bits
    if (*start == MxuStart::kRequant) ++a.asram_writes;  // its int8 row into ActivationSRAM
    if (*start == MxuStart::kEpilogue) {  // a bias vreg in; its tile to VMEM (vpuOp bit 4) or a vreg
      ++a.vreg_reads;
      ++((in.vpuOp & 0x10) ? a.vmem_writes : a.vreg_writes);
    }
    if (*start == MxuStart::kGeneric) {  // src2 in; its row to VMEM (vregSrc2 bit 0) or a vreg
      ++a.vreg_reads;
      ++((in.vregSrc2 & 1) ? a.vmem_writes : a.vreg_writes);
    }
    return;
  }
  switch (SxuOpcode(in.op)) {
    case SxuOpcode::kLoadVreg:
      ++a.vmem_reads, ++a.vreg_writes;
      break;
    case SxuOpcode::kStoreVreg:
      ++a.vmem_writes, ++a.vreg_reads;
      break;
    case SxuOpcode::kDispatchVpu:
    case SxuOpcode::kDispatchVpuBg:
      vpu_op(a, VpuOpcode(in.vpuOp));
      break;
    case SxuOpcode::kDispatchSelect:  // a COPY of the false tile, then the SELECT
      vpu_op(a, VpuOpcode::kCopy);
      vpu_op(a, VpuOpcode::kSelect);
      break;
    case SxuOpcode::kVzero:
    case SxuOpcode::kVfill:
      ++a.vreg_writes;
      break;
    case SxuOpcode::kVmov:
    case SxuOpcode::kVneg:
    case SxuOpcode::kVabs:
      vpu_op(a, VpuOpcode::kCopy);
      break;
    case SxuOpcode::kDispatchXluBroadcast:
    case SxuOpcode::kBroadcastScalar:
    case SxuOpcode::kBroadcastRow:
    case SxuOpcode::kBroadcastCol:
    case SxuOpcode::kDispatchXluTranspose:
    case SxuOpcode::kDispatchXluRotate:
      ++a.xlu_ops, ++a.vreg_reads, ++a.vreg_writes;
      break;
    case SxuOpcode::kLoadVpuResult:
    case SxuOpcode::kLoadXluResult:
    case SxuOpcode::kLoadMxuResult:
    case SxuOpcode::kLoadMxuMatrixRow:
    case SxuOpcode::kLoadEpilogueStat:
    case SxuOpcode::kLoadLoopDepth:
      ++a.vreg_writes;
      break;
    case SxuOpcode::kPsumWrite:
    case SxuOpcode::kPsumAccumulate:
    case SxuOpcode::kPsumAccumulateRow:
      ++a.psum_accesses, ++a.vreg_reads;
      break;
    case SxuOpcode::kPsumRead:
    case SxuOpcode::kPsumReadRow:
      ++a.psum_accesses, ++a.vreg_writes;
      break;
    case SxuOpcode::kPsumClear:
      ++a.psum_accesses;
      break;
    case SxuOpcode::kPsumClearAll:
      a.psum_accesses += TensorCoreConfig::kMaxPsumBuckets;
      break;
    default:
      break;
  }
}

}  // namespace

std::optional<Activity> straight_line_activity(const Bundle& bundle, const TensorCoreConfig& cfg) {
  Activity a;
  bool halted = false;
  for (const Record& r : bundle.records) {
    (is_data(r) ? a.data_bytes : a.program_bytes) += uint64_t(record_bytes(r));
    switch (r.type) {
      case RecordType::kWeightTile:
      case RecordType::kWeightWords:
        ++a.wsram_writes;
        break;
      case RecordType::kActTile:
      case RecordType::kActWords:
        ++a.asram_writes;
        break;
      case RecordType::kVmemTile:
        ++a.vmem_writes;
        break;
      case RecordType::kOutputVmem:  // an output line each, read from its memory
        ++a.vmem_reads;
        a.output_bytes += uint64_t(output_bytes(r.type));
        break;
      case RecordType::kOutputAsram:
        ++a.asram_reads;
        a.output_bytes += uint64_t(output_bytes(r.type));
        break;
      case RecordType::kOutputMxu:
        if (r.addr != 0) a.output_bytes += uint64_t(output_bytes(r.type));
        break;
      case RecordType::kInstr: {
        const SxuOpcode op = SxuOpcode(r.instr.op);
        if (halted || op == SxuOpcode::kLoopBegin || op == SxuOpcode::kLoopEnd ||
            op == SxuOpcode::kSkipIfPred || op == SxuOpcode::kSkipIfNotPred)
          return std::nullopt;  // not run straight through: its actions depend on its run
        ++a.program_writes;
        ++a.instructions;
        count(a, r.instr, cfg.depth);
        halted = op == SxuOpcode::kHalt;
        break;
      }
      default:
        break;
    }
  }
  if (!halted) return std::nullopt;
  return a;
}

}  // namespace tinytpu
