# Sourced by the CLI suites (tools/cli_test.sh, tools/model_cli_test.sh): asan_build BINARY is
# true when BINARY carries AddressSanitizer, whose terabytes of shadow memory no address-space
# limit (ulimit -v) can hold, so the suites skip their limit checks there. GCC links the ASan
# runtime dynamically (libasan in ldd), Clang statically (its __asan_init symbol; matches are
# counted, not grep -q, so that nm never writes into a closed pipe). Under such a limit Clang's
# ASan ran out of memory printing its report and hung (tools/fuzz-check.sh's build, 2026-12-06).
asan_build() {
  ldd "$1" 2>/dev/null | grep -q libasan || [ "$(nm "$1" 2>/dev/null | grep -c ' __asan_init$')" != 0 ]
}
