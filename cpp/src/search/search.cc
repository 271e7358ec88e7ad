// Test-time search for one task (docs/search.md): best-of-N, refinement rounds that show the
// model its last verdict, the emitter's fragment partitions, then launch-configuration tuning of
// the best kernel, and a side-by-side rerun of the best against the best-of-1. Only `correct`
// verdicts can win; with timings (GPU) the fastest wins, without them the first correct one.
#include "tritium/search.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "tritium/verify.h"

namespace tritium::search {
namespace {

// Is a better than the current best b? A time below the timing floor (mostly the host's launch
// time) is noise: it never makes a kernel better.
bool better(const Verdict& a, const Verdict& b) {
  if (!a.correct) return false;
  if (!b.correct) return true;
  return a.runtime_ms && !a.below_timing_floor && (!b.runtime_ms || *a.runtime_ms < *b.runtime_ms);
}

// How far a verdict got: its status's place in the pipeline (correct last).
std::size_t progress_of(const Verdict& v) {
  const auto& order = verdict_statuses();
  const auto at = std::find(order.begin(), order.end(), v.status);
  return v.status == "error" ? 0 : static_cast<std::size_t>(at - order.begin());
}

double median(std::vector<double> xs) {
  if (xs.empty()) return 0;
  std::sort(xs.begin(), xs.end());
  const std::size_t n = xs.size();
  return n % 2 ? xs[n / 2] : (xs[n / 2 - 1] + xs[n / 2]) / 2;
}

std::string feedback(const Verdict& v) {
  if (!v.correct) return fmt::format("The evaluation rejected it: {}: {}", v.status, v.message);
  if (v.runtime_ms && v.ref_eager_ms)
    return fmt::format(
        "It is correct and runs in {:.4f} ms, against {:.4f} ms for PyTorch eager (speedup {:.2f}x). "
        "Make it faster.",
        *v.runtime_ms, *v.ref_eager_ms, v.speedup_eager.value_or(0));
  return "It is correct. Make it faster: fewer kernels, less memory traffic, better tiling.";
}

class Searcher {
 public:
  Searcher(const Task& task, Generator* generator, Engine& engine, const SearchOptions& options,
           const std::function<void(const Json&)>& log)
      : task_(task), generator_(generator), engine_(engine), options_(options), log_(log) {}

  SearchResult run() {
    if (options_.start_code) evaluate("given", {{*options_.start_code, "given"}});
    const bool fragments_on = generator_ && generator_->emits_from_dag() && options_.fragment_budget > 0;
    // The emitter answers only a synthesized task (its meta.solution); for any other, the
    // fragments stage's default fusion is the best-of-1, and best-of-N would only log an error.
    if (generator_ && options_.budget > 0 && !(fragments_on && !task_.meta.contains("solution"))) best_of_n();
    for (int round = 0; generator_ && round < options_.rounds; ++round) refine(round);
    if (fragments_on) fragments();
    for (std::size_t i = 0; i < result_.tried.size() && !result_.first; ++i)
      if (result_.tried[i].verdict.correct) result_.first = i;
    if (result_.best && options_.tune_budget > 0) tune();
    confirm();
    return std::move(result_);
  }

 private:
  // Evaluates new candidates (code not seen before) and records them.
  void evaluate(const std::string& stage, std::vector<std::pair<std::string, std::string>> code_and_notes) {
    std::vector<EvalItem> items;
    std::vector<std::pair<std::string, std::string>> fresh;
    for (auto& [code, note] : code_and_notes) {
      if (!seen_.insert(sha256_hex(code)).second) continue;  // a repeat teaches nothing and costs GPU time
      items.push_back({fmt::format("{}#{}", task_.id, result_.tried.size() + items.size()),
                       task_,
                       code,
                       false,
                       {{"stage", stage}}});
      fresh.emplace_back(std::move(code), std::move(note));
    }
    const auto verdicts = engine_.evaluate(items);
    for (std::size_t i = 0; i < verdicts.size(); ++i) {
      Tried t{stage, std::move(fresh[i].first), verdicts[i], std::move(fresh[i].second)};
      const std::size_t index = result_.tried.size();
      if (t.verdict.runtime_ms) result_.timed = true;
      if (!result_.best ? t.verdict.correct : better(t.verdict, result_.tried[*result_.best].verdict))
        result_.best = index;
      if (log_) log_({{"index", index}, {"stage", t.stage}, {"note", t.note}, {"verdict", to_json(t.verdict)}});
      result_.tried.push_back(std::move(t));
    }
  }

