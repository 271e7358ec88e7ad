// tritium._core: the library's calls, for Python. Translation only: documents cross as JSON text
// (the same documents the CLI prints with --json), so the two faces cannot drift apart.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

#include <stdexcept>

#include "tritium/exec.h"

namespace nb = nanobind;

namespace {

std::string load_suite_json(const std::string& path, bool with_source) {
  auto suite = tritium::load_suite(path);
  if (!suite) throw std::invalid_argument(suite.error().message);
  return tritium::to_json(*suite, with_source).dump();
}

std::string check_suite_json(const std::string& path, const std::string& device, double timeout_s,
                             unsigned seed, const std::string& python) {
  auto suite = tritium::load_suite(path);
  if (!suite) throw std::invalid_argument(suite.error().message);
  tritium::RunnerOptions options{python, device, timeout_s, seed};
  auto check = tritium::check_suite(*suite, options);
  if (!check) throw std::runtime_error(check.error().message);
  return tritium::to_json(*check).dump();
}

}  // namespace

NB_MODULE(_core, m) {
  m.doc() = "Tritium's C++ core";
  m.def("version", &tritium::version);
  m.def("load_suite_json", &load_suite_json, nb::arg("path"), nb::arg("with_source") = false);
  m.def("check_suite_json", &check_suite_json, nb::arg("path"), nb::arg("device"), nb::arg("timeout_s"),
        nb::arg("seed"), nb::arg("python"), nb::call_guard<nb::gil_scoped_release>());
}
