// tritium verify FILE... | --responses FILE.jsonl: the static verdict of each candidate.
#include <fmt/format.h>

#include <iostream>

#include "cli.h"
#include "tritium/verify.h"

namespace tritium::cli {
namespace {

struct VerifyOptions {
  std::vector<std::string> files;
  std::string responses;
  std::string task;
  bool json = false;
  bool raw = false;
};

void print_verdict(const std::string& name, const Verification& v) {
  std::cout << fmt::format("{:<8} {}\n", v.status, name);
  for (const auto& f : v.findings)
    std::cout << fmt::format("  {}:{}:{}: {} [{}] {}\n", name, f.line, f.col + 1, f.severity, f.rule, f.message);
}

// JSONL lines {"task_id"?, "code" | "response"}; a bad line becomes an error item, not a stop.
std::vector<std::pair<std::string, Result<Verification>>> verify_jsonl(const std::string& path, std::string_view text,
                                                                       const std::string& task) {
  std::vector<std::pair<std::string, Result<Verification>>> out;
  for (const auto& [line_no, line] : jsonl_lines(text)) {
    const std::string where = fmt::format("{}:{}", path, line_no);
    const Json j = Json::parse(line, nullptr, false);
    auto verdict = verify_item(j, task);
    out.emplace_back(j.is_object() ? j.value("task_id", where) : where,
                     verdict ? std::move(verdict) : Error{fmt::format("{}: {}", where, verdict.error().message)});
  }
  return out;
}

int run_verify(const VerifyOptions& o) {
  std::vector<std::pair<std::string, Result<Verification>>> results;
  std::string task;
  if (!o.task.empty()) {
    auto text = read_file(o.task);
    if (!text) return fail(kUsage, text.error().message);
    task = std::move(*text);
  }
  if (!o.responses.empty()) {
    auto text = read_file(o.responses);
    if (!text) return fail(kUsage, text.error().message);
    results = verify_jsonl(o.responses, *text, task);
  }
  for (const auto& file : o.files) {
    auto text = read_file(file);
    if (!text) return fail(kUsage, text.error().message);
    results.emplace_back(file, o.raw ? verify_response(*text, task) : verify_code(*text, task));
  }
  if (results.empty()) return fail(kUsage, "nothing to verify; pass candidate files or --responses FILE.jsonl");
  int not_valid = 0;
  Json verdicts = Json::array();
  for (auto& [name, result] : results) {
    if (!result) {
      ++not_valid;
      if (o.json)
        verdicts.push_back({{"id", name}, {"status", "error"}, {"error", result.error().message}});
      else
        std::cout << fmt::format("error    {}\n", result.error().message);
      continue;
    }
    not_valid += result->valid() ? 0 : 1;
    if (o.json) {
      Json v = to_json(*result);
      v["id"] = name;
      verdicts.push_back(std::move(v));
    } else {
      print_verdict(name, *result);
    }
  }
  if (o.json)
    print_json({{"verdicts", verdicts}, {"valid", results.size() - not_valid}, {"total", results.size()}});
  else
    std::cout << fmt::format("{} candidates: {} valid, {} not\n", results.size(), results.size() - not_valid,
                             not_valid);
  return not_valid ? kFailures : kOk;
}

}  // namespace

void add_verify_command(CLI::App& root, Commands& commands) {
  auto o = std::make_shared<VerifyOptions>();
  auto* app = root.add_subcommand("verify", "Statically verify candidates: real Triton that does the work, no hacks");
  app->add_option("files", o->files, "Candidate .py files (code), or raw responses with --raw");
  app->add_option("--responses", o->responses, "JSONL of {\"task_id\"?, \"code\" | \"response\"}");
  app->add_option("--task", o->task, "The task (.py) the candidates answer: also checks ModelNew's signatures");
  app->add_flag("--raw", o->raw, "Treat FILES as raw LLM responses (extract the code first)");
  app->add_flag("--json", o->json, "Print one JSON document instead of text");
  commands.push_back({app, [o]() -> int { return run_verify(*o); }});
}

}  // namespace tritium::cli
