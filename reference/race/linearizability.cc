// Non-template pieces of the linearizability checker.
#include "reference/race/linearizability.h"

namespace kvc::race {

std::string_view VerdictName(Verdict v) {
  switch (v) {
    case Verdict::kLinearizable: return "linearizable";
    case Verdict::kNotLinearizable: return "not_linearizable";
    case Verdict::kUnknown: return "unknown";
  }
  return "unknown";
}

}  // namespace kvc::race
