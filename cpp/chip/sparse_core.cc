#include "chip/sparse_core.h"

#include <string>

#include "base/errors.h"
#include "base/tile.h"
#include "sim/memories.h"

namespace tinytpu {
SparseCore::SparseCore(int table_depth, int emb_width, int bag_size) : emb_width_(emb_width) {
  // the provisos Add#(1, _, n): every parameter at least 1
  if (table_depth < 1 || emb_width < 1 || bag_size < 1 || bag_size > 255)
    throw SimError("SparseCore#(" + std::to_string(table_depth) + ", " + std::to_string(emb_width) + ", " +
                   std::to_string(bag_size) + "): every parameter at least 1, a bag of at most 255");
  table_.assign(size_t(1) << index_bits(table_depth), Embedding(size_t(emb_width), kUninitWord));
  bag_.assign(size_t(bag_size), 0);
  accum_.assign(size_t(emb_width), 0);
}

int SparseCore::index(int idx, const char* what) const {
  if (idx < 0 || idx >= table_entries())
    throw SimError(std::string("SparseCore ") + what + ": index " + std::to_string(idx) + " outside its " +
                   std::to_string(table_entries()) + "-entry table");
  return idx;
}

void SparseCore::load_embedding(int idx, const Embedding& emb) {
  if (loaded_) throw SimError("SparseCore loadEmbedding called twice in one cycle");
  if (int(emb.size()) != emb_width_)
    throw SimError("SparseCore loadEmbedding: " + std::to_string(emb.size()) +
                   " lanes, the table's rows have " + std::to_string(emb_width_));
  load_idx_ = index(idx, "loadEmbedding");
  load_emb_ = emb;
  loaded_ = true;
}

void SparseCore::submit_bag(const std::vector<int>& indices, int count) {
  if (!can_submit())
    throw SimError("SparseCore submitBag outside SC_IDLE (its guard): the caller would wait");
  if (submitted_) throw SimError("SparseCore submitBag called twice in one cycle");
  if (int(indices.size()) != bag_size())
    throw SimError("SparseCore submitBag: " + std::to_string(indices.size()) + " indices, the bag holds " +
                   std::to_string(bag_size()));
  if (count < 0 || count > bag_size())
    throw SimError("SparseCore submitBag: count " + std::to_string(count) + " over the bag's " +
                   std::to_string(bag_size()) + " entries (the reference would read an undefined index)");
  for (int i : indices) index(i, "submitBag");
  next_bag_ = indices;
  next_count_ = count;
  submitted_ = true;
}

void SparseCore::reset() {
  if (state_ != State::kDone)
    throw SimError("SparseCore reset outside SC_DONE (its guard): the caller would wait");
  reset_ = true;
}

const SparseCore::Embedding& SparseCore::result() const {
  if (state_ != State::kDone)
    throw SimError("SparseCore result read outside SC_DONE (its guard): the caller would wait");
  return accum_;
}

void SparseCore::tick() {
  // do_lookup: the table as it was at the cycle's start (a RegFile's sub reads before its upd)
  if (state_ == State::kLookup) {
    if (cursor_ < count_) {
      const Embedding& emb = table_[size_t(bag_[size_t(cursor_)])];
      for (int i = 0; i < emb_width_; ++i) accum_[size_t(i)] = wrap_add(accum_[size_t(i)], emb[size_t(i)]);
      ++cursor_;
    } else {
      state_ = State::kDone;
    }
  }
  // the methods' writes (their guards exclude do_lookup's state: none meets it)
  if (loaded_) table_[size_t(load_idx_)] = load_emb_;
  if (submitted_) {
    bag_ = next_bag_;
    count_ = next_count_;
    cursor_ = 0;
    accum_.assign(size_t(emb_width_), 0);
    state_ = State::kLookup;
  }
  if (reset_) state_ = State::kIdle;
  loaded_ = submitted_ = reset_ = false;
}

}  // namespace tinytpu
