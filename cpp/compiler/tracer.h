#pragma once
#include <array>
#include <bitset>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "base/tile.h"
#include "compiler/ir.h"
#include "isa/vpu_ops.h"

namespace tinytpu::compiler {

constexpr int kLanes = kTileElems;  // the points of a chunk: one tile's lanes
using Lanes = std::array<int64_t, kLanes>;
using LaneMask = std::bitset<kLanes>;  // one bit per lane

// The buffer slots (global PARAMs by slot) a kernel loads from and stores to, and whether it loads through a
// pointer of another kind, so that any buffer may be read.
struct BuffersTouched {
  std::set<int> read, written;
  bool reads_unknown = false;
};
BuffersTouched buffers_touched(const Kernel& k);
// The buffer slots whose every load's index depends on a scalar variable: tables whose rows a launch-time
// value picks (an embedding row at a token, a position embedding at a position).
std::set<int> rows_picked_by_variables(const Kernel& k);

// One lane's operand of a leaf tile: an element of a kernel buffer, or a constant (32-bit pattern).
struct LeafLane {
  int buf = -1;  // PARAM slot; -1 for a constant
  uint32_t bits = 0;
  int64_t index = 0;  // after bits: 16 bytes, not 24
  LeafLane() = default;
  LeafLane(int buf, int64_t index, uint32_t bits = 0) : buf(buf), bits(bits), index(index) {}
  auto key() const { return std::tie(buf, index, bits); }
  bool operator==(const LeafLane& o) const { return key() == o.key(); }
  bool operator<(const LeafLane& o) const { return key() < o.key(); }
};

// One lane of an MXU operand tile: a leaf lane, negated when the term it belongs to is subtracted. A
// constant is negated when compiled; an element only as the loader fills it, which also checks that
// the value fits int8 (MXU data is read at launch time, so the range check is too).
struct MxuLane {
  LeafLane src;
  bool negate = false;
  bool operator==(const MxuLane& o) const { return src == o.src && negate == o.negate; }
  bool operator<(const MxuLane& o) const { return std::tie(src, negate) < std::tie(o.src, o.negate); }
};
using MxuTile = std::array<MxuLane, kLanes>;
using LeafLanes = std::array<LeafLane, kLanes>;
// The counter slot, one past the kernel's buffer slots: its "elements" are their own indices. An integer
// constant that differs across lanes (a chunk's point numbers, a random kernel's counter) is a leaf of this
// slot, so that a batch whose counters move with the chunk has the shape of an earlier batch with its
// indices shifted, and is replayed (replay.h). The loader fills it like any leaf.
// `slots`: one entry per buffer slot (the tracer's sizes, the executor's buffers).
template <class Slots>
int counter_slot(const Slots& slots) {
  return int(slots.size());
}
// Memo slots follow the counter slot: memo buffer i (Tracer, "Values kept per element") is slot
// counter_slot + 1 + i.
template <class Slots>
int memo_slot(const Slots& slots, int i) {
  return counter_slot(slots) + 1 + i;
}
// Pinned tile numbers: the uniform prefix's i-th tile is 3i (bank 0); a cut's i-th is 3i+1 in bank 1 or 3i+2
// in bank 2, by the cut's parity. A part of a long chunk reads one bank and fills the other.
inline int prefix_pin(int i) { return 3 * i; }
inline int cut_pin(int i, int bank) { return 3 * i + bank; }
inline int pin_bank(int pin) { return pin % 3; }
inline int other_bank(int pin) { return pin_bank(pin) == 0 ? pin : pin_bank(pin) == 1 ? pin + 1 : pin - 1; }

// Which lanes a LANE_REDUCE combines (the 4x4 tile is row-major: lane 4r+c is row r, column c): all
// sixteen, the four of each row, or the four of each column; every combined lane gets the result. For
// a LANE_BROADCAST, which lanes get one value: all sixteen take lane `lane` of the operand, each row its
// column `lane`, or each column its row `lane`. kPair (LANE_REDUCE only): lanes 2j and 2j+1, combined
// into lane 2j.
enum class LaneAxis : uint8_t { kTile, kRow, kCol, kPair };

// A node of the tile-level dataflow graph: 16 lanes computed by the same operation.
struct TileNode {
  Op op;                      // ALU op, CAST, BITCAST; LOAD marks a leaf
  DType dtype;                // result dtype
  DType from = DType::kVoid;  // CAST/BITCAST source dtype
  int a = -1, b = -1, c = -1;
  int leaf = -1;  // LOAD: its lanes are TileProgram::leaves[leaf]; -1: every lane reads the constant 0
  // A gather whose element indices are data: lanes with buf >= 0 read element `a`'s value (an int32 tile
  // computed by an earlier launch) of that buffer. The loader only moves data; it does no arithmetic.
  bool dynamic = false;
  // The load sits under a data-dependent gate: lanes whose index is out of range read 0, which the gate's
  // select then discards. Without a gate an out-of-range index is an error.
  bool gated = false;
  int mxu = -1;         // MXU_DOT: index into TileProgram::mxu (operand a: its epilogue's other input)
  int pinned = -1;      // a leaf whose lanes are pinned tile #pinned (the uniform prefix's values)
  Op reduce = Op::ADD;  // LANE_REDUCE: ADD, MUL or MAX
  LaneAxis axis = LaneAxis::kTile;  // LANE_REDUCE, LANE_BROADCAST
  uint8_t lane =
      0;  // LANE_BROADCAST: the operand's lane (kTile), column (kRow) or row (kCol); MXU_DOT: its output
};

struct TileProgram;
// A leaf whose sixteen lanes hold one constant (no gather, no pinned tile): its lane bits.
std::optional<uint32_t> uniform_bits(const TileProgram& p, const TileNode& n);

struct TileStore {
  int buf;
  Lanes index;
  std::array<bool, kLanes> active;
  int value;  // TileNode
  // Data-dependent stores: a bool tile gating each lane (IF on loaded data), and an int32 tile of
  // element indices (a scatter). Both are drained beside the value; the loader applies them on the way
  // out, in program order, without computing anything.
  int gate = -1;
  int index_node = -1;
  int pin = -1;  // not a memory store: keep the value as pinned tile #pin for later chunks
};

// Int8 dot products of 16 lanes on the MXU, in weight-stationary dispatches of one activation row:
// lanes 4g..4g+3 share activation row `act` (their common operand), `weight` holds each lane's other
// operand as W[k][c], and the column sums land in PSUM row g (written by a group's first dispatch,
// accumulated by the others). Rows, weights and activations name the lanes the loader fills them from
// (int8 values at launch time).
// With `os` (output-stationary, when lanes form a 4x4 block whose rows share one factor and columns
// the other): one MXU_OS dispatch per K-slice of up to 4 terms accumulates the whole 4x4 result in the
// PEs; `acts` then holds k activation rows X[.][k] (row k in lanes 4k..4k+3) and the live matrix rows
// are read back through PSUM.
// With `across` too (OS across chains, when the chains' lane groups share their weight-stationary weight
// tiles: a convolution's channels, each chain one channel): the MXU's rows are the chains, its outputs, and
// each pass (a dispatch that does not accumulate begins one) takes one group of four lanes, its `row`:
// the pass's matrix row r is that group's lanes of output r. Each output is an MXU_DOT node of the same
// `mxu`, its number in TileNode::lane.
struct MxuDot {
  struct Dispatch {
    int weight, act, row;  // row: the PSUM row (WS), the group of lanes (OS across chains)
    bool accumulate;
    int k = 1;  // OS: terms in this slice (activation rows)
  };
  std::vector<MxuTile> weights;  // 4x4, row-major W[k][c]
  std::vector<MxuTile> acts;     // WS: activation row a[k] in lanes 0..3
  std::vector<int> chains;       // the dot-product chains it computes (fuse_mxu_dots numbers them), by output
  std::vector<Dispatch> dispatches;
  bool os = false;
  bool across = false;
  std::array<bool, kRows> live_rows{};  // OS: matrix rows with live lanes
  // A single row-0 dispatch may fold the following lane-wise int32 op into DISPATCH_MXU_VPU_EPILOGUE
  // (46): result row 0 = op(column sums, operand a's row 0).
  std::optional<VpuOpcode> epilogue_op;
  // One weight-stationary dispatch into row 0: its column sums are the result, one MXU_VPU_EPILOGUE.
  bool single_dispatch() const { return !os && dispatches.size() == 1 && dispatches[0].row == 0; }
};

// The straight-line tile program for one or more chunks of 16 lanes, in program order.
struct TileProgram {
  std::vector<TileNode> nodes;
  // The LOAD nodes' lanes, apart from the nodes: most nodes are not leaves, and a small node is cheap to
  // make, copy and keep.
  std::vector<LeafLanes> leaves;
  std::vector<TileStore> stores;
  std::vector<MxuDot> mxu;

