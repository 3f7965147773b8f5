"""Builds dist/ootci-<version>-py3-none-manylinux_2_34_x86_64.whl from a built ootci.

scripts/package runs it. The wheel holds, as pip lays it out under an installation's prefix
(a venv, --prefix, ~/.local):
  bin/ootci                    the binary, its RPATH $ORIGIN/../lib/ootci
  lib/ootci/*.so*              every shared library it needs that the policy below does not allow
                               to come from the system, each with RPATH $ORIGIN
  share/ootci/python/          ootci_torch and shims: where the binary looks (backend/plan_env.h)
  <site-packages>/ootci.pth    puts share/ootci/python on the sys.path of that installation's
                               Python, so `import ootci_torch` works there too
This is what `auditwheel repair` does for an extension module (auditwheel is not in Debian 12).

`build_wheel.py --check FILE...` applies the policy's symbol-version limits to ELF files alone.
"""
import argparse
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import elf_versions  # noqa: E402

# The manylinux_2_34 policy (PEP 600; auditwheel's policy for AlmaLinux 9's glibc 2.34 and GCC
# 11): the libraries a wheel may take from the system, and the newest symbol version it may need
# from each family. The list is glibc's own libraries (never bundled: a piece of glibc from
# another release breaks against the system's) plus GCC's two runtimes; zlib, OpenSSL and the
# rest are bundled. Only what ootci can link is listed, not auditwheel's X11/GL/GLib entries.
POLICY = "manylinux_2_34"
SYSTEM_LIBRARIES = {
    "libc.so.6", "libm.so.6", "libdl.so.2", "librt.so.1", "libpthread.so.0", "libresolv.so.2",
    "libutil.so.1", "libnsl.so.1", "ld-linux-x86-64.so.2", "libgcc_s.so.1", "libstdc++.so.6",
}
NEWEST = {"GLIBC": (2, 34), "GLIBCXX": (3, 4, 29), "CXXABI": (1, 3, 13), "GCC": (7, 0, 0)}

# Symbols that GCC 12's libstdc++ re-versioned while keeping the old version with the same
# signature. Built on Debian 12, a reference to one names GLIBCXX_3.4.30, which GCC 11's
# libstdc++ (RHEL 9, UBI 9) lacks; unversioned, it binds to whichever the system has.
# condition_variable::wait: 3.4.30 only drops `noexcept`, for thread cancellation, which ootci
# and its libraries never use.
REVERSIONED = {
    "GLIBCXX_3.4.30": ["_ZNSt18condition_variable4waitERSt11unique_lockISt5mutexE"],
}


def parse_version(name):
    """GLIBC_2.34 -> ("GLIBC", (2, 34)); None for GLIBC_PRIVATE and the like."""
    m = re.fullmatch(r"([A-Z]+)_([0-9]+(?:\.[0-9]+)*)", name)
    return (m.group(1), tuple(int(x) for x in m.group(2).split("."))) if m else None


def too_new(need):
    parsed = parse_version(need.name)
    if need.weak or need.library not in SYSTEM_LIBRARIES or not parsed:
        return False
    family, version = parsed
    return family in NEWEST and version > NEWEST[family]


def symbols_of_version(path, version):
    out = subprocess.run(["objdump", "-T", str(path)], check=True, capture_output=True,
                         text=True).stdout
    return sorted({line.split()[-1] for line in out.splitlines() if f"({version})" in line})


def policy_violations(paths):
    """One line per symbol version that a file needs from the system beyond the policy."""
    found = []
    for path in paths:
        for need in elf_versions.version_needs(pathlib.Path(path).read_bytes()):
            if too_new(need):
                family = parse_version(need.name)[0]
                newest = ".".join(map(str, NEWEST[family]))
                symbols = ", ".join(symbols_of_version(path, need.name)) or "no symbol"
                found.append(f"{path}: needs {need.name} from {need.library}, newer than "
                             f"{POLICY} allows ({family}_{newest}); used by {symbols}")
    return found


def newest_glibc(paths):
    versions = [parse_version(n.name)[1] for p in paths
                for n in elf_versions.version_needs(pathlib.Path(p).read_bytes())
                if not n.weak and (parse_version(n.name) or ("",))[0] == "GLIBC"]
    return max(versions, default=(2, 2, 5))


def unversion_reversioned(path):
    """Clears REVERSIONED symbols' versions in `path`, then drops the needs no symbol uses."""
    needs = [n for n in elf_versions.version_needs(path.read_bytes()) if n.name in REVERSIONED]
    for need in needs:
        for symbol in REVERSIONED[need.name]:
            subprocess.run(["patchelf", "--clear-symbol-version", symbol, str(path)], check=True)
    for name in {n.name for n in needs}:
        data = bytearray(path.read_bytes())
        need = next(n for n in elf_versions.version_needs(data) if n.name == name)
        if need.index not in elf_versions.used_version_indexes(data):
            elf_versions.drop_unused_need(data, need)
            path.write_bytes(bytes(data))


def shared_libraries(binary):
    """(name, path) of every library `ldd` resolves for `binary`; fails on any not found."""
    out = subprocess.run(["ldd", str(binary)], check=True, capture_output=True, text=True).stdout
    libs = []
    for line in out.splitlines():
        m = re.match(r"\s*(\S+) => (.+) \(0x[0-9a-f]+\)$", line)
        if "not found" in line:
            sys.exit(f"build_wheel: {binary}: ldd: {line.strip()}")
        if m:
            libs.append((m.group(1), pathlib.Path(m.group(2))))
    return libs


