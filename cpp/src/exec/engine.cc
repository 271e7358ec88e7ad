// The evaluation engine: a queue of candidates over worker slots, each slot a warm candidate
// runner; trusted runners compute each task's reference outputs once (in parallel across tasks)
// and, on a GPU, time it apart (torch.compile is seconds of CPU work that candidates need not
// wait for: only their speedups do); beside each slot a trusted comparer judges the candidate's
// outputs as they come (channel.h); verdicts are cached. Layout of the work directory:
//   lock             held by the live engine and its guard; a directory whose lock is free is
//                    reclaimed by the next engine (work_dir.h)
//   refs/<task>-<n>/ the reference's parameters (hidden from candidates by the sandbox; a byte
//                    budget, disk_budget.h)
//   jobs/<n>/        one candidate's private directory: its code, the linked parameters
// The GPU locks are machine-wide, so that engines of other processes queue on them too:
//   $TRITIUM_LOCK_DIR (default /tmp/tritium-gpu-locks)/gpu-<uuid>.lock
//                    a GPU's lock (flock: timing exclusive, other GPU work shared; timing.py)
//   gpu-<uuid>.lock.gate  its gate, which keeps a waiting timer from being starved
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <thread>

#include "cache.h"
#include "channel.h"
#include "disk_budget.h"
#include "judge.h"
#include "runner.h"
#include "tolerance.h"
#include "tritium/exec.h"
#include "work_dir.h"

namespace fs = std::filesystem;

namespace tritium {
namespace {

using Clock = std::chrono::steady_clock;

constexpr double kBackstopS = 60;           // the engine's timeout beyond the worker's own
constexpr double kReferenceTimeoutS = 900;  // torch.compile of a large model takes minutes
constexpr int kSandboxUidBase = 4100000;    // per-slot uid when the engine runs as root

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// Now, in ms since the epoch: the moments a reservation of the memory gate began and ended, which
// the processes' own `*_at` phases are stamped in (engine_bench.py scale lays them out in time).
double epoch_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::uint64_t fresh_seed() {
  std::random_device rd;
  return (static_cast<std::uint64_t>(rd()) << 32) ^ rd();
}

double physical_gb() {
  return static_cast<double>(sysconf(_SC_PHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGESIZE)) / (1ll << 30);
}

int default_jobs(bool gpu) {
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return gpu ? std::min(cores, 8) : cores;
}

// The first directory on the way to `dir` (itself included) that other users cannot pass through.
std::optional<fs::path> closed_to_others(const fs::path& dir) {
  for (fs::path p = fs::absolute(dir);; p = p.parent_path()) {
    struct stat st{};
    if (stat(p.c_str(), &st) == 0 && !(st.st_mode & S_IXOTH)) return p;
    if (p == p.parent_path()) return std::nullopt;
  }
}

// Every engine on this machine (any user's, any process's) finds the GPU locks here; sandboxed
// uids open them for reading, and another user's engine may add a GPU's: sticky and open, as /tmp.
Result<fs::path> make_lock_dir() {
  const char* env = std::getenv("TRITIUM_LOCK_DIR");
  const fs::path dir = env && *env ? fs::path(env) : fs::path("/tmp/tritium-gpu-locks");
  std::error_code ec;
  if (fs::create_directories(dir, ec)) chmod(dir.c_str(), 01777);
  if (ec || !fs::is_directory(dir))
    return Error{
        fmt::format("cannot create the GPU lock directory {}: {}; point TRITIUM_LOCK_DIR at a directory "
                    "every engine on this machine can use",
                    dir.string(), ec ? ec.message() : "not a directory")};
  // Root's engine runs candidates under other uids (evaluate_request), which must reach the locks.
  if (geteuid() == 0)
    if (auto closed = closed_to_others(dir))
      return Error{
          fmt::format("the GPU lock directory {} is closed to other users ({} lacks o+x), so sandboxed "
                      "candidates could not open its locks; point TRITIUM_LOCK_DIR elsewhere (default "
                      "/tmp/tritium-gpu-locks)",
                      dir.string(), closed->string())};
  return dir;
}

// Hard links when possible (no copy of large inputs), a copy across file systems.
std::error_code link_or_copy(const fs::path& from, const fs::path& to) {
  std::error_code ec;
  fs::create_hard_link(from, to, ec);
  if (ec) fs::copy_file(from, to, fs::copy_options::overwrite_existing, ec);
  return ec;
}

std::size_t tensor_bytes(const Json& tensor) {
  std::size_t n = std::max<std::size_t>(1, exec::dtype_size(tensor.value("dtype", std::string("float32"))));
  for (const auto& d : tensor.value("shape", Json::array())) n *= d.get<std::size_t>();
  return n;
}

std::size_t set_bytes(const Json& tensors) {
  std::size_t total = 0;
  for (const auto& t : tensors) total += tensor_bytes(t);
  return total;
}

std::size_t largest_set(const Json& body, const char* key) {
  std::size_t most = 0;
  for (const auto& t : body.value("trials", Json::array()))
    most = std::max(most, set_bytes(t.value(key, Json::array())));
  return most;
}

// The channel's buffer: two halves, each the largest output set's bytes (whole 64-byte blocks, so
// that every dtype's elements fit whole) up to 64 MB; larger sets stream through (channel.py).
std::size_t channel_bytes(const Json& body) {
  const std::size_t half = std::clamp<std::size_t>((largest_set(body, "outputs") + 63) / 64 * 64, 64, 64u << 20);
  return 2 * half;
}

// On a GPU the halves can be device memory (the comparer's, mapped by the worker): each the largest
// output set in whole 2 MiB pages (the driver's usual granularity) up to 256 MiB. Copies on the
// device are cheap, so a larger half only saves round trips of the pipes.
std::size_t channel_device_bytes(const Json& body) {
  constexpr std::size_t page = 2u << 20;
  const std::size_t half =
      std::clamp<std::size_t>((largest_set(body, "outputs") + page - 1) / page * page, page, 256u << 20);
  return 2 * half;
}

// A CUDA allocation that failed: beside other jobs the estimates of what each holds were short,
// so the job runs again alone; alone, the failure stands.
// torch's OutOfMemoryError says "CUDA out of memory"; an allocation inside a kernel launch or a
// library call surfaces as AcceleratorError "CUDA error: out of memory" (an honest argmax on the
// H200 beside 7 GPU-size jobs, 2026-12-02), or as cuBLAS's own status.
bool out_of_memory(std::string_view text) {
  return text.find("CUDA out of memory") != std::string_view::npos ||
         text.find("CUDA error: out of memory") != std::string_view::npos ||
         text.find("CUBLAS_STATUS_ALLOC_FAILED") != std::string_view::npos;
}

// What a process holds at most while it makes a set's inputs and expected outputs, as the task's
// reference measured them on the device: the draw (the task's get_inputs() and the redraw, which
// writes into the task's tensors with a byte an element of scratch) or the inputs beside a forward
// (its outputs and temporaries). Unmeasured (the CPU): the inputs, half as much again, and the outputs.
std::uintmax_t making_bytes(const Json& body) {
  const std::uintmax_t in = largest_set(body, "inputs"), out = largest_set(body, "outputs");
  const std::uintmax_t drawn = std::max(body.value("draw_bytes", std::uintmax_t{0}), in + in / 2);
  return std::max(drawn, in + std::max(body.value("forward_bytes", std::uintmax_t{0}), out));
}

// What a job holds on its device at its peak, both sides together, phase by phase (each process
// empties its allocator's cache between phases, measured on the H200 with the mem.* phases):
// - the mutation check: the worker's inputs and outputs while it makes the inputs again;
// - the spot sets crossing after the timed calls: the worker's three spot outputs while the
//   comparer makes a set's expected outputs (a checked set crossing holds one output less);
// - the poisoned scratch: the worker's inputs and two output sets.
// Plus the parameters on both sides, CUDA contexts and the channel's device halves.
std::uintmax_t job_memory(const Json& body, bool gpu) {
  const std::uintmax_t params = set_bytes(body.value("params", Json::array()));
  const std::uintmax_t in = largest_set(body, "inputs"), out = largest_set(body, "outputs");
  const std::uintmax_t making = making_bytes(body);
  const std::uintmax_t peak = std::max({in + out + making, 3 * out + making, in + 2 * out});
  return 2 * params + peak + (gpu ? (std::uintmax_t{3} << 30) + channel_device_bytes(body) : std::uintmax_t{1} << 28);
}

// What a task's reference timing holds: the parameters, a block's input set made beside a forward
// of the eager model, the compiled model's own buffers (about a forward's), the L2 flush and a context.
std::uintmax_t timing_memory(const Json& body) {
  const std::uintmax_t forward = std::max(body.value("forward_bytes", std::uintmax_t{0}), largest_set(body, "outputs"));
  return set_bytes(body.value("params", Json::array())) + making_bytes(body) + forward + (std::uintmax_t{1} << 30);
}

// Long-lived threads over one job queue; a job gets its worker's index. Runners' parent-death
// signal follows the thread that started them, so runners are started only from threads like
// these, which live as long as the engine. stop() runs what is queued, then joins. `first` runs
// on each thread before its first job (with the thread's index).
class WorkerPool {
 public:
  void start(int n, std::function<void(int)> first = {}) {
    for (int i = 0; i < n; ++i)
      threads_.emplace_back([this, i, first] {
        if (first) first(i);
        serve(i);
      });
  }

