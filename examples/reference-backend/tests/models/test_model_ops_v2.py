"""Model-derived op tests: one variant per `edits.ops.include[]` item with a `sample_inputs_func`
under TestSpyreModelOps::test_model_ops_db in the plan's configs, each comparing the op on the
device with the op on the CPU (ootci_torch.model_ops). The file is named as Torch Spyre's, so its
model-op configs (${TORCH_DEVICE_ROOT}/tests/models/test_model_ops_v2.py) apply unchanged."""
from torch.testing._internal.common_device_type import instantiate_device_type_tests
from torch.testing._internal.common_utils import run_tests

from ootci_torch.model_ops import model_op_tests

TestSpyreModelOps = model_op_tests(__file__)
instantiate_device_type_tests(TestSpyreModelOps, globals())

if __name__ == "__main__":
    run_tests()
