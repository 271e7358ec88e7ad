#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

#include "tritium/core.h"

namespace fs = std::filesystem;

namespace tritium {
namespace {

bool is_task_file(const fs::path& p) { return p.extension() == ".py"; }

// Skips what is never a task: hidden entries, caches, package markers.
bool skipped(const fs::path& relative) {
  for (const auto& part : relative) {
    const std::string s = part.string();
    if (s.starts_with(".") || s == "__pycache__") return true;
  }
  return relative.filename() == "__init__.py";
}

// A directory suite's meta.jsonl (what write_suite writes beside the .py files): {id, meta} lines,
// each meta given to the task of that id. A bad line is a problem; the tasks stay.
void read_meta(const fs::path& file, Suite& suite) {
  if (!fs::exists(file)) return;
  auto text = read_file(file);
  if (!text) return suite.problems.push_back({file.string(), text.error().message});
  for (const auto& [line_no, line] : jsonl_lines(*text)) {
    const Json j = Json::parse(line, nullptr, false);
    const bool ok =
        j.is_object() && j.contains("id") && j["id"].is_string() && j.contains("meta") && j["meta"].is_object();
    const auto task = std::find_if(suite.tasks.begin(), suite.tasks.end(),
                                   [&](const Task& t) { return ok && t.id == j["id"].get<std::string>(); });
    if (task != suite.tasks.end())
      task->meta = j["meta"];
    else
      suite.problems.push_back({fmt::format("{}:{}", file.string(), line_no), "expected {\"id\", \"meta\"} of a task"});
  }
}

Suite load_directory(const fs::path& dir) {
  Suite suite{dir.string(), {}, {}};
  std::vector<fs::path> files;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, fs::directory_options::skip_permission_denied, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    const fs::path rel = fs::relative(it->path(), dir);
    if (it->is_regular_file() && is_task_file(it->path()) && !skipped(rel)) files.push_back(rel);
  }
  if (ec) suite.problems.push_back({dir.string(), fmt::format("cannot list directory: {}", ec.message())});
  // Level from the suite root too, so `tritium tasks KernelBench/level1` knows its level.
  const auto root_level = level_from_path(fs::absolute(dir).filename());
  for (const auto& rel : files) {
    const fs::path full = dir / rel;
    auto text = read_file(full);
    if (!text) {
      suite.problems.push_back({full.string(), text.error().message});
      continue;
    }
    fs::path id = rel;
    id.replace_extension();
    Task task{id.generic_string(), std::move(*text), full.string(), level_from_path(rel), Json::object()};
    if (!task.level) task.level = root_level;
    suite.tasks.push_back(std::move(task));
  }
  std::sort(suite.tasks.begin(), suite.tasks.end(), [](const Task& a, const Task& b) { return a.id < b.id; });
  read_meta(dir / "meta.jsonl", suite);
  return suite;
}

// Reads one JSONL item; returns an error message when the line is not a valid task.
std::optional<std::string> parse_item(const std::string& line, Task& task) {
  Json j;
  try {
    j = Json::parse(line);
  } catch (const Json::parse_error& e) {
    return fmt::format("not valid JSON ({})", e.what());
  }
  if (!j.is_object()) return "expected a JSON object {\"id\", \"source\", \"level\"?, \"meta\"?}";
  if (!j.contains("id") || !j["id"].is_string() || j["id"].get<std::string>().empty())
    return "missing \"id\" (a non-empty string)";
  if (!j.contains("source") || !j["source"].is_string()) return "missing \"source\" (a string)";
  task.id = j["id"];
  task.source = j["source"];
  if (j.contains("level") && !j["level"].is_null()) {
    if (!j["level"].is_number_integer()) return "\"level\" must be an integer";
    task.level = j["level"].get<int>();
  }
  if (j.contains("meta") && !j["meta"].is_null()) {
    if (!j["meta"].is_object()) return "\"meta\" must be an object";
    task.meta = j["meta"];
  }
  return std::nullopt;
}

}  // namespace

