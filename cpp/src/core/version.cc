#include "tritium/core.h"

namespace tritium {

const char* version() { return TRITIUM_VERSION; }

}  // namespace tritium
