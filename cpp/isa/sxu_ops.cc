#include "isa/sxu_ops.h"

#include <strings.h>

#include <cstring>

#include "sim/sxu_exec.h"

namespace tinytpu {

const std::array<const char*, kNumStalls> kStallNames = {
    "VPU write-back", "VPU busy", "VPU result", "XLU result", "MXU busy", "MXU result", "PSUM port"};

// TASM templates: see isa/tasm.h for the template language. Mnemonics follow the reference's TASM
// (hardware.md §5); opcodes it has no mnemonic for get the names TRANSPOSE, PSUM_*, SET_PRED_*,
// SKIP_IF_*, PSUM_CLEAR_ALL. The exec of HALT is never called: FETCH handles it.
#define WAR "WMEM[{mxuWBase:addr}], AMEM[{mxuABase:addr}]"
#define GEMM "{vregDst:vreg} = GEMM(" WAR ", tiles={mxuTLen:tiles})"
using namespace sxu_exec;
const std::array<SxuOpInfo, kNumSxuOps> kSxuOps = {{
    {0, "LOAD_VREG", {"LOAD {vregDst:vreg}, VMEM[{vmemAddr:addr}]"}, load_vreg, "3"},
    {1, "STORE_VREG", {"STORE VMEM[{vmemAddr:addr}], {vregSrc:vreg}"}, store_vreg, "2"},
    {2,
     "DISPATCH_VPU",
     {"VPU {vregDst:vreg} = {vpuOp:vpuop}({vregSrc:vreg}<binary|, {vregSrc2:vreg}>)"},
     dispatch_vpu,
     "3 combinational; 19 FP tile reduce; 16*steps+4 transcendental"},
    {3,
     "DISPATCH_XLU_BROADCAST",
     {"BROADCAST {vregDst+vregSrc:vreg}<|, lane={vregSrc2:u2}>",
      "BROADCAST {vregDst:vreg} = LANE({vregSrc:vreg}, lane={vregSrc2:u2})"},
     xlu_broadcast,
     "2, write-back at T+1"},
    {4,
     "DISPATCH_MXU",
     {"MXU " WAR ", tiles={mxuTLen:tiles}"
      "<vregSrc2&3=1|, psum_write=PSUM[{vregDst:psum}], psum_row={vregSrc:u2}>"
      "<vregSrc2&3=2|, psum_acc=PSUM[{vregDst:psum}], psum_row={vregSrc:u2}>"},
     dispatch_mxu,
     "2, async (stalls while the MXU is busy)"},
    {5, "WAIT_MXU", {"WAIT_MXU"}, wait_mxu, "1 + cycles until the MXU is done"},
    {6, "LOAD_MXU_RESULT", {"LOAD_MXU_RESULT {vregDst:vreg}"}, load_mxu_result, "2"},
    {7, "HALT", {"HALT"}, nullptr, "1"},
    {8,
     "DISPATCH_SELECT",
     {"SELECT {vregDst:vreg} = SELECT({vregSrc:vreg}, {vregSrc2:vreg}, {mxuWBase:vreg})"},
     dispatch_select,
     "4"},
    {9,
     "BROADCAST_SCALAR",
     {"BROADCAST_SCALAR {vregDst:vreg} = {vregSrc:vreg}[{vregSrc2[3:2]:u2}, {vregSrc2[1:0]:u2}]"},
     broadcast_scalar,
     "2"},
    {10,
     "BROADCAST_ROW",
     {"BROADCAST_ROW {vregDst:vreg} = ROW({vregSrc:vreg}, row={vregSrc2:u2})"},
     broadcast_row,
     "2"},
    {11,
     "BROADCAST_COL",
     {"BROADCAST_COL {vregDst:vreg} = COL({vregSrc:vreg}, col={vregSrc2:u2})"},
     broadcast_col,
     "2"},
    {12, "DISPATCH_XLU_TRANSPOSE", {"TRANSPOSE {vregDst:vreg}, {vregSrc:vreg}"}, xlu_transpose, "2"},
    {13, "LOAD_VPU_RESULT", {"LOAD_VPU_RESULT {vregDst:vreg}"}, load_vpu_result, "2"},
    {14, "LOAD_XLU_RESULT", {"LOAD_XLU_RESULT {vregDst:vreg}"}, load_xlu_result, "2"},
    {15, "PSUM_WRITE", {"PSUM_WRITE PSUM[{vmemAddr:psum}], {vregSrc:vreg}"}, psum_write, "2"},
    {16, "PSUM_ACCUMULATE", {"PSUM_ACCUMULATE PSUM[{vmemAddr:psum}], {vregSrc:vreg}"}, psum_accumulate, "2"},
    {17, "PSUM_READ", {"PSUM_READ {vregDst:vreg}, PSUM[{vmemAddr:psum}]"}, psum_read, "3"},
    {18,
     "PSUM_READ_ROW",
     {"PSUM_READ_ROW {vregDst:vreg}, PSUM[{vmemAddr:psum}], row={vregSrc:u2}"},
     psum_read_row,
     "2"},
    {19, "PSUM_CLEAR", {"PSUM_CLEAR PSUM[{vmemAddr:psum}]"}, psum_clear, "2"},
    {20, "SET_PRED_IF_ZERO", {"SET_PRED_IF_ZERO {vregSrc:vreg}"}, set_pred_if_zero, "2"},
    {21, "SKIP_IF_PRED", {"SKIP_IF_PRED"}, skip_if_pred, "2"},
    {22,
     "PSUM_ACCUMULATE_ROW",
     {"PSUM_ACCUMULATE_ROW PSUM[{vmemAddr:psum}], row={vregDst:u2}, {vregSrc:vreg}"},
     psum_accumulate_row,
     "2"},
    {23,
     "DISPATCH_MXU_ACCUMULATE",
     {"MXU_ACCUMULATE " WAR ", tiles={mxuTLen:tiles}"},
     dispatch_mxu_accumulate,
     "2, async"},
    {24, "MXU_CLEAR", {"MXU_CLEAR"}, mxu_clear, "2 (waits for the MXU)"},
    {25, "DISPATCH_MXU_OS", {"MXU_OS " WAR ", k={mxuTLen:k}"}, dispatch_mxu_os, "2, async"},
    {26,
     "LOAD_MXU_MATRIX_ROW",
     {"LOAD_MXU_MATRIX_ROW {vregDst:vreg}, row={vregSrc:u2}"},
     load_mxu_matrix_row,
     "2"},
    {27, "READ_CYCLE", {"READ_CYCLE {vregDst:vreg}"}, read_cycle, "2"},
    {28, "LOOP_BEGIN", {"LOOP_BEGIN count={mxuTLen:count}"}, loop_begin, "2"},
    {29, "LOOP_END", {"LOOP_END"}, loop_end, "2"},
    {30, "VZERO", {"VZERO {vregDst:vreg}"}, vzero, "2"},
    {31, "VFILL", {"VFILL {vregDst:vreg}, imm={mxuWBase:i8}"}, vfill, "2"},
    {32, "VMOV", {"VMOV {vregDst:vreg}, {vregSrc:vreg}"}, vmov, "2"},
    {33,
     "DISPATCH_MXU_OS_ACCUMULATE",
     {"MXU_OS_ACCUMULATE " WAR ", k={mxuTLen:k}"},
     dispatch_mxu_os_accumulate,
     "2, async"},
    {34, "VNEG", {"VNEG {vregDst:vreg}, {vregSrc:vreg}"}, vneg, "2"},
    {35, "VABS", {"VABS {vregDst:vreg}, {vregSrc:vreg}"}, vabs, "2"},
    {36, "LOAD_LOOP_DEPTH", {"LOAD_LOOP_DEPTH {vregDst:vreg}"}, load_loop_depth, "2"},
    {37,
     "DISPATCH_XLU_ROTATE",
     {"ROTATE {vregDst:vreg}, {vregSrc:vreg}, amount={vregSrc2:u2}"},
     xlu_rotate,
     "2"},
    {38, "PSUM_CLEAR_ALL", {"PSUM_CLEAR_ALL"}, psum_clear_all, "9"},
    {39, "SET_PRED_NE_ZERO", {"SET_PRED_NE_ZERO {vregSrc:vreg}"}, set_pred_ne_zero, "2"},
    {40, "SKIP_IF_NOT_PRED", {"SKIP_IF_NOT_PRED"}, skip_if_not_pred, "2"},
    {41,
     "DISPATCH_VPU_BG",
     {"VPU_BG {vregDst:vreg} = {vpuOp:vpuop}({vregSrc:vreg}<binary|, {vregSrc2:vreg}>)"},
     dispatch_vpu_bg,
     "2 + background write-back"},
    {42,
     "DISPATCH_MXU_EPILOGUE",
     {"MXU_EPILOGUE " GEMM "<vpuOp&1=1| BIAS={vregSrc:vreg}><vpuOp&2=2| RELU><vpuOp&12=4| REDUCE_SUM>"
      "<vpuOp&12=12| REDUCE_SUMSQ><vpuOp&16=0| DST_VREG><vpuOp&16=16| DST_VMEM[{vmemAddr:addr}]>"},
     dispatch_mxu_epilogue,
     "tiles + 11"},
    {43, "LOAD_EPILOGUE_STAT", {"LOAD_EPILOGUE_STAT {vregDst:vreg}"}, load_epilogue_stat, "2"},
    {44,
     "SET_REQUANT_CONFIG",
     {"SET_REQUANT_CONFIG scale_mul={vmemAddr.mxuTLen.mxuABase.mxuWBase:i32} scale_shift={vpuOp:u5}"},
     set_requant_config,
     "2"},
    {45,
     "DISPATCH_MXU_REQUANT",
     {"DISPATCH_MXU_REQUANT WMEM[{mxuWBase:addr}] AMEM[{mxuABase:addr}] tiles={mxuTLen:tiles} "
      "ASRAM[{vmemAddr:addr}]"},
     dispatch_mxu_requant,
     "2, async"},
    {46,
     "DISPATCH_MXU_VPU_EPILOGUE",
     {"MXU_VPU_EPILOGUE " GEMM " SRC2={vregSrc:vreg} OP={vpuOp:vpuop}<vregSrc2&1=0| DST_VREG>"
      "<vregSrc2&1=1| DST_VMEM[{vmemAddr:addr}]>"},
     dispatch_mxu_vpu_epilogue,
     "tiles + 11"},
}};
#undef GEMM
#undef WAR

const SxuOpInfo* find_sxu_op(std::string_view name) {
  for (const auto& op : kSxuOps)
    if (name.size() == strlen(op.name) && strncasecmp(name.data(), op.name, name.size()) == 0) return &op;
  return nullptr;
}

}  // namespace tinytpu
