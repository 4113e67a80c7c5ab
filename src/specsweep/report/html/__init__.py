"""The HTML report: one self-contained page, its header, results, advice and building blocks."""
