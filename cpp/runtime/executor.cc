#include "runtime/executor.h"

#include <algorithm>

#include "base/errors.h"
#include "compiler/compile.h"
#include "compiler/log.h"
#include "runtime/call.h"

namespace tinytpu {

using namespace compiler;

namespace {

// Instruction entries a launch's program fills in program memory.
int program_entries(const Image& image) {
  const std::vector<Record>& r = image.bundle.records;
  return int(std::count_if(r.begin(), r.end(), [](const Record& x) { return x.type == RecordType::kInstr; }));
}

// Plans kept per kernel; past it the cache starts over (a kernel called with many sizes).
constexpr size_t kMaxPlans = 16;

}  // namespace

CompiledKernel::CompiledKernel(std::string_view ir, const TensorCoreConfig& cfg, const TraceLimits& limits)
    : kernel_(compiler::parse_kernel(ir)), config_(cfg), limits_(limits) {
  config_.check();
  for (const Node& n : kernel_.nodes)
    if (n.op == Op::PARAM && n.global) params_[int(n.ivalue)] = n.dtype;
  const compiler::BuffersTouched touched = compiler::buffers_touched(kernel_);
  int place = 0;
  for (const auto& [slot, dtype] : params_) {
    if (touched.reads_unknown || touched.read.count(slot)) loads_.push_back(place);
    if (touched.written.count(slot)) stores_.push_back(place);
    ++place;
  }
}

bool CoreState::load(const std::shared_ptr<const Image>& image, int capacity, bool& evicts_last) {
  evicts_last = false;
  for (const std::shared_ptr<const Image>& held : resident)
    if (held == image || same_program(held->bundle, image->bundle)) {
      last = held.get();
      return true;
    }
  const int need = program_entries(*image);
  for (; entries + need > capacity; resident.pop_front()) {
    entries -= program_entries(*resident.front());
    evicts_last |= resident.front().get() == last;
  }
  resident.push_back(image);
  entries += need;
  last = image.get();
  return false;
}

KernelStats CompiledKernel::run(std::vector<DeviceBuffer>& bufs, const std::vector<int64_t>& vals,
                                bool keep_tasm, TraceLog* trace, const Progress& progress, CoreState* core,
                                const RunMode& mode) const {
  try {
    return run_plan(bufs, vals, keep_tasm, trace, progress, core, mode);
  } catch (const runtime::Stopped& s) {
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

std::shared_ptr<const Plan> CompiledKernel::plan(const PlanKey& key, const Choices& choices,
                                                 const std::function<void(int64_t, int64_t)>& traced) const {
  auto kept = [&]() -> std::shared_ptr<const Plan> {
    std::lock_guard<std::mutex> lock(plans_mutex_);
    auto it = plans_.find(key);
    return it != plans_.end() ? it->second : nullptr;
  };
  if (auto p = kept()) return p;  // a compiled plan is taken without waiting for another's compile
  // One compile at a time: a call that needs a plan another thread is compiling (a kernel shared by a chip's
  // cores) waits for it and takes it, rather than compiling it again
  std::lock_guard<std::mutex> compiling(compile_mutex_);
  if (auto p = kept()) return p;
  auto made = std::make_shared<const Plan>(
      compile(kernel_, config_, std::get<0>(key), std::get<1>(key), choices, traced, limits_));
  std::lock_guard<std::mutex> lock(plans_mutex_);
  if (plans_.size() >= kMaxPlans) {
    plans_.clear();
    timings_.clear();
  }
  plans_[key] = made;
  return made;
}

// A call: bind the buffers, take the plan for their sizes (compiled once), snapshot what the kernel both
// reads and writes, take the plan for the choices this call's data makes, and run its launches.
KernelStats CompiledKernel::run_plan(std::vector<DeviceBuffer>& bufs, const std::vector<int64_t>& vals,
                                     bool keep_tasm, TraceLog* trace, const Progress& progress,
                                     CoreState* core, const RunMode& mode) const {
  runtime::Call call(kernel_.name, params_, bufs, progress, timings_, mode);
  std::shared_ptr<const Plan> plan = this->plan({vals, call.sizes, {}, {}}, {}, call.tracing());
  call.snapshot_written(*plan, loads_);
  call.add_memos(*plan);
  // Choices that depend on the data select another plan: MXU data out of int8 range keeps its chains on
  // the VPU, an operand with the values of another is loaded once.
  if (auto [veto, same] = runtime::DataPlan(*plan, call.slots()).choices(); !veto.empty() || !same.empty()) {
    Choices choices{veto, {}};
    for (auto [operand, earlier] : same)
      choices.same_values[plan->mxu_operands[operand].lanes] = plan->mxu_operands[earlier].lanes;
    decision_log().debug(
        "kernel {}: this call's data keeps {} chains on the VPU (out of int8 range) and loads {} "
        "MXU operands once (equal values): the plan for these choices",
        kernel_.name, veto.size(), same.size());
    plan = this->plan({vals, call.sizes, veto, same}, choices, call.tracing());
    call.add_memos(*plan);
  }
  return call.run(*plan, keep_tasm, trace, core);
}

}  // namespace tinytpu
