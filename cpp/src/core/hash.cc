#include <openssl/evp.h>

#include <memory>
#include <stdexcept>

#include "tritium/core.h"

namespace tritium {

std::string sha256_hex(std::string_view data) {
  // EVP failures mean no memory or a broken libcrypto, nothing a user can fix: they throw.
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), &EVP_MD_CTX_free);
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (!ctx || EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1 ||
      EVP_DigestUpdate(ctx.get(), data.data(), data.size()) != 1 || EVP_DigestFinal_ex(ctx.get(), digest, &length) != 1)
    throw std::runtime_error("sha256_hex: OpenSSL EVP digest failed");
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex(2 * length, '\0');
  for (unsigned int i = 0; i < length; ++i) {
    hex[2 * i] = kHex[digest[i] >> 4];
    hex[2 * i + 1] = kHex[digest[i] & 0xf];
  }
  return hex;
}

}  // namespace tritium
