#pragma once
#include <cstdint>

#include "isa/instr.h"
#include "isa/sxu_ops.h"
#include "isa/vpu_ops.h"

// Instructions by what their operands mean, so code generators never fill Instr fields by position. Each
// builder is named after its TASM mnemonic and takes the operands in TASM order (sxu_ops.def's templates
// say which field holds which operand); vpu() takes the op first, like an assembler line. Values go into
// the 8-bit fields as they are: validate() checks their ranges.
namespace tinytpu::instr {

inline Instr make(SxuOpcode op) {
  Instr i;
  i.op = uint8_t(op);
  return i;
}

inline Instr halt() { return make(SxuOpcode::kHalt); }

// LOAD dst, VMEM[addr]
inline Instr load(int dst, int addr) {
  Instr i = make(SxuOpcode::kLoadVreg);
  i.vregDst = uint8_t(dst);
  i.vmemAddr = uint8_t(addr);
  return i;
}

// STORE VMEM[addr], src
inline Instr store(int addr, int src) {
  Instr i = make(SxuOpcode::kStoreVreg);
  i.vmemAddr = uint8_t(addr);
  i.vregSrc = uint8_t(src);
  return i;
}

// VPU dst = op(a, b); b is ignored by a unary op.
inline Instr vpu(VpuOpcode op, int dst, int a, int b = 0) {
  Instr i = make(SxuOpcode::kDispatchVpu);
  i.vpuOp = uint8_t(op);
  i.vregDst = uint8_t(dst);
  i.vregSrc = uint8_t(a);
  i.vregSrc2 = uint8_t(b);
  return i;
}

// SELECT dst = SELECT(cond, if_true, if_false): per lane, cond != 0 ? if_true : if_false.
inline Instr select(int dst, int cond, int if_true, int if_false) {
  Instr i = make(SxuOpcode::kDispatchSelect);
  i.vregDst = uint8_t(dst);
  i.vregSrc = uint8_t(cond);
  i.vregSrc2 = uint8_t(if_true);
  i.mxuWBase = uint8_t(if_false);
  return i;
}

// The XLU's dispatches: dst = f(src, sel), written back at T+1; sel goes in vregSrc2.
inline Instr xlu(SxuOpcode op, int dst, int src, int sel) {
  Instr i = make(op);
  i.vregDst = uint8_t(dst);
  i.vregSrc = uint8_t(src);
  i.vregSrc2 = uint8_t(sel);
  return i;
}
// BROADCAST_SCALAR dst = src[row, col]: every lane takes one lane's value.
inline Instr broadcast_scalar(int dst, int src, int row, int col) {
  return xlu(SxuOpcode::kBroadcastScalar, dst, src, row << TensorCoreConfig::kRowBits | col);
}
// BROADCAST_ROW dst = ROW(src, row): every row takes row `row`.
inline Instr broadcast_row(int dst, int src, int row) { return xlu(SxuOpcode::kBroadcastRow, dst, src, row); }
// BROADCAST_COL dst = COL(src, col): every column takes column `col`.
inline Instr broadcast_col(int dst, int src, int col) { return xlu(SxuOpcode::kBroadcastCol, dst, src, col); }
// ROTATE dst, src, amount: lane (r, c) takes src's lane (r, (c + amount) mod 4).
inline Instr rotate(int dst, int src, int amount) {
  return xlu(SxuOpcode::kDispatchXluRotate, dst, src, amount);
}

// VZERO dst
inline Instr vzero(int dst) {
  Instr i = make(SxuOpcode::kVzero);
  i.vregDst = uint8_t(dst);
  return i;
}

// VFILL dst, imm=imm: every lane the sign-extended byte.
inline Instr vfill(int dst, int8_t imm) {
  Instr i = make(SxuOpcode::kVfill);
  i.vregDst = uint8_t(dst);
  i.mxuWBase = uint8_t(imm);
  return i;
}

// VNEG dst, src
inline Instr vneg(int dst, int src) {
  Instr i = make(SxuOpcode::kVneg);
  i.vregDst = uint8_t(dst);
  i.vregSrc = uint8_t(src);
  return i;
}

// VABS dst, src
inline Instr vabs(int dst, int src) {
  Instr i = make(SxuOpcode::kVabs);
  i.vregDst = uint8_t(dst);
  i.vregSrc = uint8_t(src);
  return i;
}

// MXU WMEM[w], AMEM[a], tiles=tiles[, psum_write|psum_acc=PSUM[bucket], psum_row=row]: a weight-stationary
// dispatch whose column sums also go to a PSUM row unless `psum` is kOff.
inline Instr mxu(int w, int a, int tiles, PsumMode psum = PsumMode::kOff, int bucket = 0, int row = 0) {
  Instr i = make(SxuOpcode::kDispatchMxu);
  i.mxuWBase = uint8_t(w);
  i.mxuABase = uint8_t(a);
  i.mxuTLen = uint8_t(tiles);
  i.vregSrc2 = uint8_t(psum);
  i.vregDst = uint8_t(bucket);
  i.vregSrc = uint8_t(row);
  return i;
}

// MXU_OS WMEM[w], AMEM[a], k=k (MXU_OS_ACCUMULATE with `accumulate`)
inline Instr mxu_os(int w, int a, int k, bool accumulate) {
  Instr i = make(accumulate ? SxuOpcode::kDispatchMxuOsAccumulate : SxuOpcode::kDispatchMxuOs);
  i.mxuWBase = uint8_t(w);
  i.mxuABase = uint8_t(a);
  i.mxuTLen = uint8_t(k);
  return i;
}

// MXU_VPU_EPILOGUE dst = GEMM(WMEM[w], AMEM[a], tiles=tiles) SRC2=src2 OP=op DST_VREG: row 0 of dst =
// op(column sums, row 0 of src2).
inline Instr mxu_vpu_epilogue(int dst, int w, int a, int tiles, int src2, VpuOpcode op) {
  Instr i = make(SxuOpcode::kDispatchMxuVpuEpilogue);
  i.vregDst = uint8_t(dst);
  i.mxuWBase = uint8_t(w);
  i.mxuABase = uint8_t(a);
  i.mxuTLen = uint8_t(tiles);
  i.vregSrc = uint8_t(src2);
  i.vpuOp = uint8_t(op);
  return i;
}

// MXU_VPU_EPILOGUE ... DST_VMEM[addr]: the result written to VMEM instead of a vreg (src2 v0).
inline Instr mxu_vpu_epilogue_to_vmem(int addr, int w, int a, int tiles, VpuOpcode op) {
  Instr i = mxu_vpu_epilogue(0, w, a, tiles, 0, op);
  i.vregSrc2 = 1;
  i.vmemAddr = uint8_t(addr);
  return i;
}

inline Instr wait_mxu() { return make(SxuOpcode::kWaitMxu); }

// LOAD_MXU_RESULT dst
inline Instr load_mxu_result(int dst) {
  Instr i = make(SxuOpcode::kLoadMxuResult);
  i.vregDst = uint8_t(dst);
  return i;
}

// LOAD_MXU_MATRIX_ROW dst, row=row
inline Instr load_mxu_matrix_row(int dst, int row) {
  Instr i = make(SxuOpcode::kLoadMxuMatrixRow);
  i.vregDst = uint8_t(dst);
  i.vregSrc = uint8_t(row);
  return i;
}

// PSUM_WRITE PSUM[bucket], src
inline Instr psum_write(int bucket, int src) {
  Instr i = make(SxuOpcode::kPsumWrite);
  i.vmemAddr = uint8_t(bucket);
  i.vregSrc = uint8_t(src);
  return i;
}

// PSUM_ACCUMULATE_ROW PSUM[bucket], row=row, src
inline Instr psum_accumulate_row(int bucket, int row, int src) {
  Instr i = make(SxuOpcode::kPsumAccumulateRow);
  i.vmemAddr = uint8_t(bucket);
  i.vregDst = uint8_t(row);
  i.vregSrc = uint8_t(src);
  return i;
}

// PSUM_READ dst, PSUM[bucket]
inline Instr psum_read(int dst, int bucket) {
  Instr i = make(SxuOpcode::kPsumRead);
  i.vregDst = uint8_t(dst);
  i.vmemAddr = uint8_t(bucket);
  return i;
}

// PSUM_READ_ROW dst, PSUM[bucket], row=row
inline Instr psum_read_row(int dst, int bucket, int row) {
  Instr i = make(SxuOpcode::kPsumReadRow);
  i.vregDst = uint8_t(dst);
  i.vmemAddr = uint8_t(bucket);
  i.vregSrc = uint8_t(row);
  return i;
}

// PSUM_CLEAR PSUM[bucket]
inline Instr psum_clear(int bucket) {
  Instr i = make(SxuOpcode::kPsumClear);
  i.vmemAddr = uint8_t(bucket);
  return i;
}

}  // namespace tinytpu::instr
