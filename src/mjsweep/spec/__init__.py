"""The sweep spec: YAML to a validated SweepSpec, each section's rules."""
