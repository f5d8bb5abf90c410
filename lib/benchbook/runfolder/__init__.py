"""What a run folder holds, below every stage that reads or writes one: its record (`records`:
`run.json`, the one module that reads and writes it), how its processes are told apart from a
stranger's (`liveness`), and where a container sees it (`RESULTS`). The analysis (logs/), the
environment's diff, the command builders (models/) and the runner (studies/) all need these; this
package needs nothing of them (standard library, pandas and `errors` only)."""

RESULTS = "/results"  # the run folder, as the container sees it
MLLOG = "mllog.txt"  # a run's MLPerf log (`:::MLLOG` lines), where its workload writes one: what `mlperf score` reads
