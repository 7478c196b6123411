#pragma once
#include <array>
#include <cstdint>

#include "base/config.h"
#include "sim/controller.h"
#include "sim/memories.h"
#include "sim/systolic_array.h"
#include "sim/trace.h"
#include "sim/vpu.h"
#include "sim/xlu.h"

namespace tinytpu {

// Everything the SXU drives: the vector registers, the memories, the VPU, the XLU and the MXU (systolic
// array and its controller), with the cycle counter and the trace sink they share. The SXU (sxu.h) reads
// and writes it; the TensorCore (tensorcore.h) is this and the SXU, clocked together.
struct Datapath {
  explicit Datapath(const TensorCoreConfig& cfg)
      : cfg(cfg), vrf(cfg), vmem(cfg), wsram(cfg), asram(cfg), psum(cfg) {
    ctrl.pipelined = cfg.mxu_pipelined;
  }

  TensorCoreConfig cfg;
  uint64_t cycle = 0;  // free-running counter shared with the testbench (READ_CYCLE reads it)

  VRegFile vrf;
  Vmem vmem;
  Vpu vpu;
  Xlu xlu;
  SystolicArray array;
  WeightSram wsram;
  ActivationSram asram;
  PsumBank psum;
  Controller ctrl;

  TraceLog* trace = nullptr;  // the optional event sink; null: tracing off
  // The DMA loader variant (config.h dma_overlap): the first cycle each VMEM entry's records have all
  // arrived in, the same for all WeightSRAM and ActivationSRAM records, and for every record. All 0 on
  // the reference, whose loading ends before the SXU starts.
  std::array<uint64_t, TensorCoreConfig::kMaxDepth> vmem_arrival{};
  uint64_t mxu_data_arrival = 0, data_arrival = 0;
  uint64_t xlu_busy_cycles = 0;
  bool psum_port_taken = false;  // the MXU drain owns the PSUM write port this cycle
  // An SXU PSUM access or an ActivationSRAM output met a dispatch still running that writes there: the
  // run's results depend on when the MXU drained, not only on its instructions' order.
  bool mxu_overlapped = false;

  // A dispatch the SXU starts (caller checks ctrl.can_start(kind)); `operand` the vreg its vregSrc names.
  void start_mxu(const MxuDispatch& d, const Tile& operand) { ctrl.start(d, array, operand); }
};

}  // namespace tinytpu
