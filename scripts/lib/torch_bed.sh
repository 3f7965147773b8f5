# The PyTorch test beds. Source this file (after torch_suite.sh).
#
#   OOTCI_TORCH_BED=debian12  (default) Debian 12's python3-torch 1.13.1 on this machine
#   OOTCI_TORCH_BED=trixie    Debian 13's python3-torch 2.6.0 in a root folder built with
#                             mmdebstrap under ootci's cache, which test processes enter through
#                             `ootci chroot` (backend.root in ootci.yaml, docs/run.md)
#
# torch_bed_root   prints the root folder of the bed ("/" for debian12), building it on first use
# torch_bed_suite  prints TORCH_ROOT: the upstream test suite matching the bed's torch
# torch_bed_python runs /usr/bin/python3 of the bed with the given arguments (cwd, /tmp, the
#                  cache and this checkout visible at the same paths)

torch_bed_name() {
  local bed=${OOTCI_TORCH_BED:-debian12}
  case $bed in
    debian12 | trixie) echo "$bed" ;;
    *) echo "torch bed: OOTCI_TORCH_BED=$bed is not a bed; use debian12 (torch 1.13) or trixie (torch 2.6)" >&2
       return 1 ;;
  esac
}

# What the trixie root holds. Changing this list changes the root's key, so the next run builds
# a new root and leaves the old one to `rm -rf` (its path is printed).
torch_bed_trixie_packages=(python3-torch libtorch-dev python3-pytest python3-hypothesis python3-expecttest
  python3-numpy python3-yaml python3-setuptools python3-dev python3-venv python3-pip g++ pybind11-dev
  ninja-build git)
