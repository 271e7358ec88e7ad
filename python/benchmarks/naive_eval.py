"""The naive serial baseline the engine is measured against: KernelBench's way of evaluating one
candidate, in one fresh process. Import torch and triton, load the task and the candidate into
this process, build both models after the same seed, check 5 random trials with allclose, then
time 100 calls with CUDA events (after warm-up, same inputs each call). Prints one JSON line.
One departure, in the baseline's favour: get_inputs() runs with the device as the default device.
KernelBench draws on the host and copies; at KernelBench's sizes that alone took 70-80 s an item on
the H200 machine (a 4096 x 393216 torch.randn on the host is seconds, five trials and a copy each).

    python naive_eval.py TASK.py CANDIDATE.py [--device cuda|cpu] [--do-bench]

On the CPU (run with TRITON_INTERPRET=1) the same checks run and nothing is timed (runtime_ms null).
Its runtime is KernelBench's: each timed call starts from an idle GPU (a synchronize after each), so
it includes the host's launch of the call. --do-bench also times the candidate with
triton.testing.do_bench (an L2 flush before each call, no synchronize between them, the median),
the independent timing the engine's is checked against, after the harness's own work: `seconds`
does not count it, `do_bench_s` says what it took. It also times it with
triton.testing.do_bench_cudagraph (the calls replayed from one CUDA graph: no host launch between
them), the check for a kernel whose launching outlasts do_bench's flush: do_bench's time then
carries the host's launch, which the engine's head start leaves out (docs/engine.md, "Timing").
"""

import json
import sys
import time
import types

import torch


def load(path: str, name: str) -> types.ModuleType:
    module = types.ModuleType(name)
    module.__file__ = path
    with open(path) as f:
        exec(compile(f.read(), path, "exec"), module.__dict__)
    return module


def main(task_path: str, candidate_path: str, device: str = "cuda", do_bench: bool = False) -> dict:
    start = time.perf_counter()
    import triton  # noqa: F401 - part of the cost a fresh process pays

    task, candidate = load(task_path, "task"), load(candidate_path, "candidate")
    init = task.get_init_inputs()
    torch.manual_seed(0)
    model = task.Model(*init).to(device)
    torch.manual_seed(0)
    model_new = candidate.ModelNew(*init).to(device)
    with torch.no_grad():
        for trial in range(5):
            torch.manual_seed(trial)
            with torch.device(device):
                inputs = [x.to(device) if isinstance(x, torch.Tensor) else x for x in task.get_inputs()]
            expected, actual = model(*inputs), model_new(*inputs)
            if not torch.allclose(expected, actual, atol=1e-4, rtol=1e-4):
                return {"status": "incorrect", "seconds": time.perf_counter() - start}
        for _ in range(3):
            model_new(*inputs)
        if device == "cpu":
            return {"status": "correct", "runtime_ms": None, "seconds": time.perf_counter() - start}
        times = []
        for _ in range(100):
            begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            begin.record()
            model_new(*inputs)
            end.record()
            torch.cuda.synchronize()
            times.append(begin.elapsed_time(end))
    times.sort()
    result = {"status": "correct", "runtime_ms": times[len(times) // 2], "seconds": time.perf_counter() - start}
    if do_bench:
        import triton.testing

        began = time.perf_counter()
        with torch.no_grad():
            result["do_bench_ms"] = triton.testing.do_bench(lambda: model_new(*inputs), return_mode="median")
            try:
                result["do_bench_graph_ms"] = triton.testing.do_bench_cudagraph(
                    lambda: model_new(*inputs), return_mode="median"
                )
            except Exception as exc:  # noqa: BLE001 - a kernel that cannot be captured is timed by do_bench alone
                result["do_bench_graph_error"] = f"{type(exc).__name__}: {str(exc)[:200]}"
        result["do_bench_s"] = time.perf_counter() - began
    return result


if __name__ == "__main__":
    try:
        args = sys.argv[1:]
        device = "cuda"
        if "--device" in args:
            i = args.index("--device")
            device = args[i + 1]
            del args[i : i + 2]
        do_bench = "--do-bench" in args
        if do_bench:
            args.remove("--do-bench")
        result = main(args[0], args[1], device, do_bench)
    except Exception as exc:  # noqa: BLE001 - the baseline reports, as KernelBench does
        result = {"status": "runtime_error", "error": f"{type(exc).__name__}: {exc}"}
    print(json.dumps(result))
