#pragma once
#include <cstdint>
#include <vector>

namespace tinytpu {

// SparseCore#(tableDepth, embWidth, bagSize) (SparseCore.bsv, hardware.md §6): an embedding table and a
// sum-pooling bag lookup, one table row added per cycle.
//
// Clocking, as every unit of the chip: in a cycle the caller first calls methods, which read the state at
// the cycle's start and whose writes land at its end; tick() then runs the unit's rules on the same
// start-of-cycle state and ends the cycle. A method whose guard is false would block the caller's rule in
// the reference; here it raises SimError, and a `can_` query says whether it would fire.
class SparseCore {
 public:
  enum class State : uint8_t { kIdle, kLookup, kDone };
  using Embedding = std::vector<int32_t>;  // embWidth Int#(32) lanes

  SparseCore(int table_depth, int emb_width, int bag_size);

  int table_entries() const { return int(table_.size()); }  // 2^TLog(tableDepth): mkRegFileFull's index range
  int emb_width() const { return emb_width_; }
  int bag_size() const { return int(bag_.size()); }

  // embTable.upd: a lookup in this cycle still reads the row as it was.
  void load_embedding(int idx, const Embedding& emb);
  bool can_submit() const { return state_ == State::kIdle; }
  // The first `count` (UInt#(8)) of `indices` (bagSize of them) are the bag; the lookups start next cycle and
  // is_done() is true count + 2 cycles after this one. A count over bagSize would read past the bag register
  // (an undefined value in the reference): an error.
  void submit_bag(const std::vector<int>& indices, int count);
  void reset();                     // DONE -> IDLE
  const Embedding& result() const;  // the bag's sum (wrapping), in DONE
  bool is_done() const { return state_ == State::kDone; }
  State state() const { return state_; }

  void tick();  // do_lookup, then this cycle's method writes

 private:
  int index(int idx, const char* what) const;

  int emb_width_;
  std::vector<Embedding> table_;  // mkRegFileFull: Bluesim's 0xAA fill until written
  State state_ = State::kIdle;
  std::vector<int> bag_;        // bagReg (mkRegU, never read before a submit writes it)
  int count_ = 0, cursor_ = 0;  // UInt#(8)
  Embedding accum_;             // mkReg(replicate(0))

  // this cycle's method calls (each at most once a cycle, as a method of the reference)
  bool loaded_ = false, submitted_ = false, reset_ = false;
  int load_idx_ = 0;
  Embedding load_emb_;
  std::vector<int> next_bag_;
  int next_count_ = 0;
};

}  // namespace tinytpu
