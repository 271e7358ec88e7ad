// Generators in general: many prompts at bounded concurrency (docs/llm.md).
#include <atomic>
#include <mutex>
#include <thread>

#include "tritium/llm.h"

namespace tritium {

Json to_json(const Generation& g) {
  return {{"text", g.text},
          {"finish_reason", g.finish_reason},
          {"prompt_tokens", g.prompt_tokens},
          {"completion_tokens", g.completion_tokens}};
}

std::vector<GenerationResult> generate_many(Generator& generator, const std::vector<std::string>& prompts,
                                            const Sampling& sampling, int concurrency,
                                            const std::function<void(std::size_t, const GenerationResult&)>& on_done) {
  std::vector<GenerationResult> results(prompts.size(), GenerationResult(Error{"not generated"}));
  std::atomic<std::size_t> next{0};
  std::mutex done_mutex;
  auto work = [&] {
    for (std::size_t i; (i = next.fetch_add(1)) < prompts.size();) {
      GenerationResult r = [&]() -> GenerationResult {
        try {
          return generator.generate(prompts[i], sampling);
        } catch (const std::exception& e) {  // a generator's bug costs its prompt, not the batch
          return Error{std::string("generator failed: ") + e.what()};
        }
      }();
      std::lock_guard lock(done_mutex);
      results[i] = std::move(r);
      if (on_done) on_done(i, results[i]);
    }
  };
  const std::size_t workers = std::min<std::size_t>(std::max(concurrency, 1), prompts.size());
  std::vector<std::thread> threads;
  for (std::size_t w = 1; w < workers; ++w) threads.emplace_back(work);
  work();
  for (auto& t : threads) t.join();
  return results;
}

}  // namespace tritium
