"""Records which ops a test calls on the device (`ootci discover`, docs/select.md).

Used by run_reporter.py only with OOTCI_RECORD_OPS=1 (recording_config.py), which `ootci
discover` sets for its recording pass alone: that pass gives the ops, and a separate plain pass
gives the outcomes, so the recorder never changes the outcome of a run that counts.

An op counts only when one of its tensor arguments, its device argument or its result is on the
device, so the CPU reference computations inside a test do not pollute the set. An op is recorded
before it runs, so one that raises (an unimplemented kernel) is in the set. Ops are named
`aten::add.Tensor`, or `aten::ones` for a default overload. With each op come the dtypes of its
tensors on the device, arguments and results, over all its calls: `aten::add.Tensor:float32`
(`op_dtypes`), so a change that affects one dtype selects only the tests that ran the op with it.
Those a test reached only while generating its inputs (input_generation.py) are its
`input_op_dtypes` (op_record.py).

Two recorders, chosen by OOTCI_RECORDER:

- `observer` (the default, op_observer.py): a global RecordFunction callback in C++
  (csrc/op_observer.cpp, built once per source and torch version into the ootci cache, like the
  reference backend). It takes no part in dispatch, so a test runs the kernels and branches of a
  plain run, and it sees every call the dispatcher makes: inside CompositeExplicitAutograd
  kernels (`aten::ones` runs empty and fill_), inside the backend's own kernels and in autograd's
  backward on its device threads. Ops that decompose (CompositeImplicitAutograd, without a kernel
  of the device's own) are left out; their parts are recorded as they run. When it cannot be
  built or loaded, the dispatch mode below records instead (a warning says why).
- `mode` (recording_mode.py): a TorchDispatchMode. It sees an op after autograd and after
  CompositeImplicitAutograd decompositions, but not what a composite kernel dispatches
  internally, since the dispatcher takes the mode off the stack while it handles a call. So for a
  call that dispatches to a CompositeExplicitAutograd(NonFunctional) kernel on the device (no
  kernel of the device's own), the mode runs that kernel itself with the mode entered again, and
  records the device ops it reaches too (recursively). This changes how the kernel runs: its
  nested calls cross Python, and a boxed backend fallback can see different arguments than in a
  plain run. Being a mode at all changes paths too: ATen takes "tensor subclass" branches
  whenever a dispatch mode is active (isTensorSubclassLike), so cumprod's backward, for one,
  never calls `any` under it. Fine for ops evidence, not for outcomes, which is why discover
  takes those from its plain pass. If a composite kernel raises, the op runs again plainly,
  except an op that writes its arguments (in-place, out=), whose exception propagates, so its
  side effects never happen twice. An op its own kernel reaches again (detach) runs plainly.

Either way a recorder failure records nothing for that test phase (record None), and the test
runs on: an op's own exception propagates untouched.
"""
from ootci_torch import op_observer, recording_config
from ootci_torch.op_record import OpRecord


class Recording:
    """Context manager around one test phase. `record` is what it recorded (op_record.py), or
    None if nothing was; `ops`, `op_dtypes` and `input_op_dtypes` are its sorted lists, or None."""

    def __init__(self):
        self.record = None
        self._mode = None
        self._observing = False

    def _sorted(self, name):
        return None if self.record is None else sorted(getattr(self.record, name))

    ops = property(lambda self: self._sorted("ops"))
    op_dtypes = property(lambda self: self._sorted("op_dtypes"))
    input_op_dtypes = property(lambda self: self._sorted("input_op_dtypes"))

    def __enter__(self):
        try:
            if recording_config.recorder_kind() == "observer" and op_observer.available():
                op_observer.start(recording_config.device_type())
                self._observing = True
            else:
                self._enter_mode()
        except Exception:
            self._mode, self._observing = None, False
        return self

    def _enter_mode(self):
        from ootci_torch.recording_mode import OpRecordingMode  # imports torch
        mode = OpRecordingMode(recording_config.device_type())
        mode.__enter__()
        self._mode = mode

    def __exit__(self, exc_type, exc, tb):
        if self._observing:
            self._observing = False
            try:
                self.record = op_observer.stop()
            except Exception:
                pass  # it failed on the way: an incomplete set is not reported
            return False
        mode, self._mode = self._mode, None
        if mode is None:
            return False
        mode.active = False
        try:
            from torch.utils._python_dispatch import _get_current_dispatch_mode
            # Popping only our own mode: a test that left its own mode pushed keeps it, and ours
            # stays below it as a pass-through.
            if _get_current_dispatch_mode() is mode:
                mode.__exit__(None, None, None)
        except Exception:
            pass
        if not mode.broken:
            self.record = OpRecord(mode.ops, mode.op_dtypes, mode.body_op_dtypes)
        return False