  void submit(std::function<void(int)> job) {
    {
      std::lock_guard lock(mutex_);
      jobs_.push_back(std::move(job));
    }
    ready_.notify_one();
  }

  void stop() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    ready_.notify_all();
    for (auto& t : threads_) t.join();
    threads_.clear();
  }

 private:
  void serve(int index) {
    for (;;) {
      std::function<void(int)> job;
      {
        std::unique_lock lock(mutex_);
        ready_.wait(lock, [&] { return stopping_ || !jobs_.empty(); });
        if (jobs_.empty()) return;
        job = std::move(jobs_.front());
        jobs_.pop_front();
      }
      job(index);
    }
  }

  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::function<void(int)>> jobs_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace

struct Engine::Impl {
  EngineOptions options;
  fs::path work;
  exec::WorkDir work_dir;  // the lock and the guard of `work`; removes it when it is ours
  std::uint64_t seed = 0;
  std::string device;  // resolved: "cpu" or "cuda"
  int gpus = 0;
  Json hello = Json::object(), device_info = Json::object();
  fs::path lock_dir;
  Json sandbox_report;  // what the start-up probe's sandbox applied (Engine::info)
  // ms of each step of Engine::create (Engine::info): a fresh H200 machine's first engine took 12-17 s
  // to create with the host nearly idle (2026-12-04/05), the next ones 5.5 s, cause not found.
  Json startup_ms = Json::object();
  std::vector<std::string> gpu_ids;  // each visible GPU's UUID, by index
  std::optional<exec::VerdictCache> cache;

  // Forks the runners below (null: each starts on its own); destroyed after them.
  std::unique_ptr<exec::Zygote> zygote;
  // Trusted runners, lent one at a time to whichever slot needs a reference.
  std::mutex trusted_mutex;
  std::condition_variable trusted_free;
  std::vector<std::unique_ptr<exec::Runner>> trusted;
  std::vector<exec::Runner*> idle_trusted;
  std::vector<std::unique_ptr<exec::Runner>> slots;
  std::vector<std::unique_ptr<exec::Runner>> comparers;  // a trusted runner beside each slot (compare.py)

  // Declared before the pools: a queued timing's lease is released into it when they go.
  std::optional<exec::ReferenceStore> references;
  std::optional<exec::DiskGate> disk;  // jobs and references start when the disk has room for them
  // ... and when the device (the host's memory, on the CPU) has room for what they hold at peak.
  std::optional<exec::DiskGate> memory;
  std::uintmax_t memory_budget = 0;            // what the memory gate lets jobs hold at once
  std::atomic<std::size_t> memory_retries{0};  // jobs run again alone after running out of memory
  std::atomic<std::size_t> job_counter{0};

  // A task's reference timing (eager and torch.compile), asked for once its outputs exist and
  // filled into verdicts when it lands, so candidates are checked while the reference compiles.
  // Kept when the reference's files are trimmed: a recomputed reference is the same.
  std::mutex timings_mutex;
  std::map<std::string, std::shared_future<Json>> timings;  // keyed like references; its size: Engine::info

  WorkerPool candidates;  // one thread per slot
  WorkerPool timers;      // reference timings
  WorkerPool prefetch;    // references of a batch's tasks, ahead of the slots that will need them

  std::atomic<bool> closing{false};

  ~Impl() {
    closing = true;
    candidates.stop();
    prefetch.stop();
    timers.stop();
    slots.clear();
    comparers.clear();
    trusted.clear();
    zygote.reset();
    work_dir.close();  // nothing writes there any more
  }

  std::string slot_device(int slot) const {
    if (device != "cuda") return device;
    return fmt::format("cuda:{}", gpus > 0 ? slot % gpus : 0);
  }

  // A hung candidate holds its share of the GPU lock until it is killed (timeout_s); a timer waits
  // half that for exclusivity, then times anyway, marked as shared (timing.GpuLock).
  double lock_wait_s() const { return options.timeout_s / 2; }

