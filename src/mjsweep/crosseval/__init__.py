"""`sweep evaluate --cross`: every trained policy on every variant of its sweep whose observation and
action spaces match, each policy in its own one-thread process, results kept per pair so that a
rerun does only what is missing."""
