#pragma once
#include <array>
#include <cstdint>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "compiler/chunk_period.h"
#include "compiler/element_memo.h"
#include "compiler/ir.h"
#include "compiler/kernel_buffers.h"
#include "compiler/tile_program.h"

namespace tinytpu::compiler {

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
  // A float MXU's core: computed factors of float products kept per element (element_memo.h), or, tracing
  // only to estimate, taken as kept already (as every batch after the first few finds them).
  KeepDotOperands keep_dot_operands = KeepDotOperands::kNo;
  DotFactors dot_factors = DotFactors::kFloat32;  // which
  size_t early_cut_nodes = size_t(1) << 15;       // (up to cut_nodes)
  size_t early_cut_loop = size_t(1) << 18;
  int early_cut_live = 16;
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

// How a reducing kernel's chunks take their 16 points (see Tracer::chunking_): kAuto blocks integer
// reductions (the MXU's output tile) and not float ones.
enum class ChunkLayout : uint8_t { kAuto, kBlocked, kLinear };
// The lane-parallel ranges a blocked layout's blocks span, by their place in the nest (outermost 0): its
// rows' and its columns'; -1: the two innermost.
struct BlockRanges {
  int rows = -1, cols = -1;
};
class Tracer {
 public:
  Tracer(const Kernel& k, const std::vector<int64_t>& vals, const std::vector<int64_t>& buffer_sizes,
         const TraceLimits& limits = {}, ChunkLayout layout = ChunkLayout::kAuto, BlockRanges block = {});
  // Traces chunk `chunk` (or the rest of it) into `out`. False: it stopped at a cut; call again with
  // the same chunk once `out` is compiled and emptied.
  [[nodiscard]] bool trace_chunk(int64_t chunk, TileProgram& out);
  int64_t num_chunks() const { return chunking_.chunks; }
  // A float reduction that could take its chunks either way: compile() tries both on its first chunk.
  bool layout_open() const { return layout_open_; }
  // Float data: the pairs of parallel ranges whose blocks fill chunks well, reduction or not (a sum tinygrad
  // unrolled whole has no reduce loop), the two innermost first: the layouts a float MXU's caller may choose
  // (a convolution's blocks of pixels by output channels, whose rows and columns each share one factor).
  const std::vector<BlockRanges>& float_blocks() const { return float_blocks_; }
  bool blocked() const { return chunking_.blocked; }
  int64_t blocks_per_row() const {  // blocked: the chunks of one row of 4x4 blocks, consecutive
    return chunking_.blocked ? chunking_.block_cols() : 1;
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
  // Which chunks trace alike (chunk_period.h), from the kernel's IR and this chunking.
  ChunkPeriod chunk_period() const { return compiler::chunk_period(k_, chunking_, vals_, sizes_); }
  // Chunks were replayed as repeats of traced ones, whose tracing cut and skipped this many: counted as if
  // traced (later cuts number their pinned tiles' banks as tracing every chunk would).
  void repeated(int64_t cuts, int64_t loops_skipped) {
    parts_cut_ += cuts;
    loops_skipped_ += loops_skipped;
  }
  // Elements per slot: the buffers', the counter slot's (0, not read) and the memo buffers' so far.
  const std::vector<int64_t>& slot_sizes() const { return memos_.slot_sizes(); }
  std::vector<int64_t> memo_sizes() const { return memos_.memo_sizes(); }  // elements per memo buffer
  int64_t memo_reads() const { return memos_.reads(); }  // tiles read from memo buffers (the decision log)
  bool dot_operands_stored() const { return memos_.operands_stored(); }  // ElementMemos::operands_stored
  const std::vector<bool>& bfloat16_slots() const { return memos_.bfloat16_slots(); }  // ElementMemos's

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
  // Where tracing chunk `chunk` into `out` begins: the IR node after a cut's loop iteration, past the uniform
  // prefix (its pinned tiles as leaves), or the first.
  size_t begin_part(int64_t chunk, TileProgram& out);
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
  void choose_chunking(ChunkLayout layout, BlockRanges block);
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
  // The lane-parallel ranges, and how chunks take their points. Kernels that reduce and have two inner
  // parallel dimensions of at least 4 may take their chunks as 4x4 blocks of those dimensions (lane 4r+c =
  // block row r, column c), the shape of an MXU output tile: rows then share one operand of a matmul and
  // columns the other (when ragged edges cost at most a quarter more chunks). Integer reductions do (the
  // MXU's). Other kernels take 16 consecutive points of the flattened space. A float matmul fills as many
  // tiles either way; an elementwise prologue on one operand is computed for fewer lanes when those lanes
  // share it: the row operand in 16 consecutive points, the column operand in blocks. compile() picks by
  // trying both.
  Chunking chunking_;
  bool layout_open_ = false;  // a float reduction that could take either layout
  std::vector<BlockRanges> float_blocks_;
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

  BatchFacts facts_;  // of the batch being traced
  // read (or reads_unknown): stores to them are kept for read-back; written: not memo sources
  const BuffersTouched touched_;
  ElementMemos memos_;  // every tile node is appended through it
};

}  // namespace tinytpu::compiler
