#include "runtime/executor.h"

#include <charconv>
#include <cstring>
#include <functional>
#include <map>
#include <sstream>

#include "compiler/lane_pack.h"
#include "compiler/lower.h"
#include "compiler/mxu_dot.h"
#include "compiler/tracer.h"
#include "isa/tasm.h"
#include "sim/errors.h"
#include "sim/runner.h"

namespace tinytpu {

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
void write_lane(uint8_t* p, DType d, int32_t v) {
  if (d == DType::kBool) v = v != 0;
  std::memcpy(p, &v, dtype_bytes(d));  // little-endian: the low bytes
}

// A launch's TASM (DEBUG=4): float32 tiles the loader fills also as floats, in a comment, so the listing
// still assembles. The bundle's first records are the fills, in order.
std::string listing(const Bundle& b, const std::vector<SlotFill>& fills) {
  std::istringstream tasm(disassemble(b));
  std::string out, line;
  for (size_t i = 0; std::getline(tasm, line); ++i) {
    out += line;
    if (i < fills.size() && is_float(fills[i].dtype)) {  // float32 lanes (a weak float constant too)
      out += "  # f32";
      for (int32_t bits : b.records[i].data) {
        float f;
        std::memcpy(&f, &bits, 4);
        char text[32];
        out += ' ';
        out.append(text, std::to_chars(text, text + sizeof text, f).ptr);
      }
    }
    out += '\n';
  }
  return out;
}

constexpr int kMaxParamSlots = 1 << 16;  // far above any kernel's buffer count: a bound on malformed IR

struct ParamInfo {
  DType dtype = DType::kVoid;
  int bytes = 0;
};

// What the progress callback threw (KeyboardInterrupt from Python): carried past the handlers below,
// which turn other failures into errors naming the kernel, and rethrown as it was.
struct Stopped {
  std::exception_ptr cause;
};

}  // namespace

KernelStats CompiledKernel::run(std::vector<DeviceBuffer>& bufs, const std::vector<int64_t>& vals,
                                bool keep_tasm, TraceLog* trace, const Progress& progress) const {
  try {
    return run_chunks(bufs, vals, keep_tasm, trace, progress);
  } catch (const Stopped& s) {
    std::rethrow_exception(s.cause);
  } catch (const Unsupported& e) {
    throw Unsupported(named(e.what()));
  } catch (const SimError& e) {
    throw SimError(named(e.what()));
  } catch (const std::bad_alloc&) {
    throw;  // MemoryError
  } catch (const std::exception& e) {
    throw SimError("internal error in kernel " + kernel_.name + ": " + e.what());
  }
}

std::string CompiledKernel::named(const std::string& what) const {
  return what.find(kernel_.name) == std::string::npos ? "kernel " + kernel_.name + ": " + what : what;
}

