#pragma once
// The attribution algorithm of `ootci attribute` (docs/attribute.md), apart from how probes run,
// so it can be tested against scripted outcomes: flake check, control, expansion, bisection.
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace ootci {

// The three moving targets a run depends on. Order matters only for reports.
enum class Target { kBackend, kTests, kCore };
const char* target_name(Target t);
const std::vector<Target>& all_targets();

// Where a failure comes from, in the words of CRCR's triage verdict (utils/triage_verdict.py in
// pytorch/test-infra), and how sure the attribution is of it.
enum class Category { kUpstream, kBackend, kInfra, kFlake, kUnknown };
enum class Confidence { kHigh, kMedium, kLow };
std::string to_string(Category category);
std::string to_string(Confidence confidence);

// One revision per target; "" means unknown.
struct Combination {
  std::string backend, tests, core;
  std::string& at(Target t);
  const std::string& at(Target t) const;
  bool operator==(const Combination&) const = default;
};

struct Commit {
  std::string sha;
  std::string subject;
  std::optional<int> pr;  // from "(#123)" in the subject or a "Pull Request resolved" trailer
};

// What running the failing variants at one combination showed.
struct ProbeOutcome {
  // false: the combination could not be materialized (a worktree, the backend build, the core
  // environment), so no test ran; `problem` says why.
  bool ran = true;
  std::string problem;
  std::set<std::string> failing;  // probed variants that failed and kept failing on reruns
  std::set<std::string> flaky;    // probed variants that failed, then passed on a rerun
  int executions = 0;             // test executions, reruns included
};

// How attribution touches the world: runs probes and lists commits. Tests script both.
class Probes {
 public:
  virtual ~Probes() = default;
  // Runs `ids` at `combination`; a failing variant is re-run up to `reruns` times.
  virtual ProbeOutcome run(const Combination& combination, const std::vector<std::string>& ids,
                           int reruns) = 0;
  // The first-parent commits after `from` up to and including `to`, oldest first; empty when
  // git cannot tell (not an ancestor, unknown revisions, no repo).
  virtual std::vector<Commit> commits_between(Target target, const std::string& from,
                                              const std::string& to) = 0;
};

struct AttributionInput {
  std::vector<std::string> newly_failing;  // variant ids newly failing since the last green run
  Combination run;                         // the red run's revisions
  std::optional<Combination> green;        // the last green run's revisions, when known
  // False when a run's manifest has no `targets` (runs from before ootci recorded them): then
  // nothing can be said about what moved.
  bool revisions_recorded = true;
  int reruns = 3;        // flake check
  int probe_reruns = 1;  // inside every other probe
  int max_probes = 16;   // control + expansion + bisection
};

// One probe as the report shows it.
struct ProbeStep {
  std::string kind;  // flake check | control | expansion | bisection
  Combination combination;
  std::string note;  // what the probe asked, e.g. "only core advanced"
  ProbeOutcome outcome;
  size_t probed = 0;
  bool failed() const { return !outcome.ran || !outcome.failing.empty(); }
};

struct Attribution {
  Category category = Category::kUnknown;
  Confidence confidence = Confidence::kLow;
  std::string summary;
  std::optional<Target> target;  // the guilty target, when one is
  std::optional<Commit> culprit;
  std::vector<Commit> range;           // the guilty target's commits that were bisected
  std::vector<std::string> remaining;  // culprit candidates when the budget ran out
  std::vector<std::string> flaky;      // newly failing variants that passed on a rerun
  std::vector<std::string> failing;    // the ones that kept failing
  std::vector<Target> moved;
  std::vector<ProbeStep> steps;
  int bisection_probes = 0;
  int executions = 0;
};

Attribution attribute_failures(const AttributionInput& input, Probes& probes);

// ceil(log2(n)) for n >= 1: the probes a bisection of n commits may need.
int bisection_bound(size_t n);

}  // namespace ootci
