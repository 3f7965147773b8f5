#include "base/yaml_doc.h"

#include <fmt/format.h>

#include <charconv>
#include <fstream>
#include <sstream>

#include "base/file_text.h"

namespace ootci {

YamlDoc load_yaml_file(const std::string& path) {
  std::optional<std::string> text = read_file_bytes(path);
  if (!text) throw Error(fmt::format("{}: cannot open file", path));
  return load_yaml_text(path, *text);
}

YamlDoc load_yaml_text(const std::string& name, const std::string& text) {
  try {
    return YamlDoc{name, YAML::Load(text)};
  } catch (const YAML::ParserException& e) {
    throw Error(
        fmt::format("{}:{}:{}: invalid YAML: {}", name, e.mark.line + 1, e.mark.column + 1, e.msg));
  }
}

std::string yaml_where(const YamlDoc& doc, const YAML::Node& node) {
  YAML::Mark m = node.Mark();
  if (m.is_null() || m.line < 0) return doc.name;
  return fmt::format("{}:{}:{}", doc.name, m.line + 1, m.column + 1);
}

YamlWhere parse_yaml_where(const std::string& where) {
  size_t col = where.rfind(':');
  size_t line =
      col == std::string::npos || col == 0 ? std::string::npos : where.rfind(':', col - 1);
  if (line == std::string::npos) return {where, 0, 0};
  auto number = [&](size_t from, size_t to) {
    int n = 0;
    auto [end, ec] = std::from_chars(where.data() + from, where.data() + to, n);
    return ec == std::errc() && end == where.data() + to ? n : -1;
  };
  int l = number(line + 1, col), c = number(col + 1, where.size());
  if (l < 0 || c < 0) return {where, 0, 0};
  return {where.substr(0, line), l, c};
}

std::string yaml_message(const YamlDoc& doc, const YAML::Node& node, const std::string& path,
                         const std::string& message) {
  if (path.empty()) return fmt::format("{}: {}", yaml_where(doc, node), message);
  return fmt::format("{}: {}: {}", yaml_where(doc, node), path, message);
}

void yaml_fail(const YamlDoc& doc, const YAML::Node& node, const std::string& path,
               const std::string& message) {
  throw Error(yaml_message(doc, node, path, message));
}

YamlMap::YamlMap(const YamlDoc& doc, YAML::Node node, std::string path,
                 std::vector<std::string>* errors)
    : doc_(&doc), node_(node), path_(std::move(path)), errors_(errors) {
  if (node_.IsNull()) return;  // an empty section reads as an empty mapping
  if (!node_.IsMap()) {
    fail(node_, path_.empty() ? "(root)" : path_, "expected a mapping");
    // Collect mode: carry on as if the section were empty. reset() rebinds; operator= would
    // overwrite the document's node.
    node_.reset();
  }
}

void YamlMap::fail(const YAML::Node& node, const std::string& path,
                   const std::string& message) const {
  if (!errors_) yaml_fail(*doc_, node, path, message);
  errors_->push_back(yaml_message(*doc_, node, path, message));
}

std::string YamlMap::child_path(const std::string& key) const {
  return path_.empty() ? key : path_ + "." + key;
}

bool YamlMap::has(const std::string& key) const {
  return node_.IsMap() && node_[key];
}

std::vector<std::string> YamlMap::keys() const {
  std::vector<std::string> out;
  if (!node_.IsMap()) return out;
  for (auto it = node_.begin(); it != node_.end(); ++it) out.push_back(it->first.Scalar());
  return out;
}

YAML::Node YamlMap::raw(const std::string& key) {
  seen_.insert(key);
  if (!node_.IsMap()) return YAML::Node();
  return node_[key];
}

std::optional<std::string> YamlMap::str(const std::string& key) {
  YAML::Node n = raw(key);
  if (!n || n.IsNull()) return std::nullopt;
  if (!n.IsScalar()) {
    fail(n, child_path(key), "expected a string");
    return std::nullopt;
  }
  return n.Scalar();
}

std::optional<int64_t> YamlMap::integer(const std::string& key, int64_t min, int64_t max) {
  YAML::Node n = raw(key);
  if (!n || n.IsNull()) return std::nullopt;
  int64_t v = 0;
  if (!n.IsScalar() || !YAML::convert<int64_t>::decode(n, v)) {
    fail(n, child_path(key), "expected an integer");
    return std::nullopt;
  }
  if (v < min || v > max) {
    fail(n, child_path(key), fmt::format("must be between {} and {}", min, max));
    return std::nullopt;
  }
  return v;
}

std::optional<double> YamlMap::number(const std::string& key) {
  YAML::Node n = raw(key);
  if (!n || n.IsNull()) return std::nullopt;
  double v = 0;
  if (!n.IsScalar() || !YAML::convert<double>::decode(n, v)) {
    fail(n, child_path(key), "expected a number");
    return std::nullopt;
  }
  return v;
}

std::optional<bool> YamlMap::boolean(const std::string& key) {
  YAML::Node n = raw(key);
  if (!n || n.IsNull()) return std::nullopt;
  bool v = false;
  if (!n.IsScalar() || !YAML::convert<bool>::decode(n, v)) {
    fail(n, child_path(key), "expected true or false");
    return std::nullopt;
  }
  return v;
}

std::optional<std::vector<std::string>> YamlMap::str_list(const std::string& key) {
  YAML::Node n = raw(key);
  if (!n || n.IsNull()) return std::nullopt;
  if (!n.IsSequence()) {
    fail(n, child_path(key), "expected a list of strings");
    return std::nullopt;
  }
  std::vector<std::string> out;
  bool ok = true;
  for (size_t i = 0; i < n.size(); ++i) {
    if (!n[i].IsScalar()) {
      fail(n[i], fmt::format("{}[{}]", child_path(key), i), "expected a string");
      ok = false;
      continue;
    }
    out.push_back(n[i].Scalar());
  }
  if (!ok) return std::nullopt;
  return out;
}

std::optional<YamlMap> YamlMap::map(const std::string& key) {
  YAML::Node n = raw(key);
  if (!n) return std::nullopt;
  if (!n.IsNull() && !n.IsMap()) {
    fail(n, child_path(key), "expected a mapping");
    return std::nullopt;
  }
  YamlMap child(*doc_, n, child_path(key), errors_);
  child.unknown_ = unknown_;
  return child;
}

void YamlMap::finish() const {
  if (!node_.IsMap()) return;
  for (auto it = node_.begin(); it != node_.end(); ++it) {
    std::string k = it->first.Scalar();  // empty for a non-scalar key, which is never known
    if (seen_.count(k)) continue;
    if (unknown_)
      unknown_->push_back(yaml_message(*doc_, it->first, child_path(k), "unknown key (ignored)"));
    else
      fail(it->first, child_path(k), "unknown key");
  }
}

}  // namespace ootci
