"""A minimal stand-in for the `expecttest` package, which Debian does not ship.

PyTorch's test harness (torch.testing._internal.common_utils) needs `ACCEPT` and a `TestCase` with
`assertExpectedInline` / `assertExpectedRaisesInline`. Accepting new output would rewrite upstream
test files, which ootci never does, so EXPECTTEST_ACCEPT is refused instead of honoured.
"""
import os
import unittest

ACCEPT = os.environ.get("EXPECTTEST_ACCEPT") not in (None, "", "0")

_HELP = "expecttest stand-in: upstream test files are never rewritten, so EXPECTTEST_ACCEPT is not supported"


class TestCase(unittest.TestCase):
    longMessage = True

    def assertExpectedInline(self, actual, expect, skip=0):
        if ACCEPT:
            raise RuntimeError(_HELP)
        self.assertMultiLineEqualMaybeCppStack(expect, actual)

    def assertExpectedRaisesInline(self, exc_type, callable, expect, *args, **kwargs):
        try:
            callable(*args, **kwargs)
        except exc_type as e:
            self.assertExpectedInline(str(e), expect, skip=1)
            return
        self.fail(msg="Did not raise when expected to")

    def assertMultiLineEqualMaybeCppStack(self, expect, actual, *args, **kwargs):
        # Like expecttest: a C++ stack appended to the actual text is ignored.
        self.assertGreaterEqual(len(actual), len(expect), *args, **kwargs)
        self.assertMultiLineEqual(expect, actual[:len(expect)], *args, **kwargs)
