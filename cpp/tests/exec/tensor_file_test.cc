#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>

#include "../../src/exec/tensor_file.h"

namespace tritium::exec {
namespace {

namespace fs = std::filesystem;

constexpr double kNan = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

template <class T>
std::string raw(std::initializer_list<T> values) {
  std::string s(values.size() * sizeof(T), '\0');
  std::memcpy(s.data(), values.begin(), s.size());
  return s;
}

std::size_t align64(std::size_t n) { return (n + 63) / 64 * 64; }

std::string u64le(std::uint64_t v) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[i] = static_cast<char>(v >> (8 * i));
  return s;
}

struct Spec {
  std::string name, dtype;
  std::vector<std::int64_t> shape;
  std::string bytes;
};

// A file laid out as the Python writer lays it out; `edit` changes the header before it is written.
std::string build(const std::vector<Spec>& specs, const Json& values = Json::object(),
                  const std::function<void(Json&)>& edit = {}) {
  Json header = {{"tensors", Json::array()}, {"values", values}};
  std::string data;
  for (const auto& s : specs) {
    header["tensors"].push_back({{"name", s.name},
                                 {"dtype", s.dtype},
                                 {"shape", s.shape},
                                 {"offset", data.size()},
                                 {"nbytes", s.bytes.size()}});
    data += s.bytes;
    data.resize(align64(data.size()), '\0');
  }
  if (edit) edit(header);
  const std::string text = header.dump();
  std::string out = "TRITTNS1" + u64le(text.size()) + text;
  out.resize(align64(out.size()), '\0');
  return out + data;
}

// A view over bytes the test owns, for comparisons that need no file.
TensorView view(const std::string& dtype, std::vector<std::int64_t> shape, const std::string& bytes) {
  return {"t", dtype, std::move(shape), reinterpret_cast<const std::byte*>(bytes.data()), bytes.size()};
}

class TensorFileTest : public ::testing::Test {
 protected:
  fs::path dir;

  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir = fs::temp_directory_path() / ("tritium-tensor-file-test-" + std::to_string(getpid()) + "-" + info->name());
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  void TearDown() override { fs::remove_all(dir); }

  fs::path write(const std::string& bytes, const std::string& name = "t.tritt") {
    const fs::path path = dir / name;
    std::ofstream(path, std::ios::binary) << bytes;
    return path;
  }
  Result<TensorFile> open(const std::string& bytes) { return TensorFile::open(write(bytes)); }

  // Opening must fail, and the message must say why.
  void expect_error(const std::string& bytes, const std::string& why) {
    auto file = open(bytes);
    ASSERT_FALSE(file.ok()) << "expected an error containing: " << why;
    EXPECT_NE(file.error().message.find(why), std::string::npos) << file.error().message;
  }
};

// ---- round trips ---------------------------------------------------------------------------------

TEST_F(TensorFileTest, RoundTripsEveryDtypeAligned) {
  const std::vector<Spec> specs = {
      {"f64", "float64", {2, 2}, raw<double>({1.5, -2.0, kInf, kNan})},
      {"f32", "float32", {3}, raw<float>({1.5f, -2.0f, 3.25f})},
      {"f16", "float16", {6}, raw<std::uint16_t>({0x3E00, 0xC000, 0x7BFF, 0x7C00, 0x7E00, 0x0001})},
      {"bf16", "bfloat16", {5}, raw<std::uint16_t>({0x3FC0, 0xC000, 0x7F7F, 0x7F80, 0x7FC0})},
      {"i64", "int64", {2}, raw<std::int64_t>({-(1ll << 62), 7})},
      {"i32", "int32", {1, 2}, raw<std::int32_t>({-5, 1 << 30})},
      {"i16", "int16", {2}, raw<std::int16_t>({-32768, 32767})},
      {"i8", "int8", {2}, raw<std::int8_t>({-128, 127})},
      {"u8", "uint8", {2}, raw<std::uint8_t>({0, 255})},
      {"b", "bool", {3}, raw<std::uint8_t>({1, 0, 1})},
      {"scalar", "float32", {}, raw<float>({4.0f})},
      {"empty", "float32", {0, 3}, ""},
  };
  auto file = open(build(specs, {{"n", 3}, {"mode", "x"}}));
  ASSERT_TRUE(file.ok()) << file.error().message;
  ASSERT_EQ(file->tensors().size(), specs.size());
  for (std::size_t i = 0; i < specs.size(); ++i) {
    const TensorView& v = file->tensors()[i];
    EXPECT_EQ(v.name, specs[i].name);
    EXPECT_EQ(v.dtype, specs[i].dtype);
    EXPECT_EQ(v.shape, specs[i].shape);
    EXPECT_EQ(v.numel() * dtype_size(v.dtype), v.nbytes);
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(v.data), v.nbytes), specs[i].bytes) << v.name;
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(v.data) % 64, 0u) << v.name;
  }
  EXPECT_EQ(file->find("scalar")->numel(), 1u);
  EXPECT_EQ(file->find("empty")->numel(), 0u);
  EXPECT_EQ(file->find("nope"), nullptr);
  EXPECT_EQ(file->values(), (Json{{"n", 3}, {"mode", "x"}}));
}

