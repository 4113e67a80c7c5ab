from specsweep.cli import entry

entry()
