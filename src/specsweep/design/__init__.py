"""The adaptive design (``specsweep run --adaptive``): measure every (config, cell) once, measure
each config's run-to-run noise, then repeat only what is still undecided, until every cell is
decided, shown equivalent within a margin, or the budget is spent.

Pure and deterministic: ``types`` holds the data the orchestrator and the rules exchange, ``rules``
decides (per cell and pair: winner, equivalent, undecided) with an error guarantee that holds
however often the data are looked at, ``schedule`` chooses the next batch of runs. The impure
loop that launches servers and runs the batches is specsweep.design.loop; the report
reads the same rules back from the summary rows, so the run and its report always agree.
"""