  std::vector<std::pair<std::string, std::string>> sample(const std::string& prompt, int n, const std::string& note) {
    Sampling s = options_.sampling;
    s.n = n;
    std::vector<std::pair<std::string, std::string>> out;
    auto got = generator_->generate(prompt, s);
    if (!got) {
      if (log_) log_({{"stage", note}, {"error", got.error().message}});
      return out;
    }
    for (const auto& g : *got) {
      const Extraction e = extract_response(g.text);
      out.emplace_back(e.has_code ? e.code : g.text, note);  // no code: the verifier says so
    }
    return out;
  }

  void best_of_n() { evaluate("best_of_n", sample(kernel_prompt(task_.source), options_.budget, "sample")); }

  // Shows the model its best attempt so far (or the one that got furthest) and what was wrong.
  void refine(int round) {
    if (result_.tried.empty()) return;
    std::size_t base = 0;
    if (result_.best)
      base = *result_.best;
    else
      for (std::size_t i = 1; i < result_.tried.size(); ++i)
        if (progress_of(result_.tried[i].verdict) > progress_of(result_.tried[base].verdict)) base = i;
    const auto& b = result_.tried[base];
    const std::string prompt = refinement_prompt(task_.source, b.code, feedback(b.verdict));
    evaluate("refine", sample(prompt, options_.refine_samples, fmt::format("round {} from #{}", round + 1, base)));
  }

  // The emitter's kernels for each fragment partition of the task's traced DAG, in one batch. The
  // default fusion leads when nothing is correct yet (a task without meta.solution), so that it is
  // the best-of-1.
  void fragments() {
    auto candidates = fragment_candidates(task_, options_, !result_.best);
    if (!candidates) {
      if (log_) log_({{"stage", "fragments"}, {"skipped", candidates.error().message}});
      return;
    }
    const std::size_t count = candidates->size(), before = result_.tried.size();
    evaluate("fragments", std::move(*candidates));
    // Cuts where nothing would fuse anyway repeat code already evaluated (the task's own solution too).
    if (log_) log_({{"stage", "fragments"}, {"candidates", count}, {"evaluated", result_.tried.size() - before}});
  }

  // Coordinate descent over the best kernel's knobs: all values of one knob in one batch, keep the
  // fastest correct, go to the next knob. Needs timings: on the CPU every variant ties.
  void tune() {
    if (!result_.timed) {
      if (log_) log_({{"stage", "tune"}, {"skipped", "no timings on this device"}});
      return;
    }
    int left = options_.tune_budget;
    const std::size_t knob_count = find_knobs(result_.tried[*result_.best].code).size();
    for (std::size_t k = 0; k < knob_count && left > 0; ++k) {
      const std::string base = result_.tried[*result_.best].code;
      const auto knobs = find_knobs(base);  // offsets move as earlier knobs change length
      if (k >= knobs.size()) break;
      const Knob& knob = knobs[k];
      std::vector<std::pair<std::string, std::string>> variants;
      for (long v : knob_values(knob)) {
        if (v == knob.value || left <= 0) continue;
        variants.emplace_back(knob.apply(base, v), fmt::format("{} {} -> {}", knob.name, knob.value, v));
        --left;
      }
      evaluate("tune", std::move(variants));
    }
  }

