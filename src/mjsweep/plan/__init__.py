"""The plan: runs expanded from the spec, their start order, what each invocation does."""
