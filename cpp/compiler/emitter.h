#pragma once
#include <initializer_list>
#include <optional>
#include <vector>

#include "compiler/constant_tiles.h"
#include "compiler/launch_cutter.h"
#include "compiler/mxu_dot.h"
#include "compiler/node_facts.h"
#include "compiler/op_table.h"
#include "compiler/schedule.h"
#include "compiler/vmem_slots.h"
#include "compiler/vreg_alloc.h"

namespace tinytpu::compiler {

// One emission of a batch (lower.h): its events in one order (schedule.h), each lowered to instructions by
// instruction selection (lower.cc: a node's op table lowering, a store's outputs), which asks the parts it is
// composed of (emitter.cc) for what the instructions name: vregs (vreg_alloc.h), VMEM slots (vmem_slots.h),
// constants (constant_tiles.h), WMEM and AMEM (mxu_fills.h), and room in the launch (launch_cutter.h), which
// cuts the launch where an event does not fit.
class Emitter {
 public:
#define TINYTPU_FRIEND_LOWERING(name) friend void lowering::name(Emitter&, const Lowered&);
  TINYTPU_LOWERINGS(TINYTPU_FRIEND_LOWERING)
#undef TINYTPU_FRIEND_LOWERING
  Emitter(const TileProgram& p, const NodeFacts& facts, const TensorCoreConfig& cfg, bool fast_math,
          const Choices& choices, EmitOrder order, int group = 0, bool blocking = false, int slots = 0);
  std::vector<Launch> run();
  const std::vector<Tile>& constants() const { return consts_.tiles(); }

 private:
  const TileProgram& p_;
  const TensorCoreConfig& cfg_;
  bool fast_math_;
  const Choices& choices_;
  const NodeFacts& facts_;
  const Schedule schedule_;
  LaunchCutter cutter_;
  VregAllocator regs_;
  VmemSlots slots_;
  ConstantTiles consts_;
  ConstantForecast forecast_;
  bool asking_when_full_ = false;  // forecast_.for_leaf when the event found the launch full
  std::vector<int> held_;          // cut()'s values to spill, in storage kept across launches
  int pos_ = 0;                    // current emission position
  // The MXU's shadow (a Boundary saves it whole): an OS block's dispatches after its first wait in
  // `pending`, each placed once the instructions after the one before fill the cycles until the MXU is done
  // with it (`shadow`); an OS read-back's stacking and reads in `deferred` (their rows' vregs in
  // `deferred_rows`), placed before the next instruction but the next block's first dispatch; and the blocks
  // dispatched in the launch (dispatched_), with their operands' places.
  struct Shadow {
    std::vector<Instr> pending, deferred;
    std::vector<int> deferred_rows;
    int shadow = 0;
    size_t dispatched = 0;  // of dispatched_: the rest are rolled back
  };
  Shadow mxu_;
  std::vector<std::pair<int, MxuDotPlaces>> dispatched_;  // (MxuDot index, places)
  std::pair<int, const char*> skipped_{-1, nullptr};      // a block whose dispatches did not fit, and why
  // A read-back through the bank dispatched the next block ahead of its event (dispatched_early_); when that
  // leaves the event no room, it is emitted again without (not_early_).
  bool dispatched_early_ = false, not_early_ = false;

  // The launch between two events, to which emission can return, and how many values a cut there spills.
  struct Boundary {
    int pos;
    LaunchCutter::Mark launch;
    ConstantTiles::Mark consts;
    VregAllocator::Mark regs;
    VmemSlots slots;
    Shadow mxu;
    int live;
  };
  // Register blocking's emissions (lower.h: every way but the two orders of the program as it is): a leaf
  // given up is the one read again latest, and a full launch ends where a cut spills the fewest values among
  // its last events' boundaries. The two orders as they were keep their plans: the leaf last read furthest
  // is given up, and a launch ends where it fills.
  const bool blocking_;
  std::vector<Boundary> boundaries_;  // the current launch's, when blocking

