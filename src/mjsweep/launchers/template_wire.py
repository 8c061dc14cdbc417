"""The messages between the local launcher and its template process: one JSON object per line over a Unix
socket pair. The launcher sends {"argv", "cwd", "log", "env"}; the template answers {"ready", "threads"}
once, {"pid"} or {"error"} per request, in order, and {"exited", "status"} whenever a child ends."""

from __future__ import annotations

import json
import socket
from typing import Any


def send(sock: socket.socket, message: dict[str, Any]) -> None:
    sock.sendall(json.dumps(message).encode() + b"\n")


class Reader:
    """Whole messages out of a stream socket, however its bytes arrive."""

    def __init__(self, sock: socket.socket):
        self.sock = sock
        self._buffer = b""
        self.closed = False

    def read(self) -> list[dict[str, Any]]:
        """The messages that have arrived; blocks only if the socket does. Sets closed at end of stream."""
        try:
            chunk = self.sock.recv(65536)
        except (BlockingIOError, InterruptedError):
            return []
        except ConnectionResetError:
            chunk = b""
        if not chunk:
            self.closed = True
            return []
        self._buffer += chunk
        *lines, self._buffer = self._buffer.split(b"\n")
        return [json.loads(line) for line in lines if line]
