"""`sweep` on a real pseudo-terminal of a given width, as a person at a terminal sees it."""

from __future__ import annotations

import fcntl
import os
import pty
import select
import struct
import subprocess
import termios

from .commands import sweep_exe

WAIT = 600.0  # generous: a bound on hanging, never on speed


def on_terminal(*args: str, env: dict[str, str], columns: int = 120) -> tuple[int, str]:
    """`sweep ARGS` with a pseudo-terminal of `columns` as its stdin, stdout and stderr; (exit code, output)."""
    full_env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "COLUMNS", "LINES", "FORCE_COLOR")}
    full_env.update(TERM="xterm-256color", **env)
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, columns, 0, 0))
    proc = subprocess.Popen([sweep_exe(), *args], stdin=slave, stdout=slave, stderr=slave, env=full_env)
    os.close(slave)
    chunks = []
    try:
        while select.select([master], [], [], WAIT)[0]:
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not data:
                break
            chunks.append(data)
    finally:
        os.close(master)
        if proc.poll() is None:
            proc.kill()
    return proc.wait(), b"".join(chunks).decode("utf-8", errors="replace")