  // The best-of-1 and the best, timed again in alternation, one candidate at a time: the GPU lock
  // keeps neighbours off the GPU while a kernel is timed, not off the CPU, and kernels of tens of
  // microseconds are timed mostly on launch latency. By now the task's reference has been timed
  // (the best-of-1's first timing may have run beside its torch.compile). A best that is not
  // correct every time, or not faster by the medians, gives way to the first.
  void confirm() {
    if (!result_.timed || !result_.best || !result_.first || *result_.best == *result_.first ||
        options_.confirm_rounds <= 0)
      return;
    Confirmation c;
    c.first = *result_.first;
    c.best = *result_.best;
    for (int round = 1; round <= options_.confirm_rounds; ++round)
      for (const bool is_best : {false, true}) {
        const std::size_t which = is_best ? c.best : c.first;
        const EvalItem item{fmt::format("{}#{}@{}", task_.id, which, round), task_, result_.tried[which].code, false,
                            {{"stage", "confirm"}, {"of", which}},           true};
        const Verdict v = engine_.evaluate({item}).front();
        if (v.correct && v.runtime_ms)
          (is_best ? c.best_ms : c.first_ms).push_back(*v.runtime_ms);
        else if (is_best)
          c.best_always_correct = false;
        if (log_)
          log_({{"index", which},
                {"stage", "confirm"},
                {"note", fmt::format("rerun {}", round)},
                {"verdict", to_json(v)}});
      }
    if (!c.best_holds()) result_.best = c.first;
    if (log_)
      log_({{"stage", "confirm"},
            {"first_ms", median(c.first_ms)},
            {"best_ms", median(c.best_ms)},
            {"kept", c.best_holds() ? "best" : "first"}});
    result_.confirmation = std::move(c);
  }

  const Task& task_;
  Generator* generator_;
  Engine& engine_;
  const SearchOptions& options_;
  const std::function<void(const Json&)>& log_;
  SearchResult result_;
  std::set<std::string> seen_;
};

}  // namespace

bool Confirmation::best_holds() const {
  return best_always_correct && !best_ms.empty() && (first_ms.empty() || median(best_ms) < median(first_ms));
}

double Confirmation::speedup() const {
  return first_ms.empty() || best_ms.empty() ? 0 : median(first_ms) / median(best_ms);
}

SearchResult search_task(const Task& task, Generator* generator, Engine& engine, const SearchOptions& options,
                         const std::function<void(const Json&)>& log) {
  return Searcher(task, generator, engine, options, log).run();
}

Json to_json(const SearchResult& r) {
  Json tried = Json::array();
  for (std::size_t i = 0; i < r.tried.size(); ++i) {
    const auto& t = r.tried[i];
    tried.push_back({{"index", i},
                     {"stage", t.stage},
                     {"note", t.note},
                     {"status", t.verdict.status},
                     {"runtime_ms", t.verdict.runtime_ms ? Json(*t.verdict.runtime_ms) : Json()},
                     {"speedup_eager", t.verdict.speedup_eager ? Json(*t.verdict.speedup_eager) : Json()}});
  }
  Json out = {{"timed", r.timed},
              {"best", r.best ? Json(*r.best) : Json()},
              {"first", r.first ? Json(*r.first) : Json()},
              {"tried", tried}};
  if (const auto& c = r.confirmation) {  // the reruns' medians, not the search's flattering minimum
    out["confirmation"] = {{"first", c->first},
                           {"best", c->best},
                           {"first_ms", c->first_ms},
                           {"best_ms", c->best_ms},
                           {"best_always_correct", c->best_always_correct},
                           {"kept", c->best_holds() ? "best" : "first"}};
    out["search_speedup_over_first"] = *r.tried[c->first].verdict.runtime_ms / *r.tried[c->best].verdict.runtime_ms;
    out["speedup_over_first"] = c->best_holds() ? c->speedup() : 1.0;
  } else if (r.best && r.first && r.timed && r.tried[*r.first].verdict.runtime_ms &&
             r.tried[*r.best].verdict.runtime_ms) {
    out["speedup_over_first"] = *r.tried[*r.first].verdict.runtime_ms / *r.tried[*r.best].verdict.runtime_ms;
  }
  return out;
}

}  // namespace tritium::search
