"""Workloads: scenario catalog, prompt sources, tokenizers, arrival schedules."""
