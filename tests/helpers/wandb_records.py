"""Reading back what W&B wrote offline: a run-*.wandb file is a LevelDB-style log (32 KiB blocks of
records, each with a 7-byte header: crc32, length, type) after a 7-byte W&B header; every record is a
protobuf `Record` of wandb's own schema."""

from __future__ import annotations

import struct
from pathlib import Path

BLOCK = 32 * 1024
HEADER = 7
FULL, FIRST, MIDDLE, LAST = 1, 2, 3, 4


def records(path: Path) -> list:
    from wandb.proto import wandb_internal_pb2

    data = path.read_bytes()
    assert data[:4] == b":W&B", "a W&B transaction log"
    out, pending, pos = [], b"", HEADER
    while pos + HEADER <= len(data):
        left_in_block = BLOCK - pos % BLOCK
        if left_in_block < HEADER:  # the rest of a block too small for a header is padding
            pos += left_in_block
            continue
        _crc, length, kind = struct.unpack("<IHB", data[pos:pos + HEADER])
        payload = data[pos + HEADER:pos + HEADER + length]
        pos += HEADER + length
        if kind == 0 and length == 0:
            continue
        pending = payload if kind in (FULL, FIRST) else pending + payload
        if kind in (FULL, LAST):
            record = wandb_internal_pb2.Record()
            record.ParseFromString(pending)
            out.append(record)
    return out


def by_kind(path: Path) -> dict[str, list]:
    kinds: dict[str, list] = {}
    for record in records(path):
        kinds.setdefault(record.WhichOneof("record_type"), []).append(record)
    return kinds
