"""Text for the terminal.

    terminal       text from outside (labels, errors, log tails) made safe to print or put in Markdown
    table          terminal tables fitted to the width, never cutting a value
    tracking       stages and steps of long library work (plan), for whoever listens
    bench_summary  the console summary of one benchmark run (sglang.bench_serving's layout)

The live displays while a command runs are specsweep.commands.progress (they read the experiment
and the design, which sit above this package).
"""
