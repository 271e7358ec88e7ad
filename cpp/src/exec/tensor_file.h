// Private to exec: tensor files and the tolerance comparison of two tensors. The runner writes the
// inputs and the reference and candidate outputs as tensor files; the engine compares them here, so
// no candidate-controlled Python decides a verdict. Python's side is python/tritium/runner/tensorfile.py.
//
// Layout, little-endian: "TRITTNS1", a u64 header length H, H bytes of UTF-8 JSON
// {"tensors": [{"name", "dtype", "shape", "offset", "nbytes"}...], "values": {name: any JSON}}, then
// the data region from the first multiple of 64 at or after 16 + H. Offsets are relative to the data
// region and multiples of 64; data is C-contiguous. A candidate writes its own outputs file, so
// open() treats every byte as hostile: anything malformed is an Error, never an out-of-bounds read.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tritium/core.h"

namespace tritium::exec {

inline constexpr std::uint64_t kMaxTensorFileBytes = 8ull << 30;
inline constexpr std::uint64_t kMaxTensorHeaderBytes = 64u << 20;  // JSON beyond this is not a header

/// Bytes per element of a dtype name ("float32", "bfloat16", "bool", ...); 0 when unknown.
std::size_t dtype_size(std::string_view dtype);

/// One tensor of a TensorFile; `data` points into the file's buffer (nbytes == numel * itemsize).
struct TensorView {
  std::string name, dtype;
  std::vector<std::int64_t> shape;  // [] for a 0-d tensor
  const std::byte* data = nullptr;
  std::size_t nbytes = 0;

  std::size_t numel() const;
};

/// A validated tensor file held in memory. Move-only; views stay valid when it moves.
class TensorFile {
 public:
  /// Reads and validates a file; the error names the path and what is wrong.
  static Result<TensorFile> open(const std::filesystem::path& path);

  const std::vector<TensorView>& tensors() const { return tensors_; }
  const TensorView* find(std::string_view name) const;
  const Json& values() const { return values_; }  // the header's "values", {} when absent

  TensorFile(TensorFile&&) = default;
  TensorFile& operator=(TensorFile&&) = default;

 private:
  struct FreeAligned {
    void operator()(std::byte* p) const;
  };
  TensorFile() = default;

  std::unique_ptr<std::byte[], FreeAligned> bytes_;
  std::vector<TensorView> tensors_;
  Json values_ = Json::object();
};

struct Tolerance {
  double atol = 0, rtol = 0;
};

/// The tolerance of a profile ("kernelbench", "strict", "legacy") for a dtype; integer and bool
/// dtypes are exact in every profile. nullopt for an unknown profile or dtype.
std::optional<Tolerance> tolerance_for(std::string_view profile, std::string_view dtype);
const std::vector<std::string>& profile_names();

struct Comparison {
  bool same_shape = false, same_dtype = false;
  bool match = false;
  std::size_t elements = 0, mismatches = 0, unexpected_nonfinite = 0;
  double max_abs_err = 0, max_rel_err = 0;  // over finite pairs; rel only where |expected| > atol
  std::string message;                      // one line, without the tensor's name
};

/// Element-wise |actual - expected| <= atol + rtol * |expected| (torch.allclose); a NaN expected
/// needs a NaN, an inf the same inf, and a non-finite value where a finite one is expected fails.
Comparison compare(const TensorView& expected, const TensorView& actual, Tolerance tol);

/// Same dtype, shape and bytes: an input the kernel must not have written to.
bool bitwise_equal(const TensorView& a, const TensorView& b);

}  // namespace tritium::exec
