"""Running studies: a study file becomes exact commands, run folders and run records.

`study` is the schema of a study file (`study_limits`, `core.yamlfile`: what a file may ask), `commands` the argv of
each run, `launchers` one module per way of starting processes (local, mpirun, horovodrun, Slurm), `checks`
what is verified before a run, `runner` runs them, `records` owns `run.json`, `failures` and `liveness` say how a
run ended and whose processes are whose.
"""
