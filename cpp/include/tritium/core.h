// tritium/core.h: the value types every module shares, the error type, and task suites.
//
// A task is a KernelBench-format Python source (`class Model`, `get_inputs()`,
// `get_init_inputs()`). A suite is an ordered list of tasks loaded from one .py file, a directory
// of them, or a JSONL file. Loading never stops at a bad item: what cannot be loaded is listed in
// `Suite::problems` and the rest is kept.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

namespace tritium {

using Json = nlohmann::ordered_json;

/// The library version, e.g. "0.1.0".
const char* version();

/// An error a user can cause and fix: the message names the input and the fix.
struct Error {
  std::string message;
};

/// A value or an Error. Fallible public calls return this instead of throwing.
template <class T>
class Result {
 public:
  Result(T value) : v_(std::move(value)) {}
  Result(Error error) : v_(std::move(error)) {}

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() { return std::get<0>(v_); }
  const T& value() const { return std::get<0>(v_); }
  T& operator*() { return value(); }
  const T& operator*() const { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  const Error& error() const { return std::get<1>(v_); }

 private:
  std::variant<T, Error> v_;
};

/// One KernelBench-format task.
struct Task {
  std::string id;      // directory suites: relative path without ".py"; JSONL: the "id" field
  std::string source;  // the Python source
  std::string origin;  // where it came from, for messages: a file path, or "suite.jsonl:LINE"
  std::optional<int> level;  // KernelBench level (JSONL "level", or a `levelN` path component)
  Json meta = Json::object();
};

/// An item of a suite that could not be loaded: where, and why.
struct SuiteProblem {
  std::string origin;
  std::string message;
};

/// An ordered list of tasks, sorted by id for directories, in file order for JSONL.
struct Suite {
  std::string origin;  // the path the suite was loaded from
  std::vector<Task> tasks;
  std::vector<SuiteProblem> problems;
};

/// Loads a task file (.py), a directory of them (recursive) or a JSONL suite (.jsonl).
/// Errors only when the path itself is unusable; bad items become `Suite::problems`.
Result<Suite> load_suite(const std::filesystem::path& path);

/// The task of a suite with this id, or null.
const Task* find_task(const Suite& suite, std::string_view id);

/// Parses a JSONL suite held in memory; `origin` names it in messages.
Suite parse_jsonl_suite(std::string_view text, const std::string& origin);

/// The non-blank lines of a JSONL text with their 1-based numbers ("\r\n" endings allowed).
std::vector<std::pair<std::size_t, std::string_view>> jsonl_lines(std::string_view text);

/// Reads a whole file; the error names the path.
Result<std::string> read_file(const std::filesystem::path& path);

/// The lowercase hex SHA-256 of `data` (64 characters): content hashes for cache keys.
std::string sha256_hex(std::string_view data);

/// The KernelBench level named by a `levelN` component of a relative path, if any.
std::optional<int> level_from_path(const std::filesystem::path& relative);

Json to_json(const Task& task, bool with_source = false);
Json to_json(const SuiteProblem& problem);
Json to_json(const Suite& suite, bool with_source = false);  // {suite, tasks, problems}

}  // namespace tritium
