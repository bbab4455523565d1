// FieldReader: schema-level reading of untrusted JSON objects into violations.
#include "reference/validate/violation.h"

#include <cmath>

#include "reference/base/text_forms.h"

namespace kvc {

std::string_view JsonTypeName(const Json& v) {
  switch (v.type()) {
    case Json::value_t::null: return "null";
    case Json::value_t::boolean: return "boolean";
    case Json::value_t::string: return "string";
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned: return "integer";
    case Json::value_t::number_float: return "number";
    case Json::value_t::array: return "array";
    case Json::value_t::object: return "object";
    default: return "value";
  }
}

std::optional<uint64_t> ReadUint(const Json& v, const std::string& pointer, Violations* out,
                                 uint64_t min, uint64_t max) {
  auto range_msg = [&](const std::string& got) {
    return "expected an integer in [" + std::to_string(min) + ", " + std::to_string(max) +
           "], got " + got;
  };
  const bool nonneg_int =
      v.is_number_unsigned() || (v.is_number_integer() && v.get<int64_t>() >= 0);
  if (nonneg_int) {
    uint64_t x = v.get<uint64_t>();
    if (x < min || x > max) {
      out->push_back({ErrorCode::INPUT_VALUE_OUT_OF_RANGE, pointer, range_msg(std::to_string(x))});
      return std::nullopt;
    }
    return x;
  }
  if (v.is_number_integer()) {  // negative
    out->push_back({ErrorCode::INPUT_VALUE_OUT_OF_RANGE, pointer,
                    range_msg(std::to_string(v.get<int64_t>()))});
    return std::nullopt;
  }
  if (v.is_number_float()) {
    // Say why (probe 36: "7e0 ... not an exact integer" for an integral value written with an
    // exponent, and 2^64 shown only as a rounded double).
    const double d = v.get<double>();
    const char* why = !(std::fabs(d) < 18446744073709551616.0)
                          ? " (a number beyond 64 bits)"
                      : d == std::floor(d) ? " (an integer written with a fraction or an exponent; "
                                             "write the digits alone)"
                                           : " (not an integer)";
    out->push_back({ErrorCode::INPUT_VALUE_OUT_OF_RANGE, pointer, range_msg(v.dump() + why)});
    return std::nullopt;
  }
  out->push_back({ErrorCode::INPUT_FIELD_TYPE, pointer,
                  "expected an integer, got " + std::string(JsonTypeName(v))});
  return std::nullopt;
}

Violation ForReport(Violation v) {
  if (v.pointer.size() > kMaxReportedPointerBytes)
    v.pointer = base::Clipped(v.pointer, kMaxReportedPointerBytes);
  if (v.message.size() > kMaxReportedMessageBytes)
    v.message = base::Clipped(v.message, kMaxReportedMessageBytes);
  return v;
}

void ClipForReport(Violations* v) {
  for (Violation& x : *v) x = ForReport(std::move(x));
}

FieldReader::FieldReader(const Json* obj, std::string pointer, Violations* out)
    : obj_(obj), pointer_(std::move(pointer)), out_(out) {
  if (obj_ != nullptr && !obj_->is_object()) {
    Add(ErrorCode::INPUT_FIELD_TYPE, pointer_,
        "expected an object, got " + std::string(JsonTypeName(*obj_)));
    obj_ = nullptr;
  }
}

std::string FieldReader::Ptr(std::string_view key) const {
  return pointer_ + "/" + JsonPointerEscape(key);
}

void FieldReader::Add(ErrorCode code, std::string pointer, std::string message) {
  out_->push_back({code, std::move(pointer), std::move(message)});
}

bool FieldReader::Has(std::string_view key) const {
  return obj_ != nullptr && obj_->find(key) != obj_->end();
}

const Json* FieldReader::Member(std::string_view key, bool required) {
  known_.emplace(key);
  if (obj_ == nullptr) return nullptr;
  auto it = obj_->find(key);
  if (it == obj_->end()) {
    if (required) Add(ErrorCode::INPUT_FIELD_MISSING, Ptr(key), "required field is missing");
    return nullptr;
  }
  return &*it;
}

std::optional<std::string> FieldReader::String(std::string_view key) {
  const Json* v = Member(key, true);
  if (!v) return std::nullopt;
  if (!v->is_string()) {
    Add(ErrorCode::INPUT_FIELD_TYPE, Ptr(key), "expected a string, got " + std::string(JsonTypeName(*v)));
    return std::nullopt;
  }
  return v->get<std::string>();
}

std::optional<uint64_t> FieldReader::Uint(std::string_view key, uint64_t min, uint64_t max) {
  const Json* v = Member(key, true);
  if (!v) return std::nullopt;
  return ReadUint(*v, Ptr(key), out_, min, max);
}

std::optional<int64_t> FieldReader::Int(std::string_view key) {
  const Json* v = Member(key, true);
  if (!v) return std::nullopt;
  if (v->is_number_integer() && !v->is_number_unsigned()) return v->get<int64_t>();
  if (v->is_number_unsigned()) {
    uint64_t x = v->get<uint64_t>();
    if (x <= static_cast<uint64_t>(INT64_MAX)) return static_cast<int64_t>(x);
  }
  Add(v->is_number() ? ErrorCode::INPUT_VALUE_OUT_OF_RANGE : ErrorCode::INPUT_FIELD_TYPE, Ptr(key),
      "expected a 64-bit signed integer, got " + base::ClippedJsonText(v->dump()));
  return std::nullopt;
}

std::optional<double> FieldReader::Number(std::string_view key) {
  const Json* v = Member(key, true);
  if (!v) return std::nullopt;
  if (!v->is_number()) {
    Add(ErrorCode::INPUT_FIELD_TYPE, Ptr(key), "expected a number, got " + std::string(JsonTypeName(*v)));
    return std::nullopt;
  }
  return v->get<double>();
}

std::optional<bool> FieldReader::Bool(std::string_view key) {
  const Json* v = Member(key, true);
  if (!v) return std::nullopt;
  if (!v->is_boolean()) {
    Add(ErrorCode::INPUT_FIELD_TYPE, Ptr(key), "expected a boolean, got " + std::string(JsonTypeName(*v)));
    return std::nullopt;
  }
  return v->get<bool>();
}

std::optional<std::string> FieldReader::Enum(std::string_view key,
                                             std::initializer_list<std::string_view> allowed) {
  auto s = String(key);
  if (!s) return std::nullopt;
  for (auto a : allowed)
    if (*s == a) return s;
  std::string list;
  for (auto a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
  Add(ErrorCode::INPUT_VALUE_INVALID, Ptr(key), base::QuoteClipped(*s) + " is not one of: " + list);
  return std::nullopt;
}

const Json* FieldReader::Object(std::string_view key) {
  const Json* v = Member(key, true);
  if (v && !v->is_object()) {
    Add(ErrorCode::INPUT_FIELD_TYPE, Ptr(key), "expected an object, got " + std::string(JsonTypeName(*v)));
    return nullptr;
  }
  return v;
}

const Json* FieldReader::Array(std::string_view key) {
  const Json* v = Member(key, true);
  if (v && !v->is_array()) {
    Add(ErrorCode::INPUT_FIELD_TYPE, Ptr(key), "expected an array, got " + std::string(JsonTypeName(*v)));
    return nullptr;
  }
  return v;
}

const Json* FieldReader::Any(std::string_view key) { return Member(key, true); }

std::optional<std::string> FieldReader::OptString(std::string_view key) {
  if (!Has(key)) { known_.emplace(key); return std::nullopt; }
  return String(key);
}
std::optional<uint64_t> FieldReader::OptUint(std::string_view key, uint64_t max) {
  if (!Has(key)) { known_.emplace(key); return std::nullopt; }
  return Uint(key, 0, max);
}
const Json* FieldReader::OptObject(std::string_view key) {
  if (!Has(key)) { known_.emplace(key); return nullptr; }
  return Object(key);
}
const Json* FieldReader::OptArray(std::string_view key) {
  if (!Has(key)) { known_.emplace(key); return nullptr; }
  return Array(key);
}
const Json* FieldReader::OptAny(std::string_view key) {
  if (!Has(key)) { known_.emplace(key); return nullptr; }
  return Any(key);
}

void FieldReader::Allow(std::initializer_list<std::string_view> keys) {
  for (auto k : keys) known_.emplace(k);
}

void FieldReader::RejectUnknownFields() {
  if (obj_ == nullptr) return;
  for (auto it = obj_->begin(); it != obj_->end(); ++it)
    if (known_.find(it.key()) == known_.end())
      Add(ErrorCode::INPUT_FIELD_UNKNOWN, Ptr(it.key()),
          "field " + base::QuoteClipped(it.key()) + " is not defined by the schema");
}

std::optional<std::vector<uint64_t>> FieldReader::UintArray(const Json& arr, const std::string& pointer,
                                                            Violations* out, uint64_t max) {
  if (!arr.is_array()) {
    out->push_back({ErrorCode::INPUT_FIELD_TYPE, pointer, "expected an array of integers"});
    return std::nullopt;
  }
  std::vector<uint64_t> r;
  bool ok = true;
  for (size_t i = 0; i < arr.size(); ++i) {
    auto x = ReadUint(arr[i], pointer + "/" + std::to_string(i), out, 0, max);
    if (x) r.push_back(*x); else ok = false;
  }
  if (!ok) return std::nullopt;
  return r;
}

}  // namespace kvc
