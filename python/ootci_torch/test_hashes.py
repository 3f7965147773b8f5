"""Content hashes of upstream test functions, for `ootci select delta` (docs/select.md).

    python -m ootci_torch.test_hashes ROOT [FILES...] [-o OUT]

FILES are relative to ROOT (default: every test/**/test_*.py). Prints (or writes to OUT):

    {"tests":   {"test/test_x.py::Class::method": sha256, "test/test_x.py::function": sha256},
     "helpers": {"test/test_x.py": sha256},
     "errors":  {"test/test_y.py": "SyntaxError: ..."}}

A test is a `def test_*` (or `async def`) at module level or directly inside a module-level class,
including PyTorch's device-generic templates (`TestViewOps::test_view`), so ids match the config
names ("bases") of the variants that run. Its hash covers `ast.unparse` of the function with its
decorators: comments and formatting do not count, code and docstrings do.

"helpers" hashes everything else in the file (imports, helper functions and classes, class
attributes, setUp, the instantiate_device_type_tests calls) with the test functions taken out. When
it differs between two trees, every test of the file counts as changed ("file-level helpers
changed"): tests share their file's helpers, and which test uses which helper is not worked out.
Adding or removing a test does not change it.
"""
import argparse
import ast
import hashlib
import json
import os
import sys


def _is_test(node) -> bool:
    return isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test")


def _digest(node) -> str:
    return hashlib.sha256(ast.unparse(node).encode("utf-8")).hexdigest()


def hash_source(relpath: str, source: str):
    """({test id: hash}, helpers hash) of one file's source; raises SyntaxError."""
    tree = ast.parse(source, filename=relpath)
    tests = {}
    skeleton = []
    for node in tree.body:
        if _is_test(node):
            tests[f"{relpath}::{node.name}"] = _digest(node)
            continue
        if isinstance(node, ast.ClassDef):
            kept = []
            for member in node.body:
                if _is_test(member):
                    tests[f"{relpath}::{node.name}::{member.name}"] = _digest(member)
                else:
                    kept.append(member)
            node.body = kept or [ast.Pass()]
        skeleton.append(node)
    tree.body = skeleton
    return tests, _digest(tree)


def test_files(root: str):
    out = []
    for folder, dirs, files in os.walk(os.path.join(root, "test")):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(files):
            if name.startswith("test_") and name.endswith(".py"):
                out.append(os.path.relpath(os.path.join(folder, name), root))
    return sorted(out)


def hash_tree(root: str, files=None) -> dict:
    result = {"tests": {}, "helpers": {}, "errors": {}}
    for relpath in files or test_files(root):
        try:
            with open(os.path.join(root, relpath), encoding="utf-8", errors="surrogateescape") as f:
                source = f.read()
            tests, helpers = hash_source(relpath, source)
        except (OSError, SyntaxError, ValueError) as e:
            result["errors"][relpath] = f"{type(e).__name__}: {e}"
            continue
        result["tests"].update(tests)
        result["helpers"][relpath] = helpers
    return result


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ootci_torch.test_hashes", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("root")
    parser.add_argument("files", nargs="*")
    parser.add_argument("-o", "--output")
    args = parser.parse_intermixed_args(argv)
    if not os.path.isdir(args.root):
        print(f"{args.root}: not a folder", file=sys.stderr)
        return 2
    text = json.dumps(hash_tree(args.root, args.files), sort_keys=True)
    if args.output:
        with open(args.output, "w", encoding="utf-8") as f:
            f.write(text)
    else:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
