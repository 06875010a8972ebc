"""The metrics a reproduction study may tabulate or judge, by their summary.json names."""

METRIC_NAMES = ("bits_to_target", "bytes_to_target", "time_to_target_s", "rounds_to_target",
                "local_steps_to_target", "final_accuracy", "best_accuracy", "sim_time_s",
                "cost_to_target", "wire_bytes_to_target", "hop_bits_to_target", "rounds")
