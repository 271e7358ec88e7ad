#include "tensor_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cassert>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <limits>
#include <new>
#include <unordered_set>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace tritium::exec {
namespace {

constexpr char kMagic[8] = {'T', 'R', 'I', 'T', 'T', 'N', 'S', '1'};
constexpr std::uint64_t kAlign = 64;
constexpr int kMaxJsonDepth = 64;  // "values" is compared and copied recursively; keep it shallow
constexpr std::size_t kNone = std::numeric_limits<std::size_t>::max();
constexpr std::uint64_t kMaxNumel = std::numeric_limits<std::int64_t>::max();

enum class Dtype { f64, f32, f16, bf16, i64, i32, i16, i8, u8, b8, unknown };

struct DtypeInfo {
  std::string_view name;
  Dtype dtype;
  std::size_t size;
};

constexpr DtypeInfo kDtypes[] = {{"float64", Dtype::f64, 8},   {"float32", Dtype::f32, 4}, {"float16", Dtype::f16, 2},
                                 {"bfloat16", Dtype::bf16, 2}, {"int64", Dtype::i64, 8},   {"int32", Dtype::i32, 4},
                                 {"int16", Dtype::i16, 2},     {"int8", Dtype::i8, 1},     {"uint8", Dtype::u8, 1},
                                 {"bool", Dtype::b8, 1}};

Dtype dtype_of(std::string_view name) {
  for (const auto& d : kDtypes)
    if (d.name == name) return d.dtype;
  return Dtype::unknown;
}

// A hostile name may be long or hold control characters: quote it, escaped and cut short.
std::string shown(std::string_view name) {
  const bool cut = name.size() > 60;
  return Json(std::string(name.substr(0, 60))).dump(-1, ' ', false, Json::error_handler_t::replace) +
         (cut ? "..." : "");
}

std::uint64_t load_u64_le(const std::byte* p) {
  std::uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | std::to_integer<std::uint64_t>(p[i]);
  return v;
}

// ---- reading -----------------------------------------------------------------------------------

using Bytes = std::unique_ptr<std::byte[], void (*)(std::byte*)>;

void free_aligned(std::byte* p) { ::operator delete[](p, std::align_val_t{kAlign}); }

// The whole file in a 64-aligned heap buffer. Not mmap: the writer may truncate the file while we
// hold it, and touching a mapped page past the new end is SIGBUS. O_NONBLOCK so a FIFO planted at
// the path cannot block the open; fstat then rejects it.
Result<std::pair<Bytes, std::size_t>> read_all(const std::filesystem::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return Error{fmt::format("cannot open ({})", std::strerror(errno))};
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st{};
  if (fstat(fd, &st) != 0) return Error{fmt::format("cannot stat ({})", std::strerror(errno))};
  if (!S_ISREG(st.st_mode)) return Error{"not a regular file"};
  const auto size = static_cast<std::uint64_t>(st.st_size);
  if (size > kMaxTensorFileBytes)
    return Error{fmt::format("{} bytes, over the limit of {} bytes", size, kMaxTensorFileBytes)};
  Bytes bytes(static_cast<std::byte*>(::operator new[](size, std::align_val_t{kAlign}, std::nothrow)), free_aligned);
  if (!bytes) return Error{fmt::format("cannot allocate {} bytes", size)};
  for (std::size_t done = 0; done < size;) {
    const ssize_t n = ::read(fd, bytes.get() + done, size - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Error{fmt::format("read failed ({})", std::strerror(errno))};
    if (n == 0) return Error{"the file shrank while being read"};
    done += static_cast<std::size_t>(n);
  }
  return std::pair<Bytes, std::size_t>(std::move(bytes), size);
}

// ---- validation --------------------------------------------------------------------------------

// A non-negative JSON integer; floats, bools and negatives are not counts.
std::optional<std::uint64_t> as_count(const Json* j) {
  if (j == nullptr || !j->is_number_integer()) return std::nullopt;
  if (j->is_number_unsigned()) return j->get<std::uint64_t>();
  const auto v = j->get<std::int64_t>();
  return v < 0 ? std::nullopt : std::optional<std::uint64_t>(static_cast<std::uint64_t>(v));
}

const Json* member(const Json& object, const char* key) {
  const auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

// One header entry checked against the data region [region, region + region_size).
Result<TensorView> parse_entry(const Json& e, std::size_t index, const std::byte* region, std::uint64_t region_size) {
  const auto fail = [&](std::string why) { return Error{fmt::format("tensor {}: {}", index, why)}; };
  if (!e.is_object()) return fail("not a JSON object {name, dtype, shape, offset, nbytes}");
  const Json* name = member(e, "name");
  const Json* dtype = member(e, "dtype");
  const Json* shape = member(e, "shape");
  if (!name || !name->is_string()) return fail("\"name\" is missing or not a string");
  TensorView v;
  v.name = name->get<std::string>();
  const auto fail_named = [&](std::string why) {
    return Error{fmt::format("tensor {} ({}): {}", index, shown(v.name), why)};
  };
  if (!dtype || !dtype->is_string()) return fail_named("\"dtype\" is missing or not a string");
  v.dtype = dtype->get<std::string>();
  const std::size_t itemsize = dtype_size(v.dtype);
  if (itemsize == 0) return fail_named(fmt::format("unknown dtype {}", shown(v.dtype)));
  if (!shape || !shape->is_array()) return fail_named("\"shape\" is missing or not an array");
  // numel is the product of the non-zero dims, so the check does not depend on where a 0 sits.
  std::uint64_t numel = 1;
  bool empty = false;
  for (const Json& d : *shape) {
    const auto dim = as_count(&d);
    if (!dim || *dim > kMaxNumel)
      return fail_named(fmt::format("shape entry {} is not a non-negative int64", d.dump()));
    v.shape.push_back(static_cast<std::int64_t>(*dim));
    if (*dim == 0)
      empty = true;
    else if (__builtin_mul_overflow(numel, *dim, &numel) || numel > kMaxNumel)
      return fail_named("the shape's element count overflows int64");
  }
  if (empty) numel = 0;
  const auto offset = as_count(member(e, "offset"));
  const auto nbytes = as_count(member(e, "nbytes"));
  if (!offset || !nbytes) return fail_named("\"offset\" or \"nbytes\" is missing or not a non-negative integer");
  std::uint64_t expected_nbytes = 0;
  if (__builtin_mul_overflow(numel, itemsize, &expected_nbytes) || *nbytes != expected_nbytes)
    return fail_named(fmt::format("nbytes {} is not numel {} x itemsize {}", *nbytes, numel, itemsize));
  if (*offset % kAlign != 0) return fail_named(fmt::format("offset {} is not a multiple of {}", *offset, kAlign));
  if (*offset > region_size || *nbytes > region_size - *offset)
    return fail_named(
        fmt::format("offset {} + nbytes {} runs past the data region ({} bytes)", *offset, *nbytes, region_size));
  v.data = region + *offset;
  v.nbytes = static_cast<std::size_t>(*nbytes);
  return v;
}

// Tensors may not share bytes, nor two tensors a name.
std::optional<std::string> check_disjoint(const std::vector<TensorView>& views) {
  std::unordered_set<std::string_view> names;
  for (const auto& v : views)
    if (!names.insert(v.name).second) return fmt::format("two tensors are named {}", shown(v.name));
  std::vector<const TensorView*> order;
  for (const auto& v : views)
    if (v.nbytes > 0) order.push_back(&v);
  std::sort(order.begin(), order.end(), [](auto* a, auto* b) { return a->data < b->data; });
  for (std::size_t i = 1; i < order.size(); ++i)
    if (order[i - 1]->data + order[i - 1]->nbytes > order[i]->data)
      return fmt::format("tensors {} and {} overlap", shown(order[i - 1]->name), shown(order[i]->name));
  return std::nullopt;
}

// Parses the header without exceptions escaping; depth is capped because a deep "values" would
// later be copied and compared recursively.
Result<Json> parse_header(const std::byte* begin, std::size_t size) {
  bool too_deep = false;
  const Json::parser_callback_t limit = [&](int depth, Json::parse_event_t, Json&) {
    if (depth > kMaxJsonDepth) too_deep = true;
    return !too_deep;
  };
  Json j;
  try {
    const auto* text = reinterpret_cast<const char*>(begin);
    j = Json::parse(text, text + size, limit);
  } catch (const Json::exception& e) {
    return Error{fmt::format("the header is not valid JSON ({})", e.what())};
  }
  if (too_deep) return Error{fmt::format("the header nests deeper than {} levels", kMaxJsonDepth)};
  if (!j.is_object()) return Error{"the header is not a JSON object {\"tensors\": [...], \"values\": {...}}"};
  return j;
}

}  // namespace

std::size_t dtype_size(std::string_view dtype) {
  for (const auto& d : kDtypes)
    if (d.name == dtype) return d.size;
  return 0;
}

std::size_t TensorView::numel() const {
  std::size_t n = 1;
  for (auto d : shape) n *= static_cast<std::size_t>(d);
  return n;
}

void TensorFile::FreeAligned::operator()(std::byte* p) const { free_aligned(p); }

Result<TensorFile> TensorFile::open(const std::filesystem::path& path) {
  const auto fail = [&](std::string why) { return Error{fmt::format("{}: {}", path.string(), why)}; };
  auto read = read_all(path);
  if (!read) return fail(read.error().message);
  auto& [bytes, size] = *read;
  if (size < 16 || std::memcmp(bytes.get(), kMagic, 8) != 0) return fail("not a tensor file (no TRITTNS1 magic)");
  const std::uint64_t header_len = load_u64_le(bytes.get() + 8);
  if (header_len > size - 16) return fail(fmt::format("header length {} runs past the end of the file", header_len));
  if (header_len > kMaxTensorHeaderBytes)
    return fail(fmt::format("header length {} is over the limit of {}", header_len, kMaxTensorHeaderBytes));
  auto header = parse_header(bytes.get() + 16, header_len);
  if (!header) return fail(header.error().message);

  // The writer pads to the data region; a file that ends before it simply has an empty one.
  const std::uint64_t data_start = std::min<std::uint64_t>((16 + header_len + kAlign - 1) / kAlign * kAlign, size);
  const std::byte* region = bytes.get() + data_start;
  TensorFile file;
  const Json* tensors = member(*header, "tensors");
  if (!tensors || !tensors->is_array()) return fail("the header's \"tensors\" is missing or not an array");
  for (std::size_t i = 0; i < tensors->size(); ++i) {
    auto view = parse_entry((*tensors)[i], i, region, size - data_start);
    if (!view) return fail(view.error().message);
    file.tensors_.push_back(std::move(*view));
  }
  if (auto why = check_disjoint(file.tensors_)) return fail(*why);
  if (auto it = header->find("values"); it != header->end()) {
    if (!it->is_object()) return fail("the header's \"values\" is not a JSON object");
    file.values_ = std::move(*it);
  }
  file.bytes_ = std::unique_ptr<std::byte[], FreeAligned>(bytes.release());
  return file;
}

const TensorView* TensorFile::find(std::string_view name) const {
  for (const auto& t : tensors_)
    if (t.name == name) return &t;
  return nullptr;
}

// ---- tolerances --------------------------------------------------------------------------------

namespace {

struct Profile {
  std::string_view name;
  double f64, f32, f16, bf16;  // atol = rtol
};

constexpr Profile kProfiles[] = {
    {"kernelbench", 1e-4, 1e-4, 1e-2, 1e-2},  // KernelBench's eval
    {"strict", 1e-5, 1e-5, 1e-3, 4e-3},
    {"legacy", 1e-2, 1e-2, 1e-2, 1e-2},  // older KernelBench: 1e-2 for every float dtype
};

}  // namespace

std::optional<Tolerance> tolerance_for(std::string_view profile, std::string_view dtype) {
  const auto p = std::find_if(std::begin(kProfiles), std::end(kProfiles), [&](auto& x) { return x.name == profile; });
  if (p == std::end(kProfiles)) return std::nullopt;
  switch (dtype_of(dtype)) {
    case Dtype::f64:
      return Tolerance{p->f64, p->f64};
    case Dtype::f32:
      return Tolerance{p->f32, p->f32};
    case Dtype::f16:
      return Tolerance{p->f16, p->f16};
    case Dtype::bf16:
      return Tolerance{p->bf16, p->bf16};
    case Dtype::unknown:
      return std::nullopt;
    default:
      return Tolerance{0, 0};
  }
}

const std::vector<std::string>& profile_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const auto& p : kProfiles) v.emplace_back(p.name);
    return v;
  }();
  return names;
}

