"""A model declared in one module, outside the library (issue 46): a tiny language model whose NGC PyTorch logs
name it `arch : tinylm`, with an axis of its own (attention heads) and a tokens/s measure. Loaded as a plugin
(`BENCHBOOK_PLUGINS=tinylm`, with this folder importable), it reaches every table, label, plot and data file
with no line of benchbook naming it."""

from benchbook.core.catalog import Part
from benchbook.core.config import Axis
from benchbook.core.measures import TOKENS

HEADS = Axis("heads", int, "identity", "heads", "attention heads of the model")


def catalog_part() -> Part:
    return Part(axes=(HEADS,), measures=(TOKENS,), arches=(("pytorch", "tinylm", "tinylm"),),
                units=(("pytorch", "tinylm", "sequences/s"),), model_measures=(("pytorch", "tinylm", (TOKENS,)),))
