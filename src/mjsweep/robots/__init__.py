"""Robot models: variants, parametric edits, model files, envs."""
