"""Tensor files: how the trusted reference hands a candidate's side the task's perturbed parameters
(params.tt), which it loads into ModelNew. A file crosses from one process to another, so the
reader checks everything (magic, header size and depth, dtypes, shapes, offsets, file size). Raw
bytes go through uint8 views, which also carries bfloat16; numpy only lends the writer a view (no
copy) to write.
"""

import itertools
import json
import os
import struct

import torch

MAGIC = b"TRITTNS1"
ALIGN = 64
MAX_FILE_BYTES = 8 << 30
MAX_HEADER_BYTES = 64 << 20
MAX_JSON_DEPTH = 64  # containers around any header item; the engine copies "values" recursively
_MAX_NUMEL = (1 << 63) - 1

DTYPES = {
    "float64": torch.float64,
    "float32": torch.float32,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
    "int64": torch.int64,
    "int32": torch.int32,
    "int16": torch.int16,
    "int8": torch.int8,
    "uint8": torch.uint8,
    "bool": torch.bool,
}
_NAMES = {dtype: name for name, dtype in DTYPES.items()}


class TensorFileError(ValueError):
    pass


def _align(n: int) -> int:
    return (n + ALIGN - 1) // ALIGN * ALIGN


def _shallow(v) -> bool:
    level = [v]
    for _ in range(MAX_JSON_DEPTH + 1):
        level = [c for x in level if isinstance(x, (list, dict)) for c in (x.values() if isinstance(x, dict) else x)]
        if not level:
            return True
    return False


def _raw(t: torch.Tensor) -> memoryview:
    """The bytes of a contiguous CPU tensor, without copying them (multi-GB outputs exist)."""
    return memoryview(t.reshape(-1).view(torch.uint8).numpy())


def write_tensors(path, tensors: list[tuple[str, torch.Tensor]], values: dict | None = None) -> None:
    """Writes `tensors` (moved to the CPU, made contiguous) and the JSON-able `values`."""
    entries, blobs, offset = [], [], 0
    for name, t in tensors:
        dtype = _NAMES.get(t.dtype)
        if dtype is None or t.layout != torch.strided:
            raise ValueError(f"tensor {name!r}: {t.dtype} ({t.layout}) is not supported; use one of {list(DTYPES)}")
        if any(e["name"] == name for e in entries):
            raise ValueError(f"tensor {name!r} is named twice")
        blob = _raw(t.detach().to("cpu").contiguous())
        entries.append({"name": name, "dtype": dtype, "shape": list(t.shape), "offset": offset, "nbytes": len(blob)})
        blobs.append(blob)
        offset = _align(offset + len(blob))
    header = {"tensors": entries, "values": values or {}}
    if not _shallow(header):
        raise ValueError(f"values nest too deep: the header allows {MAX_JSON_DEPTH} levels")
    header = json.dumps(header, allow_nan=False).encode("utf-8")
    if len(header) > MAX_HEADER_BYTES:
        raise ValueError(f"the header is {len(header)} bytes, over the limit of {MAX_HEADER_BYTES}")
    with open(path, "wb") as f:
        f.write(MAGIC + struct.pack("<Q", len(header)) + header)
        f.write(bytes(_align(16 + len(header)) - 16 - len(header)))
        for blob in blobs:
            f.write(blob)
            f.write(bytes(_align(len(blob)) - len(blob)))


def _count(entry: dict, key: str):
    v = entry.get(key)
    return v if type(v) is int and v >= 0 else None


def _check_entry(e, index: int, region_size: int) -> tuple[str, str, list[int], int, int]:
    if not isinstance(e, dict):
        raise TensorFileError(f"tensor {index}: not a JSON object {{name, dtype, shape, offset, nbytes}}")
    name = e.get("name")
    if not isinstance(name, str):
        raise TensorFileError(f'tensor {index}: "name" is missing or not a string')
    where = f"tensor {index} ({name[:60]!r})"
    dtype, shape = e.get("dtype"), e.get("shape")
    if not isinstance(dtype, str) or dtype not in DTYPES:
        raise TensorFileError(f"{where}: unknown dtype {dtype!r}")
    if not isinstance(shape, list) or any(type(d) is not int or not 0 <= d <= _MAX_NUMEL for d in shape):
        raise TensorFileError(f"{where}: shape {shape!r} is not a list of non-negative int64")
    numel = 1
    for d in shape:
        numel *= d or 1  # the product of the non-zero dims must fit, wherever a 0 sits
    if numel > _MAX_NUMEL:
        raise TensorFileError(f"{where}: the shape's element count overflows int64")
    numel = 0 if 0 in shape else numel
    offset, nbytes = _count(e, "offset"), _count(e, "nbytes")
    if offset is None or nbytes is None:
        raise TensorFileError(f'{where}: "offset" or "nbytes" is missing or not a non-negative integer')
    itemsize = DTYPES[dtype].itemsize
    if nbytes != numel * itemsize:
        raise TensorFileError(f"{where}: nbytes {nbytes} is not numel {numel} x itemsize {itemsize}")
    if offset % ALIGN:
        raise TensorFileError(f"{where}: offset {offset} is not a multiple of {ALIGN}")
    if offset + nbytes > region_size:
        raise TensorFileError(f"{where}: offset {offset} + nbytes {nbytes} runs past the data region")
    return name, dtype, shape, offset, nbytes