  // Named after the GPU's UUID, not its index: two engines that number one GPU differently
  // (CUDA_VISIBLE_DEVICES) still share its lock.
  fs::path lock_path(const std::string& dev) const {
    const auto colon = dev.find(':');
    const std::size_t k = colon == std::string::npos ? 0 : std::stoul(dev.substr(colon + 1));
    const bool named = k < gpu_ids.size() && !gpu_ids[k].empty();
    return lock_dir / fmt::format("gpu-{}.lock", named ? gpu_ids[k] : fmt::format("index-{}", k));
  }

  Json versions() const {
    return {{"tritium", version()},
            {"python", hello.value("python", "")},
            {"torch", hello.value("torch", "")},
            {"triton", hello.value("triton", "")}};
  }

  std::string cache_key_for(const Task& task, const std::string& code) const {
    return exec::cache_key({{"task", task.source},
                            {"candidate", code},
                            {"profile", options.profile},
                            {"device", device == "cuda" ? device_info.value("name", std::string("cuda")) : "cpu"},
                            {"trials", options.trials},
                            {"static_check", options.static_check},
                            {"timing", options.timing},
                            {"unsafe_sandbox", options.unsafe_sandbox},
                            {"versions", versions()}});
  }

  // Trusted runner `i`, taken out of the idle ones (null when a request has it, which starts it
  // itself), to be started ahead of its first request, and given back.
  exec::Runner* claim_idle_trusted(std::size_t i) {
    if (i >= trusted.size()) return nullptr;
    std::lock_guard lock(trusted_mutex);
    auto it = std::find(idle_trusted.begin(), idle_trusted.end(), trusted[i].get());
    if (it == idle_trusted.end()) return nullptr;
    idle_trusted.erase(it);
    return trusted[i].get();
  }

  void return_trusted(exec::Runner* runner) {
    {
      std::lock_guard lock(trusted_mutex);
      idle_trusted.push_back(runner);
    }
    trusted_free.notify_one();
  }

  exec::Reply call_trusted(const Json& request, double timeout_s) {
    exec::Runner* runner = nullptr;
    {
      std::unique_lock lock(trusted_mutex);
      trusted_free.wait(lock, [&] { return !idle_trusted.empty(); });
      runner = idle_trusted.back();
      idle_trusted.pop_back();
    }
    exec::Reply reply;
    if (auto error = runner->ensure_started())
      reply = {exec::Reply::Kind::died, nullptr, error->message};
    else
      reply = runner->call(request, timeout_s);
    return_trusted(runner);
    return reply;
  }

  bool timed() const { return options.timing && device == "cuda"; }
  static std::string ref_key(const Task& task) { return sha256_hex(task.source).substr(0, 24); }

  // What both trusted requests about a task (its outputs, its timing) say of it.
  Json task_request(const std::string& op, const Task& task, const fs::path& dir, std::string ref_device = "") const {
    if (ref_device.empty()) ref_device = device == "cuda" ? "cuda:0" : "cpu";
    return {{"op", op},
            {"id", task.id},
            {"source", task.source},
            {"filename", task.origin.empty() ? task.id : task.origin},
            {"device", ref_device},
            {"seed", seed},
            {"dir", dir.string()},
            {"lock_path", lock_path(ref_device).string()},
            {"lock_wait_s", lock_wait_s()},
            {"timer_gather_s", options.timer_gather_s},
            {"timeout_s", kReferenceTimeoutS}};
  }

  // The outputs (trials and spot sets, written to `dir`); the timing is asked for apart.
  exec::Reference compute_reference(const Task& task, const fs::path& dir) {
    const auto tol = exec::tolerance_for(options.profile, "float32").value_or(exec::Tolerance{1e-4, 1e-4});
    const auto pass = disk->enter(references->largest());  // its size unknown yet: the largest so far
    Json request = task_request("reference", task, dir);
    request.update({{"trials", options.trials}, {"atol", tol.atol}});
    exec::Reply reply;
    std::uintmax_t reserved = 0;
    // The engine's side of the reference (ms), beside the reference's own phases: sizing it on the
    // meta device, waiting for its memory, and the call (a trusted runner's wait, its worker's start).
    Json engine_side = Json::object();
    for (const bool alone : {false, true}) {
      auto step = Clock::now();
      reserved = alone ? memory_budget : reference_memory(task);
      engine_side["engine_footprint"] = ms_since(step);
      step = Clock::now();
      const auto room = memory->enter(reserved);
      engine_side["engine_admission"] = ms_since(step);
      engine_side["engine_admitted_at"] = epoch_ms();
      step = Clock::now();
      reply = call_trusted(request, kReferenceTimeoutS + kBackstopS);
      engine_side["engine_call"] = ms_since(step);
      engine_side["engine_released_at"] = epoch_ms();
      if (alone ||
          !out_of_memory(reply.kind == exec::Reply::Kind::ok ? reply.body.value("error", std::string()) : reply.detail))
        break;
      ++memory_retries;
    }
    exec::Reference ref;
    ref.dir = dir;
    if (reply.kind != exec::Reply::Kind::ok) {
      ref.error = fmt::format("{}: the reference could not run: {}", task.origin, reply.detail);
    } else if (!reply.body.value("ok", false)) {
      const std::string stage = reply.body.value("stage", std::string("?"));
      const std::string error = reply.body.value("error", std::string());
      // The trusted runner's own failure (the task's code fails in a stage of its own): the host's.
      ref.transient = stage == "runner" && !out_of_memory(error);
      const std::string line = reply.body.contains("line") ? fmt::format(":{}", reply.body["line"].get<int>()) : "";
      ref.error =
          ref.transient
              ? fmt::format("{}: the reference could not run here: {} ({}); it runs again for the next candidate",
                            task.origin, error, work_space())
              : fmt::format("{}{}: the task's reference failed ({}): {}", task.origin, line, stage, error);
    } else {
      ref.ok = true;
      ref.body = reply.body;
      if (ref.body.contains("phases_ms") && ref.body["phases_ms"].is_object()) {  // beside its measured peak
        ref.body["phases_ms"]["mem.reserved_mib"] = static_cast<double>(reserved) / (1 << 20);
        ref.body["phases_ms"].update(engine_side);
      }
    }
    return ref;
  }

