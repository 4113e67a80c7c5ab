"""Text for the terminal: outside text made safe, tables, stages, the bench summary."""