// ---- comparison --------------------------------------------------------------------------------

namespace {

struct Half {
  std::uint16_t bits;
};
struct BFloat16 {
  std::uint16_t bits;
};

double to_double(double x) { return x; }
double to_double(float x) { return x; }
double to_double(BFloat16 x) { return std::bit_cast<float>(std::uint32_t{x.bits} << 16); }
// Masks rather than branches, so zeros among normals (a ReLU's output) cost no mispredictions.
double to_double(Half x) {
  const std::uint32_t rest = std::uint32_t{x.bits & 0x7fffu} << 13, exp = rest & 0x0f800000u;
  const std::uint32_t top = -std::uint32_t{exp == 0x0f800000u}, low = -std::uint32_t{exp == 0};
  const std::uint32_t normal = rest + (112u << 23) + (top & (112u << 23));  // rebias 15 -> 127; inf/NaN stay on top
  // zero and subnormal: give the value an implicit 1 at 2^-14, then take 2^-14 away again
  const std::uint32_t small = std::bit_cast<std::uint32_t>(std::bit_cast<float>(rest + (113u << 23)) - 0x1p-14f);
  const std::uint32_t sign = std::uint32_t{x.bits & 0x8000u} << 16;
  return std::bit_cast<float>(((small & low) | (normal & ~low)) | sign);
}

template <class S>
S load(const std::byte* data, std::size_t i) {
  S s;
  std::memcpy(&s, data + i * sizeof(S), sizeof(S));
  return s;
}

struct Scan {
  std::size_t mismatches = 0, nonfinite = 0;
  double max_abs = 0, max_rel = 0, worst = -1;
  std::size_t worst_at = kNone, nonfinite_at = kNone;  // worst: largest finite mismatch

