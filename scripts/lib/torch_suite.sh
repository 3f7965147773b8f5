# The PyTorch test bed: Debian's torch plus the matching upstream test suite from Debian's source
# package. Source this file; `torch_suite_root` prints TORCH_ROOT, fetching and checking the suite
# on first use.

torch_suite_packages=(python3-torch libtorch-dev python3-pytest python3-numpy python3-yaml
  python3-hypothesis pybind11-dev ninja-build xz-utils)

ootci_cache_dir() {
  echo "${OOTCI_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/ootci}"
}

# apt-get source needs a deb-src entry; add one for the running release if there is none.
torch_suite_ensure_deb_src() {
  if grep -rqsE '^(deb-src|Types:.*deb-src)' /etc/apt/sources.list /etc/apt/sources.list.d/; then
    return
  fi
  local codename
  codename=$(. /etc/os-release && echo "$VERSION_CODENAME")
  cat >/etc/apt/sources.list.d/ootci-deb-src.sources <<SRC
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: $codename
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
  apt-get update -qq
}

# Prints the folder holding the upstream test/ tree of the installed python3-torch's source.
torch_suite_root() {
  local version src dsc
  version=$(dpkg-query -W -f='${source:Version}' python3-torch)
  if [[ -f "$(ootci_cache_dir)/pytorch-$version/.ootci-verified" ]]; then
    echo "$(ootci_cache_dir)/pytorch-$version"
    return
  fi
  src="$(ootci_cache_dir)/src"
  mkdir -p "$src"
  dsc="$src/pytorch_${version#*:}.dsc"
  if [[ ! -f "$dsc" ]]; then
    torch_suite_ensure_deb_src
    # Only the .dsc and the upstream tarball are needed; a missing Debian patch tarball is fine,
    # so apt's complaints about it are shown only when what we need did not arrive.
    local apt_log
    apt_log=$(cd "$src" && apt-get source --download-only -qq "pytorch=$version" 2>&1) || true
    if [[ ! -f "$dsc" ]]; then
      echo "${apt_log:-}" >&2
      echo "torch suite: could not download pytorch=$version source (.dsc missing)" >&2
      return 1
    fi
  fi
  torch_suite_unpack "$version"
}

# Checks the downloaded source of pytorch VERSION against its .dsc and unpacks its test/ tree
# into the cache, once; prints the folder.
torch_suite_unpack() {  # torch_suite_unpack VERSION
  local version=$1 cache src root orig dsc want got
  cache=$(ootci_cache_dir)
  src="$cache/src"
  root="$cache/pytorch-$version"
  if [[ -f "$root/.ootci-verified" ]]; then
    echo "$root"
    return
  fi
  dsc="$src/pytorch_${version#*:}.dsc"
  [[ -f "$dsc" ]] || { echo "torch suite: $dsc is missing" >&2; return 1; }
  orig=$(awk '/^Checksums-Sha256:/{f=1;next} /^[^ ]/{f=0} f && $3 ~ /orig\.tar/ {print $1, $3}' "$dsc")
  want=${orig%% *}
  orig="$src/${orig##* }"
  [[ -f "$orig" ]] || { echo "torch suite: $orig is missing" >&2; return 1; }
  got=$(sha256sum "$orig" | cut -d' ' -f1)
  if [[ "$got" != "$want" ]]; then
    echo "torch suite: $orig has sha256 $got, but $dsc says $want" >&2
    return 1
  fi
  rm -rf "$root.tmp" && mkdir -p "$root.tmp"
  tar -xf "$orig" -C "$root.tmp" --strip-components=1 --wildcards --no-wildcards-match-slash '*/test'
  echo "$want  $(basename "$orig")" >"$root.tmp/.ootci-verified"
  rm -rf "$root" && mv "$root.tmp" "$root"
  echo "$root"
}
