#pragma once
// Values kept per element. A float32 tile computed lane by lane from one element of a buffer, the same in
// every lane, and uniform constants (a batch norm's divisor from a channel's variance, say) is that element's
// function: every chunk of the channel computes it again. Where such a value of at least kMinCost operations
// meets other data, it is stored into a memo buffer (a scratch buffer as large as its source, one slot per
// element) once the element is seen a second time, and read from there by every later batch: its operations
// become one gather. Loads see the buffers as they were when the kernel started (the runtime's snapshots),
// and the VPU's lane ops are the same in any lane, so the value read is the value computed, bit for bit.
// On a float MXU's core (`dot_operands`) a factor of a float32 product computed lane by lane from one element
// of a buffer per lane, whatever the element (a ReLU of the layer before's output, say), is kept too, from
// its first sight and whatever it costs: read from its memo buffer it is a loaded element, which the MXU can
// take (mxu_dot.h), where computed it is not. In a kernel of bfloat16 tensors (DotFactors::kBfloat16) only
// bfloat16 factors are kept (a bfloat16 tensor's decoded value: low_zero_bits), also one element's in every
// lane, and their memo buffers marked (bfloat16_slots), which a bfloat16 MXU needs.
// The tracer appends every tile node through ElementMemos::append, which tells the element's functions.
#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "compiler/tile_program.h"

namespace tinytpu::compiler {

// Whether a float MXU's products' computed factors are kept (kYes), or taken as kept already (kAssumed: a
// trace only estimated, never run).
enum class KeepDotOperands { kNo, kYes, kAssumed };
// The factors kept for a float MXU: float32 values, or (a kernel of bfloat16 tensors) bfloat16s only: values
// whose low 16 bits are zero by their operations (low_zero_bits), as tinygrad's bfloat16 loads decode to. A
// float32 MXU takes either; a bfloat16 MXU only the latter.
enum class DotFactors { kFloat32, kBfloat16 };

class ElementMemos {
 public:
  static constexpr int kMinCost = 8;  // operations of a value worth keeping per element
  // `sizes`: elements per buffer slot; `written`: the slots the kernel stores to, which are no sources (their
  // elements change as it runs).
  ElementMemos(const std::vector<int64_t>& sizes, std::set<int> written, KeepDotOperands dot_operands,
               DotFactors dot_factors);
  // Appends `t` to `out`: its index there. Operands of `t` that are an element's function meeting other data
  // in `t` are read from their memo buffer instead when an earlier batch stored them there, and stored there
  // by this batch when their element is seen the second time.
  int append(TileProgram& out, const TileNode& t);
  // The batch traced so far is compiled: the values it stores can be read by later batches. Returns how many
  // kept values it read or stored (they depend on earlier batches).
  int64_t batch_compiled();
  // The batch traced so far stores float products' factors not kept before (memoize_lanes): its chains that
  // read them compute them on the VPU.
  bool operands_stored() const { return operands_stored_; }
  // Elements per slot: the buffers', the counter slot's (0, not read) and the memo buffers' so far.
  const std::vector<int64_t>& slot_sizes() const { return slot_sizes_; }
  std::vector<int64_t> memo_sizes() const {  // elements per memo buffer
    return {slot_sizes_.begin() + memo_slot(sizes_, 0), slot_sizes_.end()};
  }
  int64_t reads() const { return reads_; }  // tiles read from memo buffers (the decision log)
  // By slot: whether every value is a bfloat16 (a memo buffer of such a function, DotFactors::kBfloat16), so
  // that a bfloat16 MXU takes their products.
  const std::vector<bool>& bfloat16_slots() const { return bfloat16_slots_; }

 private:
  static constexpr int64_t kMaxElements = int64_t(1) << 24;  // over all memo buffers of a kernel
  struct Derivation {    // a tile node of the current batch as the function of one element (per lane)
    int64_t key = 0;     // the function, numbered by functions_
    LeafLane element;    // the element, in every lane
    int leaf = -1;       // or (dot_operands) the TileProgram leaf whose lanes are each lane's element
    int cost = 0;        // operations, counted along every path (saturating); 0 once memoize() decided
    int memo_leaf = -1;  // the leaf reading its kept value
  };
  // The functions, numbered exactly: a leaf (LOAD, dtype, buffer), an operation (op, dtype, source dtype,
  // its operands' numbers or constants' kConstant keys). Open addressing over a power-of-two table.
  class FunctionTable {
   public:
    using Function = std::array<int64_t, 6>;
    int number(const Function& f);

   private:
    std::vector<Function> functions_;  // by number - 1
    std::vector<int> slots_;           // function numbers (0: empty), by hash
  };
  static constexpr int64_t kConstant = int64_t(1) << 62;  // | dtype << 32 | bits: a constant operand
  struct Memo {
    int buf = -1, slot = -1;  // the source buffer; the memo buffer's slot once a value is stored
    std::vector<bool> seen, stored, ready;  // per source element: computed, stored by some batch, and
                                            // stored by an already compiled batch
    std::vector<int64_t> pending;           // stored by the batch being traced
  };
  const std::vector<int64_t> sizes_;
  const std::set<int> written_;
  const KeepDotOperands dot_operands_;
  const DotFactors dot_factors_;
  FunctionTable functions_;
  std::vector<int> derived_;             // per node of the batch: its Derivation in derivations_ (-1: none)
  std::vector<Derivation> derivations_;  // of the current batch's nodes (few: most nodes vary by lane)
  std::map<int64_t, Memo> memos_;        // by Derivation::key
  std::vector<Memo*> pending_memos_;
  std::vector<int64_t> slot_sizes_;
  std::vector<bool> bfloat16_slots_;
  int64_t reads_ = 0;
  int64_t uses_ = 0;              // of the batch being traced
  bool operands_stored_ = false;  // by the batch being traced
  // An operation's, if it is an element's function
  std::optional<Derivation> derive(const TileProgram& out, const TileNode& t);
  static bool same_elements(const TileProgram& out, const Derivation& x, const Derivation& y);
  // `node`, or a leaf reading it from its memo buffer; `reader` the node it meets other data in
  int memoize(TileProgram& out, int node, const TileNode& reader);
  int memoize_lanes(TileProgram& out, int node);  // a Derivation::leaf's
  int kept_leaf(TileProgram& out, Derivation& d, int slot, const Lanes& index);
  Memo& memo(int64_t key, int buf);
  // The memo buffer's slot for `node`'s values, if the kernel's memo buffers have room for it
  bool add_slot(Memo& m, const TileProgram& out, int node);
};

}  // namespace tinytpu::compiler