  // The composition (emitter.cc): the launch and its transactions, and what the instructions name.
  bool is_leaf(int node) const { return compiler::is_leaf(p_, node); }
  int last_use(int node) const { return schedule_.last_use[node]; }
  void begin_launch();
  void finish_launch();
  void cut();
  Boundary boundary();
  bool emit_event(const Boundary& before);
  const Boundary& cut_point(const Boundary& here) const;
  void return_to(const Boundary& b);
  int no_room(const char* why);
  bool room_for_one_more_vreg();
  bool room_for_instrs(int n);
  int alloc_vreg();
  int take_back(Content content);
  int evict_value();
  void release(int r) { regs_.release(r); }
  void set_vreg(int node, int r) { regs_.bind(node, r); }
  void emit(Instr in);
  void place(const Instr& in);
  void interleave(const Instr& in);
  void interleave_waiting(const Instr& in, int wait);
  void place_pending();
  int queued() const { return int(mxu_.pending.size() + mxu_.deferred.size()); }
  void issue(std::vector<Instr> dispatches);
  void flush_deferred();
  void end_shadow();
  void flush_pending();
  void vpu(VpuOpcode op, int d, int a, int b = 0);
  int take_out_slot(bool unfilled = false);
  int load_fill(int node, DType const_dtype = DType::kI32);
  int constant(int32_t value, DType dtype = DType::kI32);
  int palette_vreg();
  int weight_fill(const MxuTile& data, const MxuDot& m);  // (m: whose fill, read by its chains)
  int act_fill(const MxuTile& block, int k, const MxuDot& m);
  int fill_leaf(int node);
  int operand(int node);
  void drop_dead(int node);

  // Instruction selection (lower.cc): the instructions of a node or a store, and the sequences the op table's
  // lowerings are made of.
  void emit_node(int i);
  void emit_store(int s);
  void one_instruction(const OpInfo& info, bool f, int d, int a, int b);
  bool zero_leaf(int node) const { return facts_.uniform[node] == 0u; }
  int relu_input(const TileNode& n) const;
  void wrap(DType d, int r, int from = -1);
  void isnan(int d, int x);
  void float_ne(int d, const TileNode& n, int a, int b);
  void sar(int d, int a, int n);
  bool from_float_to_i32(int node) const;
  void less_unsigned(int out, int x, int y, int sign, int tx, int ty);
  void udiv(int d, int a, int b);
  void mxu_dot(int d, const MxuDot& m, int epilogue_src, int out_slot = -1);
  void broadcast(const TileNode& n, int d, int a);
  const MxuDotPlaces& mxu_dispatch(int node);
  bool at_hand(int node) const;
  void os_read_back(int node, int d);
  bool bank_read_back(int node, int d);
  bool bank_readable(const MxuDot& m) const;
  int dispatch_after(int block) const;
  const MxuDotPlaces* places_of(int mxu_index) const;
  bool in_launch(int mxu_index) const;
  bool dispatches_new_block(size_t e) const;
  int os_shadow(const Instr& dispatch) const;
  int os_drain(const Instr& dispatch) const;
  int os_stream_cycles(const MxuDot& m) const;
  std::vector<std::vector<int>> os_row_groups(const MxuDot& m) const;

  // The float32 arithmetic the VPU has no instruction for (float_sequences.cc).
  void int_to_float(int d, int x, bool is_signed);
  void reciprocal(int d, int x, bool in_range = false);
  void div_scale(int d, int b0, int e);
  void div_exact(int d, int a, int b, int r, int q);
  void divide(int d, int a0, int b0);
  void sub_exact_product(int x, int u, int v);
  void square_root(int d, int x);
  void horner(int t, int s, std::initializer_list<uint32_t> coefficients);
  void exp2_decomposed(int d, int x);
  void log2_decomposed(int d, int x);
  void trunc(int d, int x);
};

}  // namespace tinytpu::compiler
