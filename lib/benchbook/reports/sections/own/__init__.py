"""A model's own sections: what one model's log records show beyond the throughput the rule recomputes.

MXNet's `benchmark.py` publishes the harmonic mean of per-epoch rates, so its page shows each epoch's rate
(`epoch_rates`) where the rule is per epoch; PyTorch's logger averages every iteration, the first ones
included, so its page shows how the first iterations pull that mean down (`iteration_rates`, which Mask
R-CNN's page shows too, with its running mean); Mask R-CNN logs a loss per interval and its components
(RPN, Fast R-CNN, mask, L2): `loss` and `loss_components`. Each module's `*_table` function reads
`report.analysis` (the tidy frames) and returns a frame; its `content` is what the page shows, under the
heading and paragraph the model's notebook gives, or None where the logs hold no such records.
"""
