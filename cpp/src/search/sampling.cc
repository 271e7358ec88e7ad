// Sampling runs (bench, distill): generate a chunk of tasks' samples concurrently, evaluate them
// in one engine batch (parallel over the engine's jobs), hand the chunk over, go on.
#include <fmt/format.h>

#include <fstream>

#include "tritium/search.h"

namespace tritium::search {

void sample_tasks(const std::vector<const Task*>& tasks, Generator& generator, Engine& engine,
                  const SampleOptions& options, const std::function<void(const std::vector<SampledTask>&)>& sink,
                  const std::function<void(std::size_t, std::size_t)>& progress) {
  Sampling sampling = options.sampling;
  sampling.n = std::max(options.samples, 1);
  const std::size_t chunk =
      options.chunk ? options.chunk : 2 * static_cast<std::size_t>(std::max(options.concurrency, 1));
  for (std::size_t start = 0; start < tasks.size(); start += chunk) {
    const std::size_t end = std::min(tasks.size(), start + chunk);
    std::vector<std::string> prompts;
    for (std::size_t i = start; i < end; ++i) prompts.push_back(kernel_prompt(tasks[i]->source));
    auto generated = generate_many(generator, prompts, sampling, options.concurrency);
    std::vector<SampledTask> done(end - start);
    std::vector<EvalItem> items;
    for (std::size_t i = 0; i < done.size(); ++i) {
      SampledTask& s = done[i];
      s.task = tasks[start + i];
      if (!generated[i]) {
        s.error = generated[i].error().message;
        continue;
      }
      s.generations = std::move(*generated[i]);
      for (std::size_t k = 0; k < s.generations.size(); ++k)
        items.push_back({fmt::format("{}#{}", s.task->id, k),
                         *s.task,
                         s.generations[k].text,
                         true,
                         {{"group", s.task->id}, {"sample", k}}});
    }
    auto verdicts = engine.evaluate(items);
    std::size_t next = 0;
    for (auto& s : done)
      for (std::size_t k = 0; k < s.generations.size(); ++k) s.verdicts.push_back(std::move(verdicts[next++]));
    sink(done);
    if (progress) progress(end, tasks.size());
  }
}

Result<std::vector<Json>> read_resumable_jsonl(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return std::vector<Json>{};
  auto text = read_file(path);
  if (!text) return text.error();
  std::vector<Json> rows;
  std::string kept;
  for (const auto& [line_no, line] : jsonl_lines(*text)) {
    Json j = Json::parse(line, nullptr, false);
    if (!j.is_object()) continue;  // a line torn by a crash: its item is simply redone
    kept.append(line).push_back('\n');
    rows.push_back(std::move(j));
  }
  if (kept.size() != text->size()) {
    std::ofstream out(path, std::ios::trunc);
    out << kept;
    if (!out) return Error{fmt::format("could not rewrite {}", path.string())};
  }
  return rows;
}

}  // namespace tritium::search
