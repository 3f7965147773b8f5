#pragma once
// Runs a command inside another root folder (a Debian 13 root holding a newer PyTorch, say),
// with host folders visible inside at the same paths: what `backend.root` in ootci.yaml does for
// every Python process of a backend (docs/run.md, "Python in another root").
#include <string>
#include <vector>

namespace ootci {

struct RootExec {
  std::string root;                // absolute; the command's "/"
  std::vector<std::string> binds;  // absolute host folders, mounted at the same paths inside
  std::string cwd;                 // the working folder inside (bind it, or it must exist there)
  std::vector<std::string> argv;   // argv[0] is looked up inside the root
};

// The folders to bind, in mount order: absolute, normalized, existing, without "/" and without
// any folder that another one in the list already contains.
std::vector<std::string> root_binds(std::vector<std::string> folders);

// In a mount namespace of its own (so every mount vanishes with the process, and several such
// processes can share one root), mounts /proc, /dev and the binds into the root, enters it and
// execs argv in the same process: its pid, process group, PR_SET_PDEATHSIG and open file
// descriptors stay as they were. Returns only when that failed, with the reason and the fix.
std::string exec_in_root(const RootExec& exec);

// The argv that runs `argv` in `root` through `ootci chroot` of this very binary.
std::vector<std::string> root_command(const std::string& root,
                                      const std::vector<std::string>& binds,
                                      const std::vector<std::string>& argv);

}  // namespace ootci