TEST_F(TensorFileTest, ValuesAreOptionalAndViewsSurviveAMove) {
  auto opened =
      open(build({{"x", "int32", {2}, raw<std::int32_t>({1, 2})}}, Json::object(), [](Json& h) { h.erase("values"); }));
  ASSERT_TRUE(opened.ok()) << opened.error().message;
  EXPECT_EQ(opened->values(), Json::object());
  const std::byte* data = opened->tensors()[0].data;
  std::vector<TensorFile> files;
  for (int i = 0; i < 8; ++i) files.push_back(std::move(*open(build({}))));  // reallocations move the files
  files.insert(files.begin(), std::move(*opened));
  EXPECT_EQ(files[0].tensors()[0].data, data);
  EXPECT_EQ(std::memcmp(files[0].find("x")->data, raw<std::int32_t>({1, 2}).data(), 8), 0);
}

// Half and bfloat16 decode through compare(): the error of x against 0 is |x|.
TEST_F(TensorFileTest, DecodesHalfAndBfloat16) {
  const auto abs_of = [](const std::string& dtype, std::uint16_t bits) {
    const std::string x = raw<std::uint16_t>({bits}), zero = raw<std::uint16_t>({0});
    return compare(view(dtype, {1}, zero), view(dtype, {1}, x), {0, 0});
  };
  EXPECT_EQ(abs_of("float16", 0x3E00).max_abs_err, 1.5);
  EXPECT_EQ(abs_of("float16", 0xC000).max_abs_err, 2.0);
  EXPECT_EQ(abs_of("float16", 0x7BFF).max_abs_err, 65504.0);
  EXPECT_EQ(abs_of("float16", 0x0001).max_abs_err, std::ldexp(1.0, -24));  // smallest subnormal
  EXPECT_EQ(abs_of("float16", 0x03FF).max_abs_err, std::ldexp(1023.0, -24));
  EXPECT_EQ(abs_of("float16", 0x0400).max_abs_err, std::ldexp(1.0, -14));  // smallest normal
  EXPECT_EQ(abs_of("float16", 0x7C00).unexpected_nonfinite, 1u);
  EXPECT_EQ(abs_of("bfloat16", 0x3FC0).max_abs_err, 1.5);
  EXPECT_EQ(abs_of("bfloat16", 0xC000).max_abs_err, 2.0);
  EXPECT_EQ(abs_of("bfloat16", 0x7F7F).max_abs_err, std::bit_cast<float>(0x7F7F0000u));  // largest finite
  EXPECT_EQ(abs_of("bfloat16", 0x7FC0).unexpected_nonfinite, 1u);

  const std::string h = raw<std::uint16_t>({0x7C00, 0xFC00, 0x7E00}), b = raw<std::uint16_t>({0x7F80, 0xFF80, 0x7FC0});
  EXPECT_TRUE(compare(view("float16", {3}, h), view("float16", {3}, h), {0, 0}).match);  // inf, -inf, nan
  EXPECT_TRUE(compare(view("bfloat16", {3}, b), view("bfloat16", {3}, b), {0, 0}).match);
  const auto c = compare(view("float16", {1}, raw<std::uint16_t>({0x7BFF})),
                         view("float16", {1}, raw<std::uint16_t>({0x7BFE})), {0, 0});
  EXPECT_EQ(c.message, "1 of 1 elements differ (max abs err 32 at index 0, expected 65504, got 65472)");
}

