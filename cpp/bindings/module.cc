// pybind11 surface of the C++ core: conversions only, no logic.
#include <pybind11/functional.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "base/errors.h"
#include "chip/chip_timeline.h"
#include "compiler/ir.h"
#include "compiler/op_table.h"
#include "isa/bundle.h"
#include "isa/tasm.h"
#include "runtime/executor.h"
#include "sim/runner.h"

namespace py = pybind11;
using namespace pybind11::literals;
using namespace tinytpu;

namespace {

// The reference geometry's module defines the exception classes; another geometry's module raises the
// same classes (imported from it), so one except clause catches an error from any core.
PyObject* g_errors[3];  // SimError, AsmError, Unsupported
void register_errors(py::module_& m) {
  const char* names[3] = {"SimError", "AsmError", "Unsupported"};
  if (TensorCoreConfig::kRows == 4) {
    g_errors[0] = py::register_exception<SimError>(m, names[0], PyExc_RuntimeError).ptr();
    g_errors[1] = py::register_exception<AsmError>(m, names[1], PyExc_ValueError).ptr();
    g_errors[2] = py::register_exception<compiler::Unsupported>(m, names[2], PyExc_NotImplementedError).ptr();
    return;
  }
  py::module_ reference = py::module_::import("tinytpu._core");
  for (int i = 0; i < 3; ++i) {
    g_errors[i] = reference.attr(names[i]).ptr();
    m.attr(names[i]) = reference.attr(names[i]);
  }
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const SimError& e) {
      PyErr_SetString(g_errors[0], e.what());
    } catch (const AsmError& e) {
      PyErr_SetString(g_errors[1], e.what());
    } catch (const compiler::Unsupported& e) {
      PyErr_SetString(g_errors[2], e.what());
    }
  });
}

}  // namespace