  // The hot path; true on a mismatch. `&` not `&&`, so each branch is rarely taken whatever the
  // data (zeros among normals would make `ax > atol` a coin flip); no division unless max_rel moves.
  bool finite_pair(std::size_t i, double d, double ax, Tolerance tol) {
    if (d > max_abs) max_abs = d;
    if ((ax > tol.atol) & (d > max_rel * ax)) max_rel = std::max(max_rel, d / ax);
    const bool bad = !(d <= tol.atol + tol.rtol * ax);
    if (bad & (d > worst)) {
      worst = d;
      worst_at = i;
    }
    return bad;
  }

  bool nonfinite_pair(std::size_t i, double x, double y, Tolerance tol) {
    if (std::isfinite(x) && std::isfinite(y)) return finite_pair(i, std::abs(y - x), std::abs(x), tol);  // overflow
    if (std::isfinite(x)) {
      ++nonfinite;
    } else if (std::isnan(x) ? std::isnan(y) : x == y) {
      return false;  // NaN for NaN, the same inf
    }
    if (nonfinite_at == kNone) nonfinite_at = i;
    return true;
  }
};

// The mismatch count is a local, not a member: `s` escapes into the cold path and lives in memory,
// and a read-modify-write of memory on every element would be the loop's critical path.
template <class S>
Scan scan(const std::byte* expected, const std::byte* actual, std::size_t n, Tolerance tol) {
  Scan s;
  std::size_t bad = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const S xs = load<S>(expected, i), ys = load<S>(actual, i);
    if constexpr (std::is_integral_v<S>) {
      if (xs == ys) continue;
      // |a - e| exactly in 64 bits, then in double: a nonzero difference never rounds to 0.
      const auto x = static_cast<std::int64_t>(xs), y = static_cast<std::int64_t>(ys);
      const std::uint64_t d = x > y ? std::uint64_t(x) - std::uint64_t(y) : std::uint64_t(y) - std::uint64_t(x);
      bad += s.finite_pair(i, static_cast<double>(d), std::abs(static_cast<double>(x)), tol);
    } else {
      const double x = to_double(xs), y = to_double(ys), d = std::abs(y - x);
      if (std::isfinite(d)) [[likely]]  // both finite (a NaN or inf on either side makes d non-finite)
        bad += s.finite_pair(i, d, std::abs(x), tol);
      else
        bad += s.nonfinite_pair(i, x, y, tol);
    }
  }
  s.mismatches = bad;
  return s;
}

