# OpenReg, PyTorch's own out-of-tree example backend (test/cpp_extensions/open_registration_extension
# of the torch 2.6 bed's source package), built unchanged in that bed. Source this file after
# torch_suite.sh and torch_bed.sh; `openreg_dir` prints the folder to put on PYTHONPATH (it holds
# pytorch_openreg/ with its built _C.so), building it on first use.

openreg_dir() {
  local suite src key dir log
  suite=$(OOTCI_TORCH_BED=trixie torch_bed_suite) || return 1
  src="$suite/test/cpp_extensions/open_registration_extension"
  [[ -f $src/setup.py ]] || { echo "openreg: $src/setup.py is missing" >&2; return 1; }
  key=$( (cd "$src" && find . -type f -print0 | sort -z | xargs -0 sha256sum; torch_bed_trixie_key) |
    sha256sum | cut -c1-12)
  dir="$(ootci_cache_dir)/openreg/$key"
  if [[ -f $dir/.ootci-built ]]; then
    echo "$dir"
    return
  fi
  rm -rf "$dir.tmp" && mkdir -p "$(dirname "$dir")"
  cp -r "$src" "$dir.tmp"
  log="$dir.build.log"
  # OpenReg's setup.py compiles with -Werror, and torch 2.6's own headers trip GCC 14's
  # -Wdangling-reference (ATen/core/IListRef_inl.h, DispatchKeyExtractor.h); the flags setup.py
  # adds come after CFLAGS, so no -Wno-error could undo it. Turning that one warning off leaves
  # OpenReg's sources and its own flags, -Werror included, as they are.
  if ! (cd "$dir.tmp" && CFLAGS="-Wno-dangling-reference" OOTCI_TORCH_BED=trixie \
        torch_bed_python setup.py build_ext --inplace >"$log" 2>&1); then
    tail -n 20 "$log" >&2
    echo "openreg: building OpenReg in the torch 2.6 bed failed; the log is $log" >&2
    rm -rf "$dir.tmp"
    return 1
  fi
  rm -rf "$dir.tmp/build"
  touch "$dir.tmp/.ootci-built"
  rm -rf "$dir" && mv "$dir.tmp" "$dir"
  echo "$dir"
}
