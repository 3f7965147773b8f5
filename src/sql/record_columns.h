#pragma once
// One table per stored record type: each column's name beside the field it binds from and reads
// into. The statements that write a record and the readers that build one take their column list,
// placeholders and positions from the same table, so no reader counts columns by hand.
#include <concepts>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "sql/sql_db.h"

namespace ootci {

template <typename Record>
struct Column {
  const char* name;
  SqlParam (*bind)(const Record&);
  void (*read)(Record&, const SqlRow&, int col);
};

namespace column_detail {
template <typename M>
struct MemberOf;
template <typename C, typename F>
struct MemberOf<F C::*> {
  using Record = C;
  using Field = F;
};
}  // namespace column_detail

// A column stored as the field's own type: text, an integer, a real, or a bool as 0/1.
template <auto Field>
constexpr auto column(const char* name) {
  using Record = typename column_detail::MemberOf<decltype(Field)>::Record;
  using F = typename column_detail::MemberOf<decltype(Field)>::Field;
  return Column<Record>{name,
                        [](const Record& r) -> SqlParam {
                          if constexpr (std::is_same_v<F, bool>)
                            return int64_t{r.*Field};
                          else
                            return r.*Field;
                        },
                        [](Record& r, const SqlRow& row, int col) {
                          if constexpr (std::is_same_v<F, std::string>)
                            r.*Field = row.text(col);
                          else if constexpr (std::is_same_v<F, bool>)
                            r.*Field = row.i64(col) != 0;
                          else if constexpr (std::is_floating_point_v<F>)
                            r.*Field = row.f64(col);
                          else
                            r.*Field = static_cast<F>(row.i64(col));
                        }};
}

// An enum stored as its text: to_string (found by argument-dependent lookup) must return static
// text (const char* or std::string_view), Parse(std::string_view) the enum.
template <auto Field, auto Parse>
constexpr auto enum_column(const char* name) {
  using Record = typename column_detail::MemberOf<decltype(Field)>::Record;
  return Column<Record>{
      name, [](const Record& r) -> SqlParam { return std::string_view(to_string(r.*Field)); },
      [](Record& r, const SqlRow& row, int col) { r.*Field = Parse(row.text(col)); }};
}

template <typename Record>
class RecordColumns {
 public:
  RecordColumns(std::initializer_list<Column<Record>> columns) {
    for (const Column<Record>& c : columns) add(c);
  }

  // "a, b, c" and "?,?,?", in the table's order.
  const std::string& names() const { return names_; }
  const std::string& placeholders() const { return placeholders_; }
  int size() const { return static_cast<int>(columns_.size()); }

  // Appends the record's values, in the table's order.
  void bind(const Record& r, std::vector<SqlParam>& params) const {
    for (const Column<Record>& c : columns_) params.push_back(c.bind(r));
  }
  std::vector<SqlParam> bind(const Record& r) const {
    std::vector<SqlParam> params;
    params.reserve(columns_.size());
    bind(r, params);
    return params;
  }

  // The record from a row whose columns `first`, `first + 1`, ... are the table's.
  Record read(const SqlRow& row, int first = 0) const {
    Record r;
    read_into(r, row, first);
    return r;
  }
  void read_into(Record& r, const SqlRow& row, int first = 0) const {
    for (size_t i = 0; i < columns_.size(); ++i)
      columns_[i].read(r, row, first + static_cast<int>(i));
  }

  // The named columns only, in the given order: a reader that needs a few fields.
  RecordColumns subset(std::initializer_list<std::string_view> names) const {
    RecordColumns out({});
    for (std::string_view name : names) out.add(find(name));
    return out;
  }

 private:
  const Column<Record>& find(std::string_view name) const {
    for (const Column<Record>& c : columns_)
      if (name == c.name) return c;
    throw std::logic_error("record columns: no column " + std::string(name));
  }
  void add(const Column<Record>& c) {
    columns_.push_back(c);
    names_ += (names_.empty() ? "" : ", ") + std::string(c.name);
    placeholders_ += placeholders_.empty() ? "?" : ",?";
  }

  std::vector<Column<Record>> columns_;
  std::string names_;
  std::string placeholders_;
};

}  // namespace ootci
