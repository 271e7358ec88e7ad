"""Diagnostic (not part of the suite): one process, the relu task at full size, a checked trial's
steps timed one by one, and the channel's chunk sizes; prints ms per step."""
import sys, time, json
import torch
sys.path.insert(0, "python")
from tritium.runner import inputs as ti
from tritium.runner.tasks import load_module
from tritium.runner.monitor import Monitor, install_launch_hook, recording
from tritium.runner.compare_kernel import slice_stats

dev = "cuda:0"
torch.cuda.set_device(0); torch.empty(1, device=dev)
task = load_module(open("examples/kernelbench_scale/tasks/01_relu.py").read(), "task.py")
mon = Monitor("examples/kernelbench_scale/solutions/01_relu.py"); install_launch_hook(mon)
cand = load_module(open("examples/kernelbench_scale/solutions/01_relu.py").read(), "examples/kernelbench_scale/solutions/01_relu.py", name="c")
model = cand.ModelNew(*task.get_init_inputs()).to(dev)
def t(label, f, rows):
    torch.cuda.synchronize(); s = time.perf_counter(); r = f(); torch.cuda.synchronize()
    rows.setdefault(label, []).append(round((time.perf_counter() - s) * 1e3, 1)); return r
rows = {}
for i in range(4):
    spec = {"index": i, "distribution": "normal" if i % 2 else "task", "variant": None}
    v = t("inputs", lambda: ti.trial_values(task, spec, 1, dev), rows)
    def poison():
        s = torch.empty(2 * v[0].numel() * 4, dtype=torch.uint8, device=dev); s.fill_(0xFF); del s
    t("poison", poison, rows)
    def call():
        with recording(mon), torch.no_grad():
            return model(*v)
    out = t("call (monitored)", call, rows)
    del out
    out = t("call (plain)", lambda: model(*v), rows)
    out2 = t("eager relu", lambda: torch.relu(v[0]), rows); del out2
    again = t("inputs again", lambda: ti.trial_values(task, spec, 1, dev), rows)
    t("identical", lambda: ti.identical(again[0], v[0]), rows)
    del again, v
    t("empty_cache", torch.cuda.empty_cache, rows)
    flat = out.reshape(-1)
    for half_mib in (256, 1024, 2048):
        n = half_mib << 18  # float32 elements
        buf = torch.empty(2 * n, dtype=torch.float32, device=dev)
        def stream():
            for k, s0 in enumerate(range(0, flat.numel(), n)):
                m = min(n, flat.numel() - s0); slot = k % 2
                buf[slot * n: slot * n + m].copy_(flat[s0: s0 + m]); torch.cuda.current_stream().synchronize()
                slice_stats(flat[s0: s0 + m], buf[slot * n: slot * n + m], 1e-4, 1e-4)
        t(f"stream+compare half {half_mib} MiB", stream, rows)
        del buf
    del out, flat
    torch.cuda.empty_cache()
for k, v in rows.items():
    print(f"{k:34} {v}")
