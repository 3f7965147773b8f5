"""What recording found: the device ops of a test phase or of a whole test, with their dtypes,
and which of those op:dtype pairs it reached only while generating its inputs.

One name for that last set everywhere: `input_op_dtypes`, the field of run_reporter.py's events
and of the evidence store (docs/select.md). It is what remains of `op_dtypes` once the pairs seen
in the test's own calls (`body_op_dtypes`, in any of its phases) are taken out, so it is derived
here and never kept apart."""


class OpRecord:
    """`ops`: "aten::add.Tensor" names; `op_dtypes`: "aten::add.Tensor:float32" pairs;
    `body_op_dtypes`: those of the pairs seen outside input generation."""

    def __init__(self, ops=(), op_dtypes=(), body_op_dtypes=()):
        self.ops = set(ops)
        self.op_dtypes = set(op_dtypes)
        self.body_op_dtypes = set(body_op_dtypes)

    @classmethod
    def from_observer(cls, entries):
        """From the C++ observer's entries, "aten::add.Tensor float32 @int64": the op's name,
        then its dtypes, `@` before one seen only while generating inputs."""
        record = cls()
        for entry in entries:
            op, *dtypes = entry.split(" ")
            record.ops.add(op)
            for d in dtypes:
                pair = f"{op}:{d.lstrip('@')}"
                record.op_dtypes.add(pair)
                if not d.startswith("@"):
                    record.body_op_dtypes.add(pair)
        return record

    @property
    def input_op_dtypes(self) -> set:
        """The pairs seen only while generating inputs."""
        return self.op_dtypes - self.body_op_dtypes

    def add(self, other: "OpRecord") -> None:
        """Joins another phase's record into this one: a pair seen in the test's own calls in
        one phase is no longer input-only."""
        self.ops |= other.ops
        self.op_dtypes |= other.op_dtypes
        self.body_op_dtypes |= other.body_op_dtypes

    def fields(self) -> dict:
        """The event fields, sorted: "ops", "op_dtypes", "input_op_dtypes"."""
        return {"ops": sorted(self.ops), "op_dtypes": sorted(self.op_dtypes),
                "input_op_dtypes": sorted(self.input_op_dtypes)}
