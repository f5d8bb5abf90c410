"""Reading logs: a training log becomes tidy frames (one row per run, per logged iteration, per evaluation).

`logfiles` finds the logs (and reads what their names say), `textio` reads a file in chunks of whole
lines with mpirun's rank tags undone, `parsers` holds one module per log format (and `scanning`, the
loop and the events they share), `assemble` folds a file's events into runs, `rules` says how a run's
throughput is recomputed and applies it to one run, and `analysis.analyze` puts it together. Nothing
here launches a run or draws a report.
"""
