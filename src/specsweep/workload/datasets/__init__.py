"""Real prompts by domain: dataset loaders (Spec-Bench, MT-Bench, SPEED-Bench, HumanEval, GSM8K,
InstructCoder, ShareGPT, Hugging Face ``datasets``, JSONL) and weighted mixes of them.

See docs/experiments.md ("Datasets and domains").
"""

from specsweep.workload.datasets.formats import LOADERS, WHERE, Item, load_items
from specsweep.workload.datasets.mix import dataset_specs, split_counts
from specsweep.workload.datasets.ref import FILE_DATASETS, DatasetRef, clean_category

__all__ = [
    "FILE_DATASETS",
    "LOADERS",
    "WHERE",
    "DatasetRef",
    "Item",
    "clean_category",
    "dataset_specs",
    "load_items",
    "split_counts",
]
