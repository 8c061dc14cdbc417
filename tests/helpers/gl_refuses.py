"""A stand-in render process whose GL backend cannot start, except the one named in GL_ACCEPTS:
tests the fallback from one backend to the next without a machine that lacks them."""

import os
import sys

from mjsweep.media.gl import GL_UNAVAILABLE

if __name__ == "__main__":
    backend = os.environ["MUJOCO_GL"]
    if backend != os.environ.get("GL_ACCEPTS"):
        print(f"cannot open a {backend} display")
        sys.exit(GL_UNAVAILABLE)
    print(f"drew with {backend}", file=sys.stderr)