torch_bed_trixie_mirror=${OOTCI_DEBIAN_MIRROR:-http://deb.debian.org/debian}
torch_bed_trixie_torch=2.6.0+dfsg-7  # the python3-torch whose source package the suite comes from

torch_bed_trixie_key() {
  printf '%s\n' trixie "$torch_bed_trixie_mirror" "$torch_bed_trixie_torch" "${torch_bed_trixie_packages[@]}" |
    sha256sum | cut -c1-12
}

torch_bed_root() {
  local bed
  bed=$(torch_bed_name) || return 1
  [[ $bed == debian12 ]] && { echo /; return; }
  local beds root
  beds="$(ootci_cache_dir)/beds"
  root="$beds/trixie-$(torch_bed_trixie_key)"
  if [[ -f "$root/.ootci-complete" ]]; then
    echo "$root"
    return
  fi
  if ((EUID != 0)); then
    echo "torch bed: building the Debian 13 root needs root (mmdebstrap, chroot); run as root, or use OOTCI_TORCH_BED=debian12" >&2
    return 1
  fi
  if ! command -v mmdebstrap >/dev/null; then
    echo "torch bed: mmdebstrap is missing; install it with: apt-get install mmdebstrap (scripts/setup does)" >&2
    return 1
  fi
  mkdir -p "$beds"
  local free_kb need_kb=$((3 * 1024 * 1024))
  free_kb=$(df -Pk "$beds" | awk 'NR==2 {print $4}')
  if ((free_kb < need_kb)); then
    echo "torch bed: $beds has $((free_kb / 1024)) MiB free; the Debian 13 root needs 3 GiB. Free space there, or set OOTCI_CACHE_DIR to a larger disk" >&2
    return 1
  fi
  # Only one builder at a time; whoever waited finds the root complete.
  exec {lock}>"$beds/.lock"
  flock "$lock"
  if [[ ! -f "$root/.ootci-complete" ]]; then
    rm -rf "$root.tmp"
    local log="$beds/trixie-$(torch_bed_trixie_key).log" packages
    packages=$(IFS=,; echo "${torch_bed_trixie_packages[*]}")
    echo "torch bed: building the Debian 13 root in $root (about 4 minutes, 1.7 GB; log: $log)" >&2
    if ! mmdebstrap --variant=apt --include="$packages" trixie "$root.tmp" "$torch_bed_trixie_mirror" >"$log" 2>&1; then
      rm -rf "$root.tmp"
      if grep -qiE 'could not resolve|temporary failure|failed to fetch|connection (refused|timed out)|network is unreachable' "$log"; then
        echo "torch bed: mmdebstrap could not download from $torch_bed_trixie_mirror (no network?); set OOTCI_DEBIAN_MIRROR to a reachable mirror. Log: $log" >&2
      elif grep -qi 'no space left' "$log"; then
        echo "torch bed: the disk filled up while building the root in $beds; free space or set OOTCI_CACHE_DIR. Log: $log" >&2
      else
        tail -n 20 "$log" >&2
        echo "torch bed: mmdebstrap failed; the log is $log" >&2
      fi
      flock -u "$lock"
      return 1
    fi
    local version
    version=$(chroot "$root.tmp" dpkg-query -W -f='${Version}' python3-torch)
    if [[ $version != "$torch_bed_trixie_torch" ]]; then
      echo "torch bed: the mirror served python3-torch $version, but the bed's suite is that of $torch_bed_trixie_torch; update torch_bed_trixie_torch in scripts/lib/torch_bed.sh" >&2
      rm -rf "$root.tmp"
      flock -u "$lock"
      return 1
    fi
    touch "$root.tmp/.ootci-complete"
    mv "$root.tmp" "$root"
  fi
  flock -u "$lock"
  exec {lock}>&-
  echo "$root"
}

# The root's apt fetches the source package: Debian 12's apt cannot check trixie's signatures
# with its keyring, while the root has trixie's own.
torch_bed_trixie_download_source() {  # torch_bed_trixie_download_source ROOT DEST
  local root=$1 dest=$2
  mkdir -p "$root/var/tmp/ootci-src"
  [[ -f "$root/etc/apt/sources.list.d/ootci-deb-src.sources" ]] ||
    cat >"$root/etc/apt/sources.list.d/ootci-deb-src.sources" <<SRC
Types: deb-src
URIs: $torch_bed_trixie_mirror
Suites: trixie
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
  local log
  if ! log=$(torch_bed_chroot "$root" / /bin/sh -c \
    "apt-get update -qq && cd /var/tmp/ootci-src && apt-get source --download-only -qq pytorch=$torch_bed_trixie_torch" 2>&1); then
    echo "$log" | tail -n 20 >&2
    echo "torch bed: could not download the pytorch=$torch_bed_trixie_torch source package inside $root" >&2
    return 1
  fi
  mkdir -p "$dest"
  mv "$root"/var/tmp/ootci-src/pytorch_* "$dest"/
}

torch_bed_suite() {
  local bed
  bed=$(torch_bed_name) || return 1
  if [[ $bed == debian12 ]]; then
    torch_suite_root
    return
  fi
  local root src
  root=$(torch_bed_root) || return 1
  src="$(ootci_cache_dir)/src"
  if [[ ! -f "$src/pytorch_${torch_bed_trixie_torch}.dsc" ]]; then
    torch_bed_trixie_download_source "$root" "$src" || return 1
  fi
  torch_suite_unpack "$torch_bed_trixie_torch"
}

# Runs a command in ROOT with /proc, /dev, /tmp and the given paths visible at the same places,
# in a mount namespace of its own: the mounts vanish with the command, so nothing is left behind
# and several can run at once. Uses unshare(1) and chroot(1) from util-linux/coreutils.
torch_bed_chroot() {  # torch_bed_chroot ROOT CWD CMD...
  local root=$1 cwd=$2
  shift 2
  [[ $root == / ]] && { (cd "$cwd" && "$@"); return; }
  unshare --mount --propagation private -- /bin/sh -c '
    root=$1 cwd=$2; shift 2
    mount -t proc proc "$root/proc" && mount --rbind /dev "$root/dev" || exit 1
    for p in /tmp "$(realpath -m "${OOTCI_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/ootci}")" "$OOTCI_BED_SOURCE_DIR" "$cwd"; do
      [ -n "$p" ] && [ "$p" != / ] && [ -d "$p" ] || continue
      mkdir -p "$root$p" && mount --bind "$p" "$root$p" || exit 1
    done
    [ -f /etc/resolv.conf ] && touch "$root/etc/resolv.conf" && mount --bind /etc/resolv.conf "$root/etc/resolv.conf"
    exec chroot "$root" /usr/bin/env -C "$cwd" "$@"' sh "$root" "$cwd" "$@"
}

torch_bed_source_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)  # this checkout

torch_bed_python() {  # torch_bed_python ARGS...: the bed's /usr/bin/python3 in the current folder
  local root
  root=$(torch_bed_root) || return 1
  OOTCI_BED_SOURCE_DIR=${OOTCI_BED_SOURCE_DIR:-$torch_bed_source_dir} \
    torch_bed_chroot "$root" "$PWD" /usr/bin/python3 "$@"
}
