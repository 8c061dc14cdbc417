"""Pictures and videos of robots. Everything that touches OpenGL runs in a process of its own
(gl.py starts it): MuJoCo picks its GL backend when it is first imported, and a backend that cannot
start breaks that import, so the launcher and the training workers never import a renderer."""