  // What a reference holds on its device at peak, as the task on the meta device tells it
  // (runner/footprint.py: the float64 check's tensors beside the trial's, the forward's and the
  // draw's temporaries), plus a tenth for the allocator's rounding and cached blocks and a GiB for
  // the context. Measured on an H100 (2026-12-07): 6 GiB elementwise tasks peaked at 36.0 GiB
  // (40.6 reserved so; the rule before, four times a trial's tensors, reserved 49), MSE and hinge
  // losses at 40.0 and 44.0 (45 so; 33 before). Short of it beside other jobs, a reference runs
  // again alone. Unknown (a task whose code does not run there): nothing reserved.
  std::uintmax_t reference_memory(const Task& task) {
    const exec::Reply reply = call_trusted(task_request("footprint", task, work), 120);
    if (reply.kind != exec::Reply::Kind::ok || !reply.body.value("ok", false) || !reply.body["peak_bytes"].is_number())
      return 0;
    const auto peak = reply.body["peak_bytes"].get<std::uintmax_t>();
    return peak + peak / 10 + (device == "cuda" ? std::uintmax_t{1} << 30 : 0);
  }

  // Computed once per task and engine (again only if trimmed meanwhile); concurrent slots wait for
  // the first one's result. Its files stay while the lease lives.
  exec::ReferenceStore::Lease reference_for(const Task& task) {
    const std::string key = ref_key(task);
    bool computed = false;
    auto ref = references->get(key, [&](const fs::path& dir) { return compute_reference(task, dir); }, &computed);
    if (computed && ref->ok && timed() && !options.lazy_reference_timing) start_timing(task, ref, key);
    return ref;
  }

  // Computes a task's reference ahead of its candidates' slots (prefetch threads), unless none of
  // `codes` would run: without this a task's candidates waited for its reference only once a slot
  // was free (12-19 s for a GPU-size task behind a batch's first items, H200 2026-12-03).
  void prefetch_reference(const Task& task, const std::vector<std::string>& codes) {
    if (closing) return;  // queued past its batch: nothing waits for it any more
    const bool runs = std::any_of(codes.begin(), codes.end(), [&](const std::string& code) {
      return !code.empty() && (!options.static_check || verify_code(code, task.source).valid());
    });
    if (runs) (void)reference_for(task);
  }

  void start_timing(const Task& task, const exec::ReferenceStore::Lease& ref, const std::string& key) {
    auto timing = std::make_shared<std::promise<Json>>();
    {
      std::lock_guard lock(timings_mutex);
      if (!timings.emplace(key, timing->get_future().share()).second) return;  // timed before a trim
    }
    timers.submit([this, timing, ref, request = task_request("time_reference", task, ref->dir)](int) {
      const std::uintmax_t reserved = timing_memory(ref->body);
      const auto queued = Clock::now();
      const auto room = memory->enter(reserved);
      const double admission_ms = ms_since(queued), admitted_at = epoch_ms();
      const exec::Reply reply = call_trusted(request, kReferenceTimeoutS + kBackstopS);
      // A reference that cannot be timed leaves its candidates untimed, with the reason.
      if (reply.kind == exec::Reply::Kind::ok && reply.body.value("ok", false)) {
        Json timed = reply.body.value("timing", Json());
        if (timed.is_object() && timed.contains("phases_ms") && timed["phases_ms"].is_object())
          timed["phases_ms"].update({{"mem.reserved_mib", static_cast<double>(reserved) / (1 << 20)},
                                     {"engine_admission", admission_ms},
                                     {"engine_admitted_at", admitted_at},
                                     {"engine_released_at", epoch_ms()}});
        timing->set_value(std::move(timed));
      } else {
        timing->set_value(Json{
            {"error", reply.kind == exec::Reply::Kind::ok ? reply.body.value("error", std::string()) : reply.detail}});
      }
    });
  }

  std::size_t reference_timings() {
    std::lock_guard lock(timings_mutex);
    return timings.size();
  }

  // The task's reference timing, still coming or landed; none when nothing is timed.
  std::shared_future<Json> timing_for(const Task& task) {
    std::lock_guard lock(timings_mutex);
    auto it = timings.find(ref_key(task));
    return it == timings.end() ? std::shared_future<Json>() : it->second;
  }

  Result<fs::path> prepare_job(const exec::Reference& ref, const std::string& code) {
    const fs::path job = work / "jobs" / std::to_string(job_counter++);
    std::error_code ec;
    fs::create_directories(job, ec);
    if (ec) return Error{fmt::format("cannot create {}: {}", job.string(), ec.message())};
    chmod(job.c_str(), 0700);
    // Checked: on a full disk an unchecked write left an empty candidate.py, and an honest kernel
    // was judged a runtime_error ("defines no class ModelNew").
    std::ofstream file(job / "candidate.py", std::ios::binary);
    file << code;
    file.close();
    if (!file) return Error{host_write_error(job / "candidate.py", std::strerror(errno))};
    if (auto ec = link_or_copy(ref.dir / "params.tt", job / "params.tt"))
      return Error{host_write_error(job / "params.tt", ec.message())};
    return job;
  }

  // The engine could not write one of its own files: the host's fault (most often its disk), not
  // the candidate's; the verdict is an error, and the same candidate is judged again when asked.
  std::string host_write_error(const fs::path& file, const std::string& why) const {
    return fmt::format("the engine could not write {}: {} ({})", file.string(), why, work_space());
  }

  // What a message about the host's failure says of the disk.
  std::string work_space() const {
    return fmt::format("the work directory {} has {} bytes free", work.string(), exec::free_bytes(work));
  }

  // What the candidate's sandbox hides (the work directory with every reference and slot, the
  // verdict cache) and shows read-only beyond the system and the runtime (the GPU locks).
  Json sandbox_spec(const fs::path& dir, int uid) const {
    Json spec = {{"dir", dir.string()},
                 {"hide", Json::array({work.string()})},
                 {"read_only", Json::array()},
                 {"uid", uid},
                 {"unsafe", options.unsafe_sandbox}};
    if (cache) spec["hide"].push_back(cache->file().parent_path().string());
    if (!lock_dir.empty()) spec["read_only"].push_back(lock_dir.string());
    return spec;
  }

  // A worker of the trusted runner enters a candidate's sandbox and reports what it applied: an
  // engine whose candidates could not be isolated refuses to start unless told to mark verdicts.
  std::optional<Error> probe_sandbox() {
    const fs::path dir = work / "jobs" / "probe";
    std::error_code ec;
    fs::create_directories(dir, ec);
    const bool root = geteuid() == 0;
    const exec::Reply reply = trusted[0]->call(
        {{"op", "sandbox_probe"}, {"device", device}, {"sandbox", sandbox_spec(dir, root ? kSandboxUidBase : 0)}}, 60);
    fs::remove_all(dir, ec);
    if (reply.kind == exec::Reply::Kind::ok && reply.body.value("ok", false)) {
      sandbox_report = reply.body.value("sandbox", Json());
      return std::nullopt;
    }
    const std::string why =
        reply.kind == exec::Reply::Kind::ok ? reply.body.value("error", std::string("no answer")) : reply.detail;
    return Error{
        fmt::format("candidates cannot be isolated here ({}); run as root, or where unprivileged user "
                    "namespaces are allowed (sysctl user.max_user_namespaces > 0, "
                    "kernel.apparmor_restrict_unprivileged_userns=0), or pass --unsafe-sandbox "
                    "(Engine(unsafe_sandbox=True)) to run them anyway with every verdict marked unsafe",
                    why)};
  }