// ---- tolerances and comparison -------------------------------------------------------------------

TEST(Tolerance, ProfilesFollowKernelBenchAndIntegersAreExact) {
  EXPECT_EQ(profile_names(), (std::vector<std::string>{"kernelbench", "strict", "legacy"}));
  const auto tol = [](const char* profile, const char* dtype) { return tolerance_for(profile, dtype).value().atol; };
  EXPECT_EQ(tol("kernelbench", "float32"), 1e-4);
  EXPECT_EQ(tol("kernelbench", "float64"), 1e-4);
  EXPECT_EQ(tol("kernelbench", "float16"), 1e-2);
  EXPECT_EQ(tol("kernelbench", "bfloat16"), 1e-2);
  EXPECT_EQ(tol("strict", "float32"), 1e-5);
  EXPECT_EQ(tol("strict", "float16"), 1e-3);
  EXPECT_EQ(tol("strict", "bfloat16"), 4e-3);
  EXPECT_EQ(tol("legacy", "float32"), 1e-2);
  EXPECT_EQ(tol("legacy", "bfloat16"), 1e-2);
  EXPECT_EQ(tolerance_for("strict", "bfloat16")->rtol, 4e-3);
  for (const auto& p : profile_names())
    for (const char* dtype : {"int64", "int32", "int16", "int8", "uint8", "bool"}) {
      EXPECT_EQ(tolerance_for(p, dtype)->atol, 0) << p << " " << dtype;
      EXPECT_EQ(tolerance_for(p, dtype)->rtol, 0) << p << " " << dtype;
    }
  EXPECT_FALSE(tolerance_for("loose", "float32"));
  EXPECT_FALSE(tolerance_for("kernelbench", "complex64"));
}

TEST(Compare, MatchesAtTheBoundaryAndFailsJustPastIt) {
  // bound = atol + rtol * |e| = 0.5 + 0.25 * 2 = 1, all exact in binary
  const std::string e = raw<double>({2.0, -2.0});
  EXPECT_TRUE(compare(view("float64", {2}, e), view("float64", {2}, raw<double>({3.0, -1.0})), {0.5, 0.25}).match);
  const auto past = compare(view("float64", {2}, e),
                            view("float64", {2}, raw<double>({std::nextafter(3.0, 4.0), -1.0})), {0.5, 0.25});
  EXPECT_FALSE(past.match);
  EXPECT_EQ(past.mismatches, 1u);

  const auto kb = *tolerance_for("kernelbench", "float32");  // bound 2e-4 at 1.0
  const std::string one = raw<float>({1.0f});
  EXPECT_TRUE(compare(view("float32", {1}, one), view("float32", {1}, raw<float>({1.00015f})), kb).match);
  EXPECT_FALSE(compare(view("float32", {1}, one), view("float32", {1}, raw<float>({1.00025f})), kb).match);
}

TEST(Compare, ReportsErrorsAndTheWorstElement) {
  std::vector<float> e(16, 1.25f), a(16, 1.25f);
  a[3] = 1.2f;
  a[12] = 0.75f;
  const std::string eb(reinterpret_cast<const char*>(e.data()), 64), ab(reinterpret_cast<const char*>(a.data()), 64);
  const auto c =
      compare(view("float32", {16}, eb), view("float32", {16}, ab), *tolerance_for("kernelbench", "float32"));
  EXPECT_FALSE(c.match);
  EXPECT_EQ(c.elements, 16u);
  EXPECT_EQ(c.mismatches, 2u);
  EXPECT_EQ(c.max_abs_err, 0.5);
  EXPECT_EQ(c.max_rel_err, 0.4);
  EXPECT_EQ(c.message, "2 of 16 elements differ (max abs err 0.5 at index 12, expected 1.25, got 0.75)");

  // max_rel_err counts only |e| > atol: the 0 expected does not divide
  const auto r = compare(view("float32", {2}, raw<float>({0.0f, 2.0f})), view("float32", {2}, raw<float>({0.5f, 3.0f})),
                         {1.0, 0.0});
  EXPECT_TRUE(r.match);
  EXPECT_EQ(r.max_abs_err, 1.0);
  EXPECT_EQ(r.max_rel_err, 0.5);
  EXPECT_EQ(r.message, "2 elements within atol 1, rtol 0 (max abs err 1)");
}

