#pragma once
#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "base/error.h"

namespace ootci {

// A parsed YAML file that remembers its name, so every error can say file:line:column.
struct YamlDoc {
  std::string name;
  YAML::Node root;
};

YamlDoc load_yaml_file(const std::string& path);
YamlDoc load_yaml_text(const std::string& name, const std::string& text);

// "file:line:column" for a node (1-based), or just "file" when the node has no position.
std::string yaml_where(const YamlDoc& doc, const YAML::Node& node);

// The parts of a yaml_where() string; the file name may itself hold colons, so it is read from the
// end. Line and column are 0 when `where` is only a file name.
struct YamlWhere {
  std::string file;
  int line = 0;
  int column = 0;
};
YamlWhere parse_yaml_where(const std::string& where);

// "file:line:col: path: message" (without "path: " when path is empty).
std::string yaml_message(const YamlDoc& doc, const YAML::Node& node, const std::string& path,
                         const std::string& message);

// Throws Error(yaml_message(...)).
[[noreturn]] void yaml_fail(const YamlDoc& doc, const YAML::Node& node, const std::string& path,
                            const std::string& message);

// Reads one mapping of a config file with strict typing. Keys that are never asked for are
// reported as unknown by finish(), so typos never pass silently.
//
// Without an error sink every failure throws Error. With one (collect mode, for `ootci plan
// check`, which must report every problem at once) each failure appends the same
// "file:line:col: path: message" text instead, the accessor returns nullopt, and a node that is
// not a mapping reads as empty. Child maps made with map() share the sink.
class YamlMap {
 public:
  YamlMap(const YamlDoc& doc, YAML::Node node, std::string path,
          std::vector<std::string>* errors = nullptr);

  bool has(const std::string& key) const;
  std::optional<std::string> str(const std::string& key);
  std::optional<int64_t> integer(const std::string& key, int64_t min = INT64_MIN,
                                 int64_t max = INT64_MAX);
  std::optional<double> number(const std::string& key);
  std::optional<bool> boolean(const std::string& key);
  std::optional<std::vector<std::string>> str_list(const std::string& key);
  // A nested mapping; nullopt if the key is absent (or, in collect mode, not a mapping).
  std::optional<YamlMap> map(const std::string& key);
  // Raw access for shapes the helpers do not cover; marks the key as known.
  YAML::Node raw(const std::string& key);
  std::string child_path(const std::string& key) const;
  // Fails on the first key that was never read; in collect mode reports every such key, to the
  // unknown-key sink when one is set (a warning there: Spyre ignores keys it does not know).
  void finish() const;
  // Where finish() reports unknown keys instead of the error sink; child maps inherit it.
  void report_unknown_keys_to(std::vector<std::string>* sink) { unknown_ = sink; }
  // Throws, or in collect mode records, "file:line:col: path: message" for `node`.
  void fail(const YAML::Node& node, const std::string& path, const std::string& message) const;

  const YamlDoc& doc() const { return *doc_; }
  const YAML::Node& node() const { return node_; }
  const std::string& path() const { return path_; }
  std::vector<std::string> keys() const;

 private:
  const YamlDoc* doc_;
  YAML::Node node_;
  std::string path_;
  std::vector<std::string>* errors_;
  std::vector<std::string>* unknown_ = nullptr;
  std::set<std::string> seen_;
};

}  // namespace ootci
