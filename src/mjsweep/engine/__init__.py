"""Executing a sweep: checks before launch, the lock, the scheduler and its decisions."""
