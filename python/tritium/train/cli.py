"""Command lines from config dataclasses: one flag per field (--max-len for max_len), the field's
default as the flag's, required when the field has none."""

from __future__ import annotations

import argparse
import dataclasses
import typing


def parse_config(cls, argv: list[str] | None, doc: str):
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    hints = typing.get_type_hints(cls)
    for field in dataclasses.fields(cls):
        flag = "--" + field.name.replace("_", "-")
        if typing.get_origin(hints[field.name]) is typing.Literal:  # a choice argparse checks
            parser.add_argument(flag, choices=typing.get_args(hints[field.name]), default=field.default)
        elif field.default is dataclasses.MISSING:
            parser.add_argument(flag, required=True)
        elif field.type == "bool":
            parser.add_argument(flag, type=lambda s: s.lower() in ("1", "true", "yes"), default=field.default)
        else:
            parser.add_argument(flag, type={"int": int, "float": float}.get(field.type, str), default=field.default)
    return cls(**vars(parser.parse_args(argv)))
