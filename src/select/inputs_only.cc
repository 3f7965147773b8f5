#include "select/inputs_only.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "base/error.h"
#include "evidence/evidence_store.h"

namespace ootci {
namespace {

// --own-calls-only: a change that alters values in input generation changes what a test draws,
// not what it checks; the tests that call the op themselves catch one that raises.
class OwnCallsOnly : public InputsOnlyMode {
 public:
  bool selects(const std::string& test, const std::string&, Evidence evidence) override {
    if (evidence != Evidence::kInputsOnly) return true;
    reached_in_inputs_.insert(test);
    return false;
  }
  void summarize(const ChangedSelection& s, nlohmann::json& summary) const override {
    size_t left_out = 0;
    for (const auto& t : reached_in_inputs_) left_out += !s.tests.count(t);
    summary["left_out_input_generation"] = left_out;
  }

 private:
  std::set<std::string> reached_in_inputs_;
};

// --staged: tests whose only evidence is input generation of ops that some first-stage test calls
// itself go to a second stage, since a raising change shows in the first stage. A test whose
// outcome depends on the values it draws (the input probe failed it) stays: a change of values
// alone can fail it.
class Staged : public InputsOnlyMode {
 public:
  void see_file(const std::string& relpath, const std::string& prefix,
                const RunFacts& facts) override {
    bool drew = false, probed = false;
    for (auto it = facts.input_op_dtypes.lower_bound(prefix);
         it != facts.input_op_dtypes.end() && it->first.rfind(prefix, 0) == 0; ++it) {
      drew = true;
      if (auto p = facts.input_probes.find(it->first); p != facts.input_probes.end()) {
        probed = true;
        if (input_probe_failed(p->second)) value_sensitive_[it->first] = p->second;
      }
    }
    if (drew && !probed) unprobed_.insert(relpath);
  }

  bool selects(const std::string& test, const std::string& family, Evidence evidence) override {
    if (evidence == Evidence::kInputsOnly)
      input_families_[test].insert(family);
    else
      called_itself_.insert(family);
    return true;
  }

  void decide(ChangedSelection& s) override {
    for (const auto& [test, families] : input_families_) {
      auto e = s.evidence.find(test);
      if (e == s.evidence.end() || e->second != Evidence::kInputsOnly) continue;
      if (!std::includes(called_itself_.begin(), called_itself_.end(), families.begin(),
                         families.end()))
        continue;
      if (auto p = value_sensitive_.find(test); p != value_sensitive_.end()) {
        ++kept_first_;
        s.add_reason(test, fmt::format("first stage: its outcome depends on the values it draws "
                                       "(discovery's input probe: it {})",
                                       p->second));
        continue;
      }
      s.tests.erase(test);
      s.then_tests.insert(test);
    }
  }

  void summarize(const ChangedSelection& s, nlohmann::json& summary) const override {
    std::set<std::string> unprobed_second;  // the unprobed files the second stage draws on
    for (const auto& test : s.then_tests)
      if (std::string file = test.substr(0, test.find("::")); unprobed_.count(file))
        unprobed_second.insert(file);
    summary["second_stage_tests"] = s.then_tests.size();
    summary["value_sensitive_first_stage"] = kept_first_;
    summary["unprobed_files"] = unprobed_second.size();
  }

 private:
  std::set<std::string> called_itself_;  // op families some test calls itself
  // per test, the op families it reached only while generating its inputs
  std::map<std::string, std::set<std::string>> input_families_;
  // test -> what discovery's input probe found, for the tests a shift failed
  std::map<std::string, std::string> value_sensitive_;
  std::set<std::string> unprobed_;  // files whose tests drew inputs but were never probed
  size_t kept_first_ = 0;
};

}  // namespace

std::unique_ptr<InputsOnlyMode> inputs_only_mode(const SelectOptions& options) {
  if (options.staged && options.own_calls_only)
    throw Error("select changed: --staged excludes --own-calls-only");
  if (options.staged) return std::make_unique<Staged>();
  if (options.own_calls_only) return std::make_unique<OwnCallsOnly>();
  return std::make_unique<InputsOnlyMode>();
}

}  // namespace ootci