#ifndef TINYTPU_MODULE
#define TINYTPU_MODULE _core
#endif
// One module per tile geometry (CMakeLists.txt): _core is the reference's 4 rows, _core8 has 8, _core16 16.
PYBIND11_MODULE(TINYTPU_MODULE, m) {
  m.doc() = "tinytpu C++ core: TASM toolchain and the cycle-accurate TensorCore model";
  register_errors(m);

  // Every config_fields.def row is a property whose setter checks the value (ValueError naming it).
  py::class_<TensorCoreConfig> config(m, "TensorCoreConfig");
  config.def(py::init<>())
      .def_readonly_static("ROWS", &TensorCoreConfig::kRows)
      .def_readwrite("max_cycles", &TensorCoreConfig::max_cycles)
      .def("check", &TensorCoreConfig::check)
      .def("__repr__", &TensorCoreConfig::describe);
#define X(name, type, default_value, rule, min, max, doc, ...) \
  config.def_property(                                         \
      #name, [](const TensorCoreConfig& c) { return c.name; }, \
      [](TensorCoreConfig& c, int v) { c.set(#name, v); }, doc);
#include "base/config_fields.def"
#undef X
  py::class_<LoaderFacts>(m, "LoaderFacts")
      .def_readonly("shares_channels", &LoaderFacts::shares_channels)
      .def_readonly("moved", &LoaderFacts::moved);
  config.def_property_readonly(
      "loader", &loader_facts,
      "The loader the configuration has (sim/loader.h): whether its reads and writes "
      "share HBM channels, and the counters that sum the bytes it moves in and out");
  m.def(
      "config_fields",
      [] {
        py::list out;
        for (const ConfigField& f : config_fields())
          out.append(py::dict("name"_a = f.name, "type"_a = f.is_bool ? "bool" : "int",
                              "default"_a = f.default_value, "min"_a = f.min, "max"_a = f.max,
                              "power_of_two"_a = f.rule == ConfigField::Rule::kPowerOfTwo, "doc"_a = f.doc,
                              "explore"_a = f.explore));
        return out;
      },
      "The configuration's fields, in config_fields.def's order: name, type, default, range, doc and the "
      "values a design-space search tries");

  py::class_<CostProxy>(m, "CostProxy")
      .def_readonly("pes", &CostProxy::pes)
      .def_readonly("sram_bytes", &CostProxy::sram_bytes)
      .def_readonly("ports", &CostProxy::ports)
      .def_readonly("area", &CostProxy::area);
  m.def("cost_proxy", &cost_proxy);
  py::class_<NamedConfig>(m, "NamedConfig")
      .def_readonly("name", &NamedConfig::name)
      .def_readonly("change", &NamedConfig::change)
      .def_readonly("config", &NamedConfig::config);
  m.def("named_configs", &named_configs, py::return_value_policy::reference);
  m.def("config_from_spec", &config_from_spec, "A named configuration, optionally with fields changed");

  py::class_<Bundle>(m, "Bundle").def_property_readonly("num_records", [](const Bundle& b) {
    return b.records.size();
  });

  py::class_<UnitBusy>(m, "UnitBusy")
      .def_readonly("sxu", &UnitBusy::sxu)
      .def_readonly("mxu", &UnitBusy::mxu)
      .def_readonly("vpu", &UnitBusy::vpu)
      .def_readonly("xlu", &UnitBusy::xlu)
      .def_readonly("sxu_stall", &UnitBusy::sxu_stall);

  py::class_<RunResult>(m, "RunResult")
      .def_readonly("cycles", &RunResult::cycles)
      .def_readonly("sxu_cycles", &RunResult::sxu_cycles)
      .def_readonly("hbm_bytes", &RunResult::hbm_bytes)
      .def_readonly("sc_lookups", &RunResult::sc_lookups)
      .def_readonly("vmem_results", &RunResult::vmem_results)
      .def_readonly("mxu_result", &RunResult::mxu_result)
      .def_readonly("asram_results", &RunResult::asram_results)
      .def_readonly("busy", &RunResult::busy)
      .def("output", &RunResult::output);

  m.def("parse_bundle", &parse_bundle, "Parse TASM or a numeric bundle (detected)");
  m.def("assemble", &assemble, "Parse TASM");
  m.def("parse_wire", &parse_wire, "Parse a numeric bundle");
  m.def("to_wire", &to_wire);
  m.def("disassemble", &disassemble);
  py::class_<TraceLog>(m, "TraceLog")
      .def(py::init<>())
      .def_readwrite("base", &TraceLog::base)
      .def_readwrite("core", &TraceLog::core)
      .def_readonly_static("DEFAULT_MAX_EVENTS", &TraceLog::kDefaultMaxEvents)
      .def_readwrite("max_events", &TraceLog::max_events)
      .def_readwrite("window_begin", &TraceLog::window_begin)
      .def_readwrite("window_end", &TraceLog::window_end)
      .def_readwrite("paused", &TraceLog::paused)
      .def_property_readonly("stopped_at", &TraceLog::stopped_at)
      .def_property_readonly("num_events", [](const TraceLog& t) { return t.events().size(); })
      .def_property_readonly("names", &TraceLog::names)
      .def_property_readonly("events", [](const TraceLog& t) {  // raw TraceEvent records
        return py::bytes(reinterpret_cast<const char*>(t.events().data()),
                         t.events().size() * sizeof(TraceEvent));
      });
  m.attr("TRACKS") = kTrackNames;

  m.def(
      "run",
      [](const Bundle& b, TensorCoreConfig cfg, uint64_t max_cycles, TraceLog* trace, const Poll& poll) {
        cfg.max_cycles = max_cycles;
        py::gil_scoped_release release;
        return run_bundle(b, cfg, trace, poll);
      },
      py::arg("bundle"), py::arg("config") = TensorCoreConfig{},
      py::arg("max_cycles") = TensorCoreConfig{}.max_cycles, py::arg("trace") = nullptr,
      py::arg("poll") = nullptr);

  py::class_<DeviceBuffer>(m, "DeviceBuffer", py::buffer_protocol())
      .def(py::init<size_t>())
      .def("view", &DeviceBuffer::view)
      .def_property_readonly("size", &DeviceBuffer::size)
      .def_buffer([](DeviceBuffer& b) {
        return py::buffer_info(b.data(), 1, py::format_descriptor<uint8_t>::format(), 1, {b.size()}, {1});
      });

  // Activity by name, in the energy model's terms (tinytpu.energy): the VPU's lane ops by VpuEnergy.
  py::class_<Activity>(m, "Activity").def(py::init<>()).def("items", [](const Activity& a) {
    return std::vector<std::pair<std::string, uint64_t>>{
        {"instructions", a.instructions},
        {"vpu_int_ops", a.vpu_lane_ops[size_t(VpuEnergy::kInt)]},
        {"vpu_int_mul_ops", a.vpu_lane_ops[size_t(VpuEnergy::kIntMul)]},
        {"vpu_fp_add_ops", a.vpu_lane_ops[size_t(VpuEnergy::kFpAdd)]},
        {"vpu_fp_mul_ops", a.vpu_lane_ops[size_t(VpuEnergy::kFpMul)]},
        {"xlu_ops", a.xlu_ops},
        {"mxu_macs", a.mxu_macs},
        {"vreg_reads", a.vreg_reads},
        {"vreg_writes", a.vreg_writes},
        {"vmem_reads", a.vmem_reads},
        {"vmem_writes", a.vmem_writes},
        {"wsram_reads", a.wsram_reads},
        {"wsram_writes", a.wsram_writes},
        {"asram_reads", a.asram_reads},
        {"asram_writes", a.asram_writes},
        {"psum_accesses", a.psum_accesses},
        {"program_writes", a.program_writes},
        {"data_bytes", a.data_bytes},
        {"program_bytes", a.program_bytes},
        {"output_bytes", a.output_bytes}};
  });

  py::class_<KernelStats>(m, "KernelStats")
      .def_readonly("activity", &KernelStats::activity)
      .def_readonly("launches", &KernelStats::launches)
      .def_readonly("cycles", &KernelStats::cycles)
      .def_readonly("sxu_cycles", &KernelStats::sxu_cycles)
      .def_readonly("hbm_bytes", &KernelStats::hbm_bytes)
      .def_readonly("mxu_busy", &KernelStats::mxu_busy)
      .def_readonly("sc_lookups", &KernelStats::sc_lookups)
      .def_readonly("vpu_busy", &KernelStats::vpu_busy)
      .def_readonly("in_order", &KernelStats::in_order)
      .def_readonly("checked", &KernelStats::checked)
      .def_readonly("batches", &KernelStats::batches)
      .def_readonly("threaded", &KernelStats::threaded)
      .def_readonly("streamed", &KernelStats::streamed)
      .def_readonly("tasm", &KernelStats::tasm);

  py::class_<RunMode>(m, "RunMode")
      .def(py::init([](bool functional, bool verify, int threads, bool streams) {
             return RunMode{functional, verify, threads, streams};
           }),
           py::arg("functional") = true, py::arg("verify") = false, py::arg("threads") = 1,
           py::arg("streams") = true)
      .def_readwrite("functional", &RunMode::functional)
      .def_readwrite("verify", &RunMode::verify)
      .def_readwrite("threads", &RunMode::threads)
      .def_readwrite("streams", &RunMode::streams);
  m.attr("SAMPLE_EVERY") = kSampleEvery;

  py::class_<KernelProgress>(m, "KernelProgress")
      .def_readonly("chunks_done", &KernelProgress::chunks_done)
      .def_readonly("chunks", &KernelProgress::chunks)
      .def_readonly("launches", &KernelProgress::launches)
      .def_readonly("cycles", &KernelProgress::cycles);

  py::class_<CoreState>(m, "CoreState").def(py::init<>());

  py::class_<CompiledKernel>(m, "Kernel")
      .def(py::init([](py::bytes ir, const TensorCoreConfig& cfg, size_t cut_nodes) {
             return CompiledKernel(std::string(ir), cfg, compiler::TraceLimits{cut_nodes});
           }),
           py::arg("ir"), py::arg("config") = TensorCoreConfig{},
           py::arg("cut_nodes") = compiler::TraceLimits{}.cut_nodes)
      .def_property_readonly("config", &CompiledKernel::config)
      .def_property_readonly("name", &CompiledKernel::name)
      .def_property_readonly("loads", &CompiledKernel::loads)
      .def_property_readonly("stores", &CompiledKernel::stores)
      .def(
          "run",
          [](const CompiledKernel& k, std::vector<DeviceBuffer> bufs, std::vector<int64_t> vals, bool tasm,
             TraceLog* trace, const Progress& progress, CoreState* core, const RunMode& mode) {
            py::gil_scoped_release release;
            return k.run(bufs, vals, tasm, trace, progress, core, mode);
          },
          py::arg("bufs"), py::arg("vals"), py::arg("tasm"), py::arg("trace") = nullptr,
          py::arg("progress") = nullptr, py::arg("core") = nullptr, py::arg("mode") = RunMode{})
      .def("corrupt_timings_for_test", &CompiledKernel::corrupt_timings_for_test);

  py::class_<ChipTimeline>(m, "ChipTimeline")
      .def(py::init<const TensorCoreConfig&>())
      .def_property_readonly("cores", &ChipTimeline::cores)
      .def("run", &ChipTimeline::run, py::arg("core"), py::arg("cycles"))
      .def("copy", &ChipTimeline::copy, py::arg("src"), py::arg("dst"), py::arg("bytes"),
           py::arg("trace") = nullptr)
      .def("copy_cycles", &ChipTimeline::copy_cycles, py::arg("src"), py::arg("dst"), py::arg("bytes"))
      .def("hops", &ChipTimeline::hops)
      .def("core_cycles", &ChipTimeline::core_cycles)
      .def_property_readonly("chip_cycles", &ChipTimeline::chip_cycles)
      .def_property_readonly("noc_bytes", &ChipTimeline::noc_bytes)
      .def("reset", &ChipTimeline::reset);

  m.attr("DEFAULT_CUT_NODES") = compiler::TraceLimits{}.cut_nodes;
  m.def(
      "check_kernel", [](const std::string& ir) { compiler::parse_kernel(ir); },
      "Raise NotImplementedError if the kernel has an op or dtype the compiler cannot lower");
  m.def("lowered_ops", &compiler::lowered_ops,
        "The ALU ops the compiler lowers (the op table's rows), by tinygrad name");
  m.def("compile_kernel", [](const std::string& ir) {
    compiler::parse_kernel(ir);
    return py::bytes(ir);
  });
}
