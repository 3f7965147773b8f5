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

// Throws Error("file:line:col: path: message").
[[noreturn]] void yaml_fail(const YamlDoc& doc, const YAML::Node& node, const std::string& path,
                            const std::string& message);

// Reads one mapping of a config file with strict typing. Keys that are never asked for are
// reported as unknown by finish(), so typos never pass silently.
class YamlMap {
 public:
  YamlMap(const YamlDoc& doc, YAML::Node node, std::string path);

  bool has(const std::string& key) const;
  std::optional<std::string> str(const std::string& key);
  std::optional<int64_t> integer(const std::string& key, int64_t min = INT64_MIN,
                                 int64_t max = INT64_MAX);
  std::optional<double> number(const std::string& key);
  std::optional<bool> boolean(const std::string& key);
  std::optional<std::vector<std::string>> str_list(const std::string& key);
  // A nested mapping; nullopt if the key is absent.
  std::optional<YamlMap> map(const std::string& key);
  // Raw access for shapes the helpers do not cover; marks the key as known.
  YAML::Node raw(const std::string& key);
  std::string child_path(const std::string& key) const;
  // Fails on the first key that was never read.
  void finish() const;

  const YamlDoc& doc() const { return *doc_; }
  const YAML::Node& node() const { return node_; }
  const std::string& path() const { return path_; }
  std::vector<std::string> keys() const;

 private:
  const YamlDoc* doc_;
  YAML::Node node_;
  std::string path_;
  std::set<std::string> seen_;
};

}  // namespace ootci
