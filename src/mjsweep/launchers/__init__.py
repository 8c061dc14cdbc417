"""How runs are started: the Launcher protocol and its implementations, each imported only when chosen."""