  const LeafLanes& lanes(const TileNode& n) const {
    static const LeafLanes kZero{};
    return n.leaf < 0 ? kZero : leaves[n.leaf];
  }
  // A node's lanes to write, made on first use (the reference lasts until the next leaf is made).
  LeafLanes& lanes(TileNode& n) {
    if (n.leaf < 0) {
      n.leaf = int(leaves.size());
      leaves.emplace_back();
    }
    return leaves[n.leaf];
  }
  void clear() {
    nodes.clear();
    leaves.clear();
    stores.clear();
    mxu.clear();
  }
};

// How often each node is read (by nodes and stores), and in which lanes its value is needed: a store's
// active lanes, passed down to operands (every lane for the input of a cross-lane LANE_REDUCE).
struct NodeUses {
  std::vector<int> count;
  std::vector<std::array<bool, kLanes>> live;
};
NodeUses node_uses(const TileProgram& p);

// What the tracer knows about a UOp in the current chunk.
struct TraceValue {
  enum Kind : uint8_t { kNone, kConst, kTile, kBuf, kPtr } kind = kNone;
  DType dtype = DType::kVoid;
  Lanes v{};      // kConst: per-lane value (integers as integers, float32 as bits); kPtr: element index
  int tile = -1;  // kTile
  int buf = -1;   // kBuf / kPtr: PARAM slot, or the BUFFER node for registers
  bool reg = false;
  int dyn = -1;  // kPtr: tile holding data-dependent element indices (gathers)
  // kTile of float32: adding +0.0 gives the tile back. True for the sum of a float ADD with an operand that
  // is never -0.0 (IEEE RNE gives -0.0 only for (-0) + (-0), and the VPU's add quiets a signalling NaN), so
  // a reduction's terms known to be +0.0 are dropped exactly.
  bool adds_zero_exactly = false;
};

// Maps the kernel's iteration space onto lanes: every RANGE outside all REDUCE ranges is lane-parallel,
// and 16 consecutive points of their flattened product form a chunk; REDUCE ranges and everything else
// are unrolled while tracing. Index arithmetic is evaluated per lane here, so loads and stores carry
// concrete element indices: the data plan gathers and scatters them.
//
// A long chunk (a reduction of millions of terms per output) is traced in parts, so that its tile
// nodes fit in host memory: past `cut_nodes` nodes, at the end of an iteration of the outermost loop whose
// iterations fit in a part (and before 2 * cut_nodes), trace_chunk keeps every live value as a pinned tile
// (a store with `pin`) and returns false; the caller compiles the batch, and the next call resumes the
// chunk with those values as pinned leaves. `max_chunk_nodes` bounds a part that has no loop iteration to
// stop at: past it, tracing stops with Unsupported. In a loop of at least `early_cut_loop` nodes, a part ends
// sooner, past `early_cut_nodes`, where at most `early_cut_live` tiles are live: such a cut costs a few
// spills, and short parts repeat, so that a long chunk compiles as a few parts replayed (compile.cc) rather
// than lowered whole (beautiful_mnist's weight gradient: 64 iterations of 16,000 nodes, compiled in 16 s
// whole).
struct TraceLimits {
  size_t cut_nodes = size_t(1) << 20;        // about 300 MB of tile nodes (a part: up to twice that)
  size_t max_chunk_nodes = size_t(1) << 23;  // about 2.5 GB
  bool trace_every_chunk = false;            // tests: no batch replayed untraced (ChunkPeriod)
  size_t early_cut_nodes = size_t(1) << 15;  // (up to cut_nodes)
  size_t early_cut_loop = size_t(1) << 18;
  int early_cut_live = 16;
};
// Chunks that trace alike. When the kernel reads its outer lane-parallel ranges only as element indices,
// through additions and multiplications by constants, chunk c traces to the program of chunk c % chunks with
// each buffer's element indices moved by one amount: the two chunks' lanes differ only in those ranges'
// values, by the same amount in every lane. compile() replays such chunks' batches without tracing them.
struct ChunkPeriod {
  int64_t chunks = 0;  // 0: no chunks trace alike this way
  int64_t units = 1;   // how far `chunks` chunks move the outer ranges' point (more than 1: one outer range)
  // The outer ranges' trip counts, outermost first: the digits of c / chunks * units.
  std::vector<int64_t> bounds;
  // steps[r][slot]: how far the slot's element indices move when outer range r advances by one.
  std::vector<std::vector<int64_t>> steps;
  // Per buffer slot, chunk `to`'s element indices minus chunk `from`'s (chunks apart by a multiple of
  // `chunks`); false if it overflows.
  [[nodiscard]] bool shift(int64_t from, int64_t to, std::vector<int64_t>& by) const;
};

// Per buffer slot, the least and greatest element index seen ({INT64_MAX, INT64_MIN}: none): widens buf's to
// take in [lo, hi]. The bounds a batch's tracing checked (BatchFacts) and its static gathers read
// (CompiledBatch) are kept so.
void widen(std::vector<std::pair<int64_t, int64_t>>& bounds, int buf, int64_t lo, int64_t hi);

// What tracing a batch did that decides whether a batch repeating it traces alike (compile.cc).
struct BatchFacts {
  // Per buffer slot, the least and greatest element index the tracer checked against the buffer (a load's
  // lanes without a data gate; a store's active lanes); empty when none.
  std::vector<std::pair<int64_t, int64_t>> loaded, stored;
  int64_t gated_loads = 0;    // loads under a data gate: lanes out of range read 0, unchecked
  int64_t memo_uses = 0;      // values kept per element, read or stored: they depend on earlier batches
  int64_t cuts = 0;           // long chunks stopped at a cut
  int64_t loops_skipped = 0;  // as loops_skipped()
};

// How a reducing kernel's chunks take their 16 points (see Tracer::blocked_): kAuto blocks integer
// reductions (the MXU's output tile) and not float ones.
enum class ChunkLayout : uint8_t { kAuto, kBlocked, kLinear };
class Tracer {
 public:
  Tracer(const Kernel& k, const std::vector<int64_t>& vals, const std::vector<int64_t>& buffer_sizes,
         const TraceLimits& limits = {}, ChunkLayout layout = ChunkLayout::kAuto);
  // Traces chunk `chunk` (or the rest of it) into `out`. False: it stopped at a cut; call again with
  // the same chunk once `out` is compiled and emptied.
  [[nodiscard]] bool trace_chunk(int64_t chunk, TileProgram& out);
  int64_t num_chunks() const { return chunks_; }
  // A float reduction that could take its chunks either way: compile() tries both on its first chunk.
  bool layout_open() const { return layout_open_; }
  bool blocked() const { return blocked_; }
  int64_t blocks_per_row() const {  // blocked: the chunks of one row of 4x4 blocks, consecutive
    return blocked_ ? (bounds_.back() + kRows - 1) / kRows : 1;
  }
  int64_t parts_cut() const { return parts_cut_; }  // times a chunk stopped at a cut: its parity is a bank's
  // At the last cut, about how much of its chunk was traced: the share of the loop it was cut in.
  double cut_share() const { return cut_share_; }
  int64_t loops_skipped() const { return loops_skipped_; }  // guarded loops that would add nothing
  // True once a chunk has pinned the uniform prefix: its program must run before the next chunk's.
  bool pinned_prefix() const { return prefix_ready_ && !prefix_constant_; }
  // The batch traced so far is compiled: the memo values it stores can be read by later batches. Returns
  // what tracing it did.
  BatchFacts batch_compiled();
  // Which chunks trace alike (ChunkPeriod), from the kernel's IR and this chunking.
  ChunkPeriod chunk_period() const;
  // Chunks were replayed as repeats of traced ones, whose tracing cut and skipped this many: counted as if
  // traced (later cuts number their pinned tiles' banks as tracing every chunk would).
  void repeated(int64_t cuts, int64_t loops_skipped) {
    parts_cut_ += cuts;
    loops_skipped_ += loops_skipped;
  }
  // Elements per slot: the buffers', the counter slot's (0, not read) and the memo buffers' so far.
  const std::vector<int64_t>& slot_sizes() const { return slot_sizes_; }
  std::vector<int64_t> memo_sizes() const {  // elements per memo buffer
    return {slot_sizes_.begin() + memo_slot(sizes_, 0), slot_sizes_.end()};
  }
  static constexpr int kMemoCost = 8;  // operations of a value worth keeping per element (below)
  int64_t memo_reads() const { return memo_reads_; }  // tiles read from memo buffers (the decision log)

