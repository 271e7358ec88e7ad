// libFuzzer target for the Python parser: any bytes must parse or fail cleanly, never crash,
// hang or read out of bounds (run under ASan and UBSan: `make fuzz`).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "tritium/pyast.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view source(reinterpret_cast<const char*>(data), size);
  const auto parsed = tritium::pyast::parse(source);
  if (parsed.ok()) {
    (void)tritium::pyast::facts(parsed.tree);
    (void)tritium::pyast::dump(parsed.tree);
  }
  return 0;
}
