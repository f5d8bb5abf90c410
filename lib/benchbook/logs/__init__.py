"""Reading logs: a training log becomes tidy frames (one row per run, per logged iteration, per evaluation).

`textio` reads a file in chunks of whole lines, `ranks` undoes mpirun's rank tags, `parsers` holds one module
per log format, `assemble` folds a file's events into runs, `rules` says how a run's throughput is recomputed
and `analysis.analyze` puts it together. Nothing here launches a run or draws a report.
"""