 private:
  const Kernel& k_;
  std::vector<int64_t> vals_, sizes_;
  TraceLimits limits_;
  std::vector<int> last_reader_;  // per IR node: the last node that reads it (-1: none)
  // Pinned tile numbers (prefix_pin, cut_pin): a cut's bank is its parity. A cut's tiles are read only by the
  // part after it, which ends at the next cut, so two banks suffice, and the parts of one
  // chunk are numbered as the same parts of a chunk two before: equal shapes, so replayed (compile.cc).
  int prefix_pins_ = 0;
  int64_t parts_cut_ = 0;
  double cut_share_ = 1;
  int64_t loops_skipped_ = 0;
  int64_t traced_ = 0;               // tile nodes made so far, over all chunks and parts
  std::vector<int> enclosing_loop_;  // per RANGE node: the loop around it (-1: none, or a lane-parallel one)
  std::vector<int> loop_end_;        // per RANGE node: its END node (-1: none)
  // The chunk being traced: the interpreter's state, kept across a cut.
  struct ChunkState {
    int64_t chunk = -1;
    size_t ip = 0;  // the IR node to resume at
    int cut = -1;   // the RANGE whose iteration ended at the cut
    std::vector<TraceValue> val;
    std::vector<int64_t> iter, bound;
    std::vector<int64_t> iteration_start;  // per loop: tile nodes traced (traced_) when its iteration began
    std::map<int, std::map<int64_t, TraceValue>> regs;  // BUFFER(REG) node -> element -> value
    // Global stores of this chunk, for a lane reading back what it wrote: (buf, element) -> (tile,
    // lane); tile -1 when the store was gated by data. Buffers written at data-dependent indices are
    // unknowable.
    std::map<std::pair<int, int64_t>, std::pair<int, int>> stored;
    std::set<int> stored_bufs, scattered_bufs;  // buffers stored to at all / at data-dependent indices
    std::vector<std::array<bool, kLanes>> masks;
    std::vector<int> data_gates;  // innermost data-dependent IF condition as a bool tile (AND of nested ones)
    std::vector<Lanes> lane_range;
    std::map<int, DType> pin_dtypes;  // the cut's pinned tiles
  };
  ChunkState st_;
  TileProgram* out_ = nullptr;  // what trace_chunk appends to
  size_t first_node_ = 0;       // its size when this part of the chunk began
  size_t next_live_count_ = 0;  // the part's size past which an early cut counts its live tiles again
  void start_chunk(int64_t chunk);
  // Tracing one IR node, by kind; each writes the node's value in st_.val.
  TraceValue& src(const Node& n, int i) {
    return st_.val[n.src.at(i)];
  }                                                   // malformed IR: an error, not a wild read
  int new_tile(const TileNode& t);                    // appends a tile node: its index
  void set_tile(TraceValue& res, const TileNode& t);  // res becomes a new tile node
  int to_tile(const TraceValue& x);
  void forward_stores(TraceValue& res, const TileNode& t, int buf);
  void trace_range(size_t& ip);
  // A reduction loop whose every store accumulates a gated term into a register,
  // `acc = acc + WHERE(AND(..., guard, ...), term, 0)`, with guards computed before the loop (a padded or
  // strided convolution's gradient tests the output index against the reduce index this way). When a
  // guard is false in every lane on entry, every iteration would give each register back unchanged
  // (simplify), so the loop is skipped: tracing it would cost its trip count times its body and emit nothing.
  struct GuardedAccumulation {
    int reg = -1, elem = -1;  // the register (BUFFER node) and its element index (a node before the loop)
    int zero = -1;            // WHERE's other operand, a node before the loop
    DType dtype = DType::kVoid;
    std::vector<int> guards;  // conjuncts of the WHERE's condition computed before the loop
  };
  std::map<int, std::vector<GuardedAccumulation>> guarded_loops_;  // REDUCE RANGE node -> its stores
  void bind_variables(const std::vector<int64_t>& vals);
  void find_parallel_ranges();
  void find_guarded_loops();
  void choose_chunking(ChunkLayout layout);
  void find_pinnable_prefix();
  bool adds_nothing(const GuardedAccumulation& acc);  // on entry: the loop would leave `acc` as it is
  [[nodiscard]] bool trace_end(size_t& ip);
  void trace_if(const Node& n);
  void trace_index(size_t ip);
  void trace_load(size_t ip);
  void trace_store(const Node& n);
  void trace_cast(size_t ip);
  void trace_alu(size_t ip);
  [[nodiscard]] bool fold_float(const Node& n, TraceValue& res);  // float32 lanes all known: the VPU's op
  [[nodiscard]] bool simplify(const Node& n, TraceValue& res);    // a select on a known condition, x + 0
  // Calls fn(tile reference) for every tile the chunk's state refers to that the rest of the chunk may
  // read, after a cut at the end of an iteration of RANGE `cut`.
  template <class Fn>
  void for_live_tiles(Fn fn);
  int live_tiles_at(int range);   // how many distinct tiles a cut at the end of an iteration of `range` keeps
  void cut(TileProgram& out);     // keeps the live tiles as pinned tiles; references become pin numbers
  void resume(TileProgram& out);  // pin numbers become pinned leaves of `out`
  std::vector<int> parallel_;     // lane-parallel RANGE nodes, outermost first
  std::vector<int64_t> bounds_;   // their trip counts
  int64_t points_ = 1;
  int64_t chunks_ = 0;
  // Kernels that reduce and have two inner parallel dimensions of at least 4 may take their chunks as
  // 4x4 blocks of those dimensions (lane 4r+c = block row r, column c), the shape of an MXU output tile:
  // rows then share one operand of a matmul and columns the other (when ragged edges cost at most a
  // quarter more chunks). Integer reductions do (the MXU's). Other kernels take 16 consecutive points of
  // the flattened space. A float matmul fills as many tiles either way; an elementwise prologue on one
  // operand is computed for fewer lanes when those lanes share it: the row operand in 16 consecutive
  // points, the column operand in blocks. compile() picks by trying both.
  bool blocked_ = false;
  bool layout_open_ = false;  // a float reduction that could take either layout
  int64_t uniform_value(int node, const std::vector<int64_t>& known) const;
  // The uniform prefix: nodes before the first lane-parallel RANGE compute the same lanes in every
  // chunk (a whole-tensor reduce before a broadcast, say). The first chunk traces it and pins the tiles
  // used later; the others start at prefix_end_ with those as leaves the loader fills.
  int prefix_end_ = -1;                  // -1: no prefix worth pinning
  bool prefix_loops_ = false;            // it has a loop: always worth pinning
  std::vector<int> prefix_uses_;         // prefix nodes read at or after prefix_end_
  std::vector<TraceValue> prefix_vals_;  // their values (pinned tiles by pin number in .tile)
  bool prefix_ready_ = false;
  bool prefix_constant_ = false;  // it made no tile: nothing pinned, its values reused
  void pin_prefix(std::vector<TraceValue>& val, TileProgram& out);
  int pin(TileProgram& out, int tile, int number);  // a store keeping `tile` for later batches as #number