  Json evaluate_request(int slot, const Task& task, const exec::Reference& ref, const fs::path& job,
                        const Json& channel) const {
    Json trials = Json::array();
    for (const auto& t : ref.body.value("trials", Json::array()))
      trials.push_back({{"index", t.value("index", 0)},
                        {"mode", t.value("mode", "eval")},
                        {"distribution", t.value("distribution", "task")},
                        {"variant_spec", t.value("variant_spec", Json())},
                        {"output_bytes", set_bytes(t.value("outputs", Json::array()))}});
    const std::string dev = slot_device(slot);
    const bool root = geteuid() == 0;
    Json sandbox = sandbox_spec(job, root ? kSandboxUidBase + slot : 0);
    sandbox["cpu_s"] = static_cast<int>(options.timeout_s * 2 + 30);
    sandbox["memory_bytes"] = static_cast<long long>(options.memory_gb * (1ll << 30));
    return {{"op", "evaluate"},
            {"filename", (job / "candidate.py").string()},
            {"device", dev},
            {"seed", seed},
            {"dir", job.string()},
            {"task", task.source},
            {"task_filename", task.origin.empty() ? task.id : task.origin},
            {"channel", channel},
            {"trials", trials},
            {"spots", ref.body.value("spots", 0)},
            {"init_inputs", ref.body.value("init_inputs", Json::array())},
            {"params", ref.body.value("params", Json::array())},
            {"timing",
             {{"enabled", options.timing},
              {"lock_path", lock_path(dev).string()},
              {"lock_wait_s", lock_wait_s()},
              {"gather_s", options.timer_gather_s}}},
            {"sandbox", sandbox},
            {"timeout_s", options.timeout_s}};
  }

  // Judges the candidate; a timed one gets `timing`, its reference's timing, to apply when it lands.
  void run_candidate(int slot, const Task& task, const std::string& code, Verdict& v,
                     std::shared_future<Json>& timing) {
    Json engine_phases = Json::object();  // where the engine's side of the job spent its time
    auto since = [&engine_phases, start = Clock::now()](const char* name) mutable {
      engine_phases[name] = engine_phases.value(name, 0.0) + ms_since(start);
      start = Clock::now();
    };
    // Both runners start on this thread, which lives as long as the engine (their parent-death
    // signal), and before the wait for the reference, which a prefetch thread may be computing.
    if (auto error = comparers[slot]->ensure_started()) {
      v.status = "error";
      v.message = "the comparer could not start: " + error->message;
      return;
    }
    const auto started = slots[slot]->ensure_started();
    since("engine.start");
    const auto lease = reference_for(task);
    since("engine.reference");
    const exec::Reference& ref = *lease;
    if (!ref.ok) {
      v.status = "error";
      v.message = ref.error;
      return;
    }
    const auto pass = disk->enter(ref.bytes);  // the job's own files: the code, linked parameters
    auto job = prepare_job(ref, code);
    auto make_channel = [&] {
      return device == "cuda" && job ? exec::Channel::create(channel_bytes(ref.body), channel_device_bytes(ref.body),
                                                             (*job / "outputs.sock").string())
                                     : exec::Channel::create(channel_bytes(ref.body));
    };
    auto channel = make_channel();
    if (!job || !channel) {
      v.status = "error";
      v.message = !job ? job.error().message : channel.error().message;
      return;
    }
    if (started) {
      exec::judge({exec::Reply::Kind::died, nullptr, started->message}, {}, ref.body, v);
    } else {
      const Verdict unjudged = v;
      for (const bool alone : {false, true}) {
        since("engine.prepare");
        const std::uintmax_t reserved = alone ? memory_budget : job_memory(ref.body, device == "cuda");
        const auto room = memory->enter(reserved);
        since("engine.admission");
        engine_phases["mem.job_reserved_mib"] = static_cast<double>(reserved) / (1 << 20);
        engine_phases["engine.admitted_at"] = epoch_ms();
        auto [reply, comparison] = run_job(slot, task, ref, *job, *channel);
        since("engine.job");
        engine_phases["engine.released_at"] = epoch_ms();
        exec::judge(reply, comparison, ref.body, v);
        add_phases(v, engine_phases, comparison, ref.body);
        if (alone || v.status == "correct" || !out_of_memory(v.message)) break;
        ++memory_retries;
        v = unjudged;
        if (auto again = make_channel()) channel = std::move(again);
      }
    }
    if (v.runtime_ms) {
      if (options.lazy_reference_timing) start_timing(task, lease, ref_key(task));  // once per task
      timing = timing_for(task);
    }
    if (!options.keep_files) {
      std::error_code ec;
      fs::remove_all(*job, ec);
    }
  }

  // The verdict's phases_ms: the worker's (judge put them there), the engine's, the comparer's and
  // its task's reference's (shared by the task's candidates: computed once).
  static void add_phases(Verdict& v, const Json& engine_phases, const exec::Reply& comparison, const Json& reference) {
    if (!v.phases_ms.is_object()) v.phases_ms = Json::object();
    v.phases_ms.update(engine_phases);
    const Json referenced = reference.value("phases_ms", Json::object());
    for (const auto& [name, ms] : referenced.items()) v.phases_ms["reference." + name] = ms;
    if (comparison.kind != exec::Reply::Kind::ok) return;
    const Json compared = comparison.body.value("phases_ms", Json::object());
    for (const auto& [name, ms] : compared.items()) v.phases_ms["compare." + name] = ms;
  }