Scan scan_any(Dtype dtype, const std::byte* e, const std::byte* a, std::size_t n, Tolerance tol) {
  switch (dtype) {
    case Dtype::f64:
      return scan<double>(e, a, n, tol);
    case Dtype::f32:
      return scan<float>(e, a, n, tol);
    case Dtype::f16:
      return scan<Half>(e, a, n, tol);
    case Dtype::bf16:
      return scan<BFloat16>(e, a, n, tol);
    case Dtype::i64:
      return scan<std::int64_t>(e, a, n, tol);
    case Dtype::i32:
      return scan<std::int32_t>(e, a, n, tol);
    case Dtype::i16:
      return scan<std::int16_t>(e, a, n, tol);
    case Dtype::i8:
      return scan<std::int8_t>(e, a, n, tol);
    case Dtype::u8:
    case Dtype::b8:
      return scan<std::uint8_t>(e, a, n, tol);  // bool bytes compare as bytes
    case Dtype::unknown:
      break;
  }
  return {};
}

// One element as its dtype prints it: floats at their own precision, integers exactly.
std::string element(const TensorView& v, std::size_t i) {
  switch (dtype_of(v.dtype)) {
    case Dtype::f64:
      return fmt::format("{}", load<double>(v.data, i));
    case Dtype::f32:
      return fmt::format("{}", load<float>(v.data, i));
    case Dtype::f16:
      return fmt::format("{}", static_cast<float>(to_double(load<Half>(v.data, i))));
    case Dtype::bf16:
      return fmt::format("{}", static_cast<float>(to_double(load<BFloat16>(v.data, i))));
    case Dtype::i64:
      return fmt::format("{}", load<std::int64_t>(v.data, i));
    case Dtype::i32:
      return fmt::format("{}", load<std::int32_t>(v.data, i));
    case Dtype::i16:
      return fmt::format("{}", load<std::int16_t>(v.data, i));
    case Dtype::i8:
      return fmt::format("{}", load<std::int8_t>(v.data, i));
    case Dtype::u8:
    case Dtype::b8:
      return fmt::format("{}", load<std::uint8_t>(v.data, i));
    case Dtype::unknown:
      break;
  }
  return "?";
}

