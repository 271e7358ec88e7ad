// tritium._core: the library's calls, for Python. Translation only: documents cross as JSON text
// (the same documents the CLI prints with --json), so the two faces cannot drift apart.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <stdexcept>

#include "tritium/exec.h"
#include "tritium/pyast.h"
#include "tritium/verify.h"

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

nb::dict parse_python(nb::bytes source, bool with_facts) {
  const std::string_view text(source.c_str(), source.size());
  tritium::pyast::Parsed parsed;
  {
    nb::gil_scoped_release release;
    parsed = tritium::pyast::parse(text);
  }
  nb::dict out;
  out["ok"] = parsed.ok();
  if (parsed.error) {
    out["line"] = parsed.error->line;
    out["col"] = parsed.error->col;
    out["message"] = parsed.error->message;
  } else if (with_facts) {
    out["facts"] = tritium::pyast::facts(parsed.tree);
  }
  return out;
}

std::string verify_json(const std::string& text, bool is_response, const std::string& task_source) {
  const auto v = is_response ? tritium::verify_response(text, task_source) : tritium::verify_code(text, task_source);
  return tritium::to_json(v).dump();
}

std::string extract_json(const std::string& response) {
  return tritium::to_json(tritium::extract_response(response)).dump();
}

}  // namespace

NB_MODULE(_core, m) {
  m.doc() = "Tritium's C++ core";
  m.def("version", &tritium::version);
  m.def("load_suite_json", &load_suite_json, nb::arg("path"), nb::arg("with_source") = false);
  m.def("check_suite_json", &check_suite_json, nb::arg("path"), nb::arg("device"), nb::arg("timeout_s"),
        nb::arg("seed"), nb::arg("python"), nb::call_guard<nb::gil_scoped_release>());
  m.def("parse_python", &parse_python, nb::arg("source"), nb::arg("with_facts") = false,
        "Parses Python source bytes: {ok, line?, col?, message?, facts?}");
  m.def("verify_json", &verify_json, nb::arg("text"), nb::arg("is_response"), nb::arg("task_source") = "",
        nb::call_guard<nb::gil_scoped_release>());
  m.def("extract_json", &extract_json, nb::arg("response"), nb::call_guard<nb::gil_scoped_release>());
}
