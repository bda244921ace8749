// Typed node attributes (TF's AttrValue): bool, int, float, string, dtype, shape and lists.
#pragma once
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "core/dtype.h"
#include "core/shape.h"
#include "core/tensor.h"

namespace jf {

using AttrValue = std::variant<bool, int64_t, double, std::string, DType, Shape, std::vector<int64_t>,
                               std::vector<double>, std::vector<std::string>, Tensor>;

// A small ordered map: ops carry a handful of attrs, so a vector beats a hash map.
class Attrs {
 public:
  // Keys as string_view: kernels look attrs up by literal on every run, with no temporary.
  bool has(std::string_view k) const { return find(k) != nullptr; }
  const AttrValue* find(std::string_view k) const {
    for (auto& kv : items_)
      if (kv.first == k) return &kv.second;
    return nullptr;
  }
  void set(const std::string& k, AttrValue v) {
    for (auto& kv : items_)
      if (kv.first == k) {
        kv.second = std::move(v);
        return;
      }
    items_.emplace_back(k, std::move(v));
  }
  // Sets only when absent: jit_scope attrs never overwrite what an op already has.
  void set_default(const std::string& k, AttrValue v) {
    if (!has(k)) items_.emplace_back(k, std::move(v));
  }
  template <class T>
  T get(std::string_view k, T dflt) const {
    const AttrValue* v = find(k);
    if (!v) return dflt;
    if (auto* p = std::get_if<T>(v)) return *p;
    if constexpr (std::is_same_v<T, double>) {
      if (auto* q = std::get_if<int64_t>(v)) return static_cast<double>(*q);
    }
    if constexpr (std::is_same_v<T, int64_t>) {
      if (auto* q = std::get_if<bool>(v)) return *q;
    }
    throw_type("attr '", k, "' has the wrong type");
  }
  const std::vector<std::pair<std::string, AttrValue>>& items() const { return items_; }
  bool empty() const { return items_.empty(); }

 private:
  std::vector<std::pair<std::string, AttrValue>> items_;
};

std::string attr_to_string(const AttrValue& v);

}  // namespace jf
