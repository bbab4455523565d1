// Inline readers of simdjson DOM elements shared by the checker's envelope and payload readers.
#ifndef KVCONFORM_REFERENCE_TRACE_ELEMENT_READERS_H_
#define KVCONFORM_REFERENCE_TRACE_ELEMENT_READERS_H_

#include <simdjson.h>

#include <cstdint>

namespace kvc::trace {

// An unsigned integer element (UINT64, or INT64 >= 0): what ObjReader::Uint accepts without a
// bound, and what the one-pass readers accept. Inline: called for every numeric member.
inline bool ElementAsUint(const simdjson::dom::element& e, uint64_t* out) {
  switch (e.type()) {
    case simdjson::dom::element_type::UINT64:
      *out = e.get_uint64().value_unsafe();
      return true;
    case simdjson::dom::element_type::INT64: {
      const int64_t v = e.get_int64().value_unsafe();
      *out = static_cast<uint64_t>(v);
      return v >= 0;
    }
    default:
      return false;
  }
}

}  // namespace kvc::trace

#endif  // KVCONFORM_REFERENCE_TRACE_ELEMENT_READERS_H_
