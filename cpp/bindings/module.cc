// pybind11 surface of the C++ core: conversions only, no logic.
#include <pybind11/functional.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstddef>
#include <string_view>

#include "base/errors.h"
#include "chip/chip_timeline.h"
#include "compiler/ir.h"
#include "compiler/op_table.h"
#include "isa/bundle.h"
#include "isa/sxu_ops.h"
#include "isa/tasm.h"
#include "runtime/executor.h"
#include "sim/counters.h"
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

// Every config_fields.def row is a property whose setter checks the value (ValueError naming it).
void bind_config(py::module_& m) {
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
      .def_readonly("pe_area", &CostProxy::pe_area)
      .def_readonly("mxu", &CostProxy::mxu)
      .def_readonly("sram_bytes", &CostProxy::sram_bytes)
      .def_readonly("ports", &CostProxy::ports)
      .def_readonly("area", &CostProxy::area);
  m.def("cost_proxy", &cost_proxy);
  m.def(
      "arithmetic",
      [] {
        py::dict out;
        for (const ArithmeticUnit& u : arithmetic_units())
          out[u.name] = py::dict("um2"_a = u.um2, "pj"_a = u.pj, "doc"_a = u.doc);
        return out;
      },
      "The arithmetic units the cost model prices, at 45 nm (base/arithmetic.def, Horowitz ISSCC 2014), by "
      "name: area in square micrometres, one operation's energy in pJ, doc");
  m.def(
      "mxu_pes",
      [] {
        py::list out;
        for (const ConfigField& f : config_fields())
          if (std::string_view(f.name) == "mxu_dtype")
            for (int dtype = f.min; dtype <= f.max; ++dtype) {
              const MxuPe pe = mxu_pe(dtype);
              out.append(
                  py::dict("dtype"_a = pe.dtype, "units"_a = pe.units, "um2"_a = pe.um2, "pj"_a = pe.pj));
            }
        return out;
      },
      "The MXU's PE by each mxu_dtype value, in order: its datatype, the arithmetic units it is built of, "
      "their area in square micrometres and one multiply-add's energy in pJ");
  py::class_<NamedConfig>(m, "NamedConfig")
      .def_readonly("name", &NamedConfig::name)
      .def_readonly("change", &NamedConfig::change)
      .def_readonly("config", &NamedConfig::config);
  m.def("named_configs", &named_configs, py::return_value_policy::reference);
  m.def("config_from_spec", &config_from_spec, "A named configuration, optionally with fields changed");
}

