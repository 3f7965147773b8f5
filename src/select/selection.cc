#include "select/selection.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>

#include "base/error.h"

namespace ootci {

Selection load_selection(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error(fmt::format("{}: cannot open selection", path));
  nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  if (j.is_discarded() || !j.is_object())
    throw Error(fmt::format(
        "{}: a selection is a JSON object with \"files\", \"tests\" and/or \"bases\"", path));
  Selection s;
  for (const char* key : {"files", "tests", "bases"}) {
    if (!j.contains(key)) continue;
    if (!j[key].is_array())
      throw Error(fmt::format("{}: \"{}\" must be a list of strings", path, key));
    for (const auto& v : j[key]) {
      if (!v.is_string())
        throw Error(fmt::format("{}: \"{}\" must be a list of strings", path, key));
      std::string k = key;
      (k == "files" ? s.files : k == "tests" ? s.tests : s.bases).insert(v.get<std::string>());
    }
  }
  if (j.contains("then")) {
    const auto& then = j["then"];
    nlohmann::json tests =
        then.is_object() ? then.value("tests", nlohmann::json::array()) : nlohmann::json();
    if (!tests.is_array() ||
        !std::all_of(tests.begin(), tests.end(), [](const auto& v) { return v.is_string(); }))
      throw Error(
          fmt::format("{}: \"then\" must be an object whose \"tests\" is a list of strings", path));
    for (const auto& v : tests) s.then_tests.insert(v.get<std::string>());
  }
  return s;
}

}  // namespace ootci
