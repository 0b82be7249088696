"""Training data: synthetic tasks, file/hub loaders, prompt templates."""
