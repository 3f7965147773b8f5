#include "plan/plan_json.h"

#include <fmt/format.h>

#include "base/error.h"
#include "base/file_text.h"

namespace ootci {
namespace {

nlohmann::json optional_number(const std::optional<double>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

// `key` of `object` is a string (non-empty when `non_empty`), else Error naming `field`.
void require_string(const nlohmann::json& object, const char* key, const std::string& source,
                    const std::string& field, bool non_empty = false) {
  auto it = object.find(key);
  if (it == object.end() || !it->is_string() ||
      (non_empty && it->get_ref<const std::string&>().empty()))
    throw Error(
        fmt::format("{}: {}: expected a {}string", source, field, non_empty ? "non-empty " : ""));
}

}  // namespace

nlohmann::json precision_json(const std::optional<Precision>& p) {
  if (!p) return nullptr;
  return {{"atol", optional_number(p->atol)}, {"rtol", optional_number(p->rtol)}};
}

nlohmann::json dtype_json(const DtypeEntry& d) {
  return {
      {"name", d.name}, {"precision", precision_json(d.precision)}, {"force_xfail", d.force_xfail}};
}

nlohmann::json op_json(const OpEntry& op) {
  nlohmann::json dtypes = nullptr;
  if (op.dtypes) {
    dtypes = nlohmann::json::array();
    for (const auto& d : *op.dtypes) dtypes.push_back(dtype_json(d));
  }
  return {{"name", op.name}, {"force_xfail", op.force_xfail}, {"dtypes", dtypes}};
}

nlohmann::json rule_body_json(const Rule& r) {
  nlohmann::json ops_include = nlohmann::json::array();
  for (const auto& op : r.ops_include) {
    nlohmann::json j = {{"name", op.name}, {"tags", op.tags}};
    if (op.description) j["description"] = *op.description;
    if (!op.sample_inputs_func.is_null()) j["sample_inputs_func"] = op.sample_inputs_func;
    ops_include.push_back(std::move(j));
  }
  nlohmann::json dtypes_include = nlohmann::json::array();
  for (const auto& d : r.dtypes_include) dtypes_include.push_back(dtype_json(d));
  return {
      {"class", r.class_name ? nlohmann::json(*r.class_name) : nlohmann::json(nullptr)},
      {"method", r.method},
      {"exact", r.exact},
      {"mode", to_string(r.mode)},
      {"tags", r.tags},
      {"labels", r.labels},
      {"no_grad", r.no_grad},
      {"precision", precision_json(r.precision)},
      {"ops", {{"include", ops_include}, {"exclude", r.ops_exclude}}},
      {"dtypes", {{"include", dtypes_include}, {"exclude", r.dtypes_exclude}}},
      {"cpu_move", r.cpu_move},
      {"modules", {{"include", r.modules_include}, {"exclude", r.modules_exclude}}},
      {"extra", r.extra},
  };
}

nlohmann::json rule_json(const Rule& r) {
  nlohmann::json j = rule_body_json(r);
  j["source"] = r.source;
  return j;
}

nlohmann::json parse_plan_json(const std::string& text, const std::string& source) {
  nlohmann::json plan = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (plan.is_discarded()) throw Error(fmt::format("{}: not JSON", source));
  if (!plan.is_object()) throw Error(fmt::format("{}: not a JSON object", source));
  // Compared as JSON: a schema or version of another type is another file, not a type_error.
  auto schema = plan.find("schema"), version = plan.find("version");
  if (schema == plan.end() || *schema != kPlanSchema || version == plan.end() ||
      !version->is_number() || *version != kPlanVersion)
    throw Error(fmt::format("{}: not an {} version {} file", source, kPlanSchema, kPlanVersion));
  auto backend = plan.find("backend");
  if (backend == plan.end() || !backend->is_object())
    throw Error(fmt::format("{}: backend: expected an object", source));
  require_string(*backend, "device_type", source, "backend.device_type", /*non_empty=*/true);
  auto files = plan.find("files");
  if (files == plan.end()) return plan;
  if (!files->is_array()) throw Error(fmt::format("{}: files: expected a list", source));
  for (size_t i = 0; i < files->size(); ++i) {
    const nlohmann::json& f = (*files)[i];
    std::string field = fmt::format("files[{}]", i);
    if (!f.is_object()) throw Error(fmt::format("{}: {}: expected an object", source, field));
    require_string(f, "path", source, field + ".path");
    require_string(f, "relpath", source, field + ".relpath");
  }
  return plan;
}

nlohmann::json read_plan_json(const std::string& path) {
  std::optional<std::string> text = read_file_bytes(path);
  if (!text) throw Error(fmt::format("{}: cannot open file", path));
  return parse_plan_json(*text, path);
}

}  // namespace ootci
