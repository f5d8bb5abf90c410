"""MLPerf Training results: reading result files (`mllog`), the quality targets and the score
(`rules`), finding result folders in a results repository (`results`) and sweep points in a benchbook
study folder (`runs`), the published scores (`published`), reproducing a result with the submitter's
implementation (`launch`), the checks of mlperf-logging (`checks`) and the `benchbook mlperf` command
(`cli`)."""
