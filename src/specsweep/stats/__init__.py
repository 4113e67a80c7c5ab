"""Pure statistics: basic, noise (incl. launches), compare, sequential, planning."""