def _parse_header(f, size: int) -> dict:
    head = f.read(16)
    if len(head) < 16 or head[:8] != MAGIC:
        raise TensorFileError("not a tensor file (no TRITTNS1 magic)")
    (length,) = struct.unpack("<Q", head[8:])
    if length > size - 16:
        raise TensorFileError(f"header length {length} runs past the end of the file")
    if length > MAX_HEADER_BYTES:
        raise TensorFileError(f"header length {length} is over the limit of {MAX_HEADER_BYTES}")
    try:
        header = json.loads(f.read(length).decode("utf-8"), parse_constant=_reject_constant)
    except (ValueError, RecursionError) as exc:
        raise TensorFileError(f"the header is not valid JSON ({exc})") from None
    if not _shallow(header):
        raise TensorFileError(f"the header nests deeper than {MAX_JSON_DEPTH} levels")
    if not isinstance(header, dict):
        raise TensorFileError('the header is not a JSON object {"tensors": [...], "values": {...}}')
    return header


def _reject_constant(name: str):
    raise ValueError(f"{name} is not JSON")


def read_tensors(path) -> tuple[dict[str, torch.Tensor], dict]:
    """The tensors (each owning its memory) and the values of a file; TensorFileError when malformed."""
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size > MAX_FILE_BYTES:
                raise TensorFileError(f"{size} bytes, over the limit of {MAX_FILE_BYTES} bytes")
            header = _parse_header(f, size)
            data_start = min(_align(f.tell()), size)
            tensors = header.get("tensors")
            if not isinstance(tensors, list):
                raise TensorFileError('the header\'s "tensors" is missing or not an array')
            entries = [_check_entry(e, i, size - data_start) for i, e in enumerate(tensors)]
            values = header.get("values", {})
            if not isinstance(values, dict):
                raise TensorFileError('the header\'s "values" is not a JSON object')
            _check_disjoint(entries)
            return {name: _read_one(f, data_start, *rest) for name, *rest in entries}, values
    except TensorFileError as exc:
        raise TensorFileError(f"{path}: {exc}") from None


def _check_disjoint(entries: list) -> None:
    names = set()
    for name, *_ in entries:
        if name in names:
            raise TensorFileError(f"two tensors are named {name[:60]!r}")
        names.add(name)
    spans = sorted((offset, offset + nbytes, name) for name, _, _, offset, nbytes in entries if nbytes)
    for (_, end, a), (start, _, b) in itertools.pairwise(spans):
        if start < end:
            raise TensorFileError(f"tensors {a[:60]!r} and {b[:60]!r} overlap")


def _read_one(f, data_start: int, dtype: str, shape: list[int], offset: int, nbytes: int) -> torch.Tensor:
    if nbytes == 0:
        return torch.empty(shape, dtype=DTYPES[dtype])
    buf = bytearray(nbytes)
    f.seek(data_start + offset)
    if f.readinto(buf) != nbytes:
        raise TensorFileError("the file shrank while being read")
    return torch.frombuffer(buf, dtype=torch.uint8).view(DTYPES[dtype]).reshape(shape)


def load_inputs(path: str, device: str) -> list:
    """A trial's or spot set's inputs, in order: tensors on `device`, other values as written."""
    tensors, meta = read_tensors(path)
    values = meta.get("values", {})
    out = []
    for i in range(int(meta.get("count", len(tensors)))):
        key = f"in{i}"
        out.append(tensors[key].to(device) if key in tensors else values.get(key))
    return out