TEST(Compare, NanNeedsNanInfNeedsTheSameInfAndNonFiniteIsUnexpected) {
  const std::string e = raw<double>({kNan, kInf, -kInf, 1.0, 1.0, kNan, kInf});
  const std::string a = raw<double>({kNan, kInf, -kInf, kNan, kInf, 1.0, -kInf});
  const auto c = compare(view("float64", {7}, e), view("float64", {7}, a), {1e-2, 1e-2});
  EXPECT_FALSE(c.match);
  EXPECT_EQ(c.mismatches, 4u);
  EXPECT_EQ(c.unexpected_nonfinite, 2u);
  EXPECT_EQ(c.max_abs_err, 0.0);
  EXPECT_EQ(c.message,
            "4 of 7 elements differ (2 unexpected non-finite; first NaN/inf mismatch at index 3, expected 1, "
            "got nan)");
  EXPECT_TRUE(compare(view("float64", {3}, raw<double>({kNan, kInf, -kInf})),
                      view("float64", {3}, raw<double>({kNan, kInf, -kInf})), {0, 0})
                  .match);
}

TEST(Compare, IntegersCompareExactlyBeyondDoublePrecision) {
  const std::int64_t big = std::int64_t{1} << 53;
  const auto c = compare(view("int64", {2}, raw<std::int64_t>({big, 5})),
                         view("int64", {2}, raw<std::int64_t>({big + 1, 5})), {0, 0});
  EXPECT_FALSE(c.match);
  EXPECT_EQ(c.message,
            "1 of 2 elements differ (max abs err 1 at index 0, expected 9007199254740992, got 9007199254740993)");
  const auto extremes =
      compare(view("int64", {1}, raw<std::int64_t>({std::numeric_limits<std::int64_t>::min()})),
              view("int64", {1}, raw<std::int64_t>({std::numeric_limits<std::int64_t>::max()})), {0, 0});
  EXPECT_FALSE(extremes.match);
  EXPECT_EQ(extremes.max_abs_err, std::ldexp(1.0, 64));
  EXPECT_TRUE(
      compare(view("bool", {2}, raw<std::uint8_t>({1, 0})), view("bool", {2}, raw<std::uint8_t>({1, 0})), {0, 0})
          .match);
  EXPECT_FALSE(
      compare(view("uint8", {1}, raw<std::uint8_t>({0})), view("uint8", {1}, raw<std::uint8_t>({255})), {0, 0}).match);
}

TEST(Compare, ShapeAndDtypeMismatchesNeedNoData) {
  TensorView e{"y", "float32", {16, 1000}, nullptr, 0}, a{"y", "float32", {16, 999}, nullptr, 0};
  auto c = compare(e, a, {0, 0});
  EXPECT_FALSE(c.match);
  EXPECT_FALSE(c.same_shape);
  EXPECT_TRUE(c.same_dtype);
  EXPECT_EQ(c.message, "shape [16, 1000] expected, got [16, 999]");
  a = {"y", "float16", {16, 1000}, nullptr, 0};
  c = compare(e, a, {0, 0});
  EXPECT_TRUE(c.same_shape);
  EXPECT_FALSE(c.same_dtype);
  EXPECT_EQ(c.message, "dtype float32 expected, got float16");
  a = {"y", "float16", {}, nullptr, 0};
  EXPECT_EQ(compare(e, a, {0, 0}).message, "dtype float32 expected, got float16; shape [16, 1000] expected, got []");
}

