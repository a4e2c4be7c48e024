"""An engine with bugs on purpose, loaded by a real worker as a plug-in kind
(``tests.inference_worker.crashing_engine:CrashingEngine``): the input "crash in
prepare" raises a KeyError while the request is admitted (where llama.cpp's
tokenizer once raised UnicodeEncodeError), "crash in step" a ZeroDivisionError
inside the device call; anything else is the fixed-cost engine's reversal."""

from inference_worker.engines.fixed_cost import FixedCostEngine


class CrashingEngine(FixedCostEngine):
    def prepare(self, seq):
        if self.input_of(seq) == "crash in prepare":
            raise KeyError("token map")
        super().prepare(seq)

    def step(self, running, new):
        if any(self.input_of(seq) == "crash in step" for seq in running + new):
            return 1 // 0
        return super().step(running, new)