std::string shape_string(const std::vector<std::int64_t>& shape) { return fmt::format("[{}]", fmt::join(shape, ", ")); }

std::string mismatch_message(const Scan& s, const TensorView& e, const TensorView& a, std::size_t n) {
  const auto at = [&](std::size_t i) {
    return fmt::format("at index {}, expected {}, got {}", i, element(e, i), element(a, i));
  };
  std::vector<std::string> parts;
  if (s.worst_at != kNone && s.worst == s.max_abs)
    parts.push_back(fmt::format("max abs err {:.4g} {}", s.max_abs, at(s.worst_at)));
  else if (s.worst_at != kNone)
    parts.push_back(
        fmt::format("largest differing abs err {:.4g} {}; max abs err {:.4g}", s.worst, at(s.worst_at), s.max_abs));
  if (s.nonfinite_at != kNone) {
    if (s.nonfinite > 0) parts.push_back(fmt::format("{} unexpected non-finite", s.nonfinite));
    parts.push_back(fmt::format("first NaN/inf mismatch {}", at(s.nonfinite_at)));
  }
  return fmt::format("{} of {} elements differ ({})", s.mismatches, n, fmt::join(parts, "; "));
}

}  // namespace

Comparison compare(const TensorView& expected, const TensorView& actual, Tolerance tol) {
  Comparison c;
  c.same_shape = expected.shape == actual.shape;
  c.same_dtype = expected.dtype == actual.dtype;
  c.elements = expected.numel();
  std::vector<std::string> wrong;
  if (!c.same_dtype) wrong.push_back(fmt::format("dtype {} expected, got {}", expected.dtype, actual.dtype));
  if (!c.same_shape)
    wrong.push_back(fmt::format("shape {} expected, got {}", shape_string(expected.shape), shape_string(actual.shape)));
  const Dtype dtype = dtype_of(expected.dtype);
  if (wrong.empty() && dtype == Dtype::unknown) wrong.push_back(fmt::format("unknown dtype {}", shown(expected.dtype)));
  if (!wrong.empty()) {
    c.message = fmt::format("{}", fmt::join(wrong, "; "));
    return c;
  }
  assert(expected.nbytes == actual.nbytes && expected.nbytes == c.elements * dtype_size(expected.dtype));
  const Scan s = scan_any(dtype, expected.data, actual.data, c.elements, tol);
  c.mismatches = s.mismatches;
  c.unexpected_nonfinite = s.nonfinite;
  c.max_abs_err = s.max_abs;
  c.max_rel_err = s.max_rel;
  c.match = s.mismatches == 0;
  c.message = c.match ? fmt::format("{} elements within atol {:g}, rtol {:g} (max abs err {:.4g})", c.elements,
                                    tol.atol, tol.rtol, s.max_abs)
                      : mismatch_message(s, expected, actual, c.elements);
  return c;
}

bool bitwise_equal(const TensorView& a, const TensorView& b) {
  return a.dtype == b.dtype && a.shape == b.shape && a.nbytes == b.nbytes &&
         (a.nbytes == 0 || std::memcmp(a.data, b.data, a.nbytes) == 0);
}

}  // namespace tritium::exec
