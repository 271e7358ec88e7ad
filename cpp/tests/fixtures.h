// Paths of the repository's test fixtures (tests/fixtures, examples/).
#pragma once

#include <filesystem>

namespace tritium::testing {

inline std::filesystem::path source_dir() { return TRITIUM_SOURCE_DIR; }
inline std::filesystem::path fixture(const std::string& relative) {
  return source_dir() / "tests" / "fixtures" / relative;
}

}  // namespace tritium::testing
