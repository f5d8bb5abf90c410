"""MLPerf Training results: reading result files (`mllog`), the quality targets and the score
(`rules`), finding result folders in a results repository (`results`), the checks of mlperf-logging
(`checks`) and the `benchbook mlperf` command (`cli`)."""
