// tritium/core.h: the value types every module shares, the error type, and task suites.
//
// A task is a KernelBench-format Python source (`class Model`, `get_inputs()`,
// `get_init_inputs()`). A suite is an ordered list of tasks loaded from one .py file, a directory
// of them, or a JSONL file. Loading never stops at a bad item: what cannot be loaded is listed in
// `Suite::problems` and the rest is kept.
#pragma once

#include <concepts>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace tritium {

using Json = nlohmann::ordered_json;

/// The library version, e.g. "0.1.0".
const char* version();

/// An error a user can cause and fix: the message names the input and the fix.
struct Error {
  std::string message;
  bool environment = false;  // the machine cannot do it (no runner, no GPU), whatever the input
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

/// Options from a JSON object: the library's JSON faces (what Python and configs pass). `read` takes
/// a key when present and checks its type; `done` gives the first error, or names a key that
/// nothing read, since a misspelt option must not be silently ignored. Messages start with `what`.
class OptionReader {
 public:
  OptionReader(const Json& object, std::string what);
  template <class T>
  OptionReader& read(const std::string& key, T& out) {
    known_.push_back(key);
    if (error_ || !object_.is_object() || !object_.contains(key)) return *this;
    if (const char* expected = assign(object_.at(key), out)) fail(key, expected);
    return *this;
  }
  std::optional<Error> done() const;
  /// The keys nothing read yet: options a lower layer reads (it then names an unknown one).
  Json rest() const;

 private:
  static const char* assign(const Json& j, std::string& out);
  static const char* assign(const Json& j, bool& out);
  static const char* assign(const Json& j, double& out);
  static const char* assign(const Json& j, Json& out);
  template <std::integral T>
  static const char* assign(const Json& j, T& out) {
    if (!j.is_number_integer()) return "a whole number";
    if (std::unsigned_integral<T> && j.get<long long>() < 0 && !j.is_number_unsigned())
      return "a whole number, not negative";
    out = j.get<T>();
    return nullptr;
  }
  template <class T>
  static const char* assign(const Json& j, std::optional<T>& out) {
    if (j.is_null()) return out.reset(), nullptr;
    T value{};
    const char* expected = assign(j, value);
    if (!expected) out = std::move(value);
    return expected;
  }
  template <class T>
  static const char* assign(const Json& j, std::vector<T>& out) {
    if (!j.is_array()) return "a list";
    std::vector<T> values(j.size());
    for (std::size_t i = 0; i < j.size(); ++i)
      if (assign(j[i], values[i])) return "a list of one type";
    out = std::move(values);
    return nullptr;
  }
  void fail(const std::string& key, const char* expected);

  Json object_;  // a copy: options are small, and a reader may outlive a temporary it was given
  std::string what_;
  std::vector<std::string> known_;  // every key asked for, in order
  std::optional<Error> error_;
};

/// One KernelBench-format task.
struct Task {
  std::string id;            // directory suites: relative path without ".py"; JSONL: the "id" field
  std::string source;        // the Python source
  std::string origin;        // where it came from, for messages: a file path, or "suite.jsonl:LINE"
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

/// Loads a task file (.py), a directory of them (recursive; its meta.jsonl, as write_suite writes
/// it, gives the tasks their meta) or a JSONL suite (.jsonl). Errors only when the path itself is
/// unusable; bad items become `Suite::problems`.
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

/// Writes tasks as a suite load_suite reads back: a .jsonl file of {id, source, level, meta}, or a
/// directory of ID.py files plus meta.jsonl ({id, meta} per task). Creates parent directories.
std::optional<Error> write_suite(const std::vector<Task>& tasks, const std::filesystem::path& out);

/// The KernelBench level named by a `levelN` component of a relative path, if any.
std::optional<int> level_from_path(const std::filesystem::path& relative);

Json to_json(const Task& task, bool with_source = false);
Json to_json(const SuiteProblem& problem);
Json to_json(const Suite& suite, bool with_source = false);  // {suite, tasks, problems}
Json suite_line(const Task& task);  // a JSONL suite's line, as load_suite reads it: {id, source, level, meta}

}  // namespace tritium
