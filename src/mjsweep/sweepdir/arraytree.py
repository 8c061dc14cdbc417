"""A tree of plain values and numpy arrays in one .npz file, read back without pickle (np.load with
allow_pickle=False): the exact state of a checkpoint (worker/exact.py).

The tree's structure is JSON, stored in the archive as the UTF-8 bytes of the array `tree`; each array in it
is the archive's array `a<i>`. JSON keeps dicts with string keys, lists, strings, ints of any size, floats
(exactly: Python writes the shortest repr that reads back the same), booleans and None; a tuple, an array and a
numpy scalar (kept with its dtype: a float32 stays one) are each written as a one-key object whose key no
other dict may use.
"""

from __future__ import annotations

import json
import zipfile
from typing import IO, Any

import numpy as np

TUPLE, ARRAY, SCALAR = "__tuple__", "__array__", "__scalar__"
MARKERS = (TUPLE, ARRAY, SCALAR)


def write(fh: IO[bytes], tree: Any) -> None:
    """`tree` into `fh` as an uncompressed .npz (arrays of objects are refused: they would need pickle)."""
    arrays: dict[str, np.ndarray] = {}

    def encode(value: Any) -> Any:
        if isinstance(value, np.ndarray | np.generic):
            if value.dtype.hasobject:
                raise TypeError("an array of Python objects cannot be stored without pickle")
            name = f"a{len(arrays)}"
            arrays[name] = np.asarray(value)
            return {SCALAR if isinstance(value, np.generic) else ARRAY: name}
        if isinstance(value, dict):
            if not all(isinstance(k, str) and k not in MARKERS for k in value):
                raise TypeError(f"a dict's keys must be strings other than {', '.join(MARKERS)}")
            return {k: encode(v) for k, v in value.items()}
        if isinstance(value, tuple):
            return {TUPLE: [encode(v) for v in value]}
        if isinstance(value, list):
            return [encode(v) for v in value]
        if value is None or isinstance(value, bool | int | float | str):
            return value
        raise TypeError(f"cannot store a {type(value).__name__}")

    structure = json.dumps(encode(tree)).encode()
    arrays["tree"] = np.frombuffer(structure, dtype=np.uint8)
    np.savez(fh, allow_pickle=False, **arrays)


def read(path: str) -> Any:
    """The tree write() wrote; raises ValueError (or an OSError) for a file that is not one."""
    try:
        with np.load(path, allow_pickle=False) as archive:
            arrays = {name: archive[name] for name in archive.files}
    except zipfile.BadZipFile as exc:
        raise ValueError(f"not an .npz file: {exc}") from exc
    if "tree" not in arrays:
        raise ValueError("no tree in the .npz file")

    def decode(value: Any) -> Any:
        if isinstance(value, dict):
            if len(value) == 1 and (key := next(iter(value))) in MARKERS:
                inner = value[key]
                if key == TUPLE:
                    return tuple(decode(v) for v in inner)
                return arrays[inner] if key == ARRAY else arrays[inner][()]
            return {k: decode(v) for k, v in value.items()}
        if isinstance(value, list):
            return [decode(v) for v in value]
        return value

    return decode(json.loads(arrays.pop("tree").tobytes().decode()))
