"""The experiment file: models, checks, templates, labels, argv, loading a plan, time estimates."""