Result<std::string> read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error{fmt::format("{}: cannot open file; check the path and its permissions", path.string())};
  std::ostringstream out;
  out << in.rdbuf();
  if (in.bad()) return Error{fmt::format("{}: read failed", path.string())};
  return out.str();
}

std::optional<int> level_from_path(const fs::path& relative) {
  for (const auto& part : relative) {
    const std::string s = part.string();
    if (s.size() > 5 && s.starts_with("level") &&
        std::all_of(s.begin() + 5, s.end(), [](char c) { return c >= '0' && c <= '9'; }) && s.size() < 12)
      return std::stoi(s.substr(5));
  }
  return std::nullopt;
}

std::vector<std::pair<std::size_t, std::string_view>> jsonl_lines(std::string_view text) {
  std::vector<std::pair<std::size_t, std::string_view>> out;
  std::size_t line_no = 0, pos = 0;
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_no;
    if (line.find_first_not_of(" \t\r") != std::string_view::npos) out.emplace_back(line_no, line);
  }
  return out;
}

Suite parse_jsonl_suite(std::string_view text, const std::string& origin) {
  Suite suite{origin, {}, {}};
  std::set<std::string> seen;
  for (const auto& [line_no, line_view] : jsonl_lines(text)) {
    const std::string line(line_view);
    const std::string where = fmt::format("{}:{}", origin, line_no);
    Task task;
    if (auto problem = parse_item(line, task)) {
      suite.problems.push_back({where, *problem});
      continue;
    }
    if (!seen.insert(task.id).second) {
      suite.problems.push_back({where, fmt::format("duplicate id \"{}\"; ids must be unique", task.id)});
      continue;
    }
    task.origin = where;
    suite.tasks.push_back(std::move(task));
  }
  return suite;
}

Result<Suite> load_suite(const fs::path& path) {
  std::error_code ec;
  const auto status = fs::status(path, ec);
  if (ec || !fs::exists(status))
    return Error{
        fmt::format("{}: no such file or directory; pass a task .py file, a directory of "
                    "them, or a .jsonl suite",
                    path.string())};
  if (fs::is_directory(status)) return load_directory(path);
  if (path.extension() == ".jsonl") {
    auto text = read_file(path);
    if (!text) return text.error();
    return parse_jsonl_suite(*text, path.string());
  }
  if (!is_task_file(path))
    return Error{
        fmt::format("{}: unknown suite format; expected a .py task, a directory or a .jsonl file", path.string())};
  auto text = read_file(path);
  if (!text) return text.error();
  fs::path id = path.filename();
  id.replace_extension();
  Suite suite{path.string(), {}, {}};
  suite.tasks.push_back(
      {id.string(), std::move(*text), path.string(), level_from_path(path.parent_path().filename()), Json::object()});
  return suite;
}

const Task* find_task(const Suite& suite, std::string_view id) {
  for (const auto& t : suite.tasks)
    if (t.id == id) return &t;
  return nullptr;
}

std::optional<Error> write_suite(const std::vector<Task>& tasks, const fs::path& out) {
  std::error_code ec;
  const fs::path dir = out.extension() == ".jsonl" ? out.parent_path() : out;
  if (!dir.empty()) fs::create_directories(dir, ec);
  if (ec) return Error{fmt::format("could not create {}: {}", dir.string(), ec.message())};
  if (out.extension() == ".jsonl") {
    std::ofstream f(out);
    for (const auto& t : tasks) f << suite_line(t).dump() << '\n';
    f.close();
    return f ? std::nullopt : std::optional<Error>(Error{fmt::format("could not write {}", out.string())});
  }
  std::ofstream meta(out / "meta.jsonl");
  for (const auto& t : tasks) {
    std::ofstream f(out / (t.id + ".py"));
    f << t.source;
    meta << Json{{"id", t.id}, {"meta", t.meta}}.dump() << '\n';
    f.close();
    if (!f) return Error{fmt::format("could not write {}", (out / (t.id + ".py")).string())};
  }
  meta.close();
  return meta ? std::nullopt
              : std::optional<Error>(Error{fmt::format("could not write {}", (out / "meta.jsonl").string())});
}

}  // namespace tritium
