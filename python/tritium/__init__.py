"""Tritium: train and evaluate LLMs that write fast, honest Triton kernels.

The work is done in C++ (the `tritium._core` extension, the same code as the `tritium` command);
this package is a thin face over it. The API is imported lazily so that the sandboxed runner
(`tritium.runner`) never loads the extension.
"""

_API = (
    "version",
    "load_suite",
    "check_suite",
    "verify",
    "extract",
    "synthesize",
    "make_suite",
    "synth_stats",
    "sft_data",
    "bench",
    "distill",
    "report",
    "rewards",
    "reward_config",
    "token_advantages",
    "metrics",
    "pass_at_k",
    "kernel_prompt",
    "task_in_prompt",
    "format_response",
    "Engine",
)


def __getattr__(name: str):
    if name in _API or name == "__version__":
        from . import api

        return api.version() if name == "__version__" else getattr(api, name)
    raise AttributeError(f"module 'tritium' has no attribute {name!r}")


__all__ = list(_API)