KernelStats CompiledKernel::run_chunks(std::vector<DeviceBuffer>& bufs, const std::vector<int64_t>& vals,
                                       bool keep_tasm, TraceLog* trace, const Progress& progress) const {
  std::map<int, ParamInfo> params;
  for (const Node& n : kernel_.nodes)
    if (n.op == Op::PARAM && n.global) params[int(n.ivalue)] = {n.dtype, dtype_bytes(n.dtype)};
  if (params.size() != bufs.size())
    throw SimError("kernel " + kernel_.name + " takes " + std::to_string(params.size()) + " buffers, got " +
                   std::to_string(bufs.size()));
  // tinygrad passes the buffers of the PARAMs the kernel still has, in slot order; a slot whose uses were
  // folded away has no PARAM and no buffer. Everything below is indexed by slot.
  const int slots = params.empty() ? 0 : params.rbegin()->first + 1;
  if (slots > kMaxParamSlots)
    throw SimError("kernel " + kernel_.name + ": buffer slot " + std::to_string(slots - 1) +
                   " over the limit of " + std::to_string(kMaxParamSlots));
  std::vector<int64_t> sizes(slots, 0);
  std::vector<DeviceBuffer*> by_slot(slots, nullptr);
  std::vector<ParamInfo> info(slots);
  size_t i = 0;
  for (auto& [slot, p] : params) {
    sizes[slot] = int64_t(bufs[i].size() / p.bytes);
    by_slot[slot] = &bufs[i++];
    info[slot] = p;
  }
  // Loads see the buffers as they were when the kernel started, like one pass of tinygrad's loops.
  std::vector<std::vector<uint8_t>> snapshot(slots);
  for (int s = 0; s < slots; ++s)
    if (by_slot[s]) snapshot[s].assign(by_slot[s]->data(), by_slot[s]->data() + by_slot[s]->size());

  Tracer tracer(kernel_, vals, sizes);
  KernelStats stats;
  KernelProgress done{0, std::max<int64_t>(tracer.num_chunks(), 1)};
  auto last_report = std::chrono::steady_clock::now();
  const Poll poll = [&] {
    if (!progress) return;
    auto now = std::chrono::steady_clock::now();
    if (now - last_report < kProgressInterval) return;
    last_report = now;
    done.launches = stats.launches;
    done.cycles = stats.cycles;
    try {
      progress(done);
    } catch (...) {
      throw Stopped{std::current_exception()};
    }
  };
  constexpr size_t kBatchNodes = 96;  // tile nodes traced before lowering a batch of chunks
  TileProgram prog;
  std::map<int, Tile> pinned;  // the uniform prefix's values, shared by every chunk
  auto flush = [&] {
    if (prog.stores.empty()) return;
    std::map<int, Tile> scratch;  // spilled node values
    // A leaf's lanes from the buffers; a dynamic leaf's element indices are a spilled value or a leaf.
    std::function<Tile(int)> gather = [&](int node) {
      const TileNode& t = prog.nodes[node];
      if (t.pinned >= 0) return pinned.at(t.pinned);
      Tile out{};
      Tile dyn_index{};
      if (t.dynamic) dyn_index = scratch.count(t.a) ? scratch[t.a] : gather(t.a);
      for (int lane = 0; lane < kLanes; ++lane) {
        const LeafLane& s = t.leaf[lane];
        if (s.buf < 0) {
          out[lane] = int32_t(s.bits);
          continue;
        }
        int64_t index = t.dynamic ? dyn_index[lane] : s.index;
        if (index < 0 || index >= sizes[s.buf]) {
          if (!t.gated)
            throw SimError("kernel " + kernel_.name + ": gather index " + std::to_string(index) +
                           " outside buffer " + std::to_string(s.buf) + " of " +
                           std::to_string(sizes[s.buf]) + " elements");
          continue;  // a gated-off lane reads 0: the gate's select discards it, or nothing stores it
        }
        out[lane] = read_lane(snapshot[s.buf].data() + index * info[s.buf].bytes, info[s.buf].dtype);
      }
      return out;
    };
    fuse_mxu_dots(prog, [&](int node) { return gather(node); });  // reads the data: MXU only for int8 values
    pack_lanes(prog);
    std::vector<int32_t> consts;
    auto launches = lower(prog, consts, kernel_.fast_math);
    for (const Launch& l : launches) {
      Bundle b;
      for (const SlotFill& f : l.fills) {
        Record r{RecordType::kVmemTile, f.slot};
        if (f.node < 0)
          r.data.fill(consts[-f.node - 1]);
        else if (scratch.count(f.node))
          r.data = scratch[f.node];
        else
          r.data = gather(f.node);
        b.records.push_back(r);
      }
      for (const MxuFill& f : l.mxu_fills) {
        Record r{f.weight ? RecordType::kWeightTile : RecordType::kActTile, f.addr};
        r.data = f.data;
        b.records.push_back(r);
      }
      for (const Instr& in : l.program) {
        Record r{RecordType::kInstr};
        r.instr = in;
        b.records.push_back(r);
      }
      for (const SlotDrain& d : l.drains) b.records.push_back(Record{RecordType::kOutputVmem, d.slot});
      if (keep_tasm) stats.tasm.push_back(listing(b, l.fills));
      RunResult res;
      const uint64_t launch_begin = trace ? trace->base : 0;
      try {
        res = run_bundle(b, {}, trace, poll);
      } catch (const std::exception& e) {
        throw SimError(std::string("internal error in kernel ") + kernel_.name + ": " + e.what() + "\n" +
                       disassemble(b));
      }
      // A store's gate and index tiles drain in the same launch as its value; writes go in program order.
      std::map<std::pair<int, int>, const Tile*> parts;  // (store, role) -> drained tile
      for (size_t k = 0; k < l.drains.size(); ++k) {
        const SlotDrain& d = l.drains[k];
        if (d.spill >= 0)
          scratch[d.spill] = res.vmem_results[k];
        else
          parts[{d.store, d.role}] = &res.vmem_results[k];
      }
      for (const SlotDrain& d : l.drains) {
        if (d.spill >= 0 || d.role != SlotDrain::kValue) continue;
        const TileStore& st = prog.stores[d.store];
        const Tile& t = *parts.at({d.store, SlotDrain::kValue});
        if (st.pin >= 0) {
          pinned[st.pin] = t;
          continue;
        }
        const Tile* gate = st.gate >= 0 ? parts.at({d.store, SlotDrain::kGate}) : nullptr;
        const Tile* index = st.index_node >= 0 ? parts.at({d.store, SlotDrain::kIndex}) : nullptr;
        for (int lane = 0; lane < kLanes; ++lane) {
          if (!st.active[lane] || (gate && !(*gate)[lane])) continue;
          int64_t at = index ? (*index)[lane] : st.index[lane];
          if (at < 0 || at >= sizes[st.buf])
            throw SimError("kernel " + kernel_.name + ": scatter index " + std::to_string(at) +
                           " outside buffer " + std::to_string(st.buf) + " of " +
                           std::to_string(sizes[st.buf]) + " elements");
          write_lane(by_slot[st.buf]->data() + at * info[st.buf].bytes, info[st.buf].dtype, t[lane]);
        }
      }
      if (trace)
        trace->span(Track::kKernel, 1, launch_begin, trace->base,
                    trace->intern("launch " + std::to_string(stats.launches)));
      ++stats.launches;
      stats.cycles += res.cycles;
      stats.sxu_cycles += res.sxu_cycles;
      poll();
    }
    prog = TileProgram{};
  };
  const uint64_t kernel_begin = trace ? trace->base : 0;
  for (int64_t c = 0; c < done.chunks; ++c) {
    tracer.trace_chunk(c, prog);
    done.chunks_done = c + 1;
    poll();
    // the chunk that pins the prefix runs before any chunk reads the pinned tiles
    if (prog.nodes.size() >= kBatchNodes || (c == 0 && tracer.pinned_prefix())) flush();
  }
  flush();
  if (trace) trace->span(Track::kKernel, 0, kernel_begin, trace->base, trace->intern(kernel_.name));
  return stats;
}

}  // namespace tinytpu