  // Values kept per element. A float32 tile computed lane by lane from one element of a buffer, the same
  // in every lane, and uniform constants (a batch norm's divisor from a channel's variance, say) is that
  // element's function: every chunk of the channel computes it again. Where such a value of at least
  // kMemoCost operations meets other data, it is stored into a memo buffer (a scratch buffer as large as
  // its source, one slot per element) once the element is seen a second time, and read from there by
  // every later batch: its operations become one gather. Loads see the buffers as they were when the
  // kernel started (the runtime's snapshots), and the VPU's lane ops are the same in any lane, so the value
  // read is the value computed, bit for bit.
  static constexpr int64_t kMaxMemoElements = int64_t(1) << 24;  // over all memo buffers of a kernel
  struct Derivation {    // a tile node of the current batch as the function of one element
    int64_t key = 0;     // the function, numbered by functions_
    LeafLane element;    // the element, in every lane
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
  FunctionTable functions_;
  static constexpr int64_t kConstant = int64_t(1) << 62;  // | dtype << 32 | bits: a constant operand
  std::vector<int> derived_;             // per node of *out_: its Derivation in derivations_ (-1: none)
  std::vector<Derivation> derivations_;  // of the current batch's nodes (few: most nodes vary by lane)
  struct Memo {
    int buf = -1, slot = -1;  // the source buffer; the memo buffer's slot once a value is stored
    std::vector<bool> seen, stored, ready;  // per source element: computed, stored by some batch, and
                                            // stored by an already compiled batch
    std::vector<int64_t> pending;           // stored by the batch being traced
  };
  std::map<int64_t, Memo> memos_;  // by Derivation::key
  std::vector<Memo*> pending_memos_;
  std::vector<int64_t> slot_sizes_;
  int64_t memo_reads_ = 0;
  BatchFacts facts_;  // of the batch being traced
  // written: not memo sources; read (or reads_unknown): stores to them are kept for read-back
  BuffersTouched touched_;
  std::optional<Derivation> derive(const TileNode& t);  // an operation's, if it is an element's function
  int memoize(int node);                                // `node`, or a leaf reading it from its memo buffer
};

}  // namespace tinytpu::compiler
