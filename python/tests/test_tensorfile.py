"""Tensor files: Python round trips, and the reader's refusals (the C++ reader's twins)."""

import json
import struct

import pytest
import torch

from tritium.runner.tensorfile import DTYPES, MAGIC, TensorFileError, read_tensors, write_tensors


def sample(dtype: torch.dtype) -> torch.Tensor:
    if dtype == torch.bool:
        return torch.tensor([[True, False, True], [False, False, True]])
    if dtype.is_floating_point:
        special = [1.5, -2.0, float("inf"), float("-inf"), float("nan"), 0.0]
        if dtype != torch.bfloat16:
            special[0] = 65504.0  # float16's largest
        return torch.tensor(special, dtype=dtype).reshape(2, 3)
    info = torch.iinfo(dtype)
    return torch.tensor([[info.min, info.max, 0], [1, -1 if info.min < 0 else 2, 7]], dtype=dtype)


def same(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.dtype == b.dtype and a.shape == b.shape and torch.equal(a.view(torch.uint8), b.view(torch.uint8))


@pytest.mark.parametrize("name", list(DTYPES))
def test_each_dtype_round_trips_bit_for_bit(tmp_path, name):
    t = sample(DTYPES[name])
    path = tmp_path / "t.tt"
    write_tensors(path, [("x", t), ("scalar", t.reshape(-1)[0].clone()), ("empty", t[:0])])
    tensors, values = read_tensors(path)
    assert list(tensors) == ["x", "scalar", "empty"]
    assert same(tensors["x"], t)
    assert tensors["scalar"].shape == () and same(tensors["scalar"].reshape(1), t.reshape(-1)[:1])
    assert tensors["empty"].shape == (0, 3) and tensors["empty"].dtype == t.dtype
    assert values == {}


def test_layout_is_aligned_and_values_round_trip(tmp_path):
    path = tmp_path / "t.tt"
    values = {"count": 3, "values": {"in1": 7, "in2": [1.5, None, "x"]}}
    write_tensors(path, [("a", torch.ones(3)), ("b", torch.arange(5))], values)
    raw = path.read_bytes()
    assert raw[:8] == MAGIC
    (length,) = struct.unpack("<Q", raw[8:16])
    header = json.loads(raw[16 : 16 + length])
    assert [e["offset"] for e in header["tensors"]] == [0, 64]
    assert len(raw) == (16 + length + 63) // 64 * 64 + 64 + 64
    assert read_tensors(path)[1] == values


def test_non_contiguous_and_offset_inputs_are_written_as_they_read(tmp_path):
    base = torch.arange(24, dtype=torch.float32).reshape(4, 6)
    cases = [("t", base.t()), ("slice", base[1:3, ::2]), ("expanded", torch.tensor([1.0, 2.0]).expand(3, 2))]
    write_tensors(tmp_path / "t.tt", cases)
    tensors, _ = read_tensors(tmp_path / "t.tt")
    for name, t in cases:
        assert torch.equal(tensors[name], t) and tensors[name].is_contiguous()


def test_read_tensors_own_their_memory(tmp_path):
    write_tensors(tmp_path / "t.tt", [("a", torch.zeros(4)), ("b", torch.zeros(4))])
    tensors, _ = read_tensors(tmp_path / "t.tt")
    tensors["a"] += 1  # writable, and independent of the other tensor
    assert tensors["b"].sum() == 0 and tensors["a"].sum() == 4


def test_a_python_file_reads_back_with_the_same_bytes(tmp_path):
    torch.manual_seed(0)
    tensors = [(name, (torch.randn(7, 5) * 100).to(dtype)) for name, dtype in DTYPES.items()]
    write_tensors(tmp_path / "a.tt", tensors, {"seed": 0})
    back, values = read_tensors(tmp_path / "a.tt")
    write_tensors(tmp_path / "b.tt", list(back.items()), values)
    assert (tmp_path / "a.tt").read_bytes() == (tmp_path / "b.tt").read_bytes()
    for name, t in tensors:
        assert same(back[name], t)


def test_unsupported_dtypes_and_duplicate_names_are_refused(tmp_path):
    with pytest.raises(ValueError, match="'z'"):
        write_tensors(tmp_path / "t.tt", [("x", torch.ones(2)), ("z", torch.ones(2, dtype=torch.complex64))])
    with pytest.raises(ValueError, match="named twice"):
        write_tensors(tmp_path / "t.tt", [("x", torch.ones(2)), ("x", torch.ones(2))])
    deep = 0
    for _ in range(63):  # 0 inside 63 lists, "values" and the header: 65 levels
        deep = [deep]
    with pytest.raises(ValueError, match="the header allows 64 levels"):
        write_tensors(tmp_path / "t.tt", [], {"v": deep})
    write_tensors(tmp_path / "t.tt", [], {"v": deep[0]})  # the engine's limit, exactly
    assert read_tensors(tmp_path / "t.tt")[1] == {"v": deep[0]}


def build(entries: list[dict], data: bytes = b"\0" * 256, extra: dict | None = None) -> bytes:
    header = json.dumps({"tensors": entries, **(extra or {})}).encode()
    head = MAGIC + struct.pack("<Q", len(header)) + header
    return head + bytes((-len(head)) % 64) + data


def with_header(text: bytes) -> bytes:
    return MAGIC + struct.pack("<Q", len(text)) + text


GOOD = {"name": "x", "dtype": "float32", "shape": [2, 3], "offset": 0, "nbytes": 24}


@pytest.mark.parametrize(
    ("raw", "why"),
    [
        (b"TRITTNS2" + build([GOOD])[8:], "magic"),
        (b"TRITTNS1\x10", "magic"),
        (MAGIC + struct.pack("<Q", 1 << 40) + b"{}", "runs past the end of the file"),
        (with_header(b"[1, 2"), "not valid JSON"),
        (with_header(b"[1, 2]"), "not a JSON object"),
        (with_header(b'{"tensors": [], "values": {"x": NaN}}'), "not valid JSON"),
        (with_header(b"[" * 10000 + b"]" * 10000), "not valid JSON"),
        (build([], extra={"tensors": {}}), '"tensors" is missing'),
        (build([GOOD], extra={"values": [1]}), '"values" is not a JSON object'),
        (build([{**GOOD, "offset": 6400}]), "runs past the data region"),
        (build([{**GOOD, "nbytes": 20}]), "nbytes 20 is not numel 6 x itemsize 4"),
        (build([{**GOOD, "shape": [2, -3]}]), "non-negative int64"),
        (build([{**GOOD, "shape": [2.0, 3]}]), "non-negative int64"),
        (build([{**GOOD, "shape": [True, 6]}]), "non-negative int64"),
        (build([{**GOOD, "shape": [1 << 32, 1 << 32, 0], "nbytes": 0}]), "overflows int64"),
        (build([{**GOOD, "offset": 8}]), "not a multiple of 64"),
        (build([{**GOOD, "dtype": "complex64"}]), "unknown dtype"),
        (build([GOOD, {**GOOD, "offset": 64}]), "two tensors are named 'x'"),
        (build([GOOD, {**GOOD, "name": "y"}]), "overlap"),
        (build([{**GOOD, "offset": -64}]), '"offset" or "nbytes"'),
        (build([7]), "not a JSON object"),
        (with_header(b'{"tensors": [], "values": {"v": ' + b"[" * 63 + b"0" + b"]" * 63 + b"}}"), "deeper than 64"),
    ],
)
def test_malformed_files_are_refused(tmp_path, raw, why):
    path = tmp_path / "bad.tt"
    path.write_bytes(raw)
    with pytest.raises(TensorFileError) as info:
        read_tensors(path)
    assert why in str(info.value) and str(path) in str(info.value)


def test_every_truncation_fails_cleanly(tmp_path):
    path = tmp_path / "t.tt"
    write_tensors(path, [("a", torch.arange(6.0)), ("b", torch.arange(2))], {"n": 1})
    raw = path.read_bytes()
    for n in range(len(raw)):
        path.write_bytes(raw[:n])
        try:
            tensors, _ = read_tensors(path)
        except TensorFileError:
            continue
        assert n >= len(raw) - 48 and torch.equal(tensors["b"], torch.arange(2))
