"""benchbook: reproducible deep-learning training benchmarks, from logs to published reports."""

from .analysis import Analysis, analyze
from .rules import Rule

__version__ = "0.1.0"
__all__ = ["Analysis", "Rule", "analyze", "__version__"]