// Every counters.def row: its field in the struct that reports it, a kernel call's counter (KernelStats, the
// ACTIVITY rows read through its `activity`), and a row of `_core.counter_fields()`.
void bind_counters(py::module_& m) {
  m.def(
      "counter_fields",
      [] {
        py::list out;
        auto row = [&](const char* name, const char* in, const char* unit, const char* type, Combine combine,
                       const char* energy, const char* doc) {
          out.append(py::dict("name"_a = name, "struct"_a = in, "unit"_a = unit, "type"_a = type,
                              "combine"_a = combine_name(combine), "energy"_a = energy, "doc"_a = doc));
        };
#define CALL(name, type, doc) row(#name, "call", "", #type, Combine::kSum, "", doc);
#define RUN(name, type, combine, energy, doc) row(#name, "run", "", #type, Combine::combine, energy, doc);
#define BUSY(unit, name, type, doc) row(#name, "busy", #unit, #type, Combine::kSum, "", doc);
#define ACTIVITY(name, type, energy, doc) row(#name, "activity", "", #type, Combine::kSum, energy, doc);
#include "sim/counters.def"
        return out;
      },
      "The counters, in counters.def's order: name, the struct that reports it (call, run, busy: a run's "
      "UnitBusy field `unit`, activity), type, how a kernel call combines it (sum, none), what one count "
      "costs in the energy model, doc");

  py::class_<UnitBusy> busy(m, "UnitBusy");
#define BUSY(unit, name, type, doc) busy.def_readonly(#unit, &UnitBusy::unit, doc);
#include "sim/counters.def"

  py::class_<RunResult> run(m, "RunResult");
#define RUN(name, type, combine, energy, doc) run.def_readonly(#name, &RunResult::name, doc);
#include "sim/counters.def"
  run.def_readonly("busy", &RunResult::busy)
      .def_readonly("vmem_results", &RunResult::vmem_results)
      .def_readonly("mxu_result", &RunResult::mxu_result)
      .def_readonly("asram_results", &RunResult::asram_results)
      .def("output", &RunResult::output);

  py::class_<KernelStats> stats(m, "KernelStats");
#define CALL(name, type, doc) stats.def_readonly(#name, &KernelStats::name, doc);
#define RUN(name, type, combine, energy, doc) \
  TINYTPU_IF_SUMMED(combine, stats.def_readonly(#name, &KernelStats::name, doc);)
#define BUSY(unit, name, type, doc) stats.def_readonly(#name, &KernelStats::name, doc);
#define ACTIVITY(name, type, energy, doc) \
  stats.def_property_readonly(            \
      #name, [](const KernelStats& s) { return s.activity.name; }, doc);
#include "sim/counters.def"
  stats.def_readonly("tasm", &KernelStats::tasm);
}

// An SXU opcode table column's value in Python: a number, a flag or an enum's value as an int; no value,
// None.
template <class T>
py::object column_value(const T& v) {
  return py::int_(int(v));
}
template <class T>
py::object column_value(const std::optional<T>& v) {
  return v ? column_value(*v) : py::none();
}

// TASM and numeric bundles, the SXU opcode table they are written in, and a bundle's run on the reference
// testbench.
void bind_bundles(py::module_& m) {
  m.def(
      "sxu_ops",
      [] {
        py::list out;
        for (const SxuOpInfo& row : kSxuOps) {
          py::dict op("opcode"_a = row.opcode, "name"_a = row.name, "tasm"_a = row.tasm[0]);
#define SXU_OP_COLUMN(type, name) op[#name] = column_value(row.name);
#include "isa/sxu_ops.def"
#undef SXU_OP_COLUMN
          out.append(op);
        }
        return out;
      },
      "The SXU opcodes, in sxu_ops.def's order: number, name, canonical TASM template and a value per column "
      "(enums as their values in isa/sxu_ops.h, no MXU start as None)");
  py::class_<Bundle>(m, "Bundle").def_property_readonly("num_records", [](const Bundle& b) {
    return b.records.size();
  });
  m.def("parse_bundle", &parse_bundle, "Parse TASM or a numeric bundle (detected)");
  m.def("assemble", &assemble, "Parse TASM");
  m.def("parse_wire", &parse_wire, "Parse a numeric bundle");
  m.def("to_wire", &to_wire);
  m.def("disassemble", &disassemble);
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
}

// A run's trace, and its format: its tracks and the layout of its events.
void bind_trace(py::module_& m) {
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
  m.def(
      "tracks",
      [] {
        py::list out;
#define TRACK(name, text, title, nested, unit) \
  out.append(py::dict("name"_a = text, "title"_a = title, "nested"_a = nested, "unit"_a = unit));
#include "sim/trace_format.def"
        return out;
      },
      "A trace's tracks, in trace_format.def's order (a TraceEvent's track): name, the title a viewer shows, "
      "what "
      "a depth-1 slice of it is, whether it is a unit with busy cycles");
  m.def(
      "trace_event_format",
      [] {
        py::list names, formats, offsets;
#define FIELD(type, name, doc)                           \
  names.append(#name);                                   \
  formats.append(py::format_descriptor<type>::format()); \
  offsets.append(offsetof(TraceEvent, name));
#include "sim/trace_format.def"
        return py::dict("names"_a = names, "formats"_a = formats, "offsets"_a = offsets,
                        "itemsize"_a = sizeof(TraceEvent));
      },
      "TraceLog.events' records (TraceEvent, trace_format.def's FIELD rows) as numpy.dtype takes them");
}

// Kernels tinygrad compiled for the device, the buffers they run on, and how they run.
void bind_kernels(py::module_& m) {
  py::class_<DeviceBuffer>(m, "DeviceBuffer", py::buffer_protocol())
      .def(py::init<size_t>())
      .def("view", &DeviceBuffer::view)
      .def_property_readonly("size", &DeviceBuffer::size)
      .def_buffer([](DeviceBuffer& b) {
        return py::buffer_info(b.data(), 1, py::format_descriptor<uint8_t>::format(), 1, {b.size()}, {1});
      });

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
}

void bind_chip(py::module_& m) {
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
}

// What the renderer asks of the compiler: the dtypes and ops it lowers, whether a kernel's IR is one it can.
void bind_compiler(py::module_& m) {
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
  m.def(
      "dtypes",
      [] {
        py::list out;
        auto row = [&](const char* code, const char* tinygrad, bool storage) {
          out.append(py::dict("code"_a = code, "tinygrad"_a = tinygrad, "storage"_a = storage));
        };
#define LANES(name, code, tinygrad, bytes, is_float, is_signed, storage) row(code, tinygrad, storage);
#define NO_LANES(code, tinygrad) row(code, tinygrad, false);
#include "compiler/dtypes.def"
        return out;
      },
      "The IR's dtypes, in dtypes.def's order: code, tinygrad's name, whether a tensor of it may live on "
      "TINYTPU");
}

}  // namespace

#ifndef TINYTPU_MODULE
#define TINYTPU_MODULE _core
#endif
// One module per tile geometry (CMakeLists.txt): _core is the reference's 4 rows, _core8 has 8, _core16 16.
PYBIND11_MODULE(TINYTPU_MODULE, m) {
  m.doc() = "tinytpu C++ core: TASM toolchain and the cycle-accurate TensorCore model";
  register_errors(m);
  bind_config(m);
  bind_counters(m);
  bind_bundles(m);
  bind_trace(m);
  bind_kernels(m);
  bind_chip(m);
  bind_compiler(m);
}
