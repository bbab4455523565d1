// A main for a libFuzzer target without libFuzzer: runs LLVMFuzzerTestOneInput once on each input.
//
// Every build (GCC included) links each target of tools/fuzz/ with this file as
// bin/<target>_replay, and the fuzz_seed_replay test runs it over the target's seed corpus
// (tools/fuzz/seed-corpus.sh): so the targets compile under CI's -Werror and their oracles hold
// on every fixture and every invalid fixture's document, while coverage-guided campaigns stay
// with tools/fuzz-check.sh (Clang). Arguments: files, or directories whose regular files are
// read in name order. A target reports a failed oracle by aborting; on SIGABRT, SIGSEGV, SIGBUS or
// SIGFPE this main prints the input being run (replay it with `bin/<target>_replay FILE`). Exit 0
// when every input ran, 2 when one could not be read or nothing was given.
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

// A target's custom mutator calls libFuzzer's mutator; a replay never mutates.
extern "C" size_t LLVMFuzzerMutate(uint8_t*, size_t, size_t) {
  std::fprintf(stderr, "fuzz replay: LLVMFuzzerMutate called outside libFuzzer\n");
  std::abort();
}

namespace {

// The input being run, for the signal handler (set before each run; the string outlives it).
const char* g_current = nullptr;

void OnFatalSignal(int sig) {
  // Only async-signal-safe calls: write(2), then the default action.
  const char* head = "fuzz replay: failed on input ";
  ssize_t ignored = write(STDERR_FILENO, head, std::strlen(head));
  if (g_current) ignored = write(STDERR_FILENO, g_current, std::strlen(g_current));
  ignored = write(STDERR_FILENO, "\n", 1);
  (void)ignored;
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

}  // namespace

int main(int argc, char** argv) {
  for (int sig : {SIGABRT, SIGSEGV, SIGBUS, SIGFPE}) std::signal(sig, OnFatalSignal);
  namespace fs = std::filesystem;
  std::vector<std::string> inputs;
  for (int i = 1; i < argc; ++i) {
    std::error_code ec;
    if (fs::is_directory(argv[i], ec)) {
      std::vector<std::string> found;
      for (const auto& entry : fs::directory_iterator(argv[i], ec))
        if (entry.is_regular_file()) found.push_back(entry.path().string());
      std::sort(found.begin(), found.end());
      inputs.insert(inputs.end(), found.begin(), found.end());
    } else {
      inputs.emplace_back(argv[i]);
    }
  }
  if (inputs.empty()) {
    std::fprintf(stderr, "usage: %s FILE_OR_DIRECTORY...  (no input given or found)\n", argv[0]);
    return 2;
  }
  for (const std::string& path : inputs) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
      std::fprintf(stderr, "fuzz replay: %s: cannot read\n", path.c_str());
      return 2;
    }
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    g_current = path.c_str();
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  }
  std::printf("fuzz replay: %zu inputs, no oracle failed\n", inputs.size());
  return 0;
}
