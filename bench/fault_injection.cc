// Fault injection for `ootci select changed`: K commits to a copy of the reference backend, each
// breaking one op (or one op for one dtype) through the backend's fault switches, against the
// ground truth of the full plan run under that fault. Per fault: the tests that newly fail, how
// many of them the selection caught, and the share of the full plan's test time it selected.
//
// Each fault is a commit adding csrc/faults/<op>.cpp, which registers a PrivateUse1 kernel for
// the op: the code change the selector sees (never compiled: the bench does not rebuild). Its
// runtime effect comes from the switch in ootci.yaml's backend.env (OOTCI_REF_DISABLED_OPS=<op>
// or OOTCI_REF_WRONG_RESULTS=<op>:<dtype>:1), which lives outside the backend repo so the
// selector does not see it. Ops are chosen among those the plan's passing tests called in
// discovery; ops with their own kernel bypass the switches and are left out.
//
// Run on purpose (it takes minutes per fault), never from scripts/test:
//   build/bench/ootci-bench fault-injection --faults 20 --files test_view_ops.py,test_reductions.py
// --ops sum,prod:float32 replays given faults (an earlier run's) instead of drawing them.
#include <fmt/format.h>
#include <sys/wait.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <random>
#include <tuple>

#include "base/error.h"
#include "base/root_exec.h"
#include "base/subprocess.h"
#include "base/time.h"
#include "discover/discover.h"
#include "evidence/code_evidence.h"
#include "evidence/evidence_store.h"
#include "select/git.h"
#include "select/native_functions.h"
#include "select/second_stage.h"
#include "select/waves.h"
#include "testing/test_env.h"

namespace fs = std::filesystem;