def metadata(version, homepage, readme):
    return "\n".join([
        "Metadata-Version: 2.1",
        "Name: ootci",
        f"Version: {version}",
        "Summary: CI for PyTorch out-of-tree accelerator backends: CRCR relay and backend kit",
        f"Home-page: {homepage}",
        "License: BSD-3-Clause",
        "License-File: LICENSE",
        f"Project-URL: Source, {homepage}",
        "Classifier: License :: OSI Approved :: BSD License",
        "Classifier: Operating System :: POSIX :: Linux",
        "Classifier: Programming Language :: C++",
        "Classifier: Programming Language :: Python :: 3",
        "Classifier: Topic :: Software Development :: Testing",
        "Requires-Python: >=3.9",
        "Description-Content-Type: text/markdown",
        "",
        readme,
    ])


def build(args):
    version = args.version
    tag = f"py3-none-{POLICY}_x86_64"
    with tempfile.TemporaryDirectory(prefix="ootci-wheel-") as tmp:
        root = pathlib.Path(tmp) / f"ootci-{version}"
        data = root / f"ootci-{version}.data"
        scripts, libdir = data / "scripts", data / "data/lib/ootci"
        pydir = data / "data/share/ootci/python"
        for d in (scripts, libdir, pydir):
            d.mkdir(parents=True)

        binary = scripts / "ootci"
        shutil.copyfile(args.binary, binary)
        subprocess.run(["strip", "--strip-all", str(binary)], check=True)
        binary.chmod(0o755)  # pip keeps the executable bit of what the zip says
        bundled = []
        for name, path in shared_libraries(args.binary):
            if name in SYSTEM_LIBRARIES:
                continue
            shutil.copyfile(path, libdir / name)
            bundled.append(libdir / name)
        # DT_RPATH, not RUNPATH: it also serves the bundled libraries' own needs, and
        # LD_LIBRARY_PATH cannot swap in other copies.
        set_rpath = ["patchelf", "--force-rpath", "--set-rpath"]
        subprocess.run([*set_rpath, "$ORIGIN/../lib/ootci", str(binary)], check=True)
        for lib in bundled:
            subprocess.run([*set_rpath, "$ORIGIN", str(lib)], check=True)
        elves = [binary, *bundled]
        for elf in elves:
            unversion_reversioned(elf)
        problems = policy_violations(elves)
        if problems:
            sys.exit("build_wheel: " + "\n  ".join(["the wheel would not run where its tag says:"]
                                                    + [p.replace(tmp + "/", "") for p in problems]))
        # Laid out as pip installs it, every library resolves inside the wheel or to one the
        # policy allows.
        prefix = pathlib.Path(tmp) / "prefix"
        (prefix / "bin").mkdir(parents=True)
        (prefix / "lib").mkdir()
        shutil.copy2(binary, prefix / "bin/ootci")
        (prefix / "lib/ootci").symlink_to(libdir)
        for name, path in shared_libraries(prefix / "bin/ootci"):
            if name not in SYSTEM_LIBRARIES and path.resolve().parent != libdir.resolve():
                sys.exit(f"build_wheel: the staged ootci loads {name} from {path}, "
                         "outside the wheel")

        for package in ("ootci_torch", "shims"):
            shutil.copytree(pathlib.Path(args.python_dir) / package, pydir / package,
                            ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        # Relative to site-packages (<prefix>/lib/pythonX.Y/site-packages) in every install scheme
        # that has bin/ beside lib/: a venv, --user, --prefix, the system's.
        (root / "ootci.pth").write_text("../../../share/ootci/python\n")

        info = root / f"ootci-{version}.dist-info"
        info.mkdir()
        readme = pathlib.Path(args.readme).read_text()
        (info / "METADATA").write_text(metadata(version, args.homepage, readme))
        (info / "WHEEL").write_text(f"Wheel-Version: 1.0\nGenerator: ootci scripts/package\n"
                                    f"Root-Is-Purelib: false\nTag: {tag}\n")
        shutil.copyfile(args.license, info / "LICENSE")

        out = pathlib.Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        wheel = out / f"ootci-{version}-{tag}.whl"
        wheel.unlink(missing_ok=True)
        # `wheel pack` writes RECORD (each file's SHA-256 and size) and names the file from WHEEL.
        subprocess.run([sys.executable, "-m", "wheel", "pack", "--dest-dir", str(out), str(root)],
                       check=True, stdout=subprocess.DEVNULL)
        if not wheel.is_file():
            sys.exit(f"build_wheel: wheel pack wrote no {wheel}")
        glibc = ".".join(map(str, newest_glibc(elves)))
        print(f"build_wheel: {len(bundled)} libraries bundled; needs glibc {glibc}, "
              f"tagged {POLICY}", file=sys.stderr)
        print(wheel)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", nargs="+", metavar="FILE",
                        help="only check ELF files against the policy")
    parser.add_argument("--binary")
    parser.add_argument("--python-dir")
    parser.add_argument("--version")
    parser.add_argument("--homepage")
    parser.add_argument("--readme")
    parser.add_argument("--license")
    parser.add_argument("--out", default="dist")
    args = parser.parse_args()
    if args.check:
        problems = policy_violations(args.check)
        for p in problems:
            print(p, file=sys.stderr)
        sys.exit(1 if problems else 0)
    required = ("binary", "python_dir", "version", "homepage", "readme", "license")
    missing = [f"--{k.replace('_', '-')}" for k in required if not getattr(args, k)]
    if missing:
        parser.error("missing " + ", ".join(missing))
    build(args)


if __name__ == "__main__":
    main()
