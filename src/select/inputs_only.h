#pragma once
// `select changed`: what becomes of a test that reached a changed op only while generating its
// inputs, one strategy per mode (docs/select.md): kept with the rest (the default), left out
// (--own-calls-only), or run in a second stage when the first shows the change raising
// (--staged).
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "select/changed.h"
#include "select/run_facts.h"

namespace ootci {

class InputsOnlyMode {
 public:
  virtual ~InputsOnlyMode() = default;
  // A discovered plan file, before its tests are matched; `prefix` is "relpath::".
  virtual void see_file(const std::string& /*relpath*/, const std::string& /*prefix*/,
                        const RunFacts& /*facts*/) {}
  // A changed op of `family` reaches `test` with `evidence`: whether that selects the test.
  virtual bool selects(const std::string& /*test*/, const std::string& /*family*/,
                       Evidence /*evidence*/) {
    return true;
  }
  // Once every file is matched: what the mode changes in the selection.
  virtual void decide(ChangedSelection& /*selection*/) {}
  // Its numbers in the selection's summary, after deciding.
  virtual void summarize(const ChangedSelection& /*selection*/, nlohmann::json& /*summary*/) const {
  }
};

// The strategy `options` asks for (--staged and --own-calls-only exclude each other).
std::unique_ptr<InputsOnlyMode> inputs_only_mode(const SelectOptions& options);

}  // namespace ootci
