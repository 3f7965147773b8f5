"""The dispatch-mode recorder's helpers and the mode itself, alone, on the CPU and meta devices
(python/ootci_torch/recording_mode.py); test_discover.py covers it end to end on the reference
backend."""
import os
import sys

import pytest
import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))

from ootci_torch import recording_mode as rm  # noqa: E402
from ootci_torch.op_record import OpRecord  # noqa: E402


def test_on_device_looks_through_tensors_devices_strings_and_nesting():
    cpu, meta = torch.ones(1), torch.ones(1, device="meta")
    assert rm.on_device([cpu], "cpu")
    assert rm.on_device([1, [(meta, cpu)]], "cpu")
    assert rm.on_device([torch.device("cpu")], "cpu")
    assert rm.on_device(["cpu:0"], "cpu") and rm.on_device(["cpu"], "cpu")
    assert not rm.on_device([meta, torch.device("meta"), "meta:0", "cpuish", 3], "cpu")
    assert not rm.on_device([], "cpu")


def test_tensor_devices_and_the_kernel_a_call_runs():
    cpu, meta = torch.ones(1), torch.ones(1, device="meta")
    assert rm.tensor_devices([cpu, [meta]]) == {"cpu", "meta"}
    assert rm.tensor_devices([1, "cpu"]) == set()
    # The device's own key when a tensor is on it or when no argument is a tensor (a factory).
    assert rm.dispatch_key_of(([meta, cpu],), "meta", "Meta") == "Meta"
    assert rm.dispatch_key_of(((), ("meta",)), "meta", "Meta") == "Meta"
    # CPU tensors moved to the device run the CPU kernel; anything else is not the device's call.
    assert rm.dispatch_key_of(([cpu],), "meta", "Meta") == "CPU"
    assert rm.dispatch_key_of(([cpu, torch.ones(1, dtype=torch.int8).to("meta")],), "xla",
                              "XLA") is None


def test_mutates_tells_in_place_and_out_from_functional():
    assert rm.mutates(torch.ops.aten.add_.Tensor)
    assert rm.mutates(torch.ops.aten.add.out)
    assert not rm.mutates(torch.ops.aten.add.Tensor)


def test_composite_of_finds_the_composite_kernel_a_key_without_its_own_runs():
    found = rm.composite_of(torch.ops.aten.ones.default, "CPU")
    assert found == (torch._C.DispatchKey.CompositeExplicitAutograd, False)
    assert rm.composite_of(torch.ops.aten.ones.default, "CPU") is found  # cached
    assert rm.composite_of(torch.ops.aten.add.Tensor, "CPU") is None  # CPU has its own kernel


def test_the_mode_records_device_ops_and_those_inside_composite_kernels():
    mode = rm.OpRecordingMode("cpu")
    with mode:
        out = torch.ones(2) + 1
        torch.ones(2, device="meta") * 2  # another device: not recorded
    assert out.tolist() == [2.0, 2.0]  # the ops ran
    assert not mode.broken
    # ones has no CPU kernel of its own: its composite ran under the mode, so empty and fill_
    # inside it are recorded too.
    assert mode.ops == {"aten::ones", "aten::empty.memory_format", "aten::fill_.Scalar",
                        "aten::add.Tensor"}
    assert "aten::mul.Tensor" not in mode.ops


def test_an_op_exception_propagates_and_a_finished_mode_passes_through():
    mode = rm.OpRecordingMode("cpu")
    with mode:
        with pytest.raises(RuntimeError):
            torch.ones(2) @ torch.ones(3)
    assert "aten::ones" in mode.ops and not mode.broken
    mode.active = False
    with mode:
        torch.zeros(2)
    assert "aten::zeros" not in mode.ops


def test_input_op_dtypes_are_the_pairs_seen_only_in_input_generation_over_all_phases():
    # The observer marks with "@" a dtype an op had only while inputs were generated.
    setup = OpRecord.from_observer(["aten::mul.Tensor float32 @int64", "aten::rand @float32"])
    assert setup.ops == {"aten::mul.Tensor", "aten::rand"}
    assert setup.op_dtypes == {"aten::mul.Tensor:float32", "aten::mul.Tensor:int64",
                               "aten::rand:float32"}
    assert setup.input_op_dtypes == {"aten::mul.Tensor:int64", "aten::rand:float32"}
    # A pair the test's own calls reach in another phase is no longer input-only.
    call = OpRecord({"aten::mul.Tensor"}, {"aten::mul.Tensor:int64"}, {"aten::mul.Tensor:int64"})
    setup.add(call)
    assert setup.fields() == {
        "ops": ["aten::mul.Tensor", "aten::rand"],
        "op_dtypes": ["aten::mul.Tensor:float32", "aten::mul.Tensor:int64", "aten::rand:float32"],
        "input_op_dtypes": ["aten::rand:float32"]}


def test_the_mode_tells_input_generation_from_the_tests_own_calls():
    from ootci_torch import input_generation
    mode = rm.OpRecordingMode("cpu")
    with mode:
        with input_generation.generating_inputs():
            torch.zeros(2, dtype=torch.int64)
        torch.zeros(2) + 1
    assert {"aten::zeros:int64", "aten::zeros:float32"} <= mode.op_dtypes
    assert "aten::zeros:int64" not in mode.body_op_dtypes
    assert "aten::zeros:float32" in mode.body_op_dtypes
