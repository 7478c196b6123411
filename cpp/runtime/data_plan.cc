#include "runtime/data_plan.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "base/errors.h"
#include "sim/tensorcore.h"

namespace tinytpu::runtime {

using namespace compiler;

namespace {

// Lanes are 32 bits: narrow integers are widened on the way in (sign- or zero-extended, bool as 0/1)
// and narrowed on the way out.
int32_t read_lane(const uint8_t* p, DType d) {
  switch (d) {
    case DType::kBool:
      return *p != 0;
    case DType::kI8:
      return int8_t(*p);
    case DType::kU8:
      return *p;
    case DType::kI16: {
      int16_t v;
      std::memcpy(&v, p, 2);
      return v;
    }
    case DType::kU16: {
      uint16_t v;
      std::memcpy(&v, p, 2);
      return v;
    }
    default: {
      int32_t v;
      std::memcpy(&v, p, 4);
      return v;
    }
  }
}
void write_lane(uint8_t* p, DType d, int bytes, int32_t v) {  // bytes: dtype_bytes(d)
  if (d == DType::kBool) v = v != 0;
  switch (bytes) {  // little-endian: the low bytes (a fixed size each: an inlined store, not a memcpy call)
    case 1:
      std::memcpy(p, &v, 1);
      break;
    case 2:
      std::memcpy(p, &v, 2);
      break;
    default:
      std::memcpy(p, &v, 4);
  }
}

// Lanes [0, lanes) of a strided gather of int8 elements, `at` its first (the base, moved), row by row: lane
// l is row l / kRows.
template <class Lane>
void read_strided_i8(const int8_t* at, const StridedGather& g, int lanes, Lane* out) {
  const int64_t col = g.col;
  if (lanes == kTileElems) {  // a whole tile (a WeightSRAM record): loops of fixed counts, unrolled
    for (int r = 0; r < kRows; ++r)
      for (int c = 0; c < kRows; ++c) out[r * kRows + c] = at[r * g.row + c * col];
    return;
  }
  int l = 0;
  for (; l + kRows <= lanes; l += kRows, at += g.row)
    for (int c = 0; c < kRows; ++c) out[l + c] = at[c * col];
  for (int c = 0; l + c < lanes; ++c) out[l + c] = at[c * col];
}

}  // namespace

DataPlan::DataPlan(const Plan& plan, const std::vector<Slot>& slots)
    : p_(plan),
      slots_(slots),
      counter_(counter_slot(plan.written)),
      scratch_(plan.scratch_tiles),
      pinned_(plan.pinned_tiles) {}

void DataPlan::gather(int id, Tile& out) const {
  const TileSource& s = p_.sources[id];
  switch (s.kind) {
    case TileSource::Kind::kStrided:
      gather_strided(s, out);
      break;
    case TileSource::Kind::kOffsets:
      gather_offsets(s, out);
      break;
    case TileSource::Kind::kLanes:
    case TileSource::Kind::kDynamic:
      gather_lanes(s, out);
      break;
    case TileSource::Kind::kPinned:
    case TileSource::Kind::kScratch: {
      const int place = compiler::kept_place(p_, s, swap_);
      const Tile* renamed = renamed_[size_t(place)];
      if (!renamed && stream_ && (*stream_)[place].kept) renamed = &(*stream_)[place].tile;
      out = renamed ? *renamed : kept(place);
      return;
    }
  }
  if (s.negate.any())
    for (int l = 0; l < kLanes; ++l)
      if (s.negate[l]) out[l] = wrap_neg(out[l]);
}

void DataPlan::gather_strided(const TileSource& s, Tile& out) const {
  const StridedGather& g = p_.strided[s.id];
  const int64_t moved = shift(g.buf);
  const Slot& b = slots_[g.buf];
  if (!s.gated && b.bytes == 4 && g.buf != counter_) {
    // the common case: 32-bit lanes, every index checked when compiled
    const uint8_t* row = b.read + (g.base + moved) * 4;
    if (g.lanes == kLanes) {
      for (int r = 0; r < kRows; ++r, row += g.row * 4) {
        if (g.col == 1) {
          std::memcpy(&out[r * kRows], row, 4 * kRows);
          continue;
        }
        for (int c = 0; c < kRows; ++c) std::memcpy(&out[r * kRows + c], row + c * g.col * 4, 4);
      }
      return;
    }
    out.fill(0);
    for (int l = 0; l < g.lanes; ++l) std::memcpy(&out[l], row + (g.index(l) - g.base) * 4, 4);
    return;
  }
  out.fill(0);
  if (g.buf == counter_) {
    for (int l = 0; l < g.lanes; ++l) out[l] = counter(g.index(l) + moved);
    return;
  }
  if (!s.gated &&
      b.dtype == DType::kI8) {  // the MXU's operands: no lane's read goes through read_lane's switch
    read_strided_i8(reinterpret_cast<const int8_t*>(b.read) + g.base + moved, g, g.lanes, out.data());
    return;
  }
  for (int l = 0; l < g.lanes; ++l) {
    const int64_t at = g.index(l) + moved;
    if (!s.gated || (at >= 0 && at < b.size)) out[l] = read_lane(b.read + at * b.bytes, b.dtype);
  }
}

void DataPlan::gather_i8(int id, int8_t* out, int n) const {
  const TileSource& s = p_.sources[id];
  if (s.kind == TileSource::Kind::kStrided && !s.gated && s.negate.none()) {
    const StridedGather& g = p_.strided[s.id];
    const Slot& b = slots_[g.buf];
    if (b.dtype == DType::kI8 && g.buf != counter_) {  // every index checked when compiled
      const int lanes = std::min(n, g.lanes);
      read_strided_i8(reinterpret_cast<const int8_t*>(b.read) + g.base + shift(g.buf), g, lanes, out);
      std::fill(out + lanes, out + n, int8_t(0));
      return;
    }
  }
  Tile t;
  gather(id, t);
  for (int l = 0; l < n; ++l) out[l] = int8_t(t[l]);
}

void DataPlan::gather_offsets(const TileSource& s, Tile& out) const {
  const OffsetGather& g = p_.offset_gathers[s.id];
  const LaneOffsets& o = p_.lane_offsets[g.offsets];
  const Slot& b = slots_[g.buf];
  const int64_t at = g.base + shift(g.buf);
  if (at + o.lo >= 0 && at + o.hi < b.size) {  // every lane in the buffer: one check
    const uint8_t* base = b.read + at * b.bytes;
    if (b.bytes == 4)
      for (int l = 0; l < kLanes; ++l) std::memcpy(&out[l], base + int64_t(o.at[l]) * 4, 4);
    else
      for (int l = 0; l < kLanes; ++l) out[l] = read_lane(base + int64_t(o.at[l]) * b.bytes, b.dtype);
    if (o.constant.any())  // (which read the base element above)
      for (int l = 0; l < kLanes; ++l)
        if (o.constant[size_t(l)]) out[l] = o.constants[l];
    return;
  }
  for (int l = 0; l < kLanes; ++l) {
    if (o.constant[size_t(l)]) {
      out[l] = o.constants[l];
      continue;
    }
    const int64_t lane = at + o.at[l];
    if (lane < 0 || lane >= b.size) {
      if (!s.gated) throw gather_outside(lane, g.buf, b.size);
      out[l] = 0;  // a gated-off lane reads 0, as below
      continue;
    }
    out[l] = read_lane(b.read + lane * b.bytes, b.dtype);
  }
}

// Per lane a constant or an element: at a static index, or at one computed by an earlier launch.
void DataPlan::gather_lanes(const TileSource& s, Tile& out) const {
  const bool dynamic = s.kind == TileSource::Kind::kDynamic;
  const Tile index = dynamic ? gather(s.index) : Tile{};
  out.fill(0);
  int buf = -1;  // the last lane's buffer, its slot and shift: lanes mostly read one buffer
  const Slot* b = nullptr;
  int64_t moved = 0;
  for (int l = 0; l < kLanes; ++l) {
    const LeafLane& lane = p_.lanes[s.id][l];
    if (lane.buf < 0) {
      out[l] = int32_t(lane.bits);
      continue;
    }
    if (lane.buf != buf) {
      buf = lane.buf;
      b = &slots_[buf];
      moved = shift(buf);
    }
    if (buf == counter_) {
      out[l] = counter(lane.index + moved);
      continue;
    }
    const int64_t at = dynamic ? index[l] : lane.index + moved;
    if (at < 0 || at >= b->size) {
      if (!s.gated) throw gather_outside(at, buf, b->size);
      continue;  // a gated-off lane reads 0: the gate's select discards it, or nothing stores it
    }
    out[l] = read_lane(b->read + at * b->bytes, b->dtype);
  }
}

std::pair<std::set<int>, std::vector<std::pair<int, int>>> DataPlan::choices() const {
  std::set<int> veto;
  std::vector<std::pair<int, int>> same;
  // The operands met in order, each value's first kept in an open-addressed table of operand indices by
  // value (weight or activation, then the tile): a later one with its value is the pair (operand, earlier),
  // and the pairs come in operand order
  const int n = int(p_.mxu_operands.size());
  std::vector<Tile> tiles(static_cast<size_t>(n));
  size_t mask = 15;
  while (mask < size_t(n) * 2) mask = mask * 2 + 1;
  std::vector<int> first(mask + 1, -1);
  for (int i = 0; i < n; ++i) {
    const MxuOperand& op = p_.mxu_operands[size_t(i)];
    bool memo = false;  // a memo buffer's values are made by the call's launches: not known yet
    compiler::for_each_source(p_, op.source,
                              [&](const TileSource& s) { memo |= compiler::reads_memo(p_, s); });
    if (memo) continue;
    const Tile& tile = tiles[size_t(i)] = gather(op.source);
    if (!op.words && std::any_of(tile.begin(), tile.end(), [](int32_t x) { return x < -128 || x > 127; }))
      veto.insert(op.chains.begin(), op.chains.end());
    uint64_t h = op.weight;
    for (int32_t x : tile) h = (h ^ uint32_t(x)) * 0x100000001b3ull;  // FNV-1a over the lanes
    size_t at = size_t(h ^ (h >> 29)) & mask;
    for (; first[at] >= 0; at = (at + 1) & mask) {
      const int j = first[at];
      if (p_.mxu_operands[size_t(j)].weight == op.weight && tiles[size_t(j)] == tile) break;
    }
    if (first[at] >= 0)
      same.push_back({i, first[at]});
    else
      first[at] = i;
  }
  if (same.size() * kSharingWorthAPlan < size_t(n)) same.clear();
  return {veto, same};
}

void DataPlan::fill(const PlanLaunch& l, TensorCore& tc) const {
  fill_vmem(l, [&](int addr) -> Tile& { return tc.vmem.mem[addr]; });
  fill_mxu(l, tc.wsram, tc.asram);
}

Bundle DataPlan::bundle(const PlanLaunch& l) const {
  Bundle b = l.image->bundle;
  for (const PlanLaunch::Fill& f : l.fills) b.records[f.record].data = gather(f.source);
  for (const PlanLaunch::MxuFill& f : l.mxu_fills)
    b.records[f.record].data = gather(p_.mxu_operands[f.operand].source);
  return b;
}

void DataPlan::scatter(const Scatter& s, const Tile& value, const Tile* index, const Tile* gate) const {
  const Slot& b = slots_[s.buf];
  if (index) {
    for (int lane = 0; lane < kLanes; ++lane)
      if (s.active[lane] && (!gate || (*gate)[lane])) store(b, s.buf, (*index)[lane], value[lane]);
    return;
  }
  const LaneOffsets& o = p_.lane_offsets[size_t(s.offsets)];
  const int64_t at = s.base + shift(s.buf);
  if (!gate && s.active.all() && at + o.lo >= 0 && at + o.hi < b.size) {
    // the common case: every lane stored, the tile's elements in the buffer (one check)
    uint8_t* base = b.write + at * b.bytes;
    if (b.bytes == 4)
      for (int lane = 0; lane < kLanes; ++lane) std::memcpy(base + int64_t(o.at[lane]) * 4, &value[lane], 4);
    else
      for (int lane = 0; lane < kLanes; ++lane)
        write_lane(base + int64_t(o.at[lane]) * b.bytes, b.dtype, b.bytes, value[lane]);
    return;
  }
  for (int lane = 0; lane < kLanes; ++lane)
    if (s.active[lane] && (!gate || (*gate)[lane])) store(b, s.buf, at + o.at[lane], value[lane]);
}

void DataPlan::store(const Slot& b, int buf, int64_t at, int32_t value) {
  if (at < 0 || at >= b.size)
    throw SimError("scatter index " + std::to_string(at) + " outside buffer " + std::to_string(buf) + " of " +
                   std::to_string(b.size) + " elements");
  write_lane(b.write + at * b.bytes, b.dtype, b.bytes, value);
}

bool DataPlan::reads_output_of(const PlanLaunch& l, const PlanLaunch& before, bool before_swap) const {
  bool reads = stores_memo(before) && reads_memo(l);
  for_each_kept_read(l, [&](int place) {
    for (const Keep& k : before.keeps) reads |= kept_place(k, before_swap) == place;
  });
  return reads;
}

bool DataPlan::reads_memo(const PlanLaunch& l) const {
  bool reads = false;
  const auto memo = [&](const TileSource& s) { reads |= compiler::reads_memo(p_, s); };
  for_each_read(l, memo);
  for (const PlanLaunch::MxuFill& f : l.mxu_fills)  // (a float MXU's operands: a kept factor, element_memo.h)
    compiler::for_each_source(p_, p_.mxu_operands[size_t(f.operand)].source, memo);
  return reads;
}

bool DataPlan::stores_memo(const PlanLaunch& l) const {
  return std::any_of(l.scatters.begin(), l.scatters.end(),
                     [&](const Scatter& s) { return s.buf > counter_; });
}

}  // namespace tinytpu::runtime