TEST(BitwiseEqual, NeedsTheSameDtypeShapeAndBytes) {
  const std::string x = raw<float>({1.0f, 0.0f}), same = raw<float>({1.0f, 0.0f}), neg_zero = raw<float>({1.0f, -0.0f});
  EXPECT_TRUE(bitwise_equal(view("float32", {2}, x), view("float32", {2}, same)));
  EXPECT_FALSE(bitwise_equal(view("float32", {2}, x), view("float32", {2}, neg_zero)));
  EXPECT_TRUE(compare(view("float32", {2}, x), view("float32", {2}, neg_zero), {0, 0}).match);
  EXPECT_FALSE(bitwise_equal(view("float32", {2}, x), view("float32", {1, 2}, same)));
  EXPECT_FALSE(bitwise_equal(view("float32", {2}, x), view("int32", {2}, same)));
  EXPECT_TRUE(bitwise_equal(view("int8", {0}, ""), view("int8", {0}, "")));
}

// ---- hostile files -------------------------------------------------------------------------------

const std::vector<Spec> kTwo = {{"x", "float32", {2, 3}, raw<float>({1, 2, 3, 4, 5, 6})},
                                {"y", "int64", {2}, raw<std::int64_t>({7, 8})}};

// Edits tensor `i`'s entry of the header.
std::function<void(Json&)> set(std::size_t i, const char* key, Json value) {
  return [=](Json& h) { h["tensors"][i][key] = value; };
}

TEST_F(TensorFileTest, RejectsBadMagicAndTruncatedHeaders) {
  std::string good = build(kTwo);
  expect_error("TRITTNS2" + good.substr(8), "no TRITTNS1 magic");
  expect_error("", "no TRITTNS1 magic");
  expect_error("TRITTNS1\x10", "no TRITTNS1 magic");
  expect_error(good.substr(0, 20), "runs past the end of the file");
  expect_error("TRITTNS1" + u64le(~0ull) + "{}", "header length 18446744073709551615 runs past the end of the file");
  expect_error("TRITTNS1" + u64le(3) + "{}", "runs past the end of the file");
}

TEST_F(TensorFileTest, RejectsHeadersThatAreNotTheRightJson) {
  const auto with_header = [](const std::string& text) { return "TRITTNS1" + u64le(text.size()) + text; };
  expect_error(with_header("{\"tensors\": ["), "not valid JSON");
  expect_error(with_header("[1, 2]"), "not a JSON object");
  expect_error(with_header("\xff\xfe"), "not valid JSON");
  expect_error(with_header("{}"), "\"tensors\" is missing");
  expect_error(with_header(R"({"tensors": {}})"), "\"tensors\" is missing or not an array");
  expect_error(with_header(R"({"tensors": [], "values": [1]})"), "\"values\" is not a JSON object");
  expect_error(with_header(R"({"tensors": [7]})"), "tensor 0: not a JSON object");
  expect_error(with_header(std::string(100, '[') + std::string(100, ']')), "deeper than");
  expect_error(
      with_header(R"({"tensors": [], "values": {"v": )" + std::string(100, '[') + std::string(100, ']') + "}}"),
      "deeper than");
  const auto nested = [&](int lists) {  // 0 inside `lists` arrays, "values" and the header
    return with_header(R"({"tensors": [], "values": {"v": )" + std::string(lists, '[') + "0" + std::string(lists, ']') +
                       "}}");
  };
  EXPECT_TRUE(open(nested(62)).ok());  // python/tests/test_tensorfile.py writes this limit too
  expect_error(nested(63), "deeper than 64");
  EXPECT_TRUE(open(with_header(R"({"tensors": []})")).ok());  // no data region at all is fine with no tensors
}