namespace ootci::bench::fault_injection {

struct Options {
  std::vector<std::string> files = {"test_view_ops.py", "test_reductions.py"};
  int faults = 20;
  int workers = 2;
  unsigned seed = 1;
  std::string torch_root;
  std::string workdir;
  std::vector<std::string> ops;  // fixed faults ("sum", "prod:float32") instead of drawn ones
  double minutes = 0;            // no new fault after this long (0: no limit)
  int probe_inputs = 8;          // discovery's input probe passes (0: none)
  std::string python_root;       // backend.root: the tests' Python runs there (a torch bed)
  std::string configs = "examples/reference-backend/configs";  // the backend's own configs
};

// SIGINT or SIGTERM (a CI time limit): finish the fault under way, then print the summary of the
// faults done. A second signal ends the bench at once.
volatile std::sig_atomic_t g_stop_signal = 0;

void stop_after_this_fault(int sig) {
  g_stop_signal = sig;
  std::signal(sig, SIG_DFL);
}

struct Fault {
  std::string op;     // base name, as the switches take it ("add")
  std::string kind;   // op | op:dtype
  std::string dtype;  // for op:dtype
  std::string sha;    // the fault commit
};

// How `ootci select changed` is asked: by op alone (as before dtype evidence), by op and dtype
// (the default), by op and dtype leaving out tests that reach the op only in input generation,
// staged (those tests run only when the first stage shows the change raising, as `ootci run`
// decides it), and by op and dtype within a 10% budget (last: it drops tests on purpose).
struct Mode {
  const char* name;
  std::vector<std::string> flags;
};
const std::vector<Mode> kModes = {{"op", {"--ignore-dtypes"}},
                                  {"op+dtype", {}},
                                  {"own calls", {"--own-calls-only"}},
                                  {"staged", {"--staged"}},
                                  {"budget 10%", {"--budget", "10%"}}};

// Beyond kModes: the staged selection as a matrix of this many runners runs it, each wave split
// by wave_shards and wave 2 decided over every shard of wave 1 (docs/run.md, "Waves").
constexpr int kRunners = 3;
const char* const kShardedName = "staged, sharded 3 ways";
constexpr size_t kStaged = 3, kSharded = 5;  // indices into Outcome::by_mode

// One selection of one fault against the ground truth.
struct Selected {
  size_t tests = 0, files = 0, caught = 0;
  double share = 0;  // of the full plan's test time
  std::vector<std::string> missed;
  std::set<std::string> ids, file_set;
  std::set<std::string> then_ids;  // --staged: the second stage
  std::string second_stage;        // why it ran under the fault ("": it did not)
  // The sharded mode: the slowest shard of each wave (wave 2 only when it ran), in baseline test
  // seconds, and the shards of each wave.
  double wall_s = 0;
  size_t shards1 = 0, shards2 = 0;
  bool has(const std::string& test_id) const {
    return file_set.count(test_id.substr(0, test_id.find("::"))) || ids.count(test_id);
  }
};

struct Outcome {
  Fault fault;
  size_t failing = 0;
  double lower = 0;  // the failing tests' share of test time: the least 100% recall can cost
  std::vector<Selected> by_mode;  // as kModes, then the sharded mode (kSharded)
  double select_s = 0;            // the default mode's
  size_t flaky = 0;  // newly failing, missed, and passing when run again under the fault
};

// A private copy of build/ootci, so a rebuild during the long run cannot swap it mid-way.
std::string g_ootci;
std::string ootci_binary() {
  return g_ootci;
}

// Runs argv with output to `log`; returns the exit code.
int run_logged(const std::vector<std::string>& argv, const std::string& log) {
  SpawnOptions o;
  o.argv = argv;
  o.output_file = log;
  o.die_with_parent = true;
  int status = Subprocess::spawn(o).wait();
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

void git(const std::string& repo, const std::vector<std::string>& args) {
  std::vector<std::string> full = {"-c", "user.name=bench", "-c", "user.email=bench@example.com"};
  full.insert(full.end(), args.begin(), args.end());
  git_output(repo, full);
}

std::string head(const std::string& repo) {
  std::string sha = git_output(repo, {"rev-parse", "HEAD"});
  return sha.substr(0, sha.size() - 1);
}

// Timeouts of 60 s: discovery runs every variant, and a few (float16 and bfloat16
// test_reduction_vectorize_along_input_corner) run for minutes on the reference backend; the
// longest test that passes takes seconds.
void write_config(const Options& o, const std::string& bench, const std::string& repo,
                  const std::string& env_name, const std::string& env_value) {
  std::string disabled = env_name == "OOTCI_REF_DISABLED_OPS" ? env_value : "";
  std::string wrong = env_name == "OOTCI_REF_WRONG_RESULTS" ? env_value : "";
  write_file(bench + "/ootci.yaml",
             fmt::format(
                 "backend:\n"
                 "  name: reference-fault-bench\n"
                 "  device_type: privateuseone\n"
                 "  python: /usr/bin/python3\n"
                 "{root}"
                 "  modules: [ootci_reference_backend]\n"
                 "  pythonpath: [{repo}]\n"
                 "  env:\n"
                 "    OOTCI_REF_DISABLED_OPS: \"{disabled}\"\n"
                 "    OOTCI_REF_WRONG_RESULTS: \"{wrong}\"\n"
                 "upstream:\n"
                 "  torch_root: {torch}\n"
                 "  device_root: {repo}\n"
                 "test_configs: [configs/*.yaml]\n"
                 "workspace: .ootci\n"
                 "run:\n"
                 "  workers: {workers}\n"
                 "  reruns: 0\n"
                 "  stall_timeout_s: 60\n"
                 "  test_timeout_s: 60\n",
                 fmt::arg("repo", repo), fmt::arg("disabled", disabled), fmt::arg("wrong", wrong),
                 fmt::arg("torch", o.torch_root), fmt::arg("workers", o.workers),
                 fmt::arg("root", o.python_root.empty() ? "" : "  root: " + o.python_root + "\n")));
}

// The reference backend's own config for a file when it has one, else every variant mandatory.
void write_suite_configs(const Options& o, const std::string& bench) {
  fs::create_directories(bench + "/configs");
  for (const auto& f : o.files) {
    std::string stem = fs::path(f).stem().string();
    std::string own = fs::absolute(source_dir() + "/" + o.configs).string() + "/" + stem + ".yaml";
    if (fs::exists(own)) {
      fs::copy_file(own, bench + "/configs/" + stem + ".yaml",
                    fs::copy_options::overwrite_existing);
    } else {
      write_file(bench + "/configs/" + stem + ".yaml",
                 fmt::format("test_suite_config:\n"
                             "  files:\n"
                             "    - path: ${{TORCH_ROOT}}/test/{}\n"
                             "      unlisted_test_mode: mandatory_success\n",
                             f));
    }
  }
}

void run_plan(const std::string& bench, const std::string& run_id,
              const std::string& selection = "") {
  std::vector<std::string> argv = {ootci_binary(),        "run",      "--config",
                                   bench + "/ootci.yaml", "--run-id", run_id};
  if (!selection.empty()) argv.insert(argv.end(), {"--select", selection});
  int code = run_logged(argv, bench + "/" + run_id + ".log");
  if (code != 0 && code != 1)
    throw Error(
        fmt::format("ootci run {} exited with {} (see {}/{}.log)", run_id, code, bench, run_id));
}

std::string first_dtype(const std::string& dtype) {
  return dtype.substr(0, dtype.find(','));
}

// The dtypes OOTCI_REF_WRONG_RESULTS knows, with their c10::ScalarType names.
const std::map<std::string, std::string> kSwitchDtypes = {{"bool", "Bool"},
                                                          {"uint8", "Byte"},
                                                          {"int8", "Char"},
                                                          {"int16", "Short"},
                                                          {"int32", "Int"},
                                                          {"int64", "Long"},
                                                          {"float16", "Half"},
                                                          {"bfloat16", "BFloat16"},
                                                          {"float32", "Float"},
                                                          {"float64", "Double"},
                                                          {"complex64", "ComplexFloat"},
                                                          {"complex128", "ComplexDouble"}};

std::map<std::string, std::vector<std::string>> discovered_ops(EvidenceStore& store) {
  std::map<std::string, std::vector<std::string>> ops;
  for (const auto& d : store.latest_discoveries())
    for (auto& [test, called] : store.ops_of_run(d.run_id))
      if (test.rfind(d.relpath + "::", 0) == 0) ops[test] = called;
  return ops;
}

// The ops among `ops` that reach the device's boxed fallback: a CPU kernel and no composite one
// (a CompositeExplicitAutograd op such as rand runs its composite kernel on the device and only
// the ops it calls reach the fallback, so switching it off would break nothing).
std::set<std::string> reaching_fallback(const std::set<std::string>& ops, const std::string& dir,
                                        const Options& o) {
  write_file(dir + "/ops.json", nlohmann::json(ops).dump());
  write_file(dir + "/reaching_fallback.py",
             "import json, sys, torch\n"
             "has = torch._C._dispatch_has_kernel_for_dispatch_key\n"
             "out = []\n"
             "for op in json.load(open(sys.argv[1])):\n"
             "    try:\n"
             "        composite = has(op, 'CompositeExplicitAutograd') or "
             "has(op, 'CompositeImplicitAutograd')\n"
             "        if has(op, 'CPU') and not composite:\n"
             "            out.append(op)\n"
             "    except RuntimeError:\n"
             "        pass\n"
             "json.dump(out, open(sys.argv[2], 'w'))\n");
  std::vector<std::string> argv = {"/usr/bin/python3", dir + "/reaching_fallback.py",
                                   dir + "/ops.json", dir + "/reaching_fallback.json"};
  if (!o.python_root.empty()) argv = root_command(o.python_root, {dir}, argv, ootci_binary());
  int code = run_logged(argv, dir + "/reaching_fallback.log");
  if (code != 0)
    throw Error(fmt::format("{}/reaching_fallback.py exited with {} (see its .log)", dir, code));
  return nlohmann::json::parse(read_file(dir + "/reaching_fallback.json"))
      .get<std::set<std::string>>();
}

// Candidate ops: families whose fallback-reaching ops plan tests that passed in the baseline
// called, without their own kernel (they bypass the switches) and expressible as a switch name.
std::vector<std::pair<std::string, std::string>> candidate_ops(
    const std::map<std::string, std::vector<std::string>>& ops,
    const std::vector<TestResult>& baseline, const std::set<std::string>& own_kernels,
    const std::set<std::string>& reaching, unsigned seed) {
  std::map<std::string, std::map<std::string, int>> dtypes_by_family;  // family -> dtype -> tests
  for (const auto& r : baseline) {
    if (r.outcome != ootci::Outcome::kPassed || r.mode != TestMode::kMandatorySuccess) continue;
    auto it = ops.find(r.test_id);
    if (it == ops.end()) continue;
    std::set<std::string> families;
    for (const auto& op : it->second)
      if (reaching.count(op)) families.insert(op_family(op));
    for (const auto& f : families) ++dtypes_by_family[f][first_dtype(r.dtype)];
  }
  std::vector<std::pair<std::string, std::string>> out;  // (switch name, common dtype)
  for (const auto& [family, dtypes] : dtypes_by_family) {
    std::string name = family.substr(family.find("::") + 2);
    if (family.rfind("aten::", 0) != 0 || own_kernels.count(family) || name.rfind("__", 0) == 0)
      continue;
    // float32 when tests of that dtype call the op (the dtype most tests check), else the
    // dtype most of its tests use.
    int tests = 0;
    std::string dtype = "float32";
    int best = 0;
    for (const auto& [d, n] : dtypes) {
      tests += n;
      if (kSwitchDtypes.count(d) && n > best && !dtypes.count("float32")) {
        best = n;
        dtype = d;
      }
    }
    if (tests >= 2) out.emplace_back(name, dtype);
  }
  std::mt19937 rng(seed);
  std::shuffle(out.begin(), out.end(), rng);
  return out;
}

std::string fault_source(const Fault& f, int index) {
  // What the switch does at run time, written as the kernel a developer would have committed.
  if (f.kind != "op")
    // A kernel of the device's own for one dtype, every other dtype still on the fallback.
    return fmt::format(
        "// Fault {index}: aten::{op} on the device for {dtype}, with wrong results.\n"
        "#include <ATen/ATen.h>\n"
        "#include <ATen/native/CPUFallback.h>\n"
        "#include <torch/library.h>\n"
        "\n"
        "namespace ootci_ref {{\n"
        "void cpu_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack);\n"
        "}}  // namespace ootci_ref\n"
        "\n"
        "namespace ootci_ref_faults {{\n"
        "\n"
        "void {op}_fault_{index}(const c10::OperatorHandle& op, torch::jit::Stack* stack) {{\n"
        "  const at::Tensor self = (*stack)[0].toTensor();\n"
        "  if (self.scalar_type() != at::ScalarType::{scalar}) return "
        "ootci_ref::cpu_fallback(op, stack);\n"
        "  at::native::cpu_fallback(op, stack);\n"
        "  stack->back().toTensor().add_(1);\n"
        "}}\n"
        "\n"
        "}}  // namespace ootci_ref_faults\n"
        "\n"
        "TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {{\n"
        "  m.impl(\"{op}\",\n"
        "         "
        "torch::CppFunction::makeFromBoxedFunction<&ootci_ref_faults::{op}_fault_{index}>());\n"
        "}}\n",
        fmt::arg("index", index), fmt::arg("op", f.op), fmt::arg("dtype", f.dtype),
        fmt::arg("scalar", kSwitchDtypes.at(f.dtype)));
  std::string body = fmt::format("  TORCH_CHECK_NOT_IMPLEMENTED(false, \"{} is broken\");\n", f.op);
  return fmt::format(
      "// Fault {index}: a PrivateUse1 kernel for aten::{op} that is wrong.\n"
      "#include <ATen/ATen.h>\n"
      "#include <torch/library.h>\n"
      "\n"
      "namespace ootci_ref_faults {{\n"
      "\n"
      "at::Tensor {op}_fault_{index}(const at::Tensor& self) {{\n"
      "{body}"
      "  return self;\n"
      "}}\n"
      "\n"
      "}}  // namespace ootci_ref_faults\n"
      "\n"
      "TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {{\n"
      "  m.impl(\"{op}\", TORCH_FN(ootci_ref_faults::{op}_fault_{index}));\n"
      "}}\n",
      fmt::arg("index", index), fmt::arg("op", f.op), fmt::arg("body", body));
}

std::string share_text(double share) {
  return fmt::format("{:.1f}%", 100 * share);
}

// A difference of shares, in percentage points.
std::string points(double delta) {
  return fmt::format("{:+.1f}pp", 100 * delta);
}

double mean(const std::vector<double>& v) {
  double sum = 0;
  for (double x : v) sum += x;
  return v.empty() ? 0 : sum / static_cast<double>(v.size());
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t k = v.size();
  return k % 2 ? v[k / 2] : (v[k / 2 - 1] + v[k / 2]) / 2;
}

double max_of(const std::vector<double>& v) {
  return v.empty() ? 0 : *std::max_element(v.begin(), v.end());
}

// --ops entries as (switch name, dtype, kind): "sum" switches sum off, "prod:float32" makes its
// float32 results wrong.
std::vector<std::tuple<std::string, std::string, std::string>> given_faults(const Options& o) {
  std::vector<std::tuple<std::string, std::string, std::string>> out;
  for (const auto& spec : o.ops) {
    auto colon = spec.find(':');
    if (colon == std::string::npos) {
      out.emplace_back(spec, "", "op");
      continue;
    }
    std::string dtype = spec.substr(colon + 1);
    if (!kSwitchDtypes.count(dtype))
      throw Error(fmt::format("--ops {}: unknown dtype '{}'", spec, dtype));
    out.emplace_back(spec.substr(0, colon), dtype, "op:dtype");
  }
  return out;
}

// A shard's baseline test seconds: its tests, and every test of its whole files.
double shard_seconds(const Selection& part, const std::map<std::string, double>& duration) {
  double seconds = 0;
  for (const auto& [id, d] : duration)
    if (part.files.count(unit_file(id)) || part.tests.count(id)) seconds += d;
  return seconds;
}

// The slowest of a wave's shards, and how many there are.
std::pair<double, size_t> slowest_shard(const Selection& wave,
                                        const std::map<std::string, double>& evidence,
                                        const std::map<std::string, double>& duration) {
  double slowest = 0;
  std::vector<Shard> shards = wave_shards(wave, evidence, kRunners);
  for (const Shard& s : shards)
    slowest = std::max(slowest, shard_seconds(shard_selection(wave, s), duration));
  return {slowest, shards.size()};
}

// The staged selection as a matrix of kRunners runs it: wave 1's shards, wave 2 decided from
// their results under the fault (second_stage_reason, through decide_wave2), then its shards.
// Which tests it selects comes from the shards themselves, so its recall is checked, not assumed.
Selected sharded_staged(const std::string& selection_path, const std::vector<std::string>& plan,
                        const std::vector<TestResult>& truth, const std::vector<TestResult>& green,
                        const std::map<std::string, double>& evidence,
                        const std::map<std::string, double>& duration) {
  Selection sel = load_selection(selection_path);
  Selected out;
  Selection one = wave_of(sel, 1, plan), two = wave_of(sel, 2, plan);
  out.then_ids = two.tests;
  for (const Shard& s : wave_shards(one, evidence, kRunners)) {
    Selection part = shard_selection(one, s);
    out.file_set.insert(part.files.begin(), part.files.end());
    out.ids.insert(part.tests.begin(), part.tests.end());
  }
  std::tie(out.wall_s, out.shards1) = slowest_shard(one, evidence, duration);
  std::vector<TestResult> wave1;
  for (const auto& r : truth)
    if (out.has(r.test_id)) wave1.push_back(r);
  nlohmann::json decision = decide_wave2(sel, plan, wave1, &green);
  if (decision["ran"]) {
    out.second_stage = decision["why"];
    for (const Shard& s : wave_shards(two, evidence, kRunners)) {
      Selection part = shard_selection(two, s);
      out.ids.insert(part.tests.begin(), part.tests.end());
    }
    auto [slowest, shards] = slowest_shard(two, evidence, duration);
    out.wall_s += slowest;
    out.shards2 = shards;
  }
  out.tests = out.ids.size();
  out.files = out.file_set.size();
  return out;
}

int bench(const Options& o) {
  auto given = given_faults(o);  // checked before the long setup
  std::string work = o.workdir.empty() ? make_temp_dir() : fs::absolute(o.workdir).string();
  std::string repo = work + "/backend", bench = work + "/bench";
  fs::create_directories(repo);
  fs::create_directories(bench);
  int64_t started = steady_us();
  auto elapsed = [&] { return (steady_us() - started) / 1e6; };
  std::cout << fmt::format("work dir: {}\n", work) << std::flush;
  g_ootci = work + "/ootci";
  fs::copy_file(binary_dir() + "/ootci", g_ootci, fs::copy_options::overwrite_existing);
  // The copy sits outside the build tree, where ootci would not look for the checkout's python/.
  setenv("OOTCI_PYTHON_DIR", (source_dir() + "/python").c_str(), 0);

  // The backend repo: the reference backend at a base commit.
  for (const char* part : {"csrc", "ootci_reference_backend"})
    fs::copy(source_dir() + "/examples/reference-backend/" + part, repo + "/" + part,
             fs::copy_options::recursive | fs::copy_options::overwrite_existing);
  write_file(repo + "/.gitignore", "__pycache__/\n");
  git_output(repo, {"init", "-q"});
  git(repo, {"add", "-A"});
  git(repo, {"commit", "-q", "-m", "base"});
  std::string base = head(repo);
  write_suite_configs(o, bench);
  write_config(o, bench, repo, "", "");

  // Execution evidence at the base commit, then the clean baseline of the full plan.
  std::vector<std::string> discover = {ootci_binary(), "discover", "--config",
                                       bench + "/ootci.yaml"};
  if (o.probe_inputs > 0) {
    discover.push_back("--probe-inputs");
    discover.push_back(std::to_string(o.probe_inputs));
  }
  if (int code = run_logged(discover, bench + "/discover.log"); code != 0)
    throw Error(fmt::format("ootci discover exited with {} (see {}/discover.log)", code, bench));
  std::cout << fmt::format("discovery done ({:.0f} s)\n", elapsed()) << std::flush;
  run_plan(bench, "baseline");
  auto store = EvidenceStore::open(bench + "/.ootci/evidence.db");
  std::vector<TestResult> baseline = store->results("baseline");
  std::set<std::string> failing_before;
  std::map<std::string, double> duration;
  double total = 0;
  for (const auto& r : baseline) {
    if (is_failure(r.outcome)) failing_before.insert(r.test_id);
    duration[r.test_id] = r.duration_s;
    total += r.duration_s;
  }
  std::set<std::string> baseline_files;
  for (const auto& r : baseline) baseline_files.insert(r.file);
  std::vector<std::string> plan_files(baseline_files.begin(), baseline_files.end());
  // The full plan on kRunners runners, split by file as the workflow `ootci init` writes does.
  Selection whole;
  whole.files = baseline_files;
  double full_wall = slowest_shard(whole, store->test_durations(), duration).first;
  std::cout << fmt::format("baseline: {} results, {} failing, {:.1f} s of test time ({:.0f} s)\n",
                           baseline.size(), failing_before.size(), total, elapsed())
            << std::flush;

  std::set<std::string> own_kernels;
  for (const auto& op : scan_backend_sources(repo, "PrivateUse1").supported_ops)
    own_kernels.insert(op_family(op));
  auto ops = discovered_ops(*store);
  std::set<std::string> called;
  for (const auto& [test, list] : ops) called.insert(list.begin(), list.end());
  // (switch name, dtype, kind): drawn faults alternate between a whole op and one dtype.
  std::vector<std::tuple<std::string, std::string, std::string>> candidates = given;
  if (o.ops.empty()) {
    auto drawn =
        candidate_ops(ops, baseline, own_kernels, reaching_fallback(called, bench, o), o.seed);
    for (size_t i = 0; i < drawn.size(); ++i)
      candidates.emplace_back(drawn[i].first, drawn[i].second, i % 2 == 0 ? "op" : "op:dtype");
  }
  std::cout << fmt::format("{} candidate ops\n", candidates.size()) << std::flush;

  std::vector<Outcome> outcomes;
  std::vector<std::string> harmless;  // faults that broke no test
  std::signal(SIGINT, stop_after_this_fault);
  std::signal(SIGTERM, stop_after_this_fault);
  std::string cut_short;
  for (size_t i = 0; i < candidates.size() && static_cast<int>(outcomes.size()) < o.faults; ++i) {
    if (g_stop_signal) {
      cut_short = fmt::format("stopped by {}", strsignal(g_stop_signal));
      break;
    }
    if (o.minutes > 0 && elapsed() > o.minutes * 60) {
      cut_short = fmt::format("the time limit of {} min was reached", o.minutes);
      break;
    }
    Fault f;
    std::tie(f.op, f.dtype, f.kind) = candidates[i];
    int index = static_cast<int>(i) + 1;

    // The commit the selector sees, on top of the base.
    git(repo, {"checkout", "-q", "--detach", base});
    fs::create_directories(repo + "/csrc/faults");
    write_file(repo + "/csrc/faults/" + f.op + ".cpp", fault_source(f, index));
    git(repo, {"add", "-A"});
    git(repo, {"commit", "-q", "-m", fmt::format("fault {}: break {}", index, f.op)});
    f.sha = head(repo);

    Outcome out{f, 0, 0, {}, 0, 0};
    for (size_t m = 0; m < kModes.size(); ++m) {
      std::string selection = fmt::format("{}/selection-{}-{}.json", bench, index, m);
      std::vector<std::string> argv = {
          ootci_binary(),      "select", "changed", "--config", bench + "/ootci.yaml", "--backend",
          base + ".." + f.sha, "-o",     selection};
      argv.insert(argv.end(), kModes[m].flags.begin(), kModes[m].flags.end());
      int64_t t0 = steady_us();
      int code = run_logged(argv, fmt::format("{}/select-{}-{}.log", bench, index, m));
      if (m == 1) out.select_s = (steady_us() - t0) / 1e6;
      if (code != 0)
        throw Error(fmt::format("ootci select changed exited with {} (see {}/select-{}-{}.log)",
                                code, bench, index, m));
      nlohmann::json sel = nlohmann::json::parse(read_file(selection));
      Selected chosen;
      chosen.file_set = sel["files"].get<std::set<std::string>>();
      chosen.ids = sel["tests"].get<std::set<std::string>>();
      if (sel.contains("then")) chosen.then_ids = sel["then"]["tests"].get<std::set<std::string>>();
      chosen.tests = chosen.ids.size();
      chosen.files = chosen.file_set.size();
      out.by_mode.push_back(std::move(chosen));
    }

    // Ground truth: the full plan under the fault.
    std::string run_id = fmt::format("fault-{}", index);
    write_config(o, bench, repo,
                 f.kind == "op" ? "OOTCI_REF_DISABLED_OPS" : "OOTCI_REF_WRONG_RESULTS",
                 f.kind == "op" ? f.op : f.op + ":" + f.dtype + ":1");
    run_plan(bench, run_id);
    std::vector<TestResult> truth = store->results(run_id);
    out.by_mode.push_back(
        sharded_staged(fmt::format("{}/selection-{}-{}.json", bench, index, kStaged), plan_files,
                       truth, baseline, store->test_durations(), duration));
    // A staged selection's second stage, decided as `ootci run` decides it, on what its first
    // stage would have seen under the fault (the baseline is the last green run).
    for (size_t m = 0; m < kModes.size(); ++m) {
      Selected& chosen = out.by_mode[m];
      if (chosen.then_ids.empty()) continue;
      std::vector<TestResult> first;
      for (const auto& r : truth)
        if (chosen.has(r.test_id)) first.push_back(r);
      if (auto why = second_stage_reason(first, &baseline)) {
        chosen.second_stage = *why;
        chosen.ids.insert(chosen.then_ids.begin(), chosen.then_ids.end());
      }
    }

    std::set<std::string> newly_failing, missed;
    for (const auto& r : truth) {
      if (!is_failure(r.outcome) || failing_before.count(r.test_id)) continue;
      newly_failing.insert(r.test_id);
      // The budget drops tests on purpose; the flake check is for what the evidence missed.
      for (size_t m = 0; m + 1 < kModes.size(); ++m)
        if (!out.by_mode[m].has(r.test_id)) missed.insert(r.test_id);
    }
    // Runs are without reruns (hundreds of failures would each cost a fresh process), so a
    // missed test is run again under the fault: one that passes was a flake, not the fault's.
    if (!missed.empty()) {
      nlohmann::json again = {{"files", nlohmann::json::array()},
                              {"tests", nlohmann::json::array()}};
      for (const auto& id : missed)
        again[id.find("::") == std::string::npos ? "files" : "tests"].push_back(id);
      std::string again_path = fmt::format("{}/missed-{}.json", bench, index);
      write_file(again_path, again.dump(2));
      run_plan(bench, run_id + "-again", again_path);
      std::set<std::string> still;
      for (const auto& r : store->results(run_id + "-again"))
        if (is_failure(r.outcome)) still.insert(r.test_id);
      for (const auto& id : missed) {
        bool again_failing = still.count(id) > 0;
        for (const auto& t : still) again_failing = again_failing || t.rfind(id + "::", 0) == 0;
        if (!again_failing) {
          ++out.flaky;
          newly_failing.erase(id);
        }
      }
    }
    write_config(o, bench, repo, "", "");
    git(repo, {"checkout", "-q", "--detach", base});

    out.failing = newly_failing.size();
    for (const auto& id : newly_failing) out.lower += duration.count(id) ? duration.at(id) : 0;
    out.lower = total > 0 ? out.lower / total : 0;
    for (Selected& chosen : out.by_mode) {
      for (const auto& id : newly_failing) {
        if (chosen.has(id))
          ++chosen.caught;
        else
          chosen.missed.push_back(id);
      }
      double seconds = 0;
      for (const auto& [id, d] : duration)
        if (chosen.has(id)) seconds += d;
      chosen.share = total > 0 ? seconds / total : 0;
    }

    std::string label = f.kind == "op" ? f.op : f.op + ":" + f.dtype;
    if (out.failing == 0) {
      harmless.push_back(label);
      std::cout << fmt::format("fault {:>2} {:<28} broke no test; replaced ({:.0f} s)\n", index,
                               label, elapsed())
                << std::flush;
      continue;
    }
    const Selected& op = out.by_mode[0];
    const Selected& dt = out.by_mode[1];
    std::cout << fmt::format(
                     "fault {:>2} {:<28} failing {:>4} ({:>5} of test time)  by op: caught {:>4}, "
                     "{:>6}  by op+dtype: caught {:>4}, {:>5} tests, {:>6} ({:.0f} s)\n",
                     index, label, out.failing, share_text(out.lower), op.caught,
                     share_text(op.share), dt.caught, dt.tests, share_text(dt.share), elapsed())
              << std::flush;
    outcomes.push_back(std::move(out));
  }

  // The table and the totals, also for a run cut short.
  if (!cut_short.empty())
    std::cout << fmt::format("\ncut short: {}; the summary covers the {} of {} faults done\n",
                             cut_short, outcomes.size(), o.faults);
  // Per fault: the lower bound, then per mode the share selected and its excess over the bound.
  std::cout << "\n"
            << fmt::format(
                   "{:<28} {:<9} {:>7} {:>7} | {:>7} {:>7} | {:>7} {:>7} {:>7} | {:>7} {:>7} "
                   "{:>9} | {:>7} {:>7} {:>3} {:>9} | {:>7} {:>9} | {:>9} {:>6} {:>7} {:>7}\n",
                   "fault", "kind", "failing", "lower", "op", "excess", "op+dt", "excess", "tests",
                   "own", "excess", "caught", "staged", "excess", "2nd", "caught", "budget",
                   "caught", "3-way", "shards", "wall", "1 runner");
  for (const auto& r : outcomes) {
    std::string label = r.fault.kind == "op" ? r.fault.op : r.fault.op + ":" + r.fault.dtype;
    const Selected &op = r.by_mode[0], &dt = r.by_mode[1], &own = r.by_mode[2],
                   &staged = r.by_mode[kStaged], &budget = r.by_mode[4], &sh = r.by_mode[kSharded];
    std::cout << fmt::format(
        "{:<28} {:<9} {:>7} {:>7} | {:>7} {:>7} | {:>7} {:>7} {:>7} | {:>7} {:>7} {:>9} | {:>7} "
        "{:>7} {:>3} {:>9} | {:>7} {:>9} | {:>9} {:>6} {:>6.1f}s {:>6.1f}s\n",
        label, r.fault.kind, r.failing, share_text(r.lower), share_text(op.share),
        points(op.share - r.lower), share_text(dt.share), points(dt.share - r.lower), dt.tests,
        share_text(own.share), points(own.share - r.lower),
        fmt::format("{}/{}", own.caught, r.failing), share_text(staged.share),
        points(staged.share - r.lower),
        staged.then_ids.empty()       ? "-"
        : staged.second_stage.empty() ? "no"
                                      : "yes",
        fmt::format("{}/{}", staged.caught, r.failing), share_text(budget.share),
        fmt::format("{}/{}", budget.caught, r.failing), fmt::format("{}/{}", sh.caught, r.failing),
        fmt::format("{}+{}", sh.shards1,
                    sh.second_stage.empty() ? "-" : std::to_string(sh.shards2)),
        sh.wall_s, staged.share * total);
    for (size_t m = 0; m + 1 < kModes.size(); ++m)
      for (size_t i = 0; i < r.by_mode[m].missed.size() && i < 5; ++i)
        std::cout << fmt::format("    missed by {}: {}\n", kModes[m].name, r.by_mode[m].missed[i]);
  }
  size_t k = outcomes.size();
  size_t failing_total = 0, flaky_total = 0;
  double select_sum = 0, lower_sum = 0;
  for (const auto& r : outcomes) {
    failing_total += r.failing;
    flaky_total += r.flaky;
    select_sum += r.select_s;
    lower_sum += r.lower;
  }
  std::cout << "\n"
            << fmt::format("faults that broke tests: {} (plus {} that broke none: {})\n", k,
                           harmless.size(), fmt::join(harmless, ", "))
            << fmt::format(
                   "failing tests: {} ({} missed tests passed when run again under the fault: "
                   "flakes, left out); lower bound (their share of test time): mean {}\n",
                   failing_total, flaky_total, share_text(k ? lower_sum / k : 0));
  std::vector<std::string> names;
  for (const auto& mode : kModes) names.push_back(mode.name);
  names.push_back(kShardedName);
  for (size_t m = 0; m < names.size(); ++m) {
    size_t fully = 0, caught = 0, detected = 0;
    std::vector<double> shares, excess;
    double dtype_only_max = 0;
    std::string dtype_only_worst;
    for (const auto& r : outcomes) {
      const Selected& chosen = r.by_mode[m];
      fully += chosen.caught == r.failing;
      detected += chosen.caught > 0;
      caught += chosen.caught;
      shares.push_back(chosen.share);
      excess.push_back(chosen.share - r.lower);
      if (r.fault.kind != "op" && chosen.share - r.lower >= dtype_only_max) {
        dtype_only_max = chosen.share - r.lower;
        dtype_only_worst = r.fault.op + ":" + r.fault.dtype;
      }
    }
    std::cout << fmt::format(
        "by {}: recall {}/{} = {}; faults detected {}/{}; failing tests caught {}/{} = {}; "
        "selected share: mean {}, median {}, max {}; excess over the lower bound: mean {}, median "
        "{}, max {}; worst dtype-only fault: {} ({})\n",
        names[m], fully, k, share_text(k ? double(fully) / k : 0), detected, k, caught,
        failing_total, share_text(failing_total ? double(caught) / failing_total : 0),
        share_text(mean(shares)), share_text(median(shares)), share_text(max_of(shares)),
        points(mean(excess)), points(median(excess)), points(max_of(excess)),
        points(dtype_only_max), dtype_only_worst.empty() ? "none" : dtype_only_worst);
  }
  std::vector<double> walls, one_runner;
  for (const auto& r : outcomes) {
    walls.push_back(r.by_mode[kSharded].wall_s);
    one_runner.push_back(r.by_mode[kStaged].share * total);
  }
  std::cout << fmt::format(
      "wall time on {} runners, in test seconds (the slowest shard of wave 1, plus the slowest of "
      "wave 2 when it ran): mean {:.1f} s, median {:.1f} s, max {:.1f} s; staged on one runner: "
      "mean {:.1f} s; the full plan on {} runners (by file): {:.1f} s, on one: {:.1f} s\n",
      kRunners, mean(walls), median(walls), max_of(walls), mean(one_runner), kRunners, full_wall,
      total);
  std::cout << fmt::format("ootci select changed: mean {:.2f} s per fault\n",
                           k ? select_sum / k : 0)
            << fmt::format("full plan: {} results, {:.1f} s of test time; bench took {:.0f} s\n",
                           baseline.size(), total, elapsed())
            << "anchors: Meta PTS ~1/3 of tests at >99.9% of faulty changes caught; Google "
               "TRANSPRED 85% of changes at a 25% budget; our target 100% recall with a mean "
               "excess of at most 5 points over the failing tests' own time\n";
  return 0;
}

int main(int argc, char** argv) {
  CLI::App app{"Fault injection: recall and cost of ootci select changed on the reference backend"};
  Options o;
  const char* torch_root = std::getenv("TORCH_ROOT");
  o.torch_root = torch_root && *torch_root ? torch_root : OOTCI_TORCH_ROOT;
  app.add_option("--faults", o.faults, "faults that break at least one test (K)")
      ->check(CLI::Range(1, 200));
  app.add_option("--files", o.files, "upstream test files under test/ (the full plan)")
      ->delimiter(',');
  app.add_option("--workers", o.workers, "ootci run workers")->check(CLI::Range(1, 64));
  app.add_option("--seed", o.seed, "order in which candidate ops are tried");
  app.add_option("--torch-root", o.torch_root, "upstream PyTorch tree (default: $TORCH_ROOT)");
  app.add_option("--probe-inputs", o.probe_inputs,
                 "discovery's input probe passes, for --staged (0: none)")
      ->check(CLI::Range(0, kMaxInputProbes));
  app.add_option(
      "--python-root", o.python_root,
      "run the tests' Python in this root folder (backend.root), e.g. the torch 2.6 bed");
  app.add_option("--configs", o.configs,
                 "the reference backend's configs to start from, relative to the checkout");
  app.add_option("--workdir", o.workdir, "keep everything here (default: a temporary folder)");
  app.add_option("--minutes", o.minutes,
                 "start no new fault after this many minutes, then print the summary (SIGINT or "
                 "SIGTERM does the same after the fault under way)");
  app.add_option("--ops", o.ops,
                 "these faults, in order, instead of drawn ones: op (switched off) or op:dtype "
                 "(wrong results), e.g. sum,prod:float32 (repeats an earlier run's faults)")
      ->delimiter(',');
  CLI11_PARSE(app, argc, argv);
  if (o.torch_root.empty()) {
    std::cerr << "error: no upstream tree: set TORCH_ROOT or pass --torch-root\n";
    return 1;
  }
  try {
    return bench(o);
  } catch (const Error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace ootci::bench::fault_injection
