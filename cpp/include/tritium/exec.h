// tritium/exec.h: running Python work in runner processes, away from the caller.
//
// The C++ side never imports torch. It starts `python -m tritium.runner`, a warm process that has
// imported torch and forks one worker per request, and talks to it over two dedicated pipes with
// length-prefixed JSON frames (never stdout: what a task prints cannot break the protocol). The
// parent enforces timeouts by killing the runner's whole process group; a crash, hang or
// `sys.exit` in a task costs that task a failed result, never the caller or the other tasks.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "tritium/core.h"

namespace tritium {

/// How to start runner processes.
struct RunnerOptions {
  std::string python;     // interpreter; empty = discover (see find_python)
  std::string device = "cpu";  // "cpu" or "cuda"
  double timeout_s = 60;  // per task, from request to answer
  unsigned seed = 0;      // torch.manual_seed before building the model and the inputs
};

/// The interpreter that runs the runner: $TRITIUM_PYTHON, else the python3 next to this program
/// (a virtual environment's bin/), else python3 on PATH.
std::string find_python();

/// Shape and dtype of one tensor, e.g. float32[16, 1024].
struct TensorInfo {
  std::vector<long long> shape;
  std::string dtype;
};

/// The outcome of running one task's reference: Model(*get_init_inputs())(*get_inputs()).
struct TaskCheck {
  std::string task_id;
  std::string origin;
  bool ok = false;
  // On failure: the stage that failed (load, init, inputs, forward, output, crash, timeout,
  // runner) and
  // a one-line reason naming the file, and the line where known.
  std::string stage;
  std::string error;
  std::vector<TensorInfo> inputs;
  std::vector<TensorInfo> outputs;
  double init_ms = 0;     // building the model
  double forward_ms = 0;  // median forward time (CPU wall clock or CUDA-synchronised)
  double wall_ms = 0;     // request to answer, as the parent saw it
  std::string output_tail;  // the last lines the task printed (stdout and stderr)
};

/// Called after each task with (index, total, result), for progress and streaming output.
using CheckProgress = std::function<void(std::size_t, std::size_t, const TaskCheck&)>;

/// A whole suite's check: a result per task, plus the items that could not even be loaded.
struct SuiteCheck {
  std::string suite;
  std::string device;
  std::vector<TaskCheck> tasks;
  std::vector<SuiteProblem> problems;
  double seconds = 0;
  std::size_t failed() const;
  std::size_t total() const { return tasks.size() + problems.size(); }
};

/// Runs every task's reference in runner processes, in suite order. Fails as a whole only when
/// the runner cannot start at all (no interpreter, torch missing): the error says how to fix it.
Result<SuiteCheck> check_suite(const Suite& suite, const RunnerOptions& options,
                               const CheckProgress& progress = {});

std::string to_string(const TensorInfo& info);  // "float32[16, 1024]"
Json to_json(const TensorInfo& info);
Json to_json(const TaskCheck& check);
Json to_json(const SuiteCheck& check);  // {suite, device, tasks, problems, summary}

}  // namespace tritium