  // The candidate's worker and its comparer, side by side on the job's channel: (the worker's
  // reply, the comparer's). The engine's ends of the channel close when the worker is done, so a
  // comparer still waiting for a set (the worker died, or failed before shipping) ends too.
  std::pair<exec::Reply, exec::Reply> run_job(int slot, const Task& task, const exec::Reference& ref,
                                              const fs::path& job, exec::Channel& channel) {
    exec::Runner& runner = *slots[slot];
    exec::Runner& comparer = *comparers[slot];
    const double limit = options.timeout_s + kBackstopS;
    Json compare = task_request("compare", task, ref.dir, slot_device(slot));
    compare.update({{"trials", ref.body.value("trials", Json::array())},
                    {"spots", ref.body.value("spots", 0)},
                    {"tolerances", tolerances()},
                    {"channel", channel.spec()},
                    {"timeout_s", options.timeout_s + kBackstopS / 2}});
    auto compared = std::async(std::launch::async, [&] { return comparer.call(compare, limit + kBackstopS); });
    auto worked = std::async(std::launch::async, [&, request = evaluate_request(slot, task, ref, job, channel.spec())] {
      return runner.call(request, limit);
    });
    // A comparer that ends first (it failed, or was killed) can no longer answer: the engine's ends
    // of the channel close then, so that a worker waiting for it sees the end of the stream at once
    // instead of at its timeout (the engine's ends kept it open: 120 s lost, H200 2026-12-02).
    bool closed = false;
    while (worked.wait_for(std::chrono::milliseconds(50)) != std::future_status::ready)
      if (!closed && compared.wait_for(std::chrono::seconds(0)) == std::future_status::ready) {
        channel.close();
        closed = true;
      }
    exec::Reply reply = worked.get();
    channel.close();
    exec::Reply comparison = compared.get();
    // A comparer that serves its slot's jobs in one process ends after a job that left its CUDA
    // context or memory in doubt: stopped here, it is started afresh for the next job.
    if (comparison.kind == exec::Reply::Kind::ok && comparison.body.value("runner_exits", false)) comparer.stop();
    return {std::move(reply), std::move(comparison)};
  }

  Json tolerances() const {
    Json all = Json::object();
    for (const char* dtype : {"float32", "float64", "float16", "bfloat16"})
      if (auto tol = exec::tolerance_for(options.profile, dtype)) all[dtype] = {tol->atol, tol->rtol};
    return all;
  }

  // An item's code (extracted from a response) and its cache key (empty without a cache): worked
  // out once, on the caller's thread, for the cache lookup and then the evaluation.
  struct Prepared {
    std::string code, key;
  };

  Prepared prepare(const EvalItem& item) const {
    Prepared p{item.is_response ? extract_response(item.code).code : item.code, {}};
    if (cache) p.key = cache_key_for(item.task, p.code);
    return p;
  }

  // The cached verdict of an item, relabelled for this item; cheap enough for the caller's thread.
  std::optional<Verdict> cached(const EvalItem& item, const Prepared& prepared) {
    if (!cache) return std::nullopt;
    const auto start = Clock::now();
    auto hit = cache->get(prepared.key);
    if (!hit) return std::nullopt;
    Verdict v = verdict_from_json(*hit);
    v.candidate_id = item.id;
    v.meta = item.meta;
    v.level = item.task.level;
    v.cache_hit = true;
    v.eval_ms = ms_since(start);
    return v;
  }

  // The verdict, finished unless its reference's timing is still coming: then `timing` holds it
  // and finish() is the caller's to do once it lands.
  Verdict evaluate_one(int slot, const EvalItem& item, const Prepared& prepared, std::shared_future<Json>& timing) {
    const auto start = Clock::now();
    Verdict v;
    v.candidate_id = item.id;
    v.task_id = item.task.id;
    v.level = item.task.level;
    v.device = device;
    v.profile = options.profile;
    v.meta = item.meta;
    v.unsafe = options.unsafe_sandbox;
    const std::string& code = prepared.code;
    if (code.empty()) {
      v.status = "invalid_syntax";
      v.message = "the response holds no Python code block";
      v.findings.push_back({"syntax.no_code", "error", 0, 0, v.message});
    } else if (options.static_check) {
      const Verification static_verdict = verify_code(code, item.task.source);
      v.findings = static_verdict.findings;
      if (!static_verdict.valid()) {
        v.status = static_verdict.status;
        for (const auto& f : static_verdict.findings)
          if (f.severity == "error") {
            v.message = fmt::format("line {}: {} ({})", f.line, f.message, f.rule);
            break;
          }
      }
    }
    if (v.status.empty()) {
      const auto static_findings = v.findings;
      run_candidate(slot, item.task, code, v, timing);
      v.findings.insert(v.findings.begin(), static_findings.begin(), static_findings.end());
    }
    v.eval_ms = ms_since(start);
    if (!timing.valid() || landed(timing)) finish(prepared, v, timing);
    return v;
  }

  static bool landed(const std::shared_future<Json>& f) {
    return f.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
  }