TEST_F(TensorFileTest, RejectsEntriesThatBreakTheLayout) {
  expect_error(build(kTwo, Json::object(), set(1, "offset", 64 * 100)),
               "tensor 1 (\"y\"): offset 6400 + nbytes 16 runs past");
  expect_error(build(kTwo, Json::object(), set(1, "offset", ~0ull - 63)), "runs past the data region");
  expect_error(build(kTwo, Json::object(), set(1, "nbytes", 8)), "nbytes 8 is not numel 2 x itemsize 8");
  expect_error(build(kTwo, Json::object(), set(0, "shape", {2, -3})), "shape entry -3 is not a non-negative int64");
  expect_error(build(kTwo, Json::object(), set(0, "shape", {2.0, 3})), "shape entry 2.0 is not");
  expect_error(build(kTwo, Json::object(), set(0, "shape", Json::array({true}))), "shape entry true is not");
  expect_error(build(kTwo, Json::object(), set(0, "shape", Json::array({1ull << 63}))),
               "shape entry 9223372036854775808 is not");
  expect_error(build(kTwo, Json::object(), set(0, "shape", {1ull << 32, 1ull << 32})), "overflows int64");
  expect_error(build(kTwo, Json::object(), set(0, "shape", {1ull << 62, 2, 0})), "overflows int64");
  expect_error(build(kTwo, Json::object(), set(0, "shape", 6)), "\"shape\" is missing or not an array");
  expect_error(build(kTwo, Json::object(), set(1, "offset", 72)), "offset 72 is not a multiple of 64");
  expect_error(build(kTwo, Json::object(), set(1, "offset", -64)), "\"offset\" or \"nbytes\" is missing");
  expect_error(build(kTwo, Json::object(), set(1, "nbytes", "16")), "\"offset\" or \"nbytes\" is missing");
  expect_error(build(kTwo, Json::object(), set(0, "dtype", "complex64")), "unknown dtype \"complex64\"");
  expect_error(build(kTwo, Json::object(), set(0, "dtype", 4)), "\"dtype\" is missing or not a string");
  expect_error(build(kTwo, Json::object(), set(0, "name", nullptr)), "tensor 0: \"name\" is missing");
  expect_error(build(kTwo, Json::object(), set(1, "name", "x")), "two tensors are named \"x\"");
  expect_error(build(kTwo, Json::object(), set(1, "offset", 0)), "tensors \"x\" and \"y\" overlap");
  const auto long_name = [](Json& h) {
    h["tensors"][1]["name"] = std::string(500, 'n') + "\n";
    h["tensors"][1]["dtype"] = "complex";
  };
  auto named = open(build(kTwo, Json::object(), long_name));  // a hostile name is quoted and cut short
  ASSERT_FALSE(named.ok());
  EXPECT_NE(named.error().message.find("tensor 1 (\"nnnn"), std::string::npos) << named.error().message;
  EXPECT_EQ(named.error().message.find('\n'), std::string::npos);
  EXPECT_LT(named.error().message.size(), 300u);
}

TEST_F(TensorFileTest, RejectsWhatIsNotARegularFile) {
  auto missing = TensorFile::open(dir / "missing.tritt");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("missing.tritt: cannot open"), std::string::npos);
  EXPECT_FALSE(TensorFile::open(dir).ok());
  ASSERT_EQ(mkfifo((dir / "fifo").c_str(), 0600), 0);
  auto fifo = TensorFile::open(dir / "fifo");  // must not block waiting for a writer
  ASSERT_FALSE(fifo.ok());
  EXPECT_NE(fifo.error().message.find("not a regular file"), std::string::npos);
}

// Every prefix and every single-byte corruption of a valid file opens cleanly or fails cleanly.
TEST_F(TensorFileTest, EveryTruncationAndByteFlipFailsCleanly) {
  const std::string good = build(kTwo, {{"n", 1}});
  for (std::size_t n = 0; n < good.size(); ++n) {
    auto file = open(good.substr(0, n));
    if (file.ok()) {  // only the last tensor's padding may go
      EXPECT_GE(n, good.size() - 48);
      EXPECT_EQ(file->tensors().size(), 2u);
    }
  }
  for (std::size_t i = 0; i < good.size(); ++i) {
    std::string bad = good;
    bad[i] = static_cast<char>(bad[i] ^ 0x5a);
    auto file = open(bad);
    if (!file.ok()) continue;
    for (const auto& t : file->tensors()) EXPECT_EQ(t.nbytes, t.numel() * dtype_size(t.dtype));
  }
}

}  // namespace
}  // namespace tritium::exec
