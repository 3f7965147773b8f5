#include "backend/plan_json.h"

namespace ootci {
namespace {

nlohmann::json optional_number(const std::optional<double>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
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

}  // namespace ootci