  // Applies the reference's timing (waiting for it), then caches the verdict.
  void finish(const Prepared& prepared, Verdict& v, std::shared_future<Json>& timing) {
    if (timing.valid()) exec::apply_reference_timing(timing.get(), v);
    timing = {};
    if (cache && v.status != "error") cache->put(prepared.key, to_json(v));
  }
};

Engine::Engine(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Engine::~Engine() = default;

namespace {

// The zygote that forks the engine's runners (runner.h), in `scratch`; null where it is turned off
// (TRITIUM_ZYGOTE=0: each runner starts on its own, the baseline of `engine_bench.py scale
// --zygote on,off`) or does not start (each runner then does, and the first reports what is wrong).
std::unique_ptr<exec::Zygote> start_zygote(const EngineOptions& options, const fs::path& scratch) {
  const char* setting = std::getenv("TRITIUM_ZYGOTE");
  if (setting && std::string_view(setting) == "0") return nullptr;
  auto zygote = std::make_unique<exec::Zygote>(options.python, options.device, scratch.string(),
                                               options.timing && options.device != "cpu");
  if (zygote->start()) return nullptr;
  return zygote;
}

}  // namespace

Result<std::unique_ptr<Engine>> Engine::create(EngineOptions options) {
  if (auto error = engine_options_error(options)) return Error{*error};
  // Past the options, a failure is the machine's (no runner, no sandbox, no disk): callers tell it apart.
  const auto machine = [](Error e) {
    e.environment = true;
    return e;
  };
  if (options.python.empty()) options.python = find_python();
  auto impl = std::make_unique<Impl>();
  auto step = Clock::now();
  const auto took = [&impl, &step](const char* name) {
    impl->startup_ms[name] = ms_since(step);
    step = Clock::now();
  };
  exec::reclaim_work_dirs(fs::temp_directory_path());  // left by engines killed outright
  auto work = exec::WorkDir::create(options.work_dir, options.keep_files);
  if (!work) return machine(work.error());
  impl->work = work->path();
  impl->work_dir = std::move(*work);
  impl->references.emplace(impl->work / "refs",
                           options.reference_cache_gb > 0
                               ? static_cast<std::uintmax_t>(options.reference_cache_gb * (1ull << 30))
                               : exec::default_reference_budget(impl->work));
  impl->disk.emplace([work = impl->work] { return exec::free_bytes(work); },
                     [references = &*impl->references] { references->shed(); }, std::uintmax_t{1} << 30);
  impl->seed = options.seed.value_or(fresh_seed());
  if (!options.cache.empty()) {
    auto cache = exec::VerdictCache::open(options.cache);
    if (!cache) return machine(cache.error());
    impl->cache.emplace(std::move(*cache));
  }
  took("work_dir");

  impl->zygote = start_zygote(options, impl->work / "zygote");
  took("zygote");
  if (impl->zygote) {  // where its start went, as it measured it (interpreter, imports)
    const Json zygote_steps = impl->zygote->hello().value("startup_ms", Json::object());
    for (const auto& [step, ms] : zygote_steps.items())
      if (ms.is_number()) impl->startup_ms["zygote." + step] = ms;
  }
  exec::Zygote* zygote = impl->zygote.get();
  RunnerOptions trusted{options.python, options.device, options.timeout_s, 0, "reference", 0};
  auto first = trusted;
  first.light_first = true;  // creation asks it only light things; its role's imports come after
  impl->trusted.push_back(std::make_unique<exec::Runner>(first, zygote));
  if (auto error = impl->trusted[0]->ensure_started()) return machine(*error);
  impl->hello = impl->trusted[0]->hello();
  took("first_runner");
  // Where the first runner's start went, as it measured it (interpreter, imports, device count).
  const Json runner_steps = impl->hello.value("startup_ms", Json::object());
  for (const auto& [step, ms] : runner_steps.items())
    if (ms.is_number()) impl->startup_ms["first_runner." + step] = ms;
  if (!impl->hello["triton"].is_string())
    return machine(
        Error{fmt::format("{} cannot import triton, so no candidate could run; install it there (pip install triton) "
                          "or point TRITIUM_PYTHON (--python) at an environment that has it",
                          options.python)});
  impl->device = impl->hello.value("device", std::string("cpu"));
  impl->gpus = impl->hello.value("cuda_devices", 0);
  for (int k = 0; impl->device == "cuda" && k < impl->gpus; ++k) {
    const exec::Reply info =
        impl->trusted[0]->call({{"op", "device_info"}, {"device", fmt::format("cuda:{}", k)}}, 120);
    if (info.kind != exec::Reply::Kind::ok) continue;
    if (k == 0) impl->device_info = info.body;
    impl->gpu_ids.resize(k + 1);
    if (info.body.value("uuid", Json()).is_string()) impl->gpu_ids[k] = info.body["uuid"].get<std::string>();
  }
  took("device_info");
  const bool gpu = impl->device == "cuda";
  if (gpu) {  // the GPU locks, readable by sandboxed uids
    auto lock_dir = make_lock_dir();
    if (!lock_dir) return machine(lock_dir.error());
    impl->lock_dir = *lock_dir;
    for (int k = 0; k < impl->gpus; ++k) {
      const auto lock = impl->lock_path(fmt::format("cuda:{}", k));
      for (const auto& file : {lock, fs::path(lock.string() + ".gate")}) {
        if (fs::exists(file)) continue;  // maybe another user's engine's, and held: leave it be
        std::ofstream{file};
        chmod(file.c_str(), 0644);
      }
    }
  }
  if (options.jobs <= 0) options.jobs = default_jobs(gpu);
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  trusted.device = impl->device;
  // A timed GPU reference spends seconds in torch.compile (CPU work) while every candidate of its
  // task waits for it: as many trusted runners as slots then, half as many otherwise.
  const int references = gpu && options.timing ? options.jobs : std::max(1, options.jobs / 2);
  // The later trusted runners start beside the slots, off the creation's path: they import Inductor
  // before their first request, which a reference timing's torch.compile would import in its worker.
  auto later = trusted;
  later.warm_compile = gpu && options.timing;
  for (int i = 1; i < references; ++i) impl->trusted.push_back(std::make_unique<exec::Runner>(later, zygote));
  for (auto& runner : impl->trusted) impl->idle_trusted.push_back(runner.get());
  RunnerOptions slot{
      options.python, impl->device, options.timeout_s, 0, "candidate", gpu ? 0 : std::max(1, cores / options.jobs)};
  for (int i = 0; i < options.jobs; ++i) {
    auto runner_options = slot;
    runner_options.device = impl->slot_device(i);
    impl->slots.push_back(std::make_unique<exec::Runner>(runner_options, zygote));
    auto comparer_options = trusted;
    comparer_options.device = runner_options.device;
    if (!options.fork_comparers) comparer_options.role = "comparer";  // its context kept across jobs
    impl->comparers.push_back(std::make_unique<exec::Runner>(comparer_options, zygote));
  }
  // What jobs may hold at once: as given, or most of the GPU's free memory (of the first GPU: slots
  // spread over GPUs alike), or of the host's on the CPU. A job alone always starts. Given where the
  // engine shares the GPU with a trainer, whose memory when the engine starts is not its peak.
  const double free_room =
      gpu ? impl->device_info.value("free_gb", impl->device_info.value("memory_gb", 0.0)) * 0.9 : physical_gb() * 0.7;
  const double room_gb = options.device_memory_gb > 0 ? options.device_memory_gb : free_room;
  impl->memory_budget = static_cast<std::uintmax_t>(room_gb * (1ull << 30)) *
                        static_cast<std::uintmax_t>(std::max(1, gpu ? impl->gpus : 1));
  impl->memory.emplace([room = impl->memory_budget] { return room; }, [] {}, 0);
  if (options.memory_gb <= 0) options.memory_gb = std::max(1.0, physical_gb() * 0.6 / options.jobs);
  impl->options = std::move(options);
  // On a GPU each slot's two runners start now, beside the sandbox probe: importing torch and
  // triton and creating CUDA contexts, 16 processes at once, took seconds of every first job.
  // The trusted runners too: a batch's references, computed before any candidate can run, waited
  // seconds for runners started at their first request. A slot's runners start side by side: one
  // after the other, a slot took 6-11 s to take its first job (H200, 2026-12-04).
  std::function<void(int)> warm;
  if (gpu)
    warm = [impl = impl.get()](int slot) {
      std::vector<exec::Runner*> runners{impl->comparers[slot].get(), impl->slots[slot].get()};
      exec::Runner* trusted = slot > 0 ? impl->claim_idle_trusted(slot) : nullptr;
      // Forked from the zygote, one at a time: the trusted runner first, lent out once it is up,
      // since a batch's references (which every job waits for) need one: lent with its slot's, the
      // first engine of a fresh H100's batch sized its first references 4-8 s late, all queued
      // behind the first runner (2026-12-07).
      if (trusted && impl->zygote) {
        exec::Runner::start_together({trusted});
        impl->return_trusted(trusted);
        trusted = nullptr;
      }
      if (trusted) runners.push_back(trusted);
      exec::Runner::start_together(runners);  // a failure is reported by the slot's first job
      if (trusted) impl->return_trusted(trusted);
    };
  impl->candidates.start(impl->options.jobs, warm);
  took("runners");
  if (auto refused = impl->probe_sandbox()) return machine(*refused);
  took("sandbox_probe");
  // Half the trusted runners at most time references, so outputs that candidates wait for still find one.
  if (impl->timed()) impl->timers.start(std::max(1, references / 2));
  impl->prefetch.start(std::max(1, references / 2));
  return std::unique_ptr<Engine>(new Engine(std::move(impl)));
}

std::vector<Verdict> Engine::evaluate(const std::vector<EvalItem>& items, const EvalProgress& progress) {
  std::vector<Verdict> verdicts(items.size());
  std::vector<Impl::Prepared> prepared(items.size());
  // Timed verdicts whose reference timing had not landed when they were judged: a slot moves on
  // to the next candidate instead of waiting for torch.compile, and they are finished at the end.
  std::vector<std::shared_future<Json>> timings(items.size());
  std::mutex mutex;
  std::condition_variable finished;
  std::size_t done = 0;
  std::map<std::string, std::pair<const Task*, std::vector<std::string>>> to_prefetch;  // by reference key
  std::vector<std::string> prefetch_order;
  // A candidate the batch holds twice (the same code for the same task) is judged once, and each
  // copy gets that verdict as a cache hit: RL's groups repeat samples (54 of an H100 step's 256
  // rollouts were copies of another), and each copy would cost a job's seconds.
  std::map<std::string, std::size_t> judged;                // task and code -> the item judged
  std::vector<std::pair<std::size_t, std::size_t>> copies;  // (item, the item whose verdict it takes)
  for (std::size_t i = 0; i < items.size(); ++i) {
    prepared[i] = impl_->prepare(items[i]);
    if (auto hit = items[i].rerun
                       ? std::nullopt
                       : impl_->cached(items[i], prepared[i])) {  // no queueing behind slow candidates for a repeat
      verdicts[i] = std::move(*hit);
      std::lock_guard lock(mutex);
      ++done;
      if (progress) progress(done, items.size(), verdicts[i]);
      continue;
    }
    if (!items[i].rerun) {
      const auto [first, fresh] = judged.try_emplace(Impl::ref_key(items[i].task) + sha256_hex(prepared[i].code), i);
      if (!fresh) {
        copies.emplace_back(i, first->second);
        continue;
      }
    }
    const std::string key = Impl::ref_key(items[i].task);
    auto& wanted = to_prefetch[key];
    if (!wanted.first) {
      wanted.first = &items[i].task;
      prefetch_order.push_back(key);
    }
    wanted.second.push_back(prepared[i].code);
    impl_->candidates.submit([&, i, submitted = Clock::now()](int slot) {
      const double queued_ms = ms_since(submitted);
      try {
        verdicts[i] = impl_->evaluate_one(slot, items[i], prepared[i], timings[i]);
        if (verdicts[i].phases_ms.is_object()) verdicts[i].phases_ms["engine.queued"] = queued_ms;
      } catch (const std::exception& e) {  // a bug must cost one verdict, not the process
        verdicts[i] = error_verdict(items[i].id, fmt::format("internal error: {}; please report it", e.what()));
      }
      std::lock_guard lock(mutex);
      ++done;
      if (progress) progress(done, items.size(), verdicts[i]);
      finished.notify_one();
    });
  }
  for (const auto& key : prefetch_order) {  // copies: a prefetch may outlive this call
    auto& [task, codes] = to_prefetch[key];
    impl_->prefetch.submit(
        [impl = impl_.get(), task = *task, codes = std::move(codes)](int) { impl->prefetch_reference(task, codes); });
  }
  {
    std::unique_lock lock(mutex);
    finished.wait(lock, [&] { return done + copies.size() == items.size(); });
  }
  for (std::size_t i = 0; i < items.size(); ++i)
    if (timings[i].valid()) impl_->finish(prepared[i], verdicts[i], timings[i]);
  for (const auto& [copy, first] : copies) {
    Verdict v = verdicts[first];
    v.candidate_id = items[copy].id;
    v.meta = items[copy].meta;
    v.cache_hit = true;
    v.eval_ms = 0;
    v.phases_ms = Json();  // its steps were the first's
    verdicts[copy] = std::move(v);
    if (progress) progress(++done, items.size(), verdicts[copy]);
  }
  return verdicts;
}

std::vector<Verdict> evaluate_items(Engine& engine, const Json& items, const Suite& tasks,
                                    const EvalProgress& progress) {
  std::vector<EvalItem> good;
  std::vector<std::size_t> positions;
  std::vector<Verdict> out(items.size());
  for (std::size_t i = 0; i < items.size(); ++i) {
    const std::string where = "item " + std::to_string(i);
    auto item = eval_item_from_json(items[i], tasks, where);
    if (!item) {
      out[i] = error_verdict(where, item.error().message);
      continue;
    }
    good.push_back(std::move(*item));
    positions.push_back(i);
  }
  auto verdicts = engine.evaluate(good, progress);
  for (std::size_t k = 0; k < verdicts.size(); ++k) out[positions[k]] = std::move(verdicts[k]);
  return out;
}

Json Engine::info() const {
  const auto& o = impl_->options;
  return {{"device", impl_->device},
          {"device_name", impl_->device_info.value("name", impl_->device == "cuda" ? "cuda" : "cpu")},
          {"gpus", impl_->gpus},
          {"jobs", o.jobs},
          {"profile", o.profile},
          {"trials", o.trials},
          {"seed", impl_->seed},
          {"static_check", o.static_check},
          {"timing", o.timing && impl_->device == "cuda"},
          {"lazy_reference_timing", o.lazy_reference_timing},
          {"reference_timings", impl_->reference_timings()},  // tasks whose references were timed (or are)
          {"timeout_s", o.timeout_s},
          {"memory_gb", o.memory_gb},
          {"reference_cache_gb", static_cast<double>(impl_->references->budget()) / (1ull << 30)},
          {"reference_bytes", impl_->references->bytes()},   // on disk now
          {"disk_waits", impl_->disk->waits()},              // jobs that waited for room on disk
          {"memory_waits", impl_->memory->waits()},          // ... for room in the device's memory
          {"memory_retries", impl_->memory_retries.load()},  // ... run again alone after an out-of-memory
          {"memory_budget_gb", static_cast<double>(impl_->memory_budget) / (1ull << 30)},  // jobs' device room
          {"cache", o.cache.empty() ? Json(nullptr) : Json(o.cache)},
          {"sandbox", impl_->sandbox_report},
          {"startup_ms", impl_->startup_ms},  // Engine::create's steps
          // The zygote's imports of every role, after the creation (null: none, or not yet done).
          {"zygote_set_up_ms", impl_->zygote ? impl_->zygote->set_up_ms() : Json(nullptr)},
          {"unsafe_sandbox", o.unsafe_sandbox},
          {"versions", impl_->versions()}};
}

}  // namespace tritium
