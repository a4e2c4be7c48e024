"""A fixed-cost engine that answers the input "heap" with its process's
collector settings, "<objects frozen> <gen0 threshold>", so a test can read
them from a real worker (``tests.inference_worker.heap_engine:HeapEngine``)."""

import gc

from inference_worker.engines.fixed_cost import FixedCostEngine


class HeapEngine(FixedCostEngine):
    def input_of(self, seq):
        text = FixedCostEngine.input_of(seq)
        if text == "heap":  # the fixed-cost engine answers with its input reversed
            return f"{gc.get_freeze_count()} {gc.get_threshold()[0]}"[::-1]
        return text
